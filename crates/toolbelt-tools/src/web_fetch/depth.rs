//! Bounding how deep a page nests, so converting it takes linear time and a bounded stack.
//!
//! A hostile page of 20,000 nested `<div>`s (100 KB) overflowed the stack of the
//! recursive HTML-to-Markdown walk and took the whole process down; 200,000 took minutes,
//! because the HTML parser's tree builder looks through its stack of open elements at
//! each start tag (quadratic in the depth). Real pages nest a few dozen levels deep.
//!
//! Two passes, neither recursive:
//!
//! - [`bound_nesting`], before parsing, scans the tags the way the parser will see them
//!   (comments, raw-text elements such as `<script>`, quoted attributes, void elements,
//!   the implied ends of `<li>`, `<p>`, `<td>` ...) and keeps an approximate stack of open
//!   elements; a start tag deeper than [`MAX_TAG_DEPTH`] is dropped, with the end tag
//!   that closes it, while its text stays. This bounds the parser's work.
//! - [`flatten_tree`], after parsing, is the guarantee the first pass's approximation
//!   cannot give: an element at [`MAX_TREE_DEPTH`] keeps its text and leaf elements as
//!   direct children and loses the elements between, so the walk's recursion is bounded
//!   whatever the parser built.

use std::rc::Rc;

use htmd::Node;

/// Start tags kept at most this deep (counted as the first pass counts them).
pub(super) const MAX_TAG_DEPTH: usize = 256;
/// Elements below this depth of the parsed tree are flattened into it.
pub(super) const MAX_TREE_DEPTH: usize = 512;
/// How far down its stack an end tag looks for the element it closes; an end tag
/// whose element is deeper is ignored by the count (so the count errs high).
const END_TAG_REACH: usize = 32;

/// Elements with no content and no end tag.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param",
    "source", "track", "wbr", "frame", "basefont", "bgsound", "image",
];
/// Elements whose content is text up to their end tag (no tags inside).
const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
];
/// Elements an end tag of another element does not reach past (the parser's "special"
/// elements and scope boundaries, roughly): an end tag of a phrasing element such as
/// `</span>` is ignored when one of these is open above it, so the count must not pop
/// through them either.
const BARRIER: &[&str] = &[
    "address",
    "applet",
    "article",
    "aside",
    "blockquote",
    "body",
    "button",
    "caption",
    "center",
    "colgroup",
    "dd",
    "details",
    "dir",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "html",
    "li",
    "listing",
    "main",
    "marquee",
    "menu",
    "nav",
    "object",
    "ol",
    "p",
    "pre",
    "section",
    "select",
    "summary",
    "table",
    "tbody",
    "td",
    "template",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
    "svg",
    "math",
];
/// Scope boundaries: no end tag reaches past these.
const SCOPE: &[&str] = &[
    "applet", "caption", "html", "table", "td", "th", "marquee", "object", "template",
];

/// A start tag of `new` ends an open `open` on top of the stack (`<li>` after `<li>`).
fn implies_end(open: &str, new: &str) -> bool {
    match new {
        "li" => open == "li",
        "dd" | "dt" => matches!(open, "dd" | "dt"),
        "option" => open == "option",
        "optgroup" => matches!(open, "option" | "optgroup"),
        "tr" => matches!(open, "tr" | "td" | "th"),
        "td" | "th" => matches!(open, "td" | "th"),
        "tbody" | "thead" | "tfoot" => {
            matches!(open, "tbody" | "thead" | "tfoot" | "tr" | "td" | "th")
        }
        "rb" | "rt" | "rtc" | "rp" => matches!(open, "rb" | "rt" | "rtc" | "rp"),
        "p" | "div" | "ul" | "ol" | "table" | "pre" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6"
        | "blockquote" | "section" | "article" | "header" | "footer" | "dl" | "form" | "hr"
        | "address" | "aside" | "nav" | "main" | "figure" | "details" | "fieldset" | "menu"
        | "center" => open == "p",
        "a" => open == "a",
        _ => false,
    }
}

/// One tag as the scanner found it.
struct Tag {
    /// Lower-case name; empty for comments, doctypes and processing instructions.
    name: String,
    end: bool,
    /// Written `<x/>`: it closes itself in SVG and MathML (not in HTML, where
    /// `<div/>` opens a `div`).
    self_closing: bool,
    /// Byte offset just past the tag.
    next: usize,
}

/// An element the count holds open.
struct Open {
    name: String,
    /// Its start tag was dropped (so its end tag is dropped too).
    dropped: bool,
    /// It is, or is inside, `<svg>` or `<math>`.
    foreign: bool,
}

/// `html` with start tags deeper than [`MAX_TAG_DEPTH`] (and their end tags) removed;
/// text, comments and every other byte kept. Linear in the length of `html`.
pub(super) fn bound_nesting(html: &str) -> String {
    let bytes = html.as_bytes();
    let mut out = String::with_capacity(html.len());
    let mut stack: Vec<Open> = Vec::new();
    let mut i = 0;
    let mut copied = 0;
    while let Some(offset) = bytes[i..].iter().position(|&b| b == b'<') {
        let start = i + offset;
        let Some(tag) = scan_tag(bytes, start) else {
            i = start + 1;
            continue;
        };
        i = tag.next;
        if tag.name.is_empty() {
            continue;
        }
        let name = tag.name.as_str();
        let keep = if tag.end {
            end_tag(&mut stack, name)
        } else if VOID.contains(&name) {
            true
        } else if RAW_TEXT.contains(&name) {
            // Its text runs to its end tag; it nests nothing, so it is always kept.
            i = raw_text_end(bytes, i, name);
            true
        } else {
            implied_ends(&mut stack, name);
            let foreign = matches!(name, "svg" | "math") || stack.last().is_some_and(|o| o.foreign);
            let dropped = stack.len() >= MAX_TAG_DEPTH;
            if !(foreign && tag.self_closing) {
                stack.push(Open {
                    name: tag.name,
                    dropped,
                    foreign,
                });
            }
            !dropped
        };
        if !keep {
            out.push_str(&html[copied..start]);
            copied = i;
        }
    }
    out.push_str(&html[copied..]);
    out
}

/// Pops what a start tag of `name` ends (`<li>` an open `<li>`, `<p>` an open `<p>`,
/// each also through open phrasing elements such as `<b>`, as the parser does).
fn implied_ends(stack: &mut Vec<Open>, name: &str) {
    let reach = stack.len().saturating_sub(END_TAG_REACH);
    for at in (reach..stack.len()).rev() {
        let open = stack[at].name.as_str();
        if implies_end(open, name) {
            stack.truncate(at);
            return;
        }
        if BARRIER.contains(&open) && !matches!(open, "address" | "div" | "p") {
            return;
        }
    }
}

/// Counts an end tag against the stack; whether it is kept (its start tag was).
fn end_tag(stack: &mut Vec<Open>, name: &str) -> bool {
    if VOID.contains(&name) || RAW_TEXT.contains(&name) {
        return true;
    }
    let phrasing = !BARRIER.contains(&name);
    let reach = stack.len().saturating_sub(END_TAG_REACH);
    for at in (reach..stack.len()).rev() {
        let open = stack[at].name.as_str();
        if open == name {
            let dropped = stack[at].dropped;
            stack.truncate(at);
            return !dropped;
        }
        // A table's own end tags close its open cells (`</table>` after `<td>`).
        let table_part = matches!(name, "table" | "tbody" | "thead" | "tfoot" | "tr")
            && matches!(open, "td" | "th" | "caption");
        if (SCOPE.contains(&open) && !table_part) || (phrasing && BARRIER.contains(&open)) {
            break;
        }
    }
    // Not counted as closing anything: the parser ignores it or closes more than the
    // count knows, which only makes the count err high.
    stack.last().is_none_or(|open| !open.dropped)
}

/// The tag that starts at `bytes[start] == b'<'`, or `None` when the `<` is text.
fn scan_tag(bytes: &[u8], start: usize) -> Option<Tag> {
    let rest = &bytes[start + 1..];
    let comment = |close: &[u8], skip: usize| {
        let next = find(&bytes[start + skip..], close)
            .map_or(bytes.len(), |at| start + skip + at + close.len());
        Some(Tag {
            name: String::new(),
            end: false,
            self_closing: false,
            next,
        })
    };
    if rest.starts_with(b"!--") {
        return comment(b"-->", 4);
    }
    if rest.starts_with(b"!") || rest.starts_with(b"?") {
        return comment(b">", 1);
    }
    let (end, name_at) = if rest.starts_with(b"/") {
        (true, start + 2)
    } else {
        (false, start + 1)
    };
    if !bytes.get(name_at).is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    let name_end = bytes[name_at..]
        .iter()
        .position(|&b| b.is_ascii_whitespace() || b == b'/' || b == b'>')
        .map_or(bytes.len(), |p| name_at + p);
    let name = String::from_utf8_lossy(&bytes[name_at..name_end]).to_ascii_lowercase();
    // Attributes: a `>` inside quotes does not end the tag.
    let mut quote = None;
    let mut at = name_end;
    while at < bytes.len() {
        let b = bytes[at];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            // Only a quote that opens an attribute value counts.
            None if matches!(b, b'"' | b'\'')
                && (bytes[at - 1] == b'=' || bytes[at - 1].is_ascii_whitespace()) =>
            {
                quote = Some(b);
            }
            None if b == b'>' => break,
            None => {}
        }
        at += 1;
    }
    Some(Tag {
        name,
        end,
        self_closing: at > name_end && bytes[at - 1] == b'/',
        next: (at + 1).min(bytes.len()),
    })
}

/// Where the text of a raw-text element that starts at `from` ends: at its end tag
/// (which is then scanned as a tag), or the end of the input.
fn raw_text_end(bytes: &[u8], from: usize, name: &str) -> usize {
    let mut at = from;
    while let Some(offset) = find(&bytes[at..], b"</") {
        let tag = at + offset;
        let candidate = &bytes[tag + 2..];
        if candidate.len() >= name.len()
            && candidate[..name.len()].eq_ignore_ascii_case(name.as_bytes())
        {
            return tag;
        }
        at = tag + 2;
    }
    bytes.len()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Flattens every element at depth [`MAX_TREE_DEPTH`]: its descendants without children
/// (text, line breaks, images) become its children, in document order, and the elements
/// between are dropped. Iterative, linear in the size of the tree.
pub(super) fn flatten_tree(root: &Rc<Node>) {
    let mut stack: Vec<(Rc<Node>, usize)> = vec![(root.clone(), 0)];
    while let Some((node, depth)) = stack.pop() {
        if depth >= MAX_TREE_DEPTH {
            flatten(&node);
            continue;
        }
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), depth + 1));
        }
    }
}

fn flatten(node: &Rc<Node>) {
    let mut pending: Vec<Rc<Node>> = std::mem::take(&mut *node.children.borrow_mut());
    pending.reverse();
    let mut leaves = Vec::new();
    while let Some(next) = pending.pop() {
        let children = std::mem::take(&mut *next.children.borrow_mut());
        if children.is_empty() {
            next.parent.set(Some(Rc::downgrade(node)));
            leaves.push(next);
        } else {
            pending.extend(children.into_iter().rev());
        }
    }
    *node.children.borrow_mut() = leaves;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!(
            "{}deep text{}",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        )
    }

    fn tree_depth(root: &Rc<Node>) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(root.clone(), 0)];
        while let Some((node, depth)) = stack.pop() {
            deepest = deepest.max(depth);
            for child in node.children.borrow().iter() {
                stack.push((child.clone(), depth + 1));
            }
        }
        deepest
    }

    fn parse(html: &str) -> Rc<Node> {
        htmd::HtmlToMarkdown::new().html_to_tree(html).unwrap()
    }

    #[test]
    fn shallow_pages_are_unchanged() {
        let page = "<html><head><title>a<b></title><script>if (a<b) { x = '</div>' }</script></head>\
            <body><!-- <div> --><ul><li>one<li>two</ul><p>para<p>next <a href='x>y'>link</a>\
            <table><tr><td>1<td>2<tr><td>3</table><br><img src=x></body></html>";
        assert_eq!(bound_nesting(page), page);
        assert_eq!(bound_nesting(&nested(MAX_TAG_DEPTH)), nested(MAX_TAG_DEPTH));
    }

    #[test]
    fn sloppy_but_shallow_pages_keep_their_markup() {
        // Unclosed cells, list items and formatting inside paragraphs: the parser closes
        // them, and so must the count, or a long page would lose its markup.
        let row = "<table><tr><td>a<td><b>b</table><ul><li>x<li><i>y</ul><p><b>one<p>two<p>";
        let page = row.repeat(2_000);
        assert_eq!(bound_nesting(&page), page);
    }

    #[test]
    fn deep_nesting_is_cut_at_the_limit_and_keeps_its_text() {
        let bounded = bound_nesting(&nested(20_000));
        assert_eq!(bounded, nested(MAX_TAG_DEPTH));
        let tree = parse(&bounded);
        assert!(tree_depth(&tree) <= MAX_TAG_DEPTH + 4);
    }

    #[test]
    fn end_tags_the_parser_ignores_do_not_lower_the_count() {
        // `</span>` cannot close a span through an open `<div>`, so the parser nests
        // ever deeper; so must the count.
        let page = "<span><div></span>".repeat(10_000) + "text";
        let tree = parse(&bound_nesting(&page));
        assert!(
            tree_depth(&tree) <= 2 * MAX_TAG_DEPTH + 8,
            "{}",
            tree_depth(&tree)
        );
        let page = "<div><table></div>".repeat(10_000);
        let tree = parse(&bound_nesting(&page));
        assert!(
            tree_depth(&tree) <= 2 * MAX_TAG_DEPTH + 8,
            "{}",
            tree_depth(&tree)
        );
    }

    #[test]
    fn a_deep_tree_is_flattened_with_its_text_in_order() {
        let tree = parse(&nested(3_000).replace("deep text", "<b>one</b> two<br>three"));
        flatten_tree(&tree);
        assert!(tree_depth(&tree) <= MAX_TREE_DEPTH + 1);
        let markdown = htmd::HtmlToMarkdown::new().tree_to_markdown(&tree);
        assert!(markdown.contains("one two"), "{markdown}");
        assert!(markdown.contains("three"), "{markdown}");
    }
}
