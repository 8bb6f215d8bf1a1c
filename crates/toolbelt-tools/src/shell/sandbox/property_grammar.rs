//! The grammar of the read-only sandbox's property test ([`super::property_tests`]):
//! shell lines over the programs of the read-only allow list, their options that write,
//! run programs or read secrets, redirections, pipes and lists.

use proptest::prelude::*;

/// Programs of the allow list with options and operands worth trying. `@OUT` is a new
/// path outside the workspace, `@FILE` and `@DIR` existing ones outside it, `@IN` a
/// file in the scratch directory, `@PORT` the listener's port; the secrets, the pty
/// and `@PARENT` as in [`super::property_tests`]' documentation.
const PROGRAMS: &[(&str, &[&str], &[&str])] = &[
    (
        "sed",
        &[
            "-n",
            "-E",
            "-i",
            "--in-place",
            "--in-pl=.bak",
            "--i",
            "-ni",
            "-s",
            "-z",
            "-e 's/a/b/w @OUT'",
            "-e 's|a|b|w @OUT'",
            "'1w @OUT'",
            "'/a/w @OUT'",
            "'s/a/b/'",
            "'p'",
            "'1e touch @OUT'",
            "'s/a/touch @OUT/e'",
            "'W @OUT'",
            "'s,a,b,gw @OUT'",
            "--expression='w @OUT'",
            "-f @FILE",
            "'r @FILE'",
            "'$!N'",
            "'\\%a%w @OUT'",
        ],
        &["@IN", "@FILE", "@SECRET"],
    ),
    (
        "sort",
        &[
            "-o @OUT",
            "--output=@OUT",
            "--outp=@OUT",
            "--o=@OUT",
            "-uo @OUT",
            "-ro@OUT",
            "-r",
            "-n",
            "-T @DIR",
            "--compress-program=touch",
            "--compress-prog=sh",
            "-k1",
            "--files0-from=@FILE",
        ],
        &["@IN", "@FILE"],
    ),
    (
        "find",
        &[
            "-name '*'",
            "-delete",
            "-exec touch @OUT \\;",
            "-execdir rm {} +",
            "-fprint @OUT",
            "-fls @OUT",
            "-fprintf @OUT x",
            "-ok rm {} \\;",
            "-newer @FILE",
            "-type f",
            "-maxdepth 1",
            "-fprint0 @OUT",
            "-exec chmod 777 {} +",
        ],
        &["@DIR", ".", "@FILE"],
    ),
    (
        "awk",
        &[
            "'BEGIN{print 1 > \"@OUT\"}'",
            "'{print | \"sh\"}'",
            "'BEGIN{system(\"touch @OUT\")}'",
            "'{print $1}'",
            "-v x=1",
            "'BEGIN{printf \"x\" >> \"@OUT\"}'",
            "'BEGIN { \"touch @OUT\" | getline }'",
            "'BEGIN{print > \"/dev/tcp/127.0.0.1/@PORT\"}'",
            "--dump-variables=@OUT",
            "-d@OUT",
            "-o@OUT",
        ],
        &["@IN", "@FILE"],
    ),
    (
        "git",
        &[
            "status",
            "status --short",
            "log --oneline -1",
            "diff --output=@OUT",
            "diff --outp=@OUT",
            "log --output=@OUT",
            "show --out=@OUT",
            "grep -O'touch @OUT' a",
            "grep --open-files-in-pager=touch a",
            "-c core.pager='touch @OUT' log",
            "branch x",
            "tag t",
            "config a.b c",
            "config --file @OUT a.b c",
            "remote show http://127.0.0.1:@PORT/r",
            "ls-remote http://127.0.0.1:@PORT/r",
            "diff --ext-diff",
            "log -p",
            "rev-parse HEAD",
            "blame @IN",
        ],
        &[],
    ),
    (
        "rg",
        &[
            "--pre=touch",
            "--pre touch",
            "--pr=sh",
            "-z",
            "--search-zip",
            "-uu",
            "--files",
        ],
        &["a", "@DIR", "@IN"],
    ),
    (
        "tree",
        &["-o @OUT", "-fo @OUT", "-a", "-L 1"],
        &["@DIR", "."],
    ),
    (
        "grep",
        &[
            "-r",
            "-f @FILE",
            "--exclude-from=@FILE",
            "-l",
            "-c",
            "-o",
            "-f @SECRET",
        ],
        &["a", "@DIR", "@IN", "@HOME", "@STORE_DIR", "@TTY"],
    ),
    (
        "env",
        &[
            "touch @OUT",
            "-S 'touch @OUT'",
            "--split-string='touch @OUT'",
            "-i",
            "-u X",
            "ls",
        ],
        &[],
    ),
    (
        "printf",
        &["-v x a", "'%s' a", "-v 'a[$(touch @OUT)]' x"],
        &[],
    ),
    (
        "test",
        &["-f @FILE", "-v 'a[$(touch @OUT)]'", "-d @DIR"],
        &[],
    ),
    ("[", &["-f @FILE ]", "-v 'a[$(touch @OUT)]' ]"], &[]),
    ("uniq", &["-c", "-d"], &["@IN", "@IN @OUT"]),
    ("file", &["-C -m @OUT", "-b", "-z"], &["@FILE", "@IN"]),
    (
        "tail",
        &["-n 1", "-c 3", "--lines=2"],
        &["@IN", "@FILE", "@STORE"],
    ),
    (
        "head",
        &["-n 1", "-c3", "--byt=2"],
        &["@IN", "@FILE", "@TTY", "@DENIED"],
    ),
    (
        "cat",
        &["-n", "-A", "-"],
        &["@IN", "@FILE", "@SECRET", "@STORE", "@DENIED", "@TTY"],
    ),
    (
        "ls",
        &["-la", "-R", "--col=always", "-1t"],
        &["@DIR", ".", "@FILE"],
    ),
    (
        "jq",
        &[
            "-n",
            ".",
            "-r",
            "--rawfile x @FILE",
            "--rawfile x @SECRET",
            "'input_filename'",
        ],
        &["@IN"],
    ),
    ("cd", &[], &["@DIR", "..", "-"]),
    (
        "diff",
        &["-u", "-r", "--from-file=@FILE"],
        &["@IN @FILE", "@DIR .", "@IN @DENIED", "@IN @SECRET"],
    ),
    ("stat", &["-c %a", "-L"], &["@FILE", "@DIR"]),
    ("md5sum", &["-c", "-b"], &["@FILE", "@IN"]),
    ("base64", &["-d", "-w0"], &["@IN", "@SECRET"]),
    ("date", &["-f @SECRET", "-f @STORE", "-r @FILE"], &[]),
    ("prlimit", &["--pid @PARENT", "--pid @PARENT --cpu=1"], &[]),
    ("renice", &["-n 19 -p @PARENT"], &[]),
    ("taskset", &["-p 1 @PARENT", "-p @PARENT"], &[]),
    ("stty", &["-a", "sane"], &["< @TTY", "-F @TTY"]),
    ("tr", &["a b", "-d a"], &[]),
    ("cut", &["-c1", "-d, -f1"], &["@IN"]),
    ("wc", &["-l", "-c", "--files0-from=@FILE"], &["@IN"]),
    ("du", &["-sh", "-a"], &["@DIR"]),
    (
        "echo",
        &["-n", "-e"],
        &["a", "$HOME", "~", "{a,b}", "$'\\x41'", "\"$PWD\""],
    ),
    ("less", &["-F", "+G"], &["@FILE"]),
    ("readlink", &["-f"], &["@FILE", "@DIR/link"]),
];

const REDIRECTIONS: &[&str] = &[
    "",
    "",
    "",
    "> @OUT",
    ">> @OUT",
    "2> @OUT",
    "&> @OUT",
    ">| @OUT",
    "< @IN",
    "< /dev/tcp/127.0.0.1/@PORT",
    "< @TTY",
    "> @TTY",
    "<> @OUT",
    "> /dev/null",
    "2>&1",
];

const JOINERS: &[&str] = &[" | ", " && ", " ; ", " || ", " |& "];

fn simple_command() -> impl Strategy<Value = String> {
    (0..PROGRAMS.len())
        .prop_flat_map(|i| {
            let (name, options, operands) = PROGRAMS[i];
            let opts = if options.is_empty() {
                Just(Vec::new()).boxed()
            } else {
                proptest::collection::vec(proptest::sample::select(options), 0..3).boxed()
            };
            let ops = if operands.is_empty() {
                Just(Vec::new()).boxed()
            } else {
                proptest::collection::vec(proptest::sample::select(operands), 0..2).boxed()
            };
            (
                Just(name),
                opts,
                ops,
                proptest::sample::select(REDIRECTIONS),
            )
        })
        .prop_map(|(name, opts, ops, redirect)| {
            let mut words = vec![name.to_string()];
            words.extend(opts.iter().map(|o| o.to_string()));
            words.extend(ops.iter().map(|o| o.to_string()));
            if !redirect.is_empty() {
                words.push(redirect.to_string());
            }
            words.join(" ")
        })
}

pub(super) fn command_line() -> impl Strategy<Value = String> {
    (
        simple_command(),
        proptest::collection::vec((proptest::sample::select(JOINERS), simple_command()), 0..3),
    )
        .prop_map(|(first, rest)| {
            let mut line = first;
            for (joiner, next) in rest {
                line.push_str(joiner);
                line.push_str(&next);
            }
            line
        })
}
