//! Where a notebook's cells are in its text, and how it is indented: what lets
//! `notebook_edit` splice one cell into the file and keep the rest byte for byte.

use std::ops::Range;

use serde_json::Value;

/// Where the `cells` list and each cell are in the notebook's text (byte offsets).
#[derive(Debug)]
pub(super) struct Layout {
    /// The `[` of the list.
    pub(super) open: usize,
    /// Its `]`.
    pub(super) close: usize,
    /// Each cell's object.
    pub(super) cells: Vec<Range<usize>>,
}

impl Layout {
    /// Scans text that is known to be valid JSON for the top-level `cells` list.
    pub(super) fn scan(text: &str) -> Option<Layout> {
        let b = text.as_bytes();
        let mut pos = skip_ws(b, 0);
        if b.get(pos) != Some(&b'{') {
            return None;
        }
        pos += 1;
        loop {
            pos = skip_ws(b, pos);
            if b.get(pos) != Some(&b'"') {
                return None;
            }
            let key_end = skip_string(b, pos)?;
            let key: String = serde_json::from_str(&text[pos..key_end]).ok()?;
            pos = skip_ws(b, key_end);
            if b.get(pos) != Some(&b':') {
                return None;
            }
            pos = skip_ws(b, pos + 1);
            if key == "cells" {
                return Self::scan_list(b, pos);
            }
            pos = skip_ws(b, skip_value(b, pos)?);
            if b.get(pos) != Some(&b',') {
                return None;
            }
            pos += 1;
        }
    }

    fn scan_list(b: &[u8], open: usize) -> Option<Layout> {
        if b.get(open) != Some(&b'[') {
            return None;
        }
        let mut cells = Vec::new();
        let mut pos = skip_ws(b, open + 1);
        if b.get(pos) == Some(&b']') {
            return Some(Layout {
                open,
                close: pos,
                cells,
            });
        }
        loop {
            let end = skip_value(b, pos)?;
            cells.push(pos..end);
            pos = skip_ws(b, end);
            match b.get(pos)? {
                b',' => pos = skip_ws(b, pos + 1),
                b']' => {
                    return Some(Layout {
                        open,
                        close: pos,
                        cells,
                    });
                }
                _ => return None,
            }
        }
    }
}

fn skip_ws(b: &[u8], mut pos: usize) -> usize {
    while b.get(pos).is_some_and(u8::is_ascii_whitespace) {
        pos += 1;
    }
    pos
}

/// The end of the string starting at `pos` (just after its closing quote).
fn skip_string(b: &[u8], pos: usize) -> Option<usize> {
    let mut i = pos + 1;
    loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The end of the value starting at `pos`.
fn skip_value(b: &[u8], pos: usize) -> Option<usize> {
    match b.get(pos)? {
        b'"' => skip_string(b, pos),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = pos;
            loop {
                match b.get(i)? {
                    b'"' => {
                        i = skip_string(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = pos;
            while b
                .get(i)
                .is_some_and(|c| !matches!(c, b',' | b']' | b'}') && !c.is_ascii_whitespace())
            {
                i += 1;
            }
            Some(i)
        }
    }
}

/// How the notebook is laid out: its indentation unit (`None`: on one line) and the
/// indentation of its cells.
#[derive(Debug)]
pub(super) struct Style {
    unit: Option<String>,
    cell_indent: String,
}

impl Style {
    pub(super) fn detect(text: &str, layout: &Layout) -> Style {
        let b = text.as_bytes();
        let open = skip_ws(b, 0) + 1;
        let unit = text[open..]
            .strip_prefix('\n')
            .or_else(|| text[open..].strip_prefix("\r\n"))
            .map(|rest| {
                let n = rest.len() - rest.trim_start_matches([' ', '\t']).len();
                rest[..n].to_string()
            })
            .filter(|u| !u.is_empty());
        let cell_indent = match (&unit, layout.cells.first()) {
            (None, _) => String::new(),
            (Some(_), Some(first)) => {
                let line_start = text[..first.start].rfind('\n').map_or(0, |i| i + 1);
                text[line_start..first.start].to_string()
            }
            (Some(unit), None) => unit.repeat(2),
        };
        Style { unit, cell_indent }
    }

    /// A cell serialized to sit at the cell indentation.
    pub(super) fn cell(&self, cell: &Value) -> String {
        let Some(unit) = &self.unit else {
            return serde_json::to_string(cell).unwrap_or_default();
        };
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
        // Serializing a `Value` into a Vec cannot fail.
        let _ = serde::Serialize::serialize(cell, &mut ser);
        String::from_utf8_lossy(&out).replace('\n', &format!("\n{}", self.cell_indent))
    }

    /// A line break followed by the indentation of `depth` (1: the notebook's keys,
    /// 2: its cells); nothing when the notebook is on one line.
    pub(super) fn break_at(&self, depth: usize) -> String {
        match &self.unit {
            None => String::new(),
            Some(_) if depth == 2 => format!("\n{}", self.cell_indent),
            Some(unit) => format!("\n{}", unit.repeat(depth)),
        }
    }
}
