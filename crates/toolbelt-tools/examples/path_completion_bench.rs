//! `@path` completion on a large tree: how long the index takes to build, and how long
//! one keystroke's ranking takes.
//!
//! `cargo run --release -p toolbelt-tools --example path_completion_bench [files]`
//! (default 50,000 files in 500 directories, plus an ignored `node_modules` of 20,000).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Instant;

use toolbelt_config::settings::Settings;
use toolbelt_core::{ToolEnvironment, WorkspaceRoots};
use toolbelt_tools::completion::PathIndex;

fn main() {
    let files: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50_000);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for i in 0..files {
        let d = root.join(format!("pkg{}/src/mod{}", i % 50, i % 10));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("file_{i}.rs")), "").unwrap();
    }
    for i in 0..20_000 {
        let d = root.join(format!("node_modules/dep{}", i % 100));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("index{i}.js")), "").unwrap();
    }
    std::fs::write(root.join(".gitignore"), "node_modules/\n").unwrap();
    let env = ToolEnvironment::new(
        WorkspaceRoots::new([root]).unwrap(),
        Arc::new(Settings::default()),
        root.join(".session"),
    );
    let start = Instant::now();
    let index = PathIndex::build(&env);
    let build = start.elapsed();
    println!(
        "build: {} paths in {:.1} ms (truncated: {})",
        index.paths().len(),
        build.as_secs_f64() * 1e3,
        index.truncated()
    );
    // Each prefix of a name, as typed one key at a time.
    for query in ["pkg7/src/mod3/file_4", "file_4999", "f4999", "mod3file"] {
        let mut worst = 0f64;
        let mut total = 0f64;
        for n in 1..=query.len() {
            let t = Instant::now();
            let found = index.complete(&query[..n], 10);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            assert!(found.len() <= 10);
            worst = worst.max(ms);
            total += ms;
        }
        println!(
            "complete '{query}': {:.2} ms per keystroke on average, {:.2} ms worst",
            total / query.len() as f64,
            worst
        );
    }
}
