//! The read-only table: every line is a command, whether it may run without asking, and
//! why. The verdicts are checked one by one; a failure lists every wrong row.

use super::*;
use crate::shell::command_parse::parse;

/// `(command line, read-only?, why)`.
const CASES: &[(&str, bool, &str)] = &[
    // Plain readers.
    ("ls", true, "lists"),
    ("ls -la /tmp", true, "lists"),
    ("cat README.md", true, "prints a file"),
    ("head -n 5 a.txt", true, "prints a file"),
    ("tail -f log.txt", true, "prints a file"),
    ("wc -l *.rs", true, "counts"),
    ("nl a.txt", true, "numbers lines"),
    ("tac a.txt", true, "prints reversed"),
    ("cut -d: -f1 /etc/passwd", true, "prints fields"),
    ("basename a/b.txt", true, "prints a name"),
    ("dirname a/b.txt", true, "prints a name"),
    ("md5sum a.txt", true, "hashes"),
    ("sha256sum -c sums.txt", true, "checks hashes"),
    ("cmp a b", true, "compares"),
    ("comm a b", true, "compares"),
    ("diff -u a b", true, "compares"),
    ("column -t a.txt", true, "formats"),
    ("stat a.txt", true, "prints metadata"),
    ("file a.bin", true, "guesses a type"),
    ("readlink -f link", true, "resolves a link"),
    ("realpath .", true, "resolves a path"),
    ("pwd", true, "prints the directory"),
    ("echo hello", true, "prints"),
    ("printf '%s\\n' a b", true, "prints"),
    ("true", true, "does nothing"),
    ("false", true, "does nothing"),
    ("id", true, "prints ids"),
    ("whoami", true, "prints the user"),
    ("uname -a", true, "prints the system"),
    ("df -h", true, "prints disk use"),
    ("du -sh .", true, "prints disk use"),
    ("tree -L 2", true, "lists"),
    ("ps aux", true, "lists processes"),
    ("printenv HOME", true, "prints a variable"),
    ("env", true, "prints the environment"),
    ("which cargo", true, "finds a program"),
    ("type ls", true, "describes a command"),
    ("test -f a.txt", true, "tests"),
    ("[ -d src ]", true, "tests"),
    ("[[ -d src ]]", true, "tests"),
    ("jq .name package.json", true, "prints JSON"),
    ("base64 a.bin", true, "encodes to stdout"),
    ("od -c a.bin", true, "dumps"),
    ("strings a.bin", true, "prints strings"),
    ("tr a-z A-Z", true, "translates stdin"),
    ("seq 1 10", true, "prints numbers"),
    ("paste a b", true, "joins lines"),
    ("rev a.txt", true, "reverses lines"),
    ("fold -w 80 a.txt", true, "wraps lines"),
    ("expr 1 + 2", true, "computes"),
    ("nproc", true, "prints a count"),
    ("cd src", true, "changes the shell's directory only"),
    ("/usr/bin/ls -la", true, "ls in a system directory"),
    ("/bin/cat a.txt", true, "cat in a system directory"),
    ("\\ls", true, "an escaped name is still ls"),
    ("l\"s\" -la", true, "a quoted name is still ls"),
    // Pipes and lists of readers.
    ("ls | wc -l", true, "every part reads"),
    (
        "cat a.txt | grep x | sort | uniq -c",
        true,
        "every part reads",
    ),
    ("ls && pwd", true, "every part reads"),
    (
        "grep -rn TODO src 2>/dev/null",
        true,
        "/dev/null is not a file write",
    ),
    (
        "ls 2>&1 | head",
        true,
        "descriptor duplication writes nothing",
    ),
    // Search.
    ("grep -rn foo .", true, "searches"),
    (
        "grep -f patterns.txt a.txt",
        true,
        "reads patterns from a file",
    ),
    ("egrep 'a|b' a.txt", true, "searches"),
    ("rg foo", true, "searches"),
    ("rg -z foo", true, "decompresses with system programs"),
    (
        "rg --pre ./x foo",
        false,
        "--pre runs a program on every file",
    ),
    (
        "rg --pre=./x foo",
        false,
        "--pre runs a program on every file",
    ),
    (
        "rg --hostname-bin ./x foo",
        false,
        "--hostname-bin runs a program",
    ),
    ("find . -name '*.rs'", true, "lists"),
    ("find . -type f -newer a", true, "lists"),
    ("find . -exec rm {} ;", false, "-exec runs a program"),
    (
        "find . -execdir sh -c x ;",
        false,
        "-execdir runs a program",
    ),
    ("find . -ok rm {} ;", false, "-ok runs a program"),
    ("find . -okdir rm {} ;", false, "-okdir runs a program"),
    ("find . -delete", false, "-delete removes files"),
    ("find . -fprint out.txt", false, "-fprint writes a file"),
    (
        "find . -fprintf out.txt %p",
        false,
        "-fprintf writes a file",
    ),
    ("find . -fls out.txt", false, "-fls writes a file"),
    // sed and awk.
    ("sed -n 1,5p a.txt", true, "prints lines"),
    ("sed 's/a/b/g' a.txt", true, "substitutes to stdout"),
    (
        "sed -e 's/a/b/' -e 's/c/d/' a.txt",
        true,
        "substitutes to stdout",
    ),
    ("sed -i 's/a/b/' a.txt", false, "-i edits in place"),
    (
        "sed -ni 's/a/b/p' a.txt",
        false,
        "-i in a cluster edits in place",
    ),
    ("sed -i.bak 's/a/b/' a.txt", false, "-i edits in place"),
    (
        "sed --in-place 's/a/b/' a.txt",
        false,
        "--in-place edits in place",
    ),
    (
        "sed 's/a/b/w out.txt' a.txt",
        false,
        "the w flag writes a file",
    ),
    (
        "sed 'w out.txt' a.txt",
        false,
        "the w command writes a file",
    ),
    (
        "sed '1e touch x' a.txt",
        false,
        "the e command runs a program",
    ),
    (
        "sed 's/a/touch x/e' a.txt",
        false,
        "the e flag runs a program",
    ),
    (
        "sed -f script.sed a.txt",
        false,
        "a script file cannot be checked",
    ),
    (
        "sed -nf script.sed a.txt",
        false,
        "a script file cannot be checked",
    ),
    (
        "sed --file=script.sed a.txt",
        false,
        "a script file cannot be checked",
    ),
    ("awk '{print $1}' a.txt", true, "prints fields"),
    ("awk -F: '{print $1}' /etc/passwd", true, "prints fields"),
    (
        "awk 'BEGIN{system(\"touch x\")}'",
        false,
        "system() runs a program",
    ),
    ("awk '{print > \"out\"}' a.txt", false, "> writes a file"),
    ("awk '{print | \"sh\"}' a.txt", false, "| runs a program"),
    (
        "awk '{\"date\" | getline d}'",
        false,
        "getline from a command runs it",
    ),
    (
        "awk -f prog.awk a.txt",
        false,
        "a program file cannot be checked",
    ),
    (
        "awk -l ext '{print}'",
        false,
        "-l loads an extension library",
    ),
    (
        "gawk '@load \"x\"; {print}'",
        false,
        "@load loads an extension library",
    ),
    (
        "gawk -i inc.awk '{print}'",
        false,
        "-i includes a program file",
    ),
    // sort, uniq, tree, date, hostname, less, file.
    ("sort a.txt", true, "sorts to stdout"),
    ("sort -u -k2 a.txt", true, "sorts to stdout"),
    ("sort -o out.txt a.txt", false, "-o writes a file"),
    (
        "sort -uo out.txt a.txt",
        false,
        "-o in a cluster writes a file",
    ),
    (
        "sort --output=out.txt a.txt",
        false,
        "--output writes a file",
    ),
    (
        "sort --compress-program=./x a.txt",
        false,
        "--compress-program runs a program",
    ),
    ("uniq a.txt", true, "prints"),
    ("uniq -c a.txt", true, "prints"),
    ("uniq a.txt out.txt", false, "a second file is written"),
    ("tree -o out.txt", false, "-o writes a file"),
    ("date", true, "prints the time"),
    ("date +%Y-%m-%d", true, "prints the time"),
    ("date -u -d yesterday", true, "prints a time"),
    ("date -s 2020-01-01", false, "-s sets the clock"),
    ("date 010112002020", false, "a bare date sets the clock"),
    ("hostname", true, "prints the host name"),
    ("hostname -f", true, "prints the host name"),
    ("hostname evil", false, "a name sets the host name"),
    (
        "hostname -F name.txt",
        false,
        "-F sets the host name from a file",
    ),
    (
        "less a.txt",
        true,
        "pages (plain output without a terminal)",
    ),
    (
        "less +!touch\\ x a.txt",
        false,
        "+ runs a less command, ! a shell",
    ),
    ("less -o log.txt a.txt", false, "-o writes a log file"),
    (
        "less --log-file=log.txt a.txt",
        false,
        "--log-file writes a log file",
    ),
    (
        "less -k keys a.txt",
        false,
        "a lesskey file can redefine what less runs",
    ),
    ("more +10 a.txt", false, "+ runs a command"),
    (
        "file -C -m magic",
        false,
        "-C compiles a magic file, writing it",
    ),
    // The environment decides what runs.
    (
        "LESSOPEN='|touch x %s' less a.txt",
        false,
        "LESSOPEN runs a program",
    ),
    (
        "LD_PRELOAD=/tmp/x.so ls",
        false,
        "LD_PRELOAD loads code into ls",
    ),
    ("PAGER='touch x' git log", false, "PAGER names a program"),
    (
        "GIT_EXTERNAL_DIFF='touch x;:' git diff --ext-diff",
        false,
        "an environment prefix",
    ),
    (
        "GIT_EXTERNAL_DIFF=x git diff",
        false,
        "an environment prefix",
    ),
    ("LANG=C ls", false, "any environment prefix needs a person"),
    ("env ls", false, "env runs a command"),
    ("env -i sh -c x", false, "env runs a command"),
    // Programs that are not on the list, or not what they seem.
    ("./ls", false, "a workspace program named ls"),
    (
        "/tmp/x/cat a.txt",
        false,
        "a cat outside the system directories",
    ),
    ("$X a.txt", false, "the program is only known at run time"),
    ("rm a.txt", false, "removes a file"),
    ("touch a.txt", false, "creates a file"),
    ("mkdir d", false, "creates a directory"),
    ("cp a b", false, "writes a file"),
    ("mv a b", false, "moves a file"),
    ("chmod +x a", false, "changes a mode"),
    ("tee out.txt", false, "writes a file"),
    ("xargs rm", false, "runs a program"),
    ("sh -c 'ls'", false, "runs a shell"),
    ("bash script.sh", false, "runs a script"),
    ("python3 -c 'print(1)'", false, "runs a program"),
    ("node -e 1", false, "runs a program"),
    ("make", false, "runs a build"),
    ("cargo build", false, "runs a build"),
    ("npm test", false, "runs scripts"),
    ("curl https://example.com", false, "reaches the network"),
    ("sudo ls", false, "changes the user"),
    ("nohup ls", false, "a wrapper runs a program"),
    ("timeout 5 ls", false, "a wrapper runs a program"),
    ("xxd a.bin", false, "not on the list (xxd -r writes)"),
    // Lines that write or run in ways the parts do not show.
    ("ls > out.txt", false, "a redirection writes a file"),
    ("ls >> out.txt", false, "a redirection writes a file"),
    ("echo x &> out.txt", false, "a redirection writes a file"),
    ("cat <<< x > out.txt", false, "a redirection writes a file"),
    ("ls | tee out.txt", false, "tee writes a file"),
    ("ls $(rm -rf x)", false, "a substitution runs a command"),
    ("echo `touch x`", false, "a substitution runs a command"),
    (
        "diff <(ls a) <(ls b)",
        false,
        "a process substitution runs a command",
    ),
    ("ls && rm x", false, "one part writes"),
    ("ls; touch x", false, "one part writes"),
    ("ls 'unterminated", false, "a line that does not parse"),
    (
        "cd /tmp && git status",
        false,
        "git in another directory than the one checked",
    ),
    // git: subcommands.
    (
        "git status",
        true,
        "reads (repository configuration checked separately)",
    ),
    ("git status --short", true, "reads"),
    ("git diff", true, "reads"),
    ("git diff --stat HEAD~1", true, "reads"),
    ("git log --oneline -5", true, "reads"),
    ("git show HEAD", true, "reads"),
    ("git blame src/main.rs", true, "reads"),
    ("git grep -n foo", true, "searches"),
    ("git ls-files", true, "lists"),
    ("git ls-tree HEAD", true, "lists"),
    ("git rev-parse HEAD", true, "prints an id"),
    ("git describe --tags", true, "prints a name"),
    ("git merge-base main HEAD", true, "prints an id"),
    ("git rev-list --count HEAD", true, "counts"),
    ("git shortlog -sn", true, "summarises"),
    ("git show-ref", true, "lists"),
    ("git cat-file -p HEAD", true, "prints an object"),
    ("git branch", true, "lists branches"),
    ("git branch -a -v", true, "lists branches"),
    ("git branch --list 'feat*'", true, "lists branches"),
    ("git branch new", false, "creates a branch"),
    ("git branch -D old", false, "deletes a branch"),
    ("git tag", true, "lists tags"),
    ("git tag -l 'v1*'", true, "lists tags"),
    ("git tag v1.0", false, "creates a tag"),
    ("git tag -d v1.0", false, "deletes a tag"),
    ("git remote -v", true, "lists remotes"),
    ("git remote add x url", false, "adds a remote"),
    ("git reflog", true, "lists"),
    ("git reflog expire --all", false, "rewrites the reflog"),
    ("git config --get user.name", true, "reads a value"),
    ("git config --list", true, "lists values"),
    ("git config user.name x", false, "sets a value"),
    ("git config --unset user.name", false, "removes a value"),
    ("git --no-pager log", true, "no pager"),
    ("git", true, "prints help"),
    ("git commit -m x", false, "writes"),
    ("git push", false, "publishes"),
    ("git checkout main", false, "changes files"),
    ("git stash", false, "changes files"),
    ("git fetch", false, "reaches the network"),
    ("git help log", false, "may open a browser or man page"),
    // git: options that run programs, write files or look elsewhere.
    (
        "git grep -O\"touch x\" keep",
        false,
        "-O opens files in a pager it runs",
    ),
    (
        "git grep --open-files-in-pager=vi x",
        false,
        "opens files in a program",
    ),
    (
        "git diff --ext-diff",
        false,
        "--ext-diff runs the external diff program",
    ),
    (
        "git log -p --ext-diff",
        false,
        "--ext-diff runs the external diff program",
    ),
    (
        "git diff --textconv",
        false,
        "--textconv runs conversion filters",
    ),
    (
        "git cat-file --textconv HEAD:a",
        false,
        "--textconv runs conversion filters",
    ),
    (
        "git cat-file --filters HEAD:a",
        false,
        "--filters runs filters",
    ),
    ("git diff --output=out.txt", false, "--output writes a file"),
    ("git log --output=out.txt", false, "--output writes a file"),
    (
        "git -c core.pager='touch x' log",
        false,
        "-c can name a program",
    ),
    (
        "git -c core.fsmonitor=x status",
        false,
        "-c can name a program",
    ),
    (
        "git --config-env=core.pager=X log",
        false,
        "--config-env can name a program",
    ),
    (
        "git -C /tmp status",
        false,
        "another repository, not checked",
    ),
    (
        "git --git-dir=/tmp/x/.git log",
        false,
        "another repository, not checked",
    ),
    ("git --work-tree=/tmp status", false, "another work tree"),
    ("git -p log", false, "-p asks for a pager"),
    (
        "git --exec-path=/tmp/x status",
        false,
        "--exec-path changes which programs git runs",
    ),
    (
        "git ls-remote --upload-pack=x origin",
        false,
        "--upload-pack runs a program",
    ),
];

#[test]
fn the_read_only_table_holds() {
    let mut failures = Vec::new();
    for (line, want, why) in CASES {
        let got = is_line_read_only(&parse(line));
        if got != *want {
            failures.push(format!(
                "{line:?}: want {}, got {} ({why})",
                if *want { "read-only" } else { "confirm" },
                if got { "read-only" } else { "confirm" }
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
    assert!(CASES.len() >= 150, "{} cases", CASES.len());
    assert!(CASES.iter().filter(|c| c.1).count() >= 60);
    assert!(CASES.iter().filter(|c| !c.1).count() >= 90);
}

fn config(entries: &[(&str, &str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (scope, key, value) in entries {
        out.extend_from_slice(format!("{scope}\0{key}\n{value}\0").as_bytes());
    }
    out
}

#[test]
fn repository_configuration_is_inert_only_with_inert_keys() {
    let plain = [
        ("global", "user.name", "A"),
        ("global", "core.pager", "less"),
        ("local", "core.repositoryformatversion", "0"),
        ("local", "core.bare", "false"),
        ("local", "remote.origin.url", "https://x/y.git"),
        (
            "local",
            "remote.my.fork.fetch",
            "+refs/heads/*:refs/remotes/x/*",
        ),
        ("local", "branch.main.remote", "origin"),
        ("local", "core.hooksPath", ".husky"),
        ("local", "commit.gpgsign", "true"),
    ];
    assert!(git_config_is_inert(&config(&plain)));
    for (key, value) in [
        ("core.fsmonitor", "touch x"),
        ("core.pager", "touch x"),
        ("diff.external", "touch x"),
        ("diff.bin.textconv", "touch x"),
        ("diff.bin.command", "touch x"),
        ("filter.x.clean", "touch x"),
        ("include.path", "/tmp/x"),
        ("gpg.program", "touch x"),
        ("pager.log", "touch x"),
        ("CORE.FSMONITOR", "touch x"),
        ("remote..url", "x"),
    ] {
        let mut entries = plain.to_vec();
        entries.push(("local", key, value));
        assert!(!git_config_is_inert(&config(&entries)), "{key}");
        entries.pop();
        entries.push(("worktree", key, value));
        assert!(!git_config_is_inert(&config(&entries)), "{key} (worktree)");
        entries.pop();
        // The person's own configuration is theirs.
        entries.push(("global", key, value));
        assert!(git_config_is_inert(&config(&entries)), "{key} (global)");
    }
    assert!(!git_config_is_inert(b"local\0"));
    assert!(!git_config_is_inert(&[0xff, 0xfe]));
    assert!(git_config_is_inert(b""));
}
