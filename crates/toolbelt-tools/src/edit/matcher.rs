//! Finding `old_string` in a file: exactly first, then tolerantly.
//!
//! Models copy text through a tokenizer and a chat template: curly quotes come back
//! straight (or the reverse), dashes and non-breaking spaces change, trailing spaces
//! vanish. The tolerant pass compares character by character with Unicode look-alikes
//! mapped to ASCII and trailing whitespace ignored at every line end. Leading
//! indentation is never relaxed: in Python or YAML it is meaning, not noise. What is
//! replaced is always the exact text on disk, so bytes outside the match never change.
//!
//! When nothing matches, [`closest_region`] finds the lines most like `old_string`, so
//! the error can show them with line numbers and the model can correct itself in one
//! step instead of looping on "0 occurrences" (Qwen Code issues #797 and #2460).

use std::collections::HashMap;
use std::ops::Range;

/// How `old_string` was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
    Exact,
    /// Found after mapping look-alike characters and ignoring trailing whitespace.
    Tolerant,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// Non-overlapping byte ranges of the file text, in order.
    pub ranges: Vec<Range<usize>>,
    pub strategy: Strategy,
    /// `old_string` ended with a newline the file does not have at its end; the final
    /// newline of `new_string` should be dropped too.
    pub dropped_final_newline: bool,
}

/// Every non-overlapping occurrence of `old` in `text`: the exact ones when there are
/// any, else the tolerant ones.
pub(crate) fn find(text: &str, old: &str) -> Found {
    // memmem is SIMD-accelerated, several times faster than `str::match_indices` on a
    // large file; both report non-overlapping matches left to right.
    let exact: Vec<Range<usize>> = if old.is_empty() {
        Vec::new()
    } else {
        memchr::memmem::find_iter(text.as_bytes(), old.as_bytes())
            .map(|i| i..i + old.len())
            .collect()
    };
    if !exact.is_empty() || old.is_empty() {
        return Found {
            ranges: exact,
            strategy: Strategy::Exact,
            dropped_final_newline: false,
        };
    }
    let mut ranges = Vec::new();
    let mut dropped = false;
    let Some(first) = old.chars().next().map(fold) else {
        return Found {
            ranges,
            strategy: Strategy::Tolerant,
            dropped_final_newline: false,
        };
    };
    // Each start compares up to `old`'s length: a repetitive file and a long
    // `old_string` that almost matches everywhere would compare for hours. Past the
    // budget the tolerant pass finds nothing rather than part of the occurrences (a
    // partial list could hide a second one and pass a count check).
    let budget = text
        .len()
        .saturating_mul(8)
        .saturating_add(1 << 24)
        .min(1 << 28);
    let mut spent = 0usize;
    let mut pos = 0;
    while pos < text.len() {
        let Some(offset) = text[pos..]
            .char_indices()
            .find_map(|(i, c)| (fold(c) == first).then_some(i))
        else {
            break;
        };
        let start = pos + offset;
        if spent > budget {
            return Found {
                ranges: Vec::new(),
                strategy: Strategy::Tolerant,
                dropped_final_newline: false,
            };
        }
        match match_at(text, start, old, &mut spent) {
            Some((end, at_eof)) if end > start => {
                dropped |= at_eof;
                ranges.push(start..end);
                pos = end;
            }
            _ => pos = start + text[start..].chars().next().map_or(1, char::len_utf8),
        }
    }
    Found {
        ranges,
        strategy: Strategy::Tolerant,
        dropped_final_newline: dropped,
    }
}

/// Maps a look-alike character to its ASCII form.
pub(crate) fn fold(c: char) -> char {
    match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE63}' | '\u{FF0D}' => '-',
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{FF07}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{FF02}' => '"',
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

fn is_trailing_space(c: char) -> bool {
    matches!(fold(c), ' ' | '\t' | '\r')
}

/// Matches `old` tolerantly at byte `start` of `text`. Returns the end of the match and
/// whether it only matched by dropping `old`'s final newline at the end of the file.
/// Every character looked at is counted in `spent`.
fn match_at(text: &str, start: usize, old: &str, spent: &mut usize) -> Option<(usize, bool)> {
    let mut t = text[start..].char_indices().peekable();
    let mut o = old.chars().peekable();
    let mut end = start;
    loop {
        *spent += 1;
        let Some(&oc) = o.peek() else {
            return Some((end, false));
        };
        if is_trailing_space(oc) && rest_is_line_end(o.clone()) {
            // Trailing whitespace in old_string: skip it, and the file's own.
            while o.peek().is_some_and(|&c| is_trailing_space(c)) {
                o.next();
            }
            let mut look = t.clone();
            let mut file_spaces = false;
            while look.peek().is_some_and(|&(_, c)| is_trailing_space(c)) {
                look.next();
                file_spaces = true;
            }
            let at_line_end = look.peek().is_none_or(|&(_, c)| c == '\n');
            if o.peek().is_none() {
                // old_string ends here; the file's trailing spaces are not part of it.
                return (at_line_end || file_spaces).then_some((end, false));
            }
            if !at_line_end {
                return None;
            }
            t = look;
            continue;
        }
        let Some(&(i, tc)) = t.peek() else {
            // End of the file: only old_string's final newline may be left over.
            let rest: String = o.collect();
            return (rest == "\n").then_some((end, true));
        };
        if oc == '\n' && tc != '\n' && is_trailing_space(tc) {
            // The file has trailing whitespace old_string lacks.
            let mut look = t.clone();
            while look.peek().is_some_and(|&(_, c)| is_trailing_space(c)) {
                look.next();
            }
            if look.peek().is_none_or(|&(_, c)| c == '\n') {
                t = look;
                continue;
            }
            return None;
        }
        if fold(oc) != fold(tc) {
            return None;
        }
        o.next();
        t.next();
        end = start + i + tc.len_utf8();
    }
}

/// Whether the rest of `old` from here is whitespace up to a newline or its end.
fn rest_is_line_end(mut o: std::iter::Peekable<std::str::Chars<'_>>) -> bool {
    while let Some(&c) = o.peek() {
        if c == '\n' {
            return true;
        }
        if !is_trailing_space(c) {
            return false;
        }
        o.next();
    }
    true
}

/// The 1-based line numbers at which byte offsets fall; `offsets` must be sorted.
pub(crate) fn line_numbers(text: &str, offsets: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let mut line = 1;
    let mut pos = 0;
    let mut out = Vec::new();
    for offset in offsets {
        line += text.as_bytes()[pos..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        pos = offset;
        out.push(line);
    }
    out
}

/// The 0-based line range of `text` most like `old`: first by lines equal after
/// trimming and folding look-alikes, then, when no line is, by the character
/// similarity of the first non-blank line of `old`. `None` when nothing is close.
pub(crate) fn closest_region(text: &str, old: &str) -> Option<Range<usize>> {
    /// Above this many lines the fuzzy fallback is skipped: it compares every line.
    const FUZZY_LINE_LIMIT: usize = 20_000;
    /// A line of `old` found more often than this in `old` votes for no region: it says
    /// little about where `old` belongs, and letting every occurrence vote makes the
    /// count quadratic (thousands of `}` lines in `old` against thousands in the file).
    const MAX_VOTES_PER_LINE: usize = 16;
    /// The whole fuzzy comparison gives up and approximates past this: a minified file
    /// is one line of megabytes, and comparing it by characters is quadratic.
    const FUZZY_TIME: std::time::Duration = std::time::Duration::from_millis(300);
    let normal = |s: &str| -> String { s.trim().chars().map(fold).collect() };
    let old_lines: Vec<&str> = old.strip_suffix('\n').unwrap_or(old).split('\n').collect();
    let text_lines: Vec<&str> = text.split('\n').collect();
    let k = old_lines.len();
    let mut wanted: HashMap<String, Vec<usize>> = HashMap::new();
    for (j, line) in old_lines.iter().enumerate() {
        let n = normal(line);
        if !n.is_empty() {
            wanted.entry(n).or_default().push(j);
        }
    }
    let mut scores: HashMap<usize, usize> = HashMap::new();
    for (i, line) in text_lines.iter().enumerate() {
        if let Some(js) = wanted
            .get(&normal(line))
            .filter(|js| js.len() <= MAX_VOTES_PER_LINE)
        {
            for &j in js {
                if i >= j {
                    *scores.entry(i - j).or_default() += 1;
                }
            }
        }
    }
    if let Some((&start, _)) = scores
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
    {
        return Some(start..(start + k).min(text_lines.len()));
    }
    if text_lines.len() > FUZZY_LINE_LIMIT {
        return None;
    }
    let (j, probe) = old_lines
        .iter()
        .enumerate()
        .map(|(j, l)| (j, normal(l)))
        .find(|(_, l)| !l.is_empty())?;
    let deadline = std::time::Instant::now() + FUZZY_TIME;
    let (best, ratio) = text_lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let n = normal(line);
            let diff = similar::TextDiff::configure()
                .deadline(deadline)
                .diff_chars(n.as_str(), probe.as_str());
            (i, diff.ratio())
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.cmp(&a.0)))?;
    if ratio < 0.5 {
        return None;
    }
    let start = best.saturating_sub(j);
    Some(start..(start + k).min(text_lines.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found<'t>(text: &'t str, old: &str) -> Vec<&'t str> {
        find(text, old)
            .ranges
            .into_iter()
            .map(|r| &text[r])
            .collect()
    }

    #[test]
    fn exact_matches_win_and_do_not_overlap() {
        let f = find("aaaa", "aa");
        assert_eq!(f.ranges, vec![0..2, 2..4]);
        assert_eq!(f.strategy, Strategy::Exact);
    }

    #[test]
    fn curly_quotes_dashes_and_nbsp_match_their_ascii_forms() {
        let text = "let s = “hi” – x\u{00A0}y;\n";
        assert_eq!(
            found(text, "let s = \"hi\" - x y;"),
            vec!["let s = “hi” – x\u{00A0}y;"]
        );
        // And the reverse: the file is ASCII, old_string has typographic characters.
        assert_eq!(found("say 'no'\n", "say ‘no’"), vec!["say 'no'"]);
    }

    #[test]
    fn trailing_whitespace_is_ignored_on_both_sides() {
        let text = "fn a() {   \n    body();\n}\n";
        assert_eq!(
            found(text, "fn a() {\n    body();  \n}"),
            vec!["fn a() {   \n    body();\n}"]
        );
        assert_eq!(
            find(text, "fn a() {\n    body();").strategy,
            Strategy::Tolerant
        );
    }

    #[test]
    fn leading_indentation_is_never_relaxed() {
        let text = "if x:\n    y = 1\n";
        assert!(find(text, "if x:\n  y = 1").ranges.is_empty());
        assert!(find(text, "if x:\ny = 1").ranges.is_empty());
    }

    #[test]
    fn final_newline_missing_at_end_of_file() {
        let f = find("a\nlast line", "last line  \n");
        assert_eq!(f.ranges, vec![2..11]);
        assert!(f.dropped_final_newline);
    }

    #[test]
    fn closest_region_prefers_most_equal_lines() {
        let text = "a\nfn main() {\n    println!(\"hi\");\n}\nb\n";
        let region = closest_region(text, "fn main() {\n    println!(\"bye\");\n}\n").unwrap();
        assert_eq!(region, 1..4);
        let region = closest_region("alpha\nbeta gamma\n", "beta gamme").unwrap();
        assert_eq!(region, 1..2);
        assert_eq!(closest_region("x\ny\n", "completely unrelated text"), None);
    }

    #[test]
    fn line_numbers_of_offsets() {
        assert_eq!(line_numbers("a\nb\nc\n", [0, 2, 4]), vec![1, 2, 3]);
    }

    #[test]
    fn the_closest_region_of_hostile_texts_is_found_in_bounded_time() {
        // Thousands of the same line on both sides: no vote from it, no quadratic count.
        let text = "}\n".repeat(200_000);
        let old = format!("{}fn missing() {{}}\n", "}\n".repeat(5_000));
        // Unbounded, the count is a billion map updates and the comparison below runs
        // for hours: the suite's time limit fails the test then.
        assert_eq!(closest_region(&text, &old), None);
        // One line of megabytes (a minified file) against a long probe: the character
        // comparison gives up at its deadline and approximates.
        let minified = "a=1;b=2;".repeat(250_000);
        let probe = "c=3;d=4;".repeat(2_000);
        assert_eq!(closest_region(&minified, &probe), None);
    }

    #[test]
    fn a_tolerant_search_that_would_compare_for_hours_finds_nothing() {
        // Every start almost matches: 1 MiB of `a` against 16 KiB of `a` and a `b`.
        let text = "a".repeat(1 << 20);
        let old = format!("{}b", "a".repeat(16 << 10));
        let found = find(&text, &old);
        assert!(found.ranges.is_empty());
        // An ordinary tolerant match is still found.
        let found = find("say \u{201c}hi\u{201d}\n", "say \"hi\"");
        assert_eq!(found.strategy, Strategy::Tolerant);
        assert_eq!(found.ranges.len(), 1);
    }
}
