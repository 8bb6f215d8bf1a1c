//! VS Code's conformance cases (parser, scanner and evaluation tests of its context-key
//! module), as input → expected pairs, plus fuzzing for panics.

use serde_json::{Value, json};

use super::lexer::{LexError, TokenKind, tokenize};
use super::*;

pub(super) fn recovering(input: &str) -> Result<Expr, WhenError> {
    parse_with(
        input,
        ParseOptions {
            regex_recovery: true,
        },
    )
}

#[track_caller]
fn check(input: &str, expected: &str) {
    match recovering(input) {
        Ok(expr) => assert_eq!(expr.serialize(), expected, "input: {input:?}"),
        Err(e) => panic!("{input:?} did not parse: {e}"),
    }
}

#[track_caller]
fn check_error(input: &str, offset: usize) -> WhenError {
    match recovering(input) {
        Ok(expr) => panic!("{input:?} parsed as {expr}"),
        Err(e) => {
            assert_eq!(e.offset, offset, "input {input:?}: {e}");
            e
        }
    }
}

#[test]
fn parser_serializes_to_normal_form() {
    for (input, expected) in [
        (" foo", "foo"),
        ("!foo", "!foo"),
        ("foo =~ /bar/", "foo =~ /bar/"),
        ("foo && foo =~ /zee/i", "foo && foo =~ /zee/i"),
        ("foo || (foo =~ /bar/ && baz)", "foo || baz && foo =~ /bar/"),
        ("foo || (foo =~ /bar/ || baz)", "baz || foo || foo =~ /bar/"),
        ("foo.bar==enabled", "foo.bar == 'enabled'"),
        ("foo.bar == 'enabled'", "foo.bar == 'enabled'"),
        ("foo.bar:zed==completed", "foo.bar:zed == 'completed'"),
        ("foo.barBaz<C-r> < 2", "foo.barBaz<C-r> < 2"),
        ("foo.bar >= -1", "foo.bar >= -1"),
        ("foo.bar <= -1", "foo.bar <= -1"),
        (
            "view == vsc-packages-activitybar-folders && vsc-packages-folders-loaded",
            "vsc-packages-folders-loaded && view == 'vsc-packages-activitybar-folders'",
        ),
        (
            "!cmake:hideBuildCommand && cmake:enableFullFeatureSet",
            "cmake:enableFullFeatureSet && !cmake:hideBuildCommand",
        ),
        ("!(foo && bar)", "!bar || !foo"),
        (
            "!(foo && bar || boar) || deer",
            "deer || !bar && !boar || !boar && !foo",
        ),
        ("!(!foo)", "foo"),
        ("debugState == \"stopped\"", "debugState == '\"stopped\"'"),
        ("a && b || c", "c || a && b"),
        (
            "fooBar && baz.jar && fee.bee<K-loo+1>",
            "baz.jar && fee.bee<K-loo+1> && fooBar",
        ),
        (
            "(foo||bar) && (jee||jar)",
            "bar && jar || bar && jee || foo && jar || foo && jee",
        ),
        ("foo == ", "foo == ''"),
        ("foo == && bar", "bar && foo == ''"),
        ("foo === bar", "foo == 'bar'"),
        ("foo !== bar", "foo != 'bar'"),
        ("foo in barrr", "foo in 'barrr'"),
        ("foo not in barrr", "foo not in 'barrr'"),
        ("vim.use<C-r>", "vim.use<C-r>"),
        ("a > b", "a > b"),
        ("a > 1.10", "a > 1.1"),
    ] {
        check(input, expected);
    }
}

#[test]
fn parser_folds_booleans_and_constants() {
    for (input, expected) in [
        ("!true", "false"),
        ("!false", "true"),
        ("a && true", "a"),
        ("a || false", "a"),
        ("a && false", "false"),
        ("a || true", "true"),
        ("a == true", "a"),
        ("a == false", "!a"),
        ("a != true", "!a"),
        ("a != false", "a"),
        ("a == 'true'", "a == 'true'"),
        ("A || B || A", "A || B"),
        ("A || !A", "true"),
        ("A && !A", "false"),
        ("isWeb", "false"),
        ("!isWeb", "true"),
        ("isWeb == 'true'", "false"),
        ("isWeb != 'true'", "true"),
    ] {
        check(input, expected);
    }
    let linux = if cfg!(target_os = "linux") {
        "true"
    } else {
        "false"
    };
    check("isLinux", linux);
    check("isLinux == 'true'", linux);
    check("isLinux == true", linux);
}

#[test]
fn parser_recovers_unescaped_regexes() {
    check(
        "resource =~ //foo/(barr|door/(Foo-Bar%20Templates|Soo%20Looo)|Web%20Site%Jjj%20Llll)(/.*)*$/",
        "resource =~ /\\/foo\\/(barr|door\\/(Foo-Bar%20Templates|Soo%20Looo)|Web%20Site%Jjj%20Llll)(\\/.*)*$/",
    );
    check(
        "resourcePath =~ /\\.md(\\.yml|\\.txt)*$/giym",
        "resourcePath =~ /\\.md(\\.yml|\\.txt)*$/im",
    );
    check("view =~ '/(servers)/'", "view =~ /(servers)/");
    check("a =~ /\\/foo/ && b", "b && a =~ /\\/foo/");
    check("a =~ /x/z/ || b", "b || a =~ /x\\/z/");
    check_error("a =~ /foo && b", 5);
    check("view =~ '/(servers)/i' && a", "a && view =~ /(servers)/i");
}

#[test]
fn parser_reports_errors_at_offsets() {
    assert_eq!(
        recovering("").map_err(|e| e.kind),
        Err(WhenErrorKind::Empty)
    );
    assert_eq!(
        recovering("   ").map_err(|e| e.kind),
        Err(WhenErrorKind::UnexpectedEnd)
    );
    let e = check_error(" viewItem == VSCode WorkSpace", 20);
    assert_eq!(
        e.to_string(),
        "Unexpected token 'WorkSpace' at offset 20. Did you forget to put && or || before the token?"
    );
    let e = check_error("/foo", 0);
    assert!(e.to_string().contains("forget to escape the '/'"), "{e}");
    check_error("!b == 'true'", 3);
    let e = check_error("!foo &&  in bar", 9);
    assert_eq!(e.to_string(), "Unexpected token 'in' at offset 9");
    let e = check_error("vim<c-r> == 1 && vim<2<=3", 23);
    assert_eq!(
        e.to_string(),
        "Unexpected '=' at offset 23. Did you mean == or =~?"
    );
    let e = check_error("foo && 'bar", 7);
    assert!(matches!(
        e.kind,
        WhenErrorKind::Lex {
            error: LexError::UnterminatedQuote,
            ..
        }
    ));
    check_error(
        "config.foo &&  &&bar =~ /^foo$|^bar-foo$|^joo$|^jar$/ && bar",
        15,
    );
    check_error("!foo == 'test'", 5);
    check_error("!!foo", 1);
    check_error("foo not bar", 8);
    check_error("(foo", 4);
    let e = check_error("(foo bar)", 5);
    assert_eq!(e.to_string(), "Expected ')' but got 'bar' at offset 5");
    check_error("foo|bar", 3);
}

#[test]
fn strict_parse_needs_a_valid_regex_literal() {
    assert!(parse("a =~ /x/").is_ok());
    let e = parse("a =~ 'x'").map_err(|e| e.offset);
    assert_eq!(e, Err(5));
    let e = parse("a =~ /(x/").map_err(|e| e.kind);
    assert!(
        matches!(e, Err(WhenErrorKind::InvalidRegex { .. })),
        "{e:?}"
    );
    // Flags JavaScript's RegExp refuses are a parse error too, as in VS Code.
    for bad in ["a =~ /x/ii", "a =~ /x/gig", "a =~ /x/mm"] {
        let e = parse(bad).map_err(|e| e.kind);
        assert!(
            matches!(e, Err(WhenErrorKind::InvalidRegex { .. })),
            "{bad}: {e:?}"
        );
    }
    assert!(parse("a =~ /x/q").is_err(), "an unknown flag is no flag");
    assert!(parse("a =~ /x/gimsyu").is_ok());
    // JavaScript regexes have lookahead, and `\/` is a slash.
    let expr = parse("a =~ /^(?!bar).*\\/x$/").map_err(|e| e.to_string());
    assert!(
        expr.as_ref()
            .is_ok_and(|e| e.evaluate(&json!({"a": "foo/x"}))),
        "{expr:?}"
    );
    assert!(expr.is_ok_and(|e| !e.evaluate(&json!({"a": "bar/x"}))));
    // `m` and `s` reach the engine.
    assert!(eval("a =~ /^b$/m", &json!({"a": "a\nb"})));
    assert!(!eval("a =~ /^b$/", &json!({"a": "a\nb"})));
    assert!(eval("a =~ /a.b/s", &json!({"a": "a\nb"})));
    assert!(!eval("a =~ /a.b/", &json!({"a": "a\nb"})));
    assert!(eval("a =~ /^TRUE$/i", &json!({"a": true})));
}

#[test]
fn lexer_tokens_and_offsets() {
    let kinds = |input: &str| -> Vec<(TokenKind, usize)> {
        tokenize(input)
            .into_iter()
            .map(|t| (t.kind, t.offset))
            .collect()
    };
    let s = |t: &str| TokenKind::Str(t.to_owned());
    assert_eq!(
        kinds("foo.bar<C-shift+2>"),
        [(s("foo.bar<C-shift+2>"), 0), (TokenKind::Eof, 18)]
    );
    assert_eq!(
        kinds("foo === bar"),
        [
            (s("foo"), 0),
            (TokenKind::Eq { triple: true }, 4),
            (s("bar"), 8),
            (TokenKind::Eof, 11)
        ]
    );
    assert_eq!(
        kinds("foo  !== bar"),
        [
            (s("foo"), 0),
            (TokenKind::NotEq { triple: true }, 5),
            (s("bar"), 9),
            (TokenKind::Eof, 12)
        ]
    );
    assert_eq!(kinds("=~ "), [(TokenKind::RegexOp, 0), (TokenKind::Eof, 3)]);
    let regex = |source: &str, flags: &str| TokenKind::RegexStr {
        source: source.to_owned(),
        flags: flags.to_owned(),
    };
    assert_eq!(
        kinds("foo =~ /zee/gm"),
        [
            (s("foo"), 0),
            (TokenKind::RegexOp, 4),
            (regex("zee", "gm"), 7),
            (TokenKind::Eof, 14)
        ]
    );
    assert_eq!(kinds("/[/]\\//i")[0], (regex("[/]\\/", "i"), 0));
    assert_eq!(
        kinds("foo in barrr  "),
        [
            (s("foo"), 0),
            (TokenKind::In, 4),
            (s("barrr"), 7),
            (TokenKind::Eof, 14)
        ]
    );
    assert_eq!(
        kinds("vim<2<=3"),
        [
            (s("vim<2<"), 0),
            (TokenKind::Error(LexError::LoneEquals), 6),
            (s("3"), 7),
            (TokenKind::Eof, 8)
        ]
    );
    assert_eq!(
        kinds("foo|bar")[1],
        (TokenKind::Error(LexError::LonePipe), 3)
    );
    assert_eq!(
        kinds("'hello")[0],
        (TokenKind::Error(LexError::UnterminatedQuote), 0)
    );
    assert_eq!(
        kinds("view =~ '/(servers)/'")[2],
        (TokenKind::QuotedStr("/(servers)/".to_owned()), 8)
    );
    assert_eq!(
        kinds("a {~` b"),
        [(s("a"), 0), (s("b"), 6), (TokenKind::Eof, 7)]
    );
    // Byte offsets: `é` is two bytes.
    assert_eq!(kinds("é && b")[1], (TokenKind::And, 3));
}

fn context() -> Value {
    json!({"a": true, "b": false, "c": "5", "d": "d"})
}

#[track_caller]
pub(super) fn eval(input: &str, context: &Value) -> bool {
    match recovering(input) {
        Ok(expr) => expr.evaluate(context),
        Err(e) => panic!("{input:?} did not parse: {e}"),
    }
}

#[test]
fn evaluation_follows_javascript() {
    let ctx = context();
    // key, ==true, !=true, ==false, !=false, ==5, !=5, !key, =~/d.*/, =~/D/i
    for (key, expected) in [
        (
            "a",
            [
                true, true, false, false, true, false, true, false, false, false,
            ],
        ),
        (
            "b",
            [
                false, false, true, true, false, false, true, true, false, false,
            ],
        ),
        (
            "c",
            [
                true, true, false, false, true, true, false, false, false, false,
            ],
        ),
        (
            "d",
            [
                true, true, false, false, true, false, true, false, true, true,
            ],
        ),
        (
            "z",
            [
                false, false, true, true, false, false, true, true, true, true,
            ],
        ),
    ] {
        let clauses = [
            key.to_string(),
            format!("{key} == true"),
            format!("{key} != true"),
            format!("{key} == false"),
            format!("{key} != false"),
            format!("{key} == 5"),
            format!("{key} != 5"),
            format!("!{key}"),
            format!("{key} =~ /d.*/"),
            format!("{key} =~ /D/i"),
        ];
        let got: Vec<bool> = clauses.iter().map(|c| eval(c, &ctx)).collect();
        assert_eq!(got, expected, "key {key}: {clauses:?}");
    }
    for (input, expected) in [
        ("true", true),
        ("false", false),
        ("a && !b", true),
        ("a && b", false),
        ("a && !b && c == 5", true),
        ("d =~ /e.*/", false),
        ("b && a || a", true),
        ("b && a || a && b", false),
    ] {
        assert_eq!(eval(input, &ctx), expected, "{input}");
    }
}

#[test]
fn loose_equality_coerces_like_javascript() {
    for (value, text, expected) in [
        (json!(5), "5", true),
        (json!(0), "", true),
        (json!(true), "1", true),
        (json!(true), "true", false),
        (json!(["a"]), "a", true),
        (json!(["a", "b"]), "a,b", true),
        (json!(null), "null", false),
        (json!({}), "[object Object]", true),
        (json!(31), "0x1f", true),
        (json!(1.5), " 1.5 ", true),
        (json!(1), "1abc", false),
    ] {
        let ctx = json!({ "k": value });
        let clause = format!("k == '{text}'");
        assert_eq!(eval(&clause, &ctx), expected, "{clause} with {ctx}");
        let clause = format!("k != '{text}'");
        assert_eq!(eval(&clause, &ctx), !expected, "{clause} with {ctx}");
    }
    assert!(eval("z != 'x'", &json!({})));
}

#[test]
fn in_and_not_in_look_up_arrays_and_object_keys() {
    for (a, b, expected) in [
        (json!(1), json!([3, 2, 1]), true),
        (json!(1), json!([1, 2, 3]), true),
        (json!(3), json!([1, 2]), false),
        (json!("x"), json!(["x"]), true),
        (json!("x"), json!({}), false),
        (json!("x"), json!({"x": false}), true),
        (json!("prototype"), json!({}), false),
        (json!(1), json!(null), false),
    ] {
        let ctx = json!({"a": a, "b": b});
        assert_eq!(eval("a in b", &ctx), expected, "{ctx}");
        assert_eq!(eval("a not in b", &ctx), !expected, "{ctx}");
    }
    assert!(!eval("a in b", &json!({"a": 1})));
    assert!(eval("a not in b", &json!({"a": 1})));
}

#[test]
fn comparisons_use_parse_float() {
    for (value, expected) in [
        (json!({}), false),
        (json!(0), false),
        (json!(1), false),
        (json!("0"), false),
        (json!("1"), false),
        (json!("a"), false),
        (json!(2), true),
        (json!("2"), true),
        (json!("2abc"), true),
        (json!(true), false),
        (json!([2]), true),
    ] {
        assert_eq!(eval("a > 1", &json!({ "a": value })), expected, "{value}");
    }
    assert!(eval("a > 10", &json!({"a": "11"})));
    assert!(!eval("a > 10", &json!({"a": "2"})));
    assert!(!eval("a > 1.1", &json!({"a": "1.1"})));
    assert!(!eval("a > b", &json!({"a": "2"})));
    assert!(!eval("a > 1", &json!({})));
    assert!(!eval("a <= 1", &json!({})));
    for (clause, expected) in [
        ("a >= 2", [false, true, true]),
        ("a < 2", [true, false, false]),
        ("a <= 2", [true, true, false]),
    ] {
        let got = ["1", "2", "3"].map(|v| eval(clause, &json!({ "a": v })));
        assert_eq!(got, expected, "{clause}");
    }
}

#[test]
fn negation_is_syntactic() {
    for (input, expected) in [
        ("a && b || c", "!a && !c || !b && !c"),
        (
            "!a && !b || !c && !d",
            "a && c || a && d || b && c || b && d",
        ),
        ("a > 1", "a <= 1"),
        ("a >= 1.1", "a < 1.1"),
        ("a < b", "a >= b"),
        ("a <= 1", "a > 1"),
        ("a == x", "a != 'x'"),
        ("a =~ /x/i", "!(a =~ /x/i)"),
        ("a in b", "a not in 'b'"),
    ] {
        match recovering(input) {
            Ok(expr) => assert_eq!(expr.negate().serialize(), expected, "{input}"),
            Err(e) => panic!("{input}: {e}"),
        }
    }
    check("!(a =~ /x/)", "!(a =~ /x/)");
    check("!(a =~ /x/) || a =~ /x/", "true");
    // `a > 1 || a <= 1` is false for a non-number, so it is not folded to true.
    check("a > 1 || a <= 1", "a > 1 || a <= 1");
}

#[test]
fn distribution_is_bounded() {
    let clause = (0..12)
        .map(|i| format!("(a{i} || b{i})"))
        .collect::<Vec<_>>()
        .join(" && ");
    let expr = parse(&clause).map_err(|e| e.to_string());
    let Ok(expr) = expr else { panic!("{expr:?}") };
    let ctx = (0..12)
        .map(|i| (format!("b{i}"), json!(true)))
        .collect::<serde_json::Map<_, _>>();
    assert!(expr.evaluate(&ctx));
    assert!(expr.serialize().starts_with('('), "{}", expr.serialize());
    let deep = format!("{}a{}", "(".repeat(1000), ")".repeat(1000));
    assert!(matches!(
        parse(&deep).map_err(|e| e.kind),
        Err(WhenErrorKind::TooDeep { .. })
    ));
}

#[test]
fn implies_compares_terms() {
    for (p, q, expected) in [
        ("a && b", "a", true),
        ("a", "a || b", true),
        ("a && c", "a && b || c", true),
        ("a", "b", false),
        ("a || b", "a", false),
        ("a || a && b", "a", true),
        ("false", "a", true),
        ("a", "true", true),
        ("true", "a", false),
        ("a == x && b", "a == 'x'", true),
    ] {
        let (Ok(p), Ok(q)) = (parse(p), parse(q)) else {
            panic!("{p} or {q} did not parse")
        };
        assert_eq!(p.implies(&q), expected, "{p} implies {q}");
    }
}

#[test]
fn keys_lists_what_is_read() {
    let expr = parse("a && b.c == x || !d || e in f || g =~ /x/ || h > 1 || isWeb");
    assert_eq!(
        expr.map(|e| e.keys().into_iter().map(str::to_owned).collect::<Vec<_>>()),
        Ok(["a", "b.c", "d", "e", "f", "g", "h"]
            .map(str::to_owned)
            .to_vec())
    );
}

#[test]
fn a_comparison_with_a_text_that_is_not_a_word_prints_in_quotes_and_parses_back() {
    // Found by the token-soup property: `inin <'!'` printed as `inin < !`.
    for input in ["inin <'!'", "a >= 'x y'", "a < word"] {
        let expr = parse(input).unwrap();
        let printed = expr.serialize();
        let again = parse(&printed).unwrap_or_else(|e| panic!("{input} -> {printed}: {e}"));
        assert_eq!(again.serialize(), printed, "{input}");
    }
    assert_eq!(parse("a < word").unwrap().serialize(), "a < word");
}
