//! The forms a hostile attack used to get writes and executions past the read-only
//! table (issue 27), with variants: option abbreviations and clusters read as the
//! program reads them, sed scripts parsed, awk, `test` and `printf -v` only with plain
//! literals, network redirections, expansions that become options. Each line is a
//! command, whether it may run without asking, and why.

use super::*;
use crate::shell::command_parse::parse;

const CASES: &[(&str, bool, &str)] = &[
    // GNU long options: a unique prefix is the option.
    ("sort --o=f a", false, "--o is --output"),
    ("sort --outp=f a", false, "--outp is --output"),
    (
        "sort --ou f a",
        false,
        "--ou is --output, value in the next word",
    ),
    ("sort a --output=f", false, "options after operands count"),
    ("sort --comp=sh a", false, "--comp is --compress-program"),
    (
        "sort --co a",
        false,
        "ambiguous (--compress-program, --check): sort fails",
    ),
    (
        "sort --i a",
        false,
        "ambiguous: sort fails, not vouched for",
    ),
    (
        "sort --nope a",
        false,
        "unknown: sort fails, not vouched for",
    ),
    ("sort --unique a", true, "a long option that only reads"),
    (
        "sort --uniq -k2 a",
        true,
        "an abbreviation of a reading option",
    ),
    (
        "sort -- --output=f",
        true,
        "after --, an operand (a file name)",
    ),
    ("date --s=0101", false, "--s is --set"),
    ("date --se 0101", false, "--se is --set"),
    ("date --date=tomorrow +%F", true, "prints"),
    ("date --da=tomorrow", true, "--da is --date"),
    ("hostname --fi n", false, "--fi is --file"),
    ("hostname --bo", false, "--bo is --boot"),
    ("hostname -b", false, "-b sets the name"),
    ("hostname --fq", true, "--fq is --fqdn"),
    ("file --comp x", false, "--comp is --compile"),
    (
        "file --pres x",
        false,
        "--pres is --preserve-date (sets times)",
    ),
    ("file --mime-t x", true, "--mime-t is --mime-type"),
    ("sed --in=.bak s/a/b/ f", false, "--in is --in-place"),
    ("sed --in-pl s/a/b/ f", false, "--in-pl is --in-place"),
    ("sed --fi=x f", false, "--fi is --file"),
    ("sed --expr=p f", true, "--expr is --expression"),
    ("sed --expr=w\\ out f", false, "the script writes"),
    ("awk --fil=x f", false, "--fil is --file"),
    ("awk --exe=x f", false, "--exe is --exec"),
    (
        "awk --sou='BEGIN{system(\"id\")}'",
        false,
        "--sou is --source",
    ),
    ("awk --dump", false, "--dump writes awkvars.out"),
    (
        "awk -o '{print}' f",
        false,
        "-o writes a pretty-printed program",
    ),
    ("awk -p '{print}' f", false, "-p writes a profile"),
    ("mawk -W exec x", false, "-W is mawk's long options"),
    (
        "uniq -- in -out",
        false,
        "a second operand is the output file",
    ),
    ("uniq -f 1 in", true, "-f takes a value"),
    ("uniq -c in", true, "counts"),
    ("git log --outp=x", false, "git takes --outp as --output"),
    ("git diff --ou=x", false, "git takes --ou as --output"),
    (
        "git grep --ope=less x",
        false,
        "--ope is --open-files-in-pager",
    ),
    ("git grep --op x", false, "--op is --open-files-in-pager"),
    ("git diff --ext", false, "--ext is --ext-diff"),
    ("git log --textc -p", false, "--textc is --textconv"),
    ("git cat-file --filt HEAD:x", false, "--filt is --filters"),
    ("git diff --text", true, "--text is an option of its own"),
    (
        "git rev-list --filter=blob:none HEAD",
        true,
        "--filter is an option of its own",
    ),
    ("git config --get a --unse", false, "--unse is --unset"),
    ("less --log=x f", false, "--log is --log-file"),
    ("less --LOG=x f", false, "--LOG is --LOG-FILE"),
    ("less --lesskey-s=x f", false, "a lesskey source"),
    ("rg --pr=x foo", false, "a prefix of --pre"),
    ("rg --pre-glob '*.gz' foo", true, "--pre-glob only filters"),
    ("tree --out=x", false, "--out is --output"),
    ("tree -R -H . -L 1", false, "-R writes 00Tree.html files"),
    // Short clusters: every letter judged, a value ends the cluster.
    ("sort -uo f a", false, "-o inside a cluster"),
    ("sort -uof a", false, "-o with an attached value"),
    ("sort -to a", true, "o is the separator, not -o"),
    ("sort -t -o a", true, "-o is the separator"),
    ("sort -k2 -u a", true, "reads"),
    ("git grep -iO x", false, "-O inside a cluster"),
    ("git grep -nOless x", false, "-O with an attached pager"),
    ("sed -ni p f", false, "-i inside a cluster"),
    ("sed -nf x f", false, "-f inside a cluster"),
    ("sed -ne p f", true, "-e takes the script"),
    ("sed -nes/a/b/w\\ x f", false, "the attached script writes"),
    ("less -iO log f", false, "-O inside a cluster"),
    ("less -ko f", false, "-k inside a cluster"),
    ("hostname -sF n", false, "-F inside a cluster"),
    ("date -us 0101", false, "-s inside a cluster"),
    ("date -ud tomorrow", true, "-d takes the date"),
    ("file -bC x", false, "-C inside a cluster"),
    ("uniq -cd a b", false, "two operands"),
    // sed scripts.
    ("sed -n '/x/w out' f", false, "w after a regex address"),
    (
        "sed -n '\\cxcw out' f",
        false,
        "w after a custom-delimited address",
    ),
    (
        "sed 's|a|b|w /tmp/x' f",
        false,
        "the w flag with another delimiter",
    ),
    (
        "sed 's#a#b#e' f",
        false,
        "the e flag with another delimiter",
    ),
    ("sed 's/a/b/gw out' f", false, "w after other flags"),
    ("sed '1!e' f", false, "e after a negated address"),
    ("sed -e p -e 'w out' f", false, "the second script writes"),
    ("sed --expression='$W out' f", false, "W after $"),
    ("sed 'p;w out' f", false, "w after a semicolon"),
    ("sed '{p;w out}' f", false, "w in a block"),
    (
        "sed 'r in; w out' f",
        false,
        "a file name ends at the line (or not)",
    ),
    (
        "sed -f script.sed f",
        false,
        "a script this check cannot read",
    ),
    (
        "sed --file=script.sed f",
        false,
        "a script this check cannot read",
    ),
    ("sed 's|w|e|' f", true, "w and e as pattern text"),
    ("sed -n '/w/p' f", true, "w in an address"),
    ("sed 'y/we/ew/' f", true, "transliterates"),
    ("sed ':a;N;$!ba;s/\\n/ /g' f", true, "joins lines"),
    ("sed -E 's/(a)/\\1/' f", true, "substitutes to stdout"),
    // awk.
    ("awk 'BEGIN{system (\"id\")}'", false, "system with a space"),
    (
        "awk 'BEGIN{system\n(\"id\")}'",
        false,
        "system with a newline",
    ),
    ("awk '{print > \"out\"}' f", false, "print to a file"),
    (
        "awk '{\"id\" | getline x}' f",
        false,
        "a command piped into getline",
    ),
    (
        "awk 'BEGIN{getline < \"/inet/tcp/0/h/80\"}'",
        false,
        "a network special file",
    ),
    ("awk \"$prog\" f", false, "the program is an expansion"),
    ("awk $prog f", false, "the program is an expansion"),
    ("awk -v x=1 '{print $1, x}' f", true, "prints fields"),
    ("awk -F: '{print $1}' /etc/passwd", true, "prints fields"),
    ("awk -e '{print}' f", true, "--source that prints"),
    // test, [, [[ and printf -v.
    (
        "test -v 'a[$(id)]'",
        false,
        "a subscript is evaluated as code",
    ),
    (
        "[ -v 'a[$(id)]' ]",
        false,
        "a subscript is evaluated as code",
    ),
    (
        "[[ -v a[$(id)] ]]",
        false,
        "a subscript is evaluated as code",
    ),
    (
        "[[ 'a[$(id)]' -eq 1 ]]",
        false,
        "arithmetic evaluates the operand",
    ),
    (
        "x='a[$(id)]'; [[ x -eq 1 ]]",
        false,
        "arithmetic evaluates x's value",
    ),
    ("[[ $x -eq 1 ]]", false, "an expansion as an operand"),
    ("test \"$x\" = y", false, "an expansion as an operand"),
    ("[[ 1 -eq 1 ]]", true, "integers only"),
    ("[ a = b ]", true, "compares literals"),
    ("test -f a.txt && cat a.txt", true, "tests a file"),
    (
        "printf -v 'a[$(id)]' x",
        false,
        "a subscript is evaluated as code",
    ),
    ("printf -v \"$n\" x", false, "the name is an expansion"),
    ("printf -v name '%s' x", true, "assigns a plain variable"),
    ("printf '%s\\n' \"$x\"", true, "prints a value"),
    // Arithmetic and indirection elsewhere in the line.
    (
        "x='a[$(id)]'; echo $((x))",
        false,
        "arithmetic expansion evaluates x",
    ),
    ("(( x )); ls", false, "an arithmetic command"),
    (
        "for ((i=0;i<1;i++)); do ls; done",
        false,
        "arithmetic in a loop",
    ),
    ("echo ${!x}", false, "indirect expansion"),
    ("echo ${x:y}", false, "an offset is arithmetic"),
    ("echo ${a[i]}", false, "a subscript is arithmetic"),
    ("echo ${x:-default}", true, "a default value"),
    ("echo $HOME", true, "echo takes any argument"),
    // Network redirections.
    (
        "cat < /dev/tcp/127.0.0.1/80",
        false,
        "opens a TCP connection",
    ),
    ("cat </dev/udp/127.0.0.1/53", false, "opens a UDP socket"),
    ("head -c 1 0</dev/tcp/h/80", false, "input from a socket"),
    ("echo x 2>/dev/tcp/h/80", false, "output to a socket"),
    ("cat < \"/dev/tcp/h/80\"", false, "quoted, still a socket"),
    ("cat < $f", false, "a destination only known at run time"),
    ("cat < a.txt", true, "reads a file"),
    // Expansions and patterns that become options.
    ("sort $opts a", false, "x='-o f' splits into an option"),
    ("sort \"$o\" a", false, "an option only known at run time"),
    ("sed -n 1p *", false, "a file named -i would be an option"),
    ("sed -n 1p ./*", true, "./ names cannot be options"),
    (
        "find . -name *.rs",
        false,
        "a pattern could expand to -delete",
    ),
    ("cat *", true, "cat has no option that writes"),
    ("l? -la", false, "the program is a pattern"),
    ("$'\\x6c's", true, "an ANSI-C quoted ls"),
];

#[test]
fn the_hardened_table_holds() {
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
}

mod against_the_programs {
    //! The real programs are the judge: a command line the classifier calls read-only,
    //! run in a scratch directory, leaves the directory as it was (no file created,
    //! none changed). Arguments are drawn from each program's options, their
    //! abbreviations and clusters, and scripts that write; only relative names are
    //! used, so nothing outside the scratch directory is at stake.

    use std::collections::BTreeMap;
    use std::path::Path;

    use proptest::prelude::*;

    use super::super::is_line_read_only;
    use crate::shell::command_parse::parse;

    fn arguments(program: &'static str) -> Vec<&'static str> {
        match program {
            "sort" => vec![
                "-u",
                "-o",
                "out",
                "-uo",
                "-uoout",
                "--o=out",
                "--outp",
                "--output=out",
                "-t",
                "o",
                "-to",
                "--",
                "in",
                "-k1",
                "--uniq",
                "--compress-program=cat",
                "--comp=cat",
                "-r",
                "--rev",
                "-",
                "--files0-from=in",
                "-T",
                ".",
                "-S",
                "1M",
                "-z",
            ],
            "uniq" => vec![
                "in",
                "out",
                "-c",
                "-f",
                "1",
                "--",
                "-out",
                "--skip-f=1",
                "-cd",
                "-u",
                "--all",
                "-w",
                "2",
                "-",
            ],
            "sed" => vec![
                "-n",
                "-i",
                "-ni",
                "-e",
                "p",
                "w out",
                "s/b/c/w out",
                "--in-place",
                "--in-pl",
                "-s",
                "-E",
                "--expression=w out",
                "--expr=p",
                "in",
                "-f",
                "-nf",
                "1!e",
                "s|b|c|w out",
                "/a/w out",
                "\\cacw out",
                "-i.bak",
                "--debug",
                "-z",
            ],
            _ => vec![
                "{print}",
                "{print > \"out\"}",
                "-f",
                "in",
                "-o",
                "-d",
                "--dump",
                "BEGIN{}",
                "-e",
                "--pretty-print=out",
                "-v",
                "x=1",
                "-F:",
                "{print $1 | \"cat\"}",
                "BEGIN{system(\"touch out\")}",
                "-Wexec",
                "--",
                "-",
            ],
        }
    }

    fn command() -> impl Strategy<Value = (&'static str, Vec<&'static str>)> {
        prop::sample::select(vec!["sort", "uniq", "sed", "awk"]).prop_flat_map(|program| {
            (
                Just(program),
                prop::collection::vec(prop::sample::select(arguments(program)), 0..5),
            )
        })
    }

    fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap_or_default())
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn what_the_classifier_approves_changes_nothing((program, args) in command()) {
            let quoted: Vec<String> = std::iter::once(program.to_string())
                .chain(args.iter().map(|a| format!("'{}'", a.replace('\'', "'\\''"))))
                .collect();
            let line = quoted.join(" ");
            if !is_line_read_only(&parse(&line)) {
                return Ok(());
            }
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("in"), "b\na\na\n").unwrap();
            let before = snapshot(dir.path());
            let mut child = std::process::Command::new(program)
                .args(&args)
                .current_dir(dir.path())
                .env("HOME", dir.path())
                .env("TMPDIR", dir.path().join("no-such-dir"))
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            child.wait().unwrap();
            prop_assert_eq!(snapshot(dir.path()), before, "{} changed the directory", line);
        }
    }
}
