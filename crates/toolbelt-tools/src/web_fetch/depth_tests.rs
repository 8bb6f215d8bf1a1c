//! Hostile nesting: pages served on 127.0.0.1 that nest without end, and a property
//! test of malformed HTML, converted without a crash and in bounded time.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::content::{Format, html_to_text};
use super::tests::{fetch, loopback_fixture, page, serve, text};

fn nested(open: &str, close: &str, depth: usize) -> String {
    format!(
        "<html><body><p>before</p>{}deep text{}<p>after</p></body></html>",
        open.repeat(depth),
        close.repeat(depth)
    )
}

/// 20,000 nested `<div>`s overflowed the stack (exit 134); 200,000 took minutes. Both
/// now come back within the call's time limit (5 s here), with their text, and so do
/// variants whose end tags are missing or that nest through other elements.
#[tokio::test]
async fn pages_nested_without_end_come_back_with_their_text_within_the_time_limit() {
    let pages = HashMap::from([
        ("/div20k", nested("<div>", "</div>", 20_000)),
        ("/div200k", nested("<div>", "</div>", 200_000)),
        ("/unclosed", nested("<div>", "", 200_000)),
        ("/span-div", nested("<span><div></span>", "", 100_000)),
        ("/table", nested("<table><tr><td>", "", 50_000)),
        ("/list", nested("<ul><li><dl><dd>", "", 50_000)),
        ("/formatting", nested("<b><i><u><font>", "", 50_000)),
        ("/svg", nested("<svg><g>", "</g></svg>", 100_000)),
        ("/quotes", nested("<div title='<div>'>", "", 100_000)),
    ]);
    let routes = pages
        .iter()
        .map(|(path, body)| (*path, page("text/html", body.clone())))
        .collect();
    let server = serve(routes).await;
    let fx = loopback_fixture();
    for path in pages.keys() {
        let started = Instant::now();
        let r = fetch(&fx, &server.url(path)).await;
        assert!(r.error.is_none(), "{path}: {:?}", r.error);
        let t = text(&r);
        // An `<svg>` is dropped with what is in it.
        let parts: &[&str] = if *path == "/svg" {
            &["before", "after"]
        } else {
            &["before", "deep text", "after"]
        };
        for part in parts {
            assert!(t.contains(part), "{path}: {part} is missing");
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{path}: {:?}",
            started.elapsed()
        );
    }
}

/// Pieces of malformed HTML that nest, close the wrong element or never close.
fn piece() -> impl Strategy<Value = String> {
    let tags = prop::sample::select(vec![
        "div", "span", "b", "i", "a", "p", "li", "ul", "dl", "dd", "dt", "table", "tr", "td", "th",
        "select", "option", "button", "font", "template", "textarea", "svg", "g", "math", "object",
        "h1", "pre", "code", "script", "style", "nobr", "form",
    ]);
    prop_oneof![
        tags.clone().prop_map(|t| format!("<{t}>")),
        tags.clone().prop_map(|t| format!("</{t}>")),
        tags.prop_map(|t| format!("<{t}/>")),
        Just("text ".to_string()),
        Just("<!-- c -->".to_string()),
        Just("<!--".to_string()),
        Just("<a href='x>y'>".to_string()),
        Just("<".to_string()),
        Just("<br>".to_string()),
    ]
}

/// A document: a pattern of pieces repeated up to thousands of times.
fn document() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(piece(), 1..6),
        1usize..4000,
        prop::collection::vec(piece(), 0..20),
    )
        .prop_map(|(pattern, times, tail)| pattern.concat().repeat(times) + &tail.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// No malformed document panics, overflows the stack or takes long.
    #[test]
    fn malformed_nesting_converts_quickly(html in document()) {
        let started = Instant::now();
        let _ = html_to_text(html.clone(), Format::Markdown);
        prop_assert!(started.elapsed() < Duration::from_secs(3), "{:?} for {} bytes", started.elapsed(), html.len());
    }
}
