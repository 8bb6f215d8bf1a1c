//! A Jupyter notebook as the model reads it: each cell under a header, its source, then
//! its outputs as text (each cut to [`MAX_OUTPUT_CHARS`], tracebacks without ANSI
//! colours) and its images as inline data (at most [`MAX_IMAGES`]).

use base64::Engine;
use serde_json::Value;
use toolbelt_core::Part;

use crate::notebook_edit::source_text;
use crate::shell::output::strip_ansi;

/// Characters kept of one text output.
pub(super) const MAX_OUTPUT_CHARS: usize = 2000;
/// Images attached from one notebook.
pub(super) const MAX_IMAGES: usize = 3;
/// Image MIME types attached, in order of preference.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg"];

/// The rendered notebook.
pub(super) struct Rendered {
    pub text: String,
    /// Each attached image with the 0-based line of the text that mentions it.
    pub images: Vec<(usize, Part)>,
}

/// Renders `notebook`; `None` when it is not an nbformat 4 notebook (no `cells` list).
pub(super) fn render(
    notebook: &Value,
    display_path: &str,
    max_image_bytes: u64,
) -> Option<Rendered> {
    let cells = notebook.get("cells")?.as_array()?;
    let mut out = Renderer {
        text: String::new(),
        images: Vec::new(),
        skipped_images: 0,
        image_bytes: 0,
        max_image_bytes,
        display_path,
    };
    let version = |key| notebook.get(key).and_then(Value::as_u64);
    let language = notebook
        .pointer("/metadata/kernelspec/language")
        .or_else(|| notebook.pointer("/metadata/language_info/name"))
        .and_then(Value::as_str);
    out.line(&format!(
        "Jupyter notebook {display_path}: {} cells, nbformat {}.{}{}.",
        cells.len(),
        version("nbformat").unwrap_or(4),
        version("nbformat_minor").unwrap_or(0),
        language
            .map(|l| format!(", language {l}"))
            .unwrap_or_default()
    ));
    let has_ids = cells.iter().any(|c| c.get("id").is_some());
    out.line(if has_ids {
        "Cells are numbered from 0; notebook_edit names a cell by its id."
    } else {
        "Cells are numbered from 0 and have no ids; notebook_edit names a cell by its index, as cell-3."
    });
    for (i, cell) in cells.iter().enumerate() {
        out.cell(i, cell);
    }
    if out.skipped_images > 0 {
        out.line(&format!(
            "\n[{} more image output(s) not attached: at most {MAX_IMAGES} images per read.]",
            out.skipped_images
        ));
    }
    Some(Rendered {
        text: out.text,
        images: out.images,
    })
}

struct Renderer<'a> {
    text: String,
    images: Vec<(usize, Part)>,
    skipped_images: usize,
    image_bytes: u64,
    max_image_bytes: u64,
    display_path: &'a str,
}

impl Renderer<'_> {
    fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// The 0-based line the next text starts on.
    fn current_line(&self) -> usize {
        crate::text_file::count_newlines(self.text.as_bytes())
    }

    fn cell(&mut self, index: usize, cell: &Value) {
        let kind = cell
            .get("cell_type")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        let mut header = format!("\n--- cell {index} [{kind}]");
        if let Some(id) = cell.get("id").and_then(Value::as_str) {
            header.push_str(&format!(" id={id}"));
        }
        if let Some(n) = cell.get("execution_count").and_then(Value::as_u64) {
            header.push_str(&format!(" execution_count={n}"));
        }
        header.push_str(" ---");
        self.line(&header);
        let source = source_text(cell.get("source"));
        if !source.is_empty() {
            self.line(source.trim_end_matches('\n'));
        }
        let outputs = cell.get("outputs").and_then(Value::as_array);
        for output in outputs.into_iter().flatten() {
            self.output(index, output);
        }
    }

    fn output(&mut self, cell: usize, output: &Value) {
        let kind = output
            .get("output_type")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        match kind {
            "stream" => {
                let name = output
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("stdout");
                self.text_output(&format!("output {name}"), &source_text(output.get("text")));
            }
            "error" => {
                let field = |key| output.get(key).and_then(Value::as_str).unwrap_or("");
                let traceback = output
                    .get("traceback")
                    .and_then(Value::as_array)
                    .map(|lines| {
                        let lines: Vec<&str> = lines.iter().filter_map(Value::as_str).collect();
                        lines.join("\n")
                    })
                    .unwrap_or_default();
                let body = format!("{}: {}\n{traceback}", field("ename"), field("evalue"));
                self.text_output("error", &strip_ansi(&body));
            }
            "execute_result" | "display_data" => {
                let Some(data) = output.get("data").and_then(Value::as_object) else {
                    return;
                };
                let mut shown = false;
                for mime in IMAGE_TYPES {
                    if let Some(encoded) = data.get(*mime) {
                        self.image(cell, mime, &source_text(Some(encoded)));
                        shown = true;
                        break;
                    }
                }
                if let Some(text) = ["text/plain", "text/markdown"]
                    .iter()
                    .find_map(|m| data.get(*m))
                    .filter(|_| !shown)
                {
                    self.text_output(&format!("output {kind}"), &source_text(Some(text)));
                } else if !shown {
                    let types: Vec<&str> = data.keys().map(String::as_str).collect();
                    self.line(&format!("[output {kind}: {} not shown]", types.join(", ")));
                }
            }
            other => self.line(&format!("[output {other}]")),
        }
    }

    fn text_output(&mut self, label: &str, text: &str) {
        self.line(&format!("[{label}]"));
        let text = text.trim_end_matches('\n');
        let total = text.chars().count();
        if total <= MAX_OUTPUT_CHARS {
            self.line(text);
        } else {
            let head: String = text.chars().take(MAX_OUTPUT_CHARS).collect();
            self.line(&head);
            self.line(&format!(
                "[... output cut: {} more characters; outputs are shown up to {MAX_OUTPUT_CHARS} characters]",
                total - MAX_OUTPUT_CHARS
            ));
        }
    }

    fn image(&mut self, cell: usize, mime: &str, encoded: &str) {
        let compact: String = encoded.split_ascii_whitespace().collect();
        let Ok(data) = base64::engine::general_purpose::STANDARD.decode(compact) else {
            self.line(&format!("[output {mime}: not valid base64, not attached]"));
            return;
        };
        let fits = self.image_bytes + data.len() as u64 <= self.max_image_bytes;
        if self.images.len() >= MAX_IMAGES || !fits {
            self.skipped_images += 1;
            self.line(&format!(
                "[output {mime}: {} bytes, not attached]",
                data.len()
            ));
            return;
        }
        self.image_bytes += data.len() as u64;
        let line = self.current_line();
        self.line(&format!(
            "[output {mime}: attached as image {}]",
            self.images.len() + 1
        ));
        self.images.push((
            line,
            Part::InlineData {
                mime_type: mime.to_string(),
                data,
                display_name: Some(format!("{} cell {cell}", self.display_path)),
            },
        ));
    }
}
