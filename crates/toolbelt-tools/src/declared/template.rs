//! The static message templates of a binding: `${input.path}` replaced by the call's
//! value at that dotted path.
//!
//! The values come from the model, so they are made harmless before they reach a person:
//! control characters (newlines included) are removed, each value is cut to
//! [`MAX_VALUE_CHARS`], and in a Markdown message the Markdown characters are
//! backslash-escaped, so an argument cannot fake a heading, a link or a button label.

use serde_json::Value;

/// Longest substituted value, in characters.
pub(crate) const MAX_VALUE_CHARS: usize = 200;

/// How substituted values are escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Escape {
    /// Plain text (titles, invocation messages).
    Plain,
    /// Markdown (confirmation messages).
    Markdown,
}

/// Replaces every `${input.a.b}` in `template`. Strings go in raw, other values as
/// compact JSON, a missing value as nothing. A `${` without its `}` stays as written.
pub(crate) fn render(template: &str, input: &Value, escape: Escape) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let path = after[..end].trim();
        match path
            .strip_prefix("input.")
            .or((path == "input").then_some(""))
        {
            Some(path) => out.push_str(&escaped(&lookup(input, path), escape)),
            // Not ours (`${env.HOME}`): left as written, so the author sees the mistake.
            None => out.push_str(&rest[start..start + 2 + end + 1]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

fn lookup(input: &Value, path: &str) -> String {
    let mut value = input;
    if !path.is_empty() {
        for segment in path.split('.') {
            let next = match value {
                Value::Object(map) => map.get(segment),
                Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            match next {
                Some(v) => value = v,
                None => return String::new(),
            }
        }
    }
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A value made fit for a message: no control characters, at most
/// [`MAX_VALUE_CHARS`] characters, Markdown characters escaped when `escape` says so.
pub(crate) fn escaped(value: &str, escape: Escape) -> String {
    let mut out = String::new();
    for c in value
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_VALUE_CHARS)
    {
        if escape == Escape::Markdown && is_markdown_special(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn is_markdown_special(c: char) -> bool {
    matches!(
        c,
        '\\' | '`'
            | '*'
            | '_'
            | '{'
            | '}'
            | '['
            | ']'
            | '('
            | ')'
            | '#'
            | '+'
            | '-'
            | '.'
            | '!'
            | '|'
            | '<'
            | '>'
            | '~'
            | '&'
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn substitutes_dotted_paths_strings_raw_and_other_values_as_json() {
        let input = json!({"path": "a.txt", "opts": {"n": 3, "deep": {"x": [1, 2]}}, "none": null});
        let cases = [
            ("Count ${input.path}", "Count a.txt"),
            ("n=${input.opts.n}", "n=3"),
            ("${input.opts.deep.x}", "[1,2]"),
            ("${input.opts.deep.x.1}", "2"),
            ("[${input.missing}] [${input.none}]", "[] []"),
            ("${ input.path }", "a.txt"),
            ("unclosed ${input.path", "unclosed ${input.path"),
            ("${env.HOME} stays", "${env.HOME} stays"),
        ];
        for (template, want) in cases {
            assert_eq!(render(template, &input, Escape::Plain), want, "{template}");
        }
    }

    #[test]
    fn hostile_values_are_stripped_cut_and_escaped() {
        let input = json!({
            "md": "# Title [click](http://evil) **bold** `code` <b>",
            "ctl": "line1\nline2\r\u{1b}[31mred\u{7}",
            "long": "x".repeat(1000),
        });
        let md = render("${input.md}", &input, Escape::Markdown);
        assert_eq!(
            md,
            "\\# Title \\[click\\]\\(http://evil\\) \\*\\*bold\\*\\* \\`code\\` \\<b\\>"
        );
        assert_eq!(render("${input.md}", &input, Escape::Plain), input["md"]);
        let ctl = render("${input.ctl}", &input, Escape::Plain);
        assert_eq!(ctl, "line1line2[31mred");
        let long = render("a ${input.long} b", &input, Escape::Plain);
        assert_eq!(long, format!("a {} b", "x".repeat(MAX_VALUE_CHARS)));
        // The template's own Markdown is the author's and stays.
        assert_eq!(
            render(
                "**Run** on `${input.md}`",
                &json!({"md": "*"}),
                Escape::Markdown
            ),
            "**Run** on `\\*`"
        );
    }
}
