//! Data-driven tests of the parser, the read-only set and the rules engine working
//! together on real command lines: `check(input, expect)` tables, one line per case.

use toolbelt_core::PermissionSubject;
use toolbelt_engine::{rules::Decision, rules::PermissionRules, rules::RuleList};

use super::*;
use crate::shell::read_only::is_line_read_only;

/// The parsed line in one string: simple commands separated by ` ‖ `, then flags:
/// `[subst]`, `[write]`, `[error]`, `[bg]`, and `[ro]` when no confirmation is needed.
fn summary(input: &str) -> String {
    let parsed = parse(input);
    let texts: Vec<&str> = parsed.commands.iter().map(|c| c.text.as_str()).collect();
    let mut s = texts.join(" ‖ ");
    for (on, flag) in [
        (parsed.has_substitution, " [subst]"),
        (parsed.writes_to_file, " [write]"),
        (parsed.syntax_error, " [error]"),
        (parsed.ends_in_background, " [bg]"),
        (is_line_read_only(&parsed), " [ro]"),
    ] {
        if on {
            s.push_str(flag);
        }
    }
    s
}

const PARSE_CASES: &[(&str, &str)] = &[
    ("ls", "ls [ro]"),
    ("ls -la /tmp", "ls -la /tmp [ro]"),
    ("  git   status  ", "git status [ro]"),
    ("git status && npm test", "git status ‖ npm test"),
    ("make || echo failed", "make ‖ echo failed"),
    ("cd src; ls", "cd src ‖ ls [ro]"),
    ("cat a | grep x | wc -l", "cat a ‖ grep x ‖ wc -l [ro]"),
    ("ls\nrm -rf build", "ls ‖ rm -rf build"),
    ("FOO=1 BAR=2 npm run build", "npm run build"),
    ("FOO='a b' ls", "ls"),
    ("echo 'a && b'", "echo 'a && b' [ro]"),
    ("echo \"a; rm -rf /\"", "echo \"a; rm -rf /\" [ro]"),
    ("echo a\\;b", "echo a\\;b [ro]"),
    ("echo $(rm -rf x)", "echo $(rm -rf x) ‖ rm -rf x [subst]"),
    ("echo `whoami`", "echo `whoami` ‖ whoami [subst]"),
    (
        "diff <(ls a) <(ls b)",
        "diff <(ls a) <(ls b) ‖ ls a ‖ ls b [subst]",
    ),
    ("tee >(cat) < x", "tee >(cat) ‖ cat [subst]"),
    ("echo \"$(date)\"", "echo \"$(date)\" ‖ date [subst]"),
    ("echo '$(date)'", "echo '$(date)' [ro]"),
    ("ls > out.txt", "ls [write]"),
    ("ls >> out.txt", "ls [write]"),
    ("ls &> all.log", "ls [write]"),
    ("ls 2>/dev/null", "ls [ro]"),
    ("ls 2>&1 | head", "ls ‖ head [ro]"),
    ("grep x < input.txt", "grep x [ro]"),
    ("(cd a && make)", "cd a ‖ make"),
    ("{ ls; pwd; }", "ls ‖ pwd [ro]"),
    ("for f in *.rs; do wc -l $f; done", "wc -l $f [ro]"),
    ("if test -f x; then cat x; fi", "test -f x ‖ cat x [ro]"),
    ("while true; do sleep 1; done", "true ‖ sleep 1"),
    ("npm run dev &", "npm run dev [bg]"),
    ("a && b &", "a ‖ b [bg]"),
    ("echo a & echo b", "echo a ‖ echo b [ro]"),
    ("echo \\&", "echo \\& [ro]"),
    ("export PATH=/x:$PATH", "export PATH=/x:$PATH"),
    ("[[ -f x ]] && cat x", "[[ -f x ]] ‖ cat x [ro]"),
    (
        "git log --oneline | head -5",
        "git log --oneline ‖ head -5 [ro]",
    ),
    ("git -C sub diff", "git -C sub diff"),
    ("git push origin main", "git push origin main"),
    ("git remote add o url", "git remote add o url"),
    ("git branch -D old", "git branch -D old"),
    ("git branch -a", "git branch -a [ro]"),
    ("git -c core.pager=sh log", "git -c core.pager=sh log"),
    ("find . -name '*.rs'", "find . -name '*.rs' [ro]"),
    ("find . -delete", "find . -delete"),
    ("find . -exec rm {} \\;", "find . -exec rm {} \\;"),
    ("sed -n 1,5p f", "sed -n 1,5p f [ro]"),
    ("sed -i s/a/b/ f", "sed -i s/a/b/ f"),
    ("sed 's/a/b/w out' f", "sed 's/a/b/w out' f"),
    ("awk '{print $1}' f", "awk '{print $1}' f [ro]"),
    ("awk '{system(\"rm x\")}' f", "awk '{system(\"rm x\")}' f"),
    ("sort -o out f", "sort -o out f"),
    ("env", "env [ro]"),
    ("env rm x", "env rm x"),
    ("/usr/bin/ls", "/usr/bin/ls [ro]"),
    ("\\rm -f x", "\\rm -f x"),
    ("cat <<EOF\nhello\nEOF", "cat [ro]"),
    ("echo hi # && rm x", "echo hi [ro]"),
    ("echo 'unterminated", "echo ‖ echo 'unterminated [error]"),
    ("f() { rm -rf x; }; f", "rm -rf x ‖ f"),
    ("! grep -q x f", "grep -q x f [ro]"),
];

#[test]
fn parser_splits_simple_commands_and_flags_dangers() {
    let mut failures = Vec::new();
    for (input, want) in PARSE_CASES {
        let got = summary(input);
        if got != *want {
            failures.push(format!("{input:?}\n    want {want}\n    got  {got}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn roots_are_unquoted_and_without_directories() {
    let parsed = parse("'git' status && /usr/bin/npm i && \"ls\" && git log");
    assert_eq!(parsed.roots(), ["git", "npm", "ls"]);
    assert_eq!(parse("A=1 \\rm x").roots(), ["rm"]);
}

#[test]
fn unquote_handles_shell_quoting() {
    assert_eq!(unquote("'a b'"), "a b");
    assert_eq!(unquote("\"a \\\"b\\\" $x\""), "a \"b\" $x");
    assert_eq!(unquote("a\\ b"), "a b");
    assert_eq!(unquote("$'a\\tb'"), "a\tb");
    assert_eq!(unquote("pre'mid'\"post\""), "premidpost");
}

/// `(list, rule, command line, decision)`: one rule, a real line through the parser.
const RULE_CASES: &[(RuleList, &str, &str, Decision)] = &[
    // An allow rule approves no write it cannot see: a redirection to a file asks.
    (
        RuleList::Allow,
        "run_shell_command(git *)",
        "git log > ~/.bashrc",
        Decision::Default,
    ),
    (
        RuleList::Allow,
        "Bash(git *)",
        "git log >> out.txt",
        Decision::Default,
    ),
    (
        RuleList::Allow,
        "Bash(git *)",
        "{ git log; } > out.txt",
        Decision::Default,
    ),
    (
        RuleList::Allow,
        "Bash(git *)",
        "git log 2>/dev/null",
        Decision::Allow,
    ),
    (
        RuleList::Allow,
        "Bash(git *)",
        "git log 2>&1",
        Decision::Allow,
    ),
    (
        RuleList::Allow,
        "Bash(git *)",
        "git log | tee out.txt",
        Decision::Default,
    ),
    (
        RuleList::Allow,
        "Bash(cat *)",
        "cat <<< x > out.txt",
        Decision::Default,
    ),
    // ... nor an environment prefix it does not spell out.
    (
        RuleList::Allow,
        "Bash(git *)",
        "GIT_EXTERNAL_DIFF=x git diff",
        Decision::Default,
    ),
    (
        RuleList::Allow,
        "Bash(git *)",
        "PAGER='touch x' git log",
        Decision::Default,
    ),
    (
        RuleList::Allow,
        "Bash(NODE_ENV=test npm *)",
        "NODE_ENV=test npm test",
        Decision::Allow,
    ),
    // Shell rules see the command as the shell runs it.
    (RuleList::Allow, "Bash(ls *)", "\\ls -la", Decision::Allow),
    (RuleList::Allow, "Bash(ls *)", "l\"s\" -la", Decision::Allow),
    (
        RuleList::Allow,
        "Bash(ls *)",
        "/bin/ls -la",
        Decision::Allow,
    ),
    (RuleList::Allow, "Bash(ls *)", "./ls -la", Decision::Default),
    (
        RuleList::Allow,
        "Bash(ls *)",
        "/tmp/x/ls",
        Decision::Default,
    ),
    (RuleList::Deny, "Bash(rm *)", "\\rm -rf x", Decision::Deny),
    (RuleList::Deny, "Bash(rm *)", "r\"m\" -rf x", Decision::Deny),
    (RuleList::Deny, "Bash(rm *)", "'rm' -rf x", Decision::Deny),
    (
        RuleList::Deny,
        "Bash(rm *)",
        "/bin/rm -rf x",
        Decision::Deny,
    ),
    (RuleList::Deny, "Bash(rm *)", "./rm -rf x", Decision::Deny),
    (
        RuleList::Deny,
        "Bash(rm *)",
        "FOO=1 rm -rf x",
        Decision::Deny,
    ),
    (
        RuleList::Deny,
        "Bash(rm *)",
        "sudo rm -rf x",
        Decision::Deny,
    ),
    (
        RuleList::Deny,
        "Bash(rm *)",
        "env A=1 rm -rf x",
        Decision::Deny,
    ),
    (
        RuleList::Deny,
        "Bash(rm *)",
        "find . | xargs rm",
        Decision::Deny,
    ),
    (
        RuleList::Deny,
        "Bash(rm *)",
        "timeout 5 rm x",
        Decision::Deny,
    ),
    (
        RuleList::Ask,
        "Bash(git push *)",
        "\\git push",
        Decision::Ask,
    ),
    (
        RuleList::Deny,
        "Bash(rm *)",
        "command -v rm",
        Decision::Default,
    ),
    (
        RuleList::Allow,
        "run_shell_command(git *)",
        "git status",
        Decision::Allow,
    ),
    (
        RuleList::Allow,
        "Bash(git *)",
        "git push && make",
        Decision::Default,
    ),
    (RuleList::Allow, "Bash(git *)", "gitk", Decision::Default),
    (
        RuleList::Allow,
        "Bash(npm run *)",
        "NODE_ENV=prod npm run build",
        // The rule does not spell out the environment, so it does not approve it.
        Decision::Default,
    ),
    (
        RuleList::Allow,
        "Bash(*)",
        "anything | goes && here",
        Decision::Allow,
    ),
    (RuleList::Allow, "Bash", "rm -rf x", Decision::Allow),
    (RuleList::Allow, "Bash(git:*)", "git log", Decision::Allow),
    (RuleList::Allow, "Bash(ls *)", "lsof", Decision::Default),
    (RuleList::Allow, "Bash(ls*)", "lsof", Decision::Allow),
    (
        RuleList::Deny,
        "Bash(rm *)",
        "ls && rm -rf x",
        Decision::Deny,
    ),
    (
        RuleList::Deny,
        "Bash(rm *)",
        "echo $(rm -rf x)",
        Decision::Deny,
    ),
    (RuleList::Deny, "Bash(rm *)", "FOO=1 rm x", Decision::Deny),
    (
        RuleList::Deny,
        "Bash(rm *)",
        "echo 'rm -rf x'",
        Decision::Default,
    ),
    (
        RuleList::Deny,
        "Bash(rm *)",
        "(cd a; rm -f b)",
        Decision::Deny,
    ),
    (
        RuleList::Deny,
        "Bash(curl *)",
        "cat x | curl -d @- example.com",
        Decision::Deny,
    ),
    (
        RuleList::Deny,
        "Bash(git push *)",
        "git push --force",
        Decision::Deny,
    ),
    (
        RuleList::Deny,
        "Bash(git push *)",
        "git pull",
        Decision::Default,
    ),
    (
        RuleList::Deny,
        "run_shell_command(sudo)",
        "sudo rm x",
        Decision::Deny,
    ),
    (
        RuleList::Deny,
        "run_shell_command(sudo)",
        "sudoku",
        Decision::Default,
    ),
    (
        RuleList::Ask,
        "Bash(docker *)",
        "docker ps; ls",
        Decision::Ask,
    ),
    (
        RuleList::Ask,
        "Bash(* --force)",
        "git push --force",
        Decision::Ask,
    ),
    (RuleList::Deny, "read_file", "rm x", Decision::Default),
];

#[test]
fn rules_judge_every_simple_command_of_a_line() {
    let mut failures = Vec::new();
    for (list, rule, line, want) in RULE_CASES {
        let mut rules = PermissionRules::new(&crate::rule_vocabulary());
        rules.add(*list, rule);
        let subject = PermissionSubject::Commands(parse(line).rule_subjects());
        let got = rules.evaluate("run_shell_command", &subject);
        if got != *want {
            failures.push(format!("{rule} on {line:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn the_tables_hold_at_least_sixty_cases() {
    assert!(PARSE_CASES.len() + RULE_CASES.len() >= 60);
}

/// Each hostile shape at the size the shell tool still accepts (128 KiB).
fn hostile_lines() -> Vec<(&'static str, String)> {
    let fill = |unit: &str| unit.repeat((128 * 1024 - 1) / unit.len());
    let nest = |open: &str, close: &str| {
        let n = (128 * 1024 - 1) / (open.len() + close.len()) - 1;
        format!("{}a{}", open.repeat(n), close.repeat(n))
    };
    vec![
        // A long pipeline is not parsed at all.
        ("a|", fill("a|")),
        ("a |", fill("a |")),
        // tree-sitter's error recovery is quadratic on these; the parse is cut short.
        ("<<a", fill("<<a\n")),
        ("${", fill("${")),
        // Each command holds the text of the ones nested in it.
        ("$( )", nest("a $(", ")")),
        ("\"$( )\"", nest("a \"$(", ")\"")),
    ]
}

#[test]
fn a_line_past_its_budget_is_judged_whole_and_no_allow_rule_covers_it() {
    for (shape, line) in hostile_lines() {
        let parsed = parse(&line);
        assert!(parsed.unanalysed.is_some(), "{shape}: analysed");
        assert!(
            parsed.syntax_error && !is_line_read_only(&parsed),
            "{shape}"
        );
        assert_eq!(parsed.commands.len(), 1, "{shape}: judged whole");
        let subject = PermissionSubject::Commands(parsed.rule_subjects());
        for (list, rule, want) in [
            (RuleList::Allow, "Bash(a:*)", Decision::Default),
            // A rule allowing every command is the person's own choice.
            (RuleList::Allow, "Bash(*)", Decision::Allow),
            (RuleList::Ask, "Bash(git push:*)", Decision::Ask),
            (RuleList::Deny, "Bash(rm:*)", Decision::Deny),
        ] {
            let mut rules = PermissionRules::new(&crate::rule_vocabulary());
            rules.add(list, rule);
            let got = rules.evaluate("run_shell_command", &subject);
            assert_eq!(got, want, "{shape}: {rule}");
        }
    }
}

#[test]
fn nesting_deeper_than_the_stack_is_walked_without_overflowing() {
    // Parentheses and groups nest the tree fifty thousand deep; a recursive walk
    // overflows a test thread's 2 MiB stack (and aborts the process) long before.
    for (open, close) in [("( ", " )"), ("{ ", ";}"), ("if a; then ", "; fi")] {
        let n = (128 * 1024 - 1) / (open.len() + close.len()) - 1;
        let line = format!("{}a{}", open.repeat(n), close.repeat(n));
        let parsed = parse(&line);
        assert!(!parsed.commands.is_empty(), "{open}");
    }
}

#[test]
fn a_long_real_line_is_still_analysed_command_by_command() {
    // 1,600 commands (400 pipes) in 40 KiB: well inside every budget.
    let line: Vec<String> = (0..400)
        .map(|i| format!("grep -n 'fn main' src/file{i}.rs && sort -u src/file{i}.rs | head -n 3 && wc -l src/file{i}.rs"))
        .collect();
    let line = line.join("; ");
    assert!(line.len() > 30_000, "{}", line.len());
    let parsed = parse(&line);
    assert_eq!(parsed.unanalysed, None);
    assert_eq!(parsed.commands.len(), 1_600);
    assert!(is_line_read_only(&parsed));
}

#[test]
fn a_pipeline_of_512_stages_is_analysed_and_one_more_is_not() {
    let line = |stages: usize| vec!["cat a.txt"; stages].join(" | ");
    let parsed = parse(&line(513));
    assert_eq!(parsed.unanalysed, None);
    assert_eq!(parsed.commands.len(), 513);
    assert!(is_line_read_only(&parsed));
    let parsed = parse(&line(514));
    assert!(
        parsed
            .unanalysed
            .is_some_and(|why| why.contains("512 pipes"))
    );
    // `||` is a list, not a pipe.
    let parsed = parse(&vec!["cat a.txt"; 2000].join(" || "));
    assert_eq!(parsed.unanalysed, None);
    assert_eq!(parsed.commands.len(), 2000);
}
