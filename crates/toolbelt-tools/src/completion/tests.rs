use toolbelt_engine::rules::RuleList;

use super::*;
use crate::test_support::fixture_with_rules;

#[test]
fn the_index_holds_what_the_file_tools_would_walk() {
    let fx = fixture_with_rules(&[(RuleList::Deny, "read_file(/secret/**)")]);
    fx.write(".gitignore", "target/\n*.log\n");
    fx.write("src/main.rs", "");
    fx.write("src/lib/mod.rs", "");
    fx.write("target/debug/app", "");
    fx.write("build.log", "");
    fx.write(".github/workflows/ci.yml", "");
    fx.write(".git/config", "");
    fx.write("secret/key.pem", "");
    fx.write("README.md", "");
    std::os::unix::fs::symlink(fx.outside(), fx.ws().join("out")).unwrap();
    std::fs::write(fx.outside().join("elsewhere.txt"), "").unwrap();
    // `secret/` itself is listed (the rule covers what is under it), its files are not.
    let index = PathIndex::build(&fx.env);
    assert_eq!(
        index.paths(),
        [
            ".github/",
            ".github/workflows/",
            ".github/workflows/ci.yml",
            ".gitignore",
            "README.md",
            "secret/",
            "src/",
            "src/lib/",
            "src/lib/mod.rs",
            "src/main.rs",
        ]
    );
    assert!(!index.truncated());
}

#[test]
fn candidates_rank_prefix_then_file_name_then_substring_then_fuzzy() {
    let index = PathIndex::from_paths(
        [
            "src/main.rs",
            "src/mainframe/x.rs",
            "docs/main.md",
            "tests/domain_test.rs",
            "crates/m/a/i/n.rs",
            "Makefile",
            "other.txt",
        ]
        .map(String::from)
        .to_vec(),
    );
    assert_eq!(
        index.complete("main", 10),
        [
            "src/main.rs",
            "docs/main.md",
            "src/mainframe/x.rs",
            "tests/domain_test.rs",
            "crates/m/a/i/n.rs",
        ]
    );
    assert_eq!(
        index.complete("src/ma", 10),
        ["src/main.rs", "src/mainframe/x.rs"]
    );
    assert_eq!(index.complete("main", 2), ["src/main.rs", "docs/main.md"]);
    // Upper case makes the match case-sensitive.
    assert_eq!(index.complete("Make", 10), ["Makefile"]);
    assert_eq!(index.complete("make", 10), ["Makefile"]);
    assert!(index.complete("MAIN", 10).is_empty());
    assert!(index.complete("zzz", 10).is_empty());
    assert_eq!(index.complete("", 3).len(), 3);
}

#[test]
fn a_large_list_is_ranked_within_the_limit() {
    let paths: Vec<String> = (0..50_000)
        .map(|i| format!("pkg{}/module{}/file{i}.rs", i % 97, i % 13))
        .collect();
    let index = PathIndex::from_paths(paths);
    let found = index.complete("file4999", 5);
    assert_eq!(found.len(), 5);
    assert!(found[0].ends_with("/file4999.rs"), "{found:?}");
    assert!(found.iter().all(|p| p.contains("file4999")), "{found:?}");
}
