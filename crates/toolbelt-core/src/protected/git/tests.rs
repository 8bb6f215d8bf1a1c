use super::*;

/// A work tree with `.git/config` holding `config`; its resolved top.
fn repository(config: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(top.join(".git")).unwrap();
    std::fs::write(top.join(".git/config"), config).unwrap();
    (dir, top)
}

fn label(top: &Path, rel: &str) -> Option<String> {
    protection(&top.join(rel)).map(|p| format!("{} [{}]", p.label, p.marker))
}

#[test]
fn the_configured_hooks_directory_is_protected_wherever_it_is() {
    let (_d, top) = repository("[core]\n\trepositoryformatversion = 0\n\thooksPath = .githooks\n");
    assert_eq!(
        label(&top, ".githooks/pre-commit").as_deref(),
        Some("git hooks [.githooks]")
    );
    assert_eq!(label(&top, "src/main.rs"), None);
    assert_eq!(label(&top, ".githooks2/x"), None);
    // husky's `.husky/_` runs the scripts of `.husky`.
    let (_d, top) = repository("[core]\nhookspath=.husky/_\n");
    assert_eq!(
        label(&top, ".husky/pre-commit").as_deref(),
        Some("git hooks [.husky]")
    );
    // A file in a sub-directory of the work tree is judged by the repository above it.
    let (_d, top) = repository("[CORE]\n  HooksPath = \"tools/git hooks\" ; comment\n");
    assert_eq!(
        label(&top, "tools/git hooks/post-checkout").as_deref(),
        Some("git hooks [git hooks]")
    );
}

#[test]
fn files_the_configuration_runs_are_protected() {
    let config = "[core]\n\tfsmonitor = ./tools/watch.sh\n\
        [diff \"pdf\"]\n\ttextconv = sh scripts/pdf2txt.sh\n\
        [filter \"crypt\"]\n\tclean = \"./scripts/clean --in-place\"\n\tsmudge = cat\n\
        [merge \"ours\"]\n\tdriver = scripts/merge.py %O %A %B\n\
        [alias]\n\tup = !bin/up.sh --fast\n";
    let (_d, top) = repository(config);
    for (file, key) in [
        ("tools/watch.sh", "core.fsmonitor"),
        ("scripts/pdf2txt.sh", "diff.pdf.textconv"),
        ("scripts/clean", "filter.crypt.clean"),
        ("scripts/merge.py", "merge.ours.driver"),
        ("bin/up.sh", "alias.up"),
    ] {
        let p = protection(&top.join(file)).unwrap_or_else(|| panic!("{file}"));
        assert_eq!(p.label, "a program git runs", "{file}");
        assert!(p.why.contains(key), "{file}: {}", p.why);
    }
    for file in ["scripts/other.sh", "README.md", "%O"] {
        assert_eq!(label(&top, file), None, "{file}");
    }
    // `core.fsmonitor = true` is git's own daemon.
    let (_d, top) = repository("[core]\n\tfsmonitor = true\n");
    assert_eq!(label(&top, "true"), None);
}

#[test]
fn includes_linked_work_trees_and_the_persons_configuration_are_read() {
    let (_d, top) = repository("[include]\n\tpath = more.config\n");
    std::fs::write(top.join(".git/more.config"), "[core]\nhooksPath = hooks2\n").unwrap();
    assert_eq!(
        label(&top, "hooks2/pre-push").as_deref(),
        Some("git hooks [hooks2]")
    );

    // A linked work tree: `.git` is a file naming the repository directory, whose
    // `commondir` holds the shared configuration.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let main_git = root.join("main/.git");
    std::fs::create_dir_all(main_git.join("worktrees/wt")).unwrap();
    std::fs::write(main_git.join("config"), "[core]\nhooksPath = .hooks\n").unwrap();
    std::fs::write(main_git.join("worktrees/wt/commondir"), "../..\n").unwrap();
    std::fs::create_dir_all(root.join("wt")).unwrap();
    let gitdir = format!("gitdir: {}\n", main_git.join("worktrees/wt").display());
    std::fs::write(root.join("wt/.git"), gitdir).unwrap();
    assert_eq!(
        label(&root, "wt/.hooks/pre-commit").as_deref(),
        Some("git hooks [.hooks]")
    );

    // The person's global configuration names a driver by a path in the project.
    let (_d, top) = repository("[core]\n\tbare = false\n");
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".gitconfig"),
        "[diff \"x\"]\n\ttextconv = scripts/conv.sh\n",
    )
    .unwrap();
    let found = repository_protection(&top, Some(home.path()), &top.join("scripts/conv.sh"));
    assert!(found.is_some_and(|p| p.why.contains("diff.x.textconv")));
}

#[test]
fn the_reader_follows_git_syntax_and_bounds() {
    let entries = parse(
        "# c\n[core] editor = vim\n[Diff \"My Driver\"]\n\tTextConv = \"a b\" \\\n  c # x\n\
         [branch.Main]\n\tremote\n[bad\n",
    );
    assert_eq!(
        entries,
        [
            ("core.editor".to_string(), "vim".to_string()),
            ("diff.My Driver.textconv".to_string(), "a b   c".to_string()),
            ("branch.Main.remote".to_string(), "true".to_string()),
        ]
    );
    assert!(key_matches("diff.*.textconv", "diff.a.b.textconv"));
    assert!(!key_matches("diff.*.textconv", "diff.textconv"));
    assert!(key_matches("alias.*", "alias.st"));
    assert!(!key_matches("core.pager", "core.pagerx"));
    assert_eq!(
        command_words("!sh 'x y.sh' --f $HOME/a;b"),
        ["sh", "x y.sh", "b"]
    );
    // A configuration that includes itself is read a bounded number of times.
    let (_d, top) = repository("[include]\n\tpath = config\n[core]\nhooksPath = h\n");
    assert_eq!(label(&top, "h/x").as_deref(), Some("git hooks [h]"));
}
