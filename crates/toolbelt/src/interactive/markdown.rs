//! Markdown and diffs as styled terminal lines.
//!
//! `pulldown-cmark` parses (CommonMark, the same parser rustdoc uses); code blocks are
//! highlighted with `syntect`'s bundled grammars and themes. syntect was chosen over a
//! tree-sitter grammar per language because one pure-Rust dependency (its `regex-fancy`
//! engine, no C library) covers every common language; its cost, loading the grammar
//! set (about 20 ms), is paid lazily on the first code block, never at start-up, so the
//! first frame does not wait for it.

use std::sync::OnceLock;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

struct Highlighter {
    syntaxes: SyntaxSet,
    theme: Theme,
}

fn highlighter() -> Option<&'static Highlighter> {
    static CELL: OnceLock<Option<Highlighter>> = OnceLock::new();
    CELL.get_or_init(|| {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let mut themes = ThemeSet::load_defaults();
        let theme = themes.themes.remove("base16-ocean.dark")?;
        Some(Highlighter { syntaxes, theme })
    })
    .as_ref()
}

/// Code in `lang`, one styled line per source line; plain when the language is unknown.
pub fn code_lines(code: &str, lang: &str) -> Vec<Line<'static>> {
    let plain = |code: &str| -> Vec<Line<'static>> {
        code.lines()
            .map(|l| Line::styled(format!("  {l}"), Style::default().fg(Color::Cyan)))
            .collect()
    };
    let Some(h) = highlighter() else {
        return plain(code);
    };
    let Some(syntax) = (!lang.is_empty())
        .then(|| h.syntaxes.find_syntax_by_token(lang))
        .flatten()
    else {
        return plain(code);
    };
    let mut lines = HighlightLines::new(syntax, &h.theme);
    let mut out = Vec::new();
    for line in syntect::util::LinesWithEndings::from(code) {
        let Ok(ranges) = lines.highlight_line(line, &h.syntaxes) else {
            return plain(code);
        };
        let mut spans = vec![Span::raw("  ")];
        for (style, text) in ranges {
            let text = text.trim_end_matches(['\n', '\r']);
            if text.is_empty() {
                continue;
            }
            let fg = style.foreground;
            spans.push(Span::styled(
                text.to_string(),
                Style::default().fg(Color::Rgb(fg.r, fg.g, fg.b)),
            ));
        }
        out.push(Line::from(spans));
    }
    out
}

/// A unified diff, added lines green, removed red, hunk headers cyan.
pub fn diff_lines(diff: &str) -> Vec<Line<'static>> {
    diff.lines()
        .map(|l| {
            let style = if l.starts_with("+++") || l.starts_with("---") {
                Style::default().add_modifier(Modifier::BOLD)
            } else if l.starts_with('+') {
                Style::default().fg(Color::Green)
            } else if l.starts_with('-') {
                Style::default().fg(Color::Red)
            } else if l.starts_with("@@") {
                Style::default().fg(Color::Cyan)
            } else {
                Style::default().add_modifier(Modifier::DIM)
            };
            Line::styled(shown(l), style)
        })
        .collect()
}

/// A diff line as a terminal shows it: a cell drops a tab, so the header's
/// `name<TAB>Current` would read `nameCurrent`, and indentation would vanish. The
/// header's label goes in parentheses; other tabs become four spaces.
fn shown(line: &str) -> String {
    if (line.starts_with("+++ ") || line.starts_with("--- "))
        && let Some((name, label)) = line.split_once('\t')
    {
        return format!("{name}  ({})", label.to_lowercase());
    }
    line.replace('\t', "    ")
}

/// Markdown as styled lines: headings, emphasis, inline code, lists, quotes, links and
/// highlighted code blocks. Lines are not wrapped here; the paragraph that shows them
/// wraps to the terminal's width.
pub fn render(text: &str) -> Vec<Line<'static>> {
    let mut r = Renderer::default();
    for event in Parser::new(text) {
        r.event(event);
    }
    r.finish_line();
    while r.lines.last().is_some_and(|l| l.width() == 0) {
        r.lines.pop();
    }
    r.lines
}

#[derive(Default)]
struct Renderer {
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Item numbers of the open lists (`None`: bullets).
    lists: Vec<Option<u64>>,
    quote: usize,
    code: Option<(String, String)>,
    link: Option<String>,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::default(), |acc, s| acc.patch(*s))
    }

    fn push_text(&mut self, text: &str) {
        if self.current.is_empty() && self.quote > 0 {
            self.current.push(Span::styled(
                "│ ".repeat(self.quote),
                Style::default().fg(Color::DarkGray),
            ));
        }
        self.current
            .push(Span::styled(text.to_string(), self.style()));
    }

    fn finish_line(&mut self) {
        if !self.current.is_empty() {
            self.lines
                .push(Line::from(std::mem::take(&mut self.current)));
        }
    }

    fn blank(&mut self) {
        self.finish_line();
        if self.lines.last().is_some_and(|l| l.width() > 0) {
            self.lines.push(Line::default());
        }
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some((_, code)) = &mut self.code {
            match event {
                Event::Text(t) => code.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    if let Some((lang, code)) = self.code.take() {
                        self.finish_line();
                        self.lines.extend(code_lines(&code, &lang));
                        self.blank();
                    }
                }
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                let mut first = true;
                for part in t.split('\n') {
                    if !first {
                        self.finish_line();
                    }
                    first = false;
                    if !part.is_empty() {
                        self.push_text(part);
                    }
                }
            }
            Event::Code(t) => {
                let style = self.style().fg(Color::Yellow);
                self.current.push(Span::styled(t.to_string(), style));
            }
            Event::SoftBreak => self.push_text(" "),
            Event::HardBreak => self.finish_line(),
            Event::Rule => {
                self.finish_line();
                self.lines.push(Line::styled(
                    "─".repeat(40),
                    Style::default().fg(Color::DarkGray),
                ));
            }
            Event::TaskListMarker(done) => self.push_text(if done { "[x] " } else { "[ ] " }),
            Event::Html(t) | Event::InlineHtml(t) => self.push_text(&t),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { level, .. } => {
                self.blank();
                let style = Style::default().add_modifier(Modifier::BOLD);
                let style = if level == HeadingLevel::H1 {
                    style.add_modifier(Modifier::UNDERLINED)
                } else {
                    style
                };
                self.styles.push(style);
            }
            Tag::Paragraph => {}
            Tag::BlockQuote(_) => {
                self.finish_line();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.finish_line();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.finish_line();
                self.lists.push(start);
            }
            Tag::Item => {
                self.finish_line();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_string(),
                };
                self.current
                    .push(Span::raw(format!("{}{marker}", "  ".repeat(depth))));
            }
            Tag::Emphasis => self
                .styles
                .push(Style::default().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self
                .styles
                .push(Style::default().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(Style::default().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.styles.push(
                    Style::default()
                        .fg(Color::Blue)
                        .add_modifier(Modifier::UNDERLINED),
                );
                self.link = Some(dest_url.to_string());
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.blank();
            }
            TagEnd::Paragraph => {
                if self.lists.is_empty() {
                    self.blank();
                } else {
                    self.finish_line();
                }
            }
            TagEnd::BlockQuote(_) => {
                self.quote = self.quote.saturating_sub(1);
                self.blank();
            }
            TagEnd::List(_) => {
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item => self.finish_line(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    self.current.push(Span::styled(
                        format!(" ({url})"),
                        Style::default().fg(Color::DarkGray),
                    ));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn headings_lists_and_code_become_lines() {
        let text =
            "# Title\n\nSome *text* with `code`.\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n";
        let lines = render(text);
        assert_eq!(
            plain(&lines),
            vec![
                "Title",
                "",
                "Some text with code.",
                "",
                "• one",
                "• two",
                "",
                "  fn main() {}",
            ]
        );
        // The code line is highlighted: more than the indent and one span.
        assert!(lines[7].spans.len() > 2, "{:?}", lines[7]);
    }

    #[test]
    fn numbered_lists_count_and_links_show_their_target() {
        let lines = render("1. [a](http://x.test)\n2. b\n");
        assert_eq!(plain(&lines), vec!["1. a (http://x.test)", "2. b"]);
    }

    #[test]
    fn diff_lines_are_coloured_by_their_sign() {
        let lines = diff_lines("@@ -1 +1 @@\n-old\n+new\n");
        assert_eq!(lines[1].style.fg, Some(Color::Red));
        assert_eq!(lines[2].style.fg, Some(Color::Green));
    }

    #[test]
    fn diff_headers_and_tabs_read_as_written() {
        let lines = diff_lines("--- src/a.py\tCurrent\n+++ src/a.py\tProposed\n-\tx = 1\n");
        assert_eq!(
            plain(&lines),
            vec![
                "--- src/a.py  (current)",
                "+++ src/a.py  (proposed)",
                "-    x = 1"
            ]
        );
    }
}
