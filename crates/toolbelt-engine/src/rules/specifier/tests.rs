use std::path::{Path, PathBuf};

use super::*;

/// `(pattern, command, matches)`.
const COMMAND_CASES: &[(&str, &str, bool)] = &[
    ("*", "anything at all", true),
    ("git", "git", true),
    ("git", "git status", true),
    ("git", "gitk", false),
    ("git status", "git status --short", true),
    ("git status", "git stash", false),
    ("git *", "git", true),
    ("git *", "git push origin main", true),
    ("git *", "gitk --all", false),
    ("ls *", "lsof -i", false),
    ("ls*", "lsof -i", true),
    ("ls*", "ls", true),
    ("npm run *", "npm run build", true),
    ("npm run *", "npm install", false),
    ("* --version", "cargo --version", true),
    ("* --version", "cargo --help", false),
    ("git * main", "git push origin main", true),
    ("git * main", "git push origin dev", false),
    ("rm -rf *", "rm -rf /", true),
    ("rm", "FOO=1 rm x", true),
    ("rm *", "A=1 B='x y' rm -f z", true),
    ("rm", "rmdir x", false),
    ("echo", "echo   spaced    out", true),
    ("git commit *", "git commit -m \"fix bug\"", true),
    ("curl *example.com*", "curl -s https://example.com/x", true),
];

#[test]
fn command_globs_follow_qwen_semantics() {
    for (pattern, command, want) in COMMAND_CASES {
        assert_eq!(
            command_matches(pattern, command),
            *want,
            "pattern {pattern:?} against {command:?}"
        );
    }
}

#[test]
fn assignments_are_stripped_with_quoted_values() {
    assert_eq!(strip_assignments("A=1 B=\"x y\" C='z w' cmd a"), "cmd a");
    assert_eq!(strip_assignments("cmd A=1"), "cmd A=1");
    assert_eq!(strip_assignments("=x cmd"), "=x cmd");
    assert_eq!(strip_assignments("A=1"), "A=1");
}

fn base() -> RuleBase {
    RuleBase {
        project_root: Some(PathBuf::from("/proj")),
        cwd: Some(PathBuf::from("/proj/sub")),
        home: Some(PathBuf::from("/home/me")),
        relocated: None,
    }
}

#[test]
fn relocated_path_specifiers_name_the_same_places_in_the_worktree() {
    let wt = "/proj/.qwen/worktrees/agent-1234567";
    let mut base = base();
    base.relocated = Some(Relocation {
        from: PathBuf::from("/proj"),
        to: PathBuf::from(wt),
    });
    let cases = [
        ("/secrets/**", "secrets/key", true),
        ("./notes.txt", "sub/notes.txt", true),
        (".env", "sub/deep/.env", true),
        ("//proj/private", "private/a", true),
        ("/secrets/**", "public/a", false),
    ];
    for (spec, rel, want) in cases {
        let in_worktree = PathBuf::from(wt).join(rel);
        let in_checkout = PathBuf::from("/proj").join(rel);
        assert_eq!(
            path_matches(spec, &in_worktree, &base),
            want,
            "{spec} {rel}"
        );
        assert_eq!(
            path_matches(spec, &in_checkout, &base),
            want,
            "{spec} {rel}"
        );
        // Without the relocation, the worktree's copy is another place.
        assert!(
            !path_matches(spec, &in_worktree, &self::base()),
            "{spec} {rel}"
        );
    }
    // Places outside the checkout do not move.
    assert!(path_matches("~/.ssh", Path::new("/home/me/.ssh/id"), &base));
    assert!(!path_matches(
        "~/.ssh",
        Path::new("/proj/.qwen/worktrees/agent-1234567/home/me/.ssh"),
        &base
    ));
}

/// `(pattern, path, matches)`.
const PATH_CASES: &[(&str, &str, bool)] = &[
    ("//etc/**", "/etc/passwd", true),
    ("//etc/*", "/etc/ssl/cert.pem", false),
    ("//etc/**", "/etcetera/x", false),
    ("~/.ssh/**", "/home/me/.ssh/id_rsa", true),
    ("~/.ssh/**", "/home/other/.ssh/id_rsa", false),
    ("/src/**", "/proj/src/main.rs", true),
    ("/src/**", "/proj/sub/src/main.rs", false),
    ("/src", "/proj/src/deep/x.rs", true),
    ("./docs/*.md", "/proj/sub/docs/a.md", true),
    ("docs/*.md", "/proj/sub/docs/a.md", true),
    ("docs/*.md", "/proj/docs/a.md", false),
    ("*.env", "/proj/sub/deep/prod.env", true),
    ("*.env", "/proj/other/prod.env", false),
    ("**/.env", "/proj/sub/.env", true),
    ("//tmp/*.log", "/tmp/a.log", true),
    ("//tmp/*.log", "/tmp/a/b.log", false),
];

#[test]
fn path_globs_are_anchored_by_their_prefix() {
    let base = base();
    for (pattern, path, want) in PATH_CASES {
        assert_eq!(
            path_matches(pattern, Path::new(path), &base),
            *want,
            "pattern {pattern:?} against {path:?}"
        );
    }
}

#[test]
fn path_globs_escape_the_base() {
    let base = RuleBase {
        project_root: Some(PathBuf::from("/we[ird]")),
        cwd: Some(PathBuf::from("/we[ird]")),
        home: None,
        relocated: None,
    };
    assert!(path_matches("/a.txt", Path::new("/we[ird]/a.txt"), &base));
    assert!(!path_matches("/a.txt", Path::new("/wei/a.txt"), &base));
    assert!(!path_matches("~/x", Path::new("/x"), &base), "no home");
}

#[test]
fn domains_cover_subdomains_only() {
    for (spec, host, want) in [
        ("domain:example.com", "example.com", true),
        ("domain:example.com", "api.example.com", true),
        ("domain:example.com", "badexample.com", false),
        ("example.com", "EXAMPLE.com.", true),
        ("*.example.com", "a.b.example.com", true),
        ("domain:", "example.com", false),
        ("domain:example.com", "example.org", false),
    ] {
        assert_eq!(
            domain_matches(spec, host),
            want,
            "{spec:?} against {host:?}"
        );
    }
}
