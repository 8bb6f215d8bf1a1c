//! Properties over generated clauses: nothing panics, normalization keeps the meaning,
//! negation is the complement, and the printed normal form is a fixed point.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::tests::{eval, recovering};
use super::*;

fn token_soup() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "!", "&&", "||", "(", ")", "==", "!=", "===", "!==", "<", "<=", ">", ">=", "=~", "in",
        "not", "true", "false", "'s'", "'", "/x/i", "/", "/(?!a)/", "a", "b.c", "5", "-1", " ",
        "=", "&", "|", "isMac", "é", "[", "\\",
    ]);
    let gap = prop::sample::select(vec!["", " "]);
    prop::collection::vec((pieces, gap), 0..40)
        .prop_map(|v| v.into_iter().flat_map(|(p, g)| [p, g]).collect())
}

proptest! {
    #[test]
    fn arbitrary_input_never_panics(input in any::<String>()) {
        let ctx = json!({"a": 1});
        for recovery in [false, true] {
            if let Ok(expr) = parse_with(&input, ParseOptions { regex_recovery: recovery }) {
                expr.evaluate(&ctx);
                expr.negate().serialize();
            }
        }
    }

    #[test]
    fn token_soup_never_panics_and_normal_form_is_stable(input in token_soup()) {
        let ctx = json!({"a": "5", "b.c": ["a"], "isMac": true});
        for recovery in [false, true] {
            let options = ParseOptions { regex_recovery: recovery };
            if let Ok(expr) = parse_with(&input, options) {
                let value = expr.evaluate(&ctx);
                let printed = expr.serialize();
                // Printing and reparsing gives the same expression and value.
                let again = parse_with(&printed, ParseOptions { regex_recovery: true });
                prop_assert!(again.is_ok(), "{} -> {} -> {:?}", input, printed, again);
                if let Ok(again) = again {
                    prop_assert_eq!(again.evaluate(&ctx), value, "{} -> {}", input, printed);
                    prop_assert_eq!(again.serialize(), printed.clone(), "{}", input);
                }
            }
        }
    }
}

/// A clause as written, before normalization, with its value computed the plain way.
#[derive(Debug, Clone)]
enum Written {
    Atom(&'static str),
    Not(Box<Written>),
    And(Box<Written>, Box<Written>),
    Or(Box<Written>, Box<Written>),
}

impl Written {
    fn text(&self) -> String {
        match self {
            Self::Atom(a) => (*a).to_owned(),
            Self::Not(x) => format!("!({})", x.text()),
            Self::And(x, y) => format!("({}) && ({})", x.text(), y.text()),
            Self::Or(x, y) => format!("({}) || ({})", x.text(), y.text()),
        }
    }

    fn value(&self, ctx: &Value) -> bool {
        match self {
            Self::Atom(a) => eval(a, ctx),
            Self::Not(x) => !x.value(ctx),
            Self::And(x, y) => x.value(ctx) && y.value(ctx),
            Self::Or(x, y) => x.value(ctx) || y.value(ctx),
        }
    }
}

fn written() -> impl Strategy<Value = Written> {
    // Comparisons only on keys holding numbers: on anything else `!(a > 1)` (`a <= 1`)
    // is not the complement of `a > 1`, by design.
    let atom = prop::sample::select(vec![
        "true",
        "false",
        "a",
        "b",
        "c",
        "d",
        "a == 2",
        "b != 0",
        "c == x",
        "d == ''",
        "c =~ /X/i",
        "d =~ /^und/",
        "a > 1",
        "b >= 0",
        "a < 2",
        "b <= -1",
        "c in e",
        "a not in e",
        "d in e",
    ])
    .prop_map(Written::Atom);
    atom.prop_recursive(5, 40, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|x| Written::Not(Box::new(x))),
            (inner.clone(), inner.clone())
                .prop_map(|(x, y)| Written::And(Box::new(x), Box::new(y))),
            (inner.clone(), inner).prop_map(|(x, y)| Written::Or(Box::new(x), Box::new(y))),
        ]
    })
}

proptest! {
    #[test]
    fn normal_form_keeps_the_meaning(clause in written(), b in 0..3i64, c in "[xX ]{0,2}") {
        let ctx = json!({"a": 2, "b": b, "c": c, "e": ["x", 2, "X"]});
        let text = clause.text();
        let expr = recovering(&text);
        prop_assert!(expr.is_ok(), "{} -> {:?}", text, expr);
        if let Ok(expr) = expr {
            let printed = expr.serialize();
            prop_assert_eq!(expr.evaluate(&ctx), clause.value(&ctx), "{} -> {}", text, printed);
            prop_assert_eq!(expr.negate().evaluate(&ctx), !clause.value(&ctx), "{}", text);
            let again = recovering(&printed).map(|e| e.serialize());
            prop_assert_eq!(again, Ok(printed.clone()), "{}", text);
        }
    }
}

/// Clauses whose full normal form would be exponential stay small (distribution is
/// bounded) and still mean the same.
#[test]
fn hostile_clauses_stay_small() {
    let pair = |i: usize| format!("(a{i} && b{i} || c{i} && d{i})");
    let pairs = |joiner: &str| (0..40).map(pair).collect::<Vec<_>>().join(joiner);
    let mut nested = "a".to_owned();
    for i in 0..30 {
        nested = format!("!(({nested}) && (x{i} || y{i} || z{i}))");
    }
    for input in [
        format!("!({})", pairs(" || ")),
        format!("!({})", pairs(" && ")),
        nested,
        "a || ".repeat(5000) + "a",
    ] {
        let printed = parse(&input).map(|e| e.serialize());
        assert_parsed(&printed, &input);
        assert!(printed.is_ok_and(|p| p.len() < 20_000), "{input}");
    }
}

fn assert_parsed(result: &Result<String, WhenError>, input: &str) {
    assert!(result.is_ok(), "{input}: {result:?}");
}
