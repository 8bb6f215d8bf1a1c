//! Benchmark of when-clauses: parse 10,000 varied clauses with `toolbelt_config::when::parse`,
//! then evaluate every one against a context (`serde_json::Map`); totals and per clause.
//!
//! `cargo run --release -p toolbelt-core --example when_bench [clauses]`
//! (or `bash bench/tool_search.sh`).

use std::time::{Duration, Instant};

use serde_json::{Map, json};
use toolbelt_config::when::parse;

const KEYS: &[&str] = &[
    "resourceLangId",
    "isWeb",
    "config.tools.sandbox",
    "env.CI",
    "workspaceFolderCount",
    "resourceExtname",
    "context.gitBranch",
    "editorTextFocus",
    "config.model.name",
    "missingKey",
];
const VALUES: &[&str] = &["rust", "python", "'.ts'", "main", "true", "3", "'gpt 4'"];

fn clause(i: usize) -> String {
    let k = |n: usize| KEYS[(i / 3 + n * 7) % KEYS.len()];
    let v = |n: usize| VALUES[(i / 5 + n * 3) % VALUES.len()];
    match i % 10 {
        0 => k(0).to_string(),
        1 => format!("!{}", k(0)),
        2 => format!("{} == {}", k(0), v(0)),
        3 => format!("{} != {} && {}", k(0), v(0), k(1)),
        4 => format!("{} =~ /^ma(in|ster)$/i || {}", k(0), k(1)),
        5 => format!("{} > {} && {} <= 10", k(0), i % 7, k(1)),
        6 => format!("{} in {}", k(2), k(0)),
        7 => format!(
            "({} || {}) && !({} == {}) && {} not in {}",
            k(0),
            k(1),
            k(2),
            v(1),
            k(4),
            k(3)
        ),
        8 => format!(
            "{} && {} && {} || {} && !{} || {} == {}",
            k(0),
            k(1),
            k(2),
            k(3),
            k(4),
            k(5),
            v(0)
        ),
        _ => format!("{} == '{}' || {} =~ /\\.rs$/", k(0), i, k(1)),
    }
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let texts: Vec<String> = (0..n).map(clause).collect();
    let mut context = Map::new();
    for (key, value) in [
        ("resourceLangId", json!("rust")),
        ("isWeb", json!(false)),
        ("config.tools.sandbox", json!("landlock")),
        ("env.CI", json!("true")),
        ("workspaceFolderCount", json!(3)),
        ("resourceExtname", json!(".rs")),
        ("context.gitBranch", json!("main")),
        ("editorTextFocus", json!(true)),
        ("config.model.name", json!("gpt 4")),
    ] {
        context.insert(key.to_string(), value);
    }

    let started = Instant::now();
    let parsed: Vec<_> = texts.iter().filter_map(|t| parse(t).ok()).collect();
    let parse_time = started.elapsed();
    let failed = n - parsed.len();
    if std::env::var_os("WHEN_BENCH_SHOW_ERRORS").is_some() {
        for t in texts.iter().filter(|t| parse(t).is_err()).take(3) {
            eprintln!("{t}: {:?}", parse(t).err());
        }
    }

    let started = Instant::now();
    let mut truths = 0usize;
    for expr in &parsed {
        truths += usize::from(expr.evaluate(&context));
    }
    let eval_time = started.elapsed();
    std::hint::black_box(truths);

    println!("clauses: {n} ({failed} did not parse; {truths} true)");
    println!(
        "parse: {:.2} ms total, {:.2} µs per clause",
        ms(parse_time),
        per(parse_time, n)
    );
    println!(
        "evaluate: {:.2} ms total, {:.3} µs per clause",
        ms(eval_time),
        per(eval_time, parsed.len())
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn per(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e6 / n.max(1) as f64
}
