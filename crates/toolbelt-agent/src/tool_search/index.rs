//! The ranking behind `tool_search`: BM25 over the deferrable tools of a registry.
//!
//! Each tool is one document with four weighted fields (a simple BM25F): its name (the
//! strongest signal: `mcp__github__create_issue` says what it does), its description,
//! its parameter names and their descriptions. Names are cut on `_`, `-`, `.` and at
//! camelCase humps (`createPullRequest` → `create pull request`, `HTTPServer` → `http
//! server`), everything is lower-cased, a short stop-word list is dropped and plurals are
//! folded (`issues` → `issue`) so a query matches however the tool spelled the word. A
//! query that is a tool's exact name (or contains one as a word) puts that tool first.
//!
//! The index is rebuilt whenever the registry changes (a few milliseconds for thousands
//! of tools, see BENCHMARKS.md); a query touches only the postings of its own words.

use std::collections::HashMap;

use serde_json::Value;
use toolbelt_engine::{registry::Origin, registry::Registration, registry::ToolRegistry};

const K1: f32 = 1.2;
const B: f32 = 0.75;
const NAME_WEIGHT: f32 = 3.0;
const DESCRIPTION_WEIGHT: f32 = 1.0;
const PARAMETER_NAME_WEIGHT: f32 = 1.5;
const PARAMETER_DESCRIPTION_WEIGHT: f32 = 0.5;
/// Longer queries are cut here (at a character boundary): nobody searches with a page
/// of text, and the cost of a query stays bounded whatever the model sends.
pub(crate) const MAX_QUERY_CHARS: usize = 1_000;
/// Distinct words of a query that count.
pub(crate) const MAX_QUERY_TERMS: usize = 32;
/// Nested parameter schemas are indexed this deep.
const MAX_SCHEMA_DEPTH: usize = 3;
/// Characters of a description kept for the one-line summary.
const SUMMARY_CHARS: usize = 160;

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it",
    "its", "of", "on", "or", "that", "the", "this", "to", "with",
];

/// One tool as a search result shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedTool {
    /// The registered name, which the model calls.
    pub name: String,
    /// The first line of the description, shortened.
    pub summary: String,
    /// Top-level parameter names, in schema order.
    pub parameters: Vec<String>,
    /// Where it comes from: the MCP server's alias, `discovered` or `declared`.
    pub source: String,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    /// Field-weighted term frequency.
    tf: f32,
}

/// Why a query cannot be searched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    #[error(
        "the query is empty: give a few words for what the tool should do (\"create issue\", \"send message\") or a tool's name"
    )]
    Empty,
}

/// A BM25 index of tools.
#[derive(Debug, Default)]
pub struct ToolIndex {
    tools: Vec<IndexedTool>,
    /// Weighted length of each document.
    lengths: Vec<f32>,
    average_length: f32,
    postings: HashMap<String, Vec<Posting>>,
    /// Lower-cased name → document.
    by_name: HashMap<String, u32>,
}

impl ToolIndex {
    /// The tools of `registry` that may be deferred: not built in, not disabled by their
    /// `when` clause.
    pub fn from_registry(registry: &ToolRegistry) -> Self {
        Self::build(
            registry
                .all()
                .filter(|r| is_deferrable(r) && !registry.is_disabled(&r.name)),
        )
    }

    /// An index of exactly these tools.
    pub fn build<'a>(tools: impl IntoIterator<Item = &'a Registration>) -> Self {
        let mut index = ToolIndex::default();
        let mut words = Vec::new();
        for r in tools {
            let doc = index.tools.len() as u32;
            let mut counts: HashMap<String, f32> = HashMap::new();
            let mut add = |text: &str, weight: f32, words: &mut Vec<String>| {
                words.clear();
                tokenize(text, words);
                for w in words.drain(..) {
                    *counts.entry(w).or_default() += weight;
                }
            };
            add(&r.name, NAME_WEIGHT, &mut words);
            let description = r.tool.description();
            add(description, DESCRIPTION_WEIGHT, &mut words);
            let schema = r.tool.parameter_schema();
            let mut parameters = Vec::new();
            collect_parameters(schema, 0, &mut |name, text, depth| {
                if depth == 0 {
                    parameters.push(name.to_string());
                }
                add(name, PARAMETER_NAME_WEIGHT, &mut words);
                if let Some(text) = text {
                    add(text, PARAMETER_DESCRIPTION_WEIGHT, &mut words);
                }
            });
            let length: f32 = counts.values().sum();
            for (term, tf) in counts {
                index
                    .postings
                    .entry(term)
                    .or_default()
                    .push(Posting { doc, tf });
            }
            index.lengths.push(length);
            index.by_name.insert(r.name.to_lowercase(), doc);
            index.tools.push(IndexedTool {
                name: r.name.clone(),
                summary: summary(description),
                parameters,
                source: source(&r.origin),
            });
        }
        let n = index.lengths.len().max(1) as f32;
        index.average_length = (index.lengths.iter().sum::<f32>() / n).max(1.0);
        index
    }

    /// The number of tools indexed.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The indexed tools, in registration order.
    pub fn tools(&self) -> &[IndexedTool] {
        &self.tools
    }

    /// Up to `max_results` tools for `query`, best first; empty when no word of the query
    /// occurs in any tool. Ties keep registration order.
    pub fn search(&self, query: &str, max_results: usize) -> Result<Vec<&IndexedTool>, QueryError> {
        let query = cut_chars(query.trim(), MAX_QUERY_CHARS);
        if query.is_empty() {
            return Err(QueryError::Empty);
        }
        let mut terms = Vec::new();
        tokenize(query, &mut terms);
        let mut seen = std::collections::HashSet::new();
        terms.retain(|t| seen.insert(t.clone()));
        terms.truncate(MAX_QUERY_TERMS);

        let n = self.tools.len() as f32;
        let mut scores = vec![0f32; self.tools.len()];
        for term in &terms {
            let Some(postings) = self.postings.get(term) else {
                continue;
            };
            let df = postings.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for p in postings {
                let length = self.lengths[p.doc as usize] / self.average_length;
                let norm = K1 * (1.0 - B + B * length);
                scores[p.doc as usize] += idf * p.tf * (K1 + 1.0) / (p.tf + norm);
            }
        }
        // A tool named outright comes first: the whole query, or one word of it.
        let whole = query.to_lowercase();
        let named = std::iter::once(whole.as_str())
            .chain(whole.split_whitespace())
            .filter_map(|w| {
                self.by_name
                    .get(w.trim_matches(|c: char| "`'\",;:".contains(c)))
            })
            .copied();
        let mut pinned: Vec<u32> = Vec::new();
        for doc in named {
            if !pinned.contains(&doc) {
                pinned.push(doc);
            }
        }
        let mut ranked: Vec<(f32, u32)> = scores
            .iter()
            .enumerate()
            .filter(|(doc, s)| **s > 0.0 && !pinned.contains(&(*doc as u32)))
            .map(|(doc, s)| (*s, doc as u32))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        Ok(pinned
            .into_iter()
            .chain(ranked.into_iter().map(|(_, doc)| doc))
            .take(max_results)
            .map(|doc| &self.tools[doc as usize])
            .collect())
    }

    /// Where the indexed tools come from, with how many each, most first.
    pub fn sources(&self) -> Vec<(String, usize)> {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for t in &self.tools {
            match counts.iter_mut().find(|(s, _)| *s == t.source) {
                Some((_, n)) => *n += 1,
                None => counts.push((t.source.clone(), 1)),
            }
        }
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        counts
    }
}

/// Tools that are not built in: MCP, discovered and declared tools.
pub(crate) fn is_deferrable(r: &Registration) -> bool {
    r.origin != Origin::BuiltIn
}

fn source(origin: &Origin) -> String {
    match origin {
        Origin::Mcp { server } => server.clone(),
        Origin::Discovered => "discovered".to_string(),
        Origin::Declared => "declared".to_string(),
        _ => "built-in".to_string(),
    }
}

/// Calls `f(name, description, depth)` for every property of an object schema, nested
/// objects and array items included, up to [`MAX_SCHEMA_DEPTH`].
fn collect_parameters(schema: &Value, depth: usize, f: &mut dyn FnMut(&str, Option<&str>, usize)) {
    if depth >= MAX_SCHEMA_DEPTH {
        return;
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, sub) in properties {
            f(name, sub.get("description").and_then(Value::as_str), depth);
            collect_parameters(sub, depth + 1, f);
        }
    }
    if let Some(items) = schema.get("items") {
        collect_parameters(items, depth + 1, f);
    }
}

/// The first line of a description, at most [`SUMMARY_CHARS`] characters.
fn summary(description: &str) -> String {
    let line = description
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let cut = cut_chars(line, SUMMARY_CHARS);
    if cut.len() < line.len() {
        format!("{}…", cut.trim_end())
    } else {
        cut.to_string()
    }
}

pub(crate) fn cut_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Appends the search terms of `text`: words split on anything not alphanumeric and at
/// camelCase humps, lower-cased, stop words dropped, plurals folded.
pub(crate) fn tokenize(text: &str, out: &mut Vec<String>) {
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let chars: Vec<char> = word.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, c) = (chars[i - 1], chars[i]);
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let hump = c.is_uppercase()
                && (prev.is_lowercase()
                    || prev.is_ascii_digit()
                    || (prev.is_uppercase() && next_lower));
            if hump {
                push_term(&chars[start..i], out);
                start = i;
            }
        }
        push_term(&chars[start..], out);
    }
}

fn push_term(chars: &[char], out: &mut Vec<String>) {
    let word: String = chars.iter().flat_map(|c| c.to_lowercase()).collect();
    if word.is_empty() || STOP_WORDS.contains(&word.as_str()) {
        return;
    }
    out.push(fold_plural(word));
}

/// `issues` → `issue`, `repositories` → `repository`; leaves `status`, `address`, `is`.
fn fold_plural(mut word: String) -> String {
    let n = word.len();
    if n > 4 && word.ends_with("ies") {
        word.truncate(n - 3);
        word.push('y');
    } else if n > 3
        && word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        word.truncate(n - 1);
    }
    word
}
