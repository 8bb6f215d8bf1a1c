//! A fetched body: read up to a cap, decoded from its charset, and turned into text the
//! model can use (HTML to Markdown; text, Markdown and JSON as they are; anything else
//! described).

use encoding_rs::Encoding;
use tokio_util::sync::CancellationToken;

/// How the page should come back (`format` of the call).
// The variants' notes are plain comments: as doc comments they would reach the
// parameter schema, which describes the choices in the field's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum Format {
    // HTML as Markdown, other text as it is.
    #[default]
    Auto,
    Markdown,
    // HTML as plain text: no link targets, no images.
    Text,
    // HTML as it came (decoded), scripts and all.
    Html,
}

impl Format {
    /// The `Accept` header for this format.
    pub(super) fn accept(self) -> &'static str {
        match self {
            Format::Auto | Format::Markdown => {
                "text/markdown, text/html;q=0.9, text/plain;q=0.8, application/json;q=0.7, */*;q=0.1"
            }
            Format::Text => "text/plain, text/html;q=0.9, */*;q=0.1",
            Format::Html => "text/html, */*;q=0.1",
        }
    }
}

/// The body as read.
pub(super) struct Body {
    pub bytes: Vec<u8>,
    /// Reading stopped at the cap; the rest was never read.
    pub capped: bool,
}

/// Why reading stopped early.
pub(super) enum ReadError {
    Cancelled,
    Failed(reqwest::Error),
}

/// Reads the body chunk by chunk until its end or `cap` bytes. At the cap the response
/// is dropped (the connection closes, the rest is never transferred), so memory stays
/// within the cap plus one chunk.
pub(super) async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
    cancel: &CancellationToken,
) -> Result<Body, ReadError> {
    let hint = response
        .content_length()
        .map_or(64 * 1024, |n| n.min(cap as u64) as usize);
    let mut bytes = Vec::with_capacity(hint);
    loop {
        let chunk = tokio::select! {
            chunk = response.chunk() => chunk.map_err(ReadError::Failed)?,
            _ = cancel.cancelled() => return Err(ReadError::Cancelled),
        };
        let Some(chunk) = chunk else {
            return Ok(Body {
                bytes,
                capped: false,
            });
        };
        let room = cap - bytes.len();
        if chunk.len() >= room {
            bytes.extend_from_slice(&chunk[..room]);
            drop(response);
            return Ok(Body {
                bytes,
                capped: true,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
}

/// What the content type says the body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BodyKind {
    Html,
    /// Text of any kind the model reads as it is: plain, Markdown, JSON, XML, CSV, code.
    Text,
    Binary,
}

/// The media type (lowercase, without parameters) and the charset parameter, if any.
pub(super) fn parse_content_type(header: Option<&str>) -> (String, Option<String>) {
    let Some(header) = header else {
        return (String::new(), None);
    };
    let mut parts = header.split(';');
    let mime = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    let charset = parts.find_map(|p| {
        let (name, value) = p.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"').to_string())
    });
    (mime, charset)
}

/// Classifies a body by its media type, and by its first bytes when the server gave none.
pub(super) fn body_kind(mime: &str, bytes: &[u8]) -> BodyKind {
    match mime {
        "text/html" | "application/xhtml+xml" => BodyKind::Html,
        m if m.starts_with("text/")
            || m.ends_with("+json")
            || m.ends_with("+xml")
            || matches!(
                m,
                "application/json"
                    | "application/xml"
                    | "application/javascript"
                    | "application/x-javascript"
                    | "application/ecmascript"
                    | "application/x-yaml"
                    | "application/yaml"
                    | "application/toml"
                    | "application/x-sh"
                    | "application/sql"
                    | "application/graphql"
            ) =>
        {
            BodyKind::Text
        }
        "" => {
            let head = &bytes[..bytes.len().min(512)];
            let lower = String::from_utf8_lossy(head).to_ascii_lowercase();
            if lower.trim_start().starts_with("<!doctype html") || lower.contains("<html") {
                BodyKind::Html
            } else if std::str::from_utf8(head).is_ok() && !head.contains(&0) {
                BodyKind::Text
            } else {
                BodyKind::Binary
            }
        }
        _ => BodyKind::Binary,
    }
}

/// Decodes text with the charset of the header, else of a byte-order mark, else (for
/// HTML) of a `<meta>` in the first 1024 bytes, else as UTF-8. Bad bytes become U+FFFD.
///
/// Takes the bytes so that a UTF-8 body (most of the web) becomes the text in place,
/// without a second copy of a page that may be megabytes long.
pub(super) fn decode(bytes: Vec<u8>, header_charset: Option<&str>, html: bool) -> String {
    let from_header = header_charset.and_then(|c| Encoding::for_label(c.as_bytes()));
    let from_bom = Encoding::for_bom(&bytes).map(|(e, _)| e);
    let from_meta = if html { meta_charset(&bytes) } else { None };
    let encoding = from_bom
        .or(from_header)
        .or(from_meta)
        .unwrap_or(encoding_rs::UTF_8);
    if encoding == encoding_rs::UTF_8 && from_bom.is_none() {
        return String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    }
    let (text, _, _) = encoding.decode(&bytes);
    text.into_owned()
}

/// The charset a document declares in `<meta charset=...>` or
/// `<meta http-equiv="Content-Type" content="...; charset=...">`.
fn meta_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(1024)]).to_ascii_lowercase();
    let mut rest = head.as_str();
    while let Some(at) = rest.find("<meta") {
        rest = &rest[at + 5..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        if let Some(pos) = tag.find("charset") {
            let value = tag[pos + 7..].trim_start().strip_prefix('=')?.trim_start();
            let value = value.trim_start_matches(['"', '\'']);
            let end = value
                .find(|c: char| c == '"' || c == '\'' || c == ';' || c == '/' || c.is_whitespace())
                .unwrap_or(value.len());
            // A page that claims UTF-16 in ASCII bytes is not UTF-16 (HTML's rule).
            return Encoding::for_label(&value.as_bytes()[..end]).map(|e| {
                if e == encoding_rs::UTF_16LE || e == encoding_rs::UTF_16BE {
                    encoding_rs::UTF_8
                } else {
                    e
                }
            });
        }
    }
    None
}

/// Elements that are never content: code, styling, navigation chrome, forms, embeds.
const DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "nav", "footer", "aside", "form", "button",
    "select", "iframe", "svg", "canvas", "object", "embed", "dialog", "head",
];

/// HTML as Markdown (or plain text), without the [`DROPPED`] elements.
///
/// Takes the HTML so it is freed as soon as it is parsed: the parse tree is the largest
/// thing alive while converting, and nothing else need be beside it.
pub(super) fn html_to_text(html: String, format: Format) -> String {
    let mut builder = htmd::HtmlToMarkdown::builder()
        .skip_tags(DROPPED.to_vec())
        .scripting_enabled(false);
    if format == Format::Text {
        builder = builder.skip_tags(vec!["img"]).add_handler(
            vec!["a"],
            |handlers: &dyn htmd::element_handler::Handlers, element: htmd::Element| {
                Some(handlers.walk_children(element.node))
            },
        );
    }
    let converter = builder.build();
    // A hostile page may nest without end; both passes keep the work linear and the
    // walk's recursion bounded (see `depth`).
    let html = super::depth::bound_nesting(&html);
    let converted = match converter.html_to_tree(&html) {
        Ok(tree) => {
            // The text lives in the tree now; free it before the walk.
            drop(html);
            super::depth::flatten_tree(&tree);
            let markdown = converter.tree_to_markdown(&tree);
            drop(tree);
            markdown
        }
        // The parser only fails on I/O, which a string cannot have; keep the text anyway.
        Err(_) => html,
    };
    collapse_blank_lines(&converted)
}

/// At most one blank line in a row, no trailing spaces.
fn collapse_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_string()
}

/// A byte count for people: `12.3 KiB`.
pub(super) fn human_bytes(n: u64) -> String {
    const UNITS: &[&str] = &["bytes", "KiB", "MiB", "GiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
