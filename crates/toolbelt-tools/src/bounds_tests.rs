//! Hostile input across the tools: arbitrary JSON arguments for every registered tool
//! (a result or an error, never a panic), walks that must not leave the roots through a
//! link at the start of a pattern, and numbers at the edges of the schemas.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use toolbelt_core::ErrorKind;

use crate::test_support::{err_kind, fixture};

/// JSON values biased toward what breaks parsers: huge and fractional numbers, long runs
/// of glob and regex metacharacters, control characters, deep nesting.
fn hostile_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        Just(json!(1.0)),
        Just(json!(1.5)),
        Just(json!(-0.0)),
        ".{0,40}".prop_map(Value::String),
        "[*?\\[\\]{}()\\\\/.a^$|+]{0,60}".prop_map(Value::String),
        (
            prop_oneof![
                Just("*"),
                Just("{"),
                Just("["),
                Just("("),
                Just("a|"),
                Just("**/"),
                Just("../"),
                Just("\n"),
                Just("\u{1b}[31m"),
            ],
            1usize..50_000
        )
            .prop_map(|(unit, n)| Value::String(unit.repeat(n))),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn every_tool_answers_arbitrary_arguments_with_a_result_or_an_error() {
    let f = fixture();
    f.write("a.txt", "one\ntwo\n");
    f.write("dir/b.rs", "fn main() {}\n");
    let tools = f.tools_and_parameters();
    assert!(tools.len() >= 8, "{tools:?}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cases = if std::env::var_os("CI").is_some() {
        4096
    } else {
        1024
    };
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    // Each parameter of the tool: absent, a plausible value of its type (so that calls
    // get past validation and run) or a hostile one; now and then an unknown extra key.
    let ws = f.ws().display().to_string();
    let strings = [
        "a.txt".to_string(),
        format!("{ws}/a.txt"),
        format!("{ws}/dir"),
        format!("{ws}/new.txt"),
        ws.clone(),
        "**/*.rs".to_string(),
        "one".to_string(),
        "fn".to_string(),
    ];
    let parameter = (
        0u8..10,
        0..strings.len(),
        0u64..5,
        any::<bool>(),
        hostile_value(),
    );
    let strategy = (
        0..tools.len(),
        prop::collection::vec(parameter, 8),
        prop::option::weighted(0.1, (".{0,6}", hostile_value())),
    );
    let built = std::cell::Cell::new(0u32);
    let executed = std::cell::Cell::new(0u32);
    runner
        .run(&strategy, |(tool, values, unknown)| {
            let (name, params) = &tools[tool];
            let mut args = serde_json::Map::new();
            for ((param, kind), (choice, s, n, b, hostile)) in params.iter().zip(values) {
                let value = match (choice, kind.as_str()) {
                    (0..=1, _) => continue,
                    (8..=9, _) => hostile,
                    (_, "integer" | "number") => json!(n),
                    (_, "boolean") => json!(b),
                    (_, "array") => json!([strings[s].clone()]),
                    (_, _) => json!(strings[s].clone()),
                };
                args.insert(param.clone(), value);
            }
            args.extend(unknown);
            let args = Value::Object(args);
            // Building validates the arguments; whatever is built is described and asked
            // about. It is executed unless it is the shell or a web tool: arbitrary
            // commands are not run, even in a temporary directory, and tests never reach
            // the network.
            if let Ok(call) = f.build(name, args) {
                built.set(built.get() + 1);
                let _ = call.describe();
                let _ = call.permission_subject();
                runtime.block_on(async {
                    let _ = call.confirmation().await;
                    if name != "run_shell_command" && !name.starts_with("web_") {
                        executed.set(executed.get() + 1);
                        let result = call
                            .execute(toolbelt_core::ExecContext::new(f.env.clone()))
                            .await;
                        let _ = result.llm_text();
                    }
                });
            }
            Ok(())
        })
        .unwrap();
    // The property means something only if many calls got past validation and ran.
    assert!(
        built.get() >= cases / 20,
        "only {} of {cases} built",
        built.get()
    );
    assert!(
        executed.get() >= cases / 25,
        "only {} of {cases} ran",
        executed.get()
    );
}

#[tokio::test]
async fn a_link_at_the_start_of_a_glob_does_not_lead_out_of_the_workspace() {
    let f = fixture();
    std::fs::write(f.outside().join("passwd"), "secret").unwrap();
    std::fs::create_dir(f.outside().join("deep")).unwrap();
    std::fs::write(f.outside().join("deep/passphrase"), "secret").unwrap();
    std::os::unix::fs::symlink(f.outside(), f.ws().join("etc_link")).unwrap();
    for pattern in [
        "etc_link/pass*",
        "etc_link/**",
        "etc_link/*/pass*",
        "./etc_link/**/*",
        "etc_link/../etc_link/*",
    ] {
        let r = f.call("glob", json!({ "pattern": pattern })).await;
        let text = r.llm_text();
        assert_eq!(
            err_kind(&r),
            Some(ErrorKind::PathNotInWorkspace),
            "{pattern}: {text}"
        );
        assert!(
            !text.contains("passwd") && !text.contains("passphrase"),
            "{text}"
        );
    }
    // A wildcard before the link: the walker does not follow links it meets.
    let r = f.call("glob", json!({"pattern": "*/pass*"})).await;
    assert!(!r.llm_text().contains("passwd"), "{}", r.llm_text());
    let r = f.call("glob", json!({"pattern": "**/pass*"})).await;
    assert!(!r.llm_text().contains("passwd"), "{}", r.llm_text());
}

#[tokio::test]
async fn numbers_at_the_edges_of_the_schemas() {
    let f = fixture();
    let file = f.write("a.txt", "one\ntwo\nthree\n");
    for (offset, ok) in [
        (json!(18_446_744_073_709_551_615u64), false),
        (json!(9_007_199_254_740_993u64), false),
        (json!(1.5), false),
        (json!(-1), false),
        (json!(1.0), true),
        (json!(1), true),
    ] {
        let r = f
            .call(
                "read_file",
                json!({"absolute_path": file, "offset": offset}),
            )
            .await;
        if ok {
            assert!(r.error.is_none(), "{offset}: {}", r.llm_text());
            assert!(r.llm_text().contains("two"), "{offset}: {}", r.llm_text());
            assert!(!r.llm_text().contains("one"), "{offset}: {}", r.llm_text());
        } else {
            assert_eq!(
                err_kind(&r),
                Some(ErrorKind::InvalidToolParams),
                "{offset}: {}",
                r.llm_text()
            );
            assert!(!r.llm_text().contains("from line 0"), "{}", r.llm_text());
        }
    }
}

#[tokio::test]
async fn read_many_files_says_a_pattern_above_the_root_is_outside_the_workspace() {
    let f = fixture();
    std::fs::write(f.outside().join("x.txt"), "secret").unwrap();
    for pattern in ["../*", "../outside/*.txt", "/etc/*"] {
        let r = f
            .call("read_many_files", json!({ "paths": [pattern] }))
            .await;
        let text = r.llm_text();
        assert!(text.contains("outside the workspace"), "{pattern}: {text}");
        assert!(!text.contains("secret"), "{pattern}: {text}");
    }
}

#[test]
fn tests_run_with_a_home_of_their_own() {
    // .cargo/config.toml's runner (scripts/test-runner.sh) points HOME and TOOLBELT_HOME
    // of every test process under target/: a test that forgets its own temporary home
    // still cannot touch the person's `~/.qwen` or `~/.toolbelt`.
    let home = std::path::PathBuf::from(std::env::var_os("HOME").unwrap());
    assert!(home.ends_with("target/test-home"), "{}", home.display());
    let toolbelt_home = std::path::PathBuf::from(std::env::var_os("TOOLBELT_HOME").unwrap());
    assert!(
        toolbelt_home.starts_with(&home),
        "{}",
        toolbelt_home.display()
    );
}

#[test]
fn cargo_run_keeps_the_persons_home() {
    // Only test binaries get the home under target/: the runner passes anything else
    // (`cargo run -p toolbelt -- ...`) the environment it was given. An `[env]` HOME in
    // .cargo/config.toml would reach `cargo run` too.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let config = std::fs::read_to_string(root.join(".cargo/config.toml")).unwrap();
    assert!(
        !config.lines().any(|l| l.trim_start().starts_with("HOME")),
        "{config}"
    );
    let dir = tempfile::tempdir().unwrap();
    let deps = dir.path().join("target/debug/deps");
    std::fs::create_dir_all(&deps).unwrap();
    std::fs::copy("/usr/bin/env", deps.join("env")).unwrap();
    let run = |program: &std::path::Path| {
        let out = std::process::Command::new(root.join("scripts/test-runner.sh"))
            .arg(program)
            .env("HOME", "/home/person")
            .env_remove("TOOLBELT_HOME")
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let binary = run(std::path::Path::new("/usr/bin/env"));
    assert!(binary.lines().any(|l| l == "HOME=/home/person"), "{binary}");
    assert!(!binary.contains("TOOLBELT_HOME="), "{binary}");
    let test = run(&deps.join("env"));
    assert!(
        test.lines()
            .any(|l| l.starts_with("HOME=") && l.ends_with("/target/test-home")),
        "{test}"
    );
}
