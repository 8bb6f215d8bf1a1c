use proptest::prelude::*;
use serde_json::{Value, json};
use toolbelt_core::{ConfirmationDetails, Display, ExecContext, FileDiff, Tool};

use super::*;
use crate::edit::{Edit, Streaming};
use crate::test_support::{Fixture, fixture};

/// One edit through the tool, confirmed and executed: what the model gets, what a
/// person sees, and the file afterwards.
#[derive(PartialEq)]
struct Outcome {
    error: Option<String>,
    llm_text: String,
    diff: Option<(String, usize, usize)>,
    confirmation_diff: Option<String>,
    file: Vec<u8>,
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outcome")
            .field("error", &self.error)
            .field("llm_text", &self.llm_text)
            .field("diff", &self.diff)
            .field("confirmation_diff", &self.confirmation_diff)
            .field("file", &String::from_utf8_lossy(&self.file))
            .finish()
    }
}

fn run(f: &Fixture, streaming: Streaming, original: &[u8], args: &Value) -> Outcome {
    let path = f.ws().join("f.txt");
    std::fs::write(&path, original).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tool = Edit::with_streaming(f.env.clone(), streaming);
        let call = match tool.build(args.clone()) {
            Ok(call) => call,
            Err(e) => {
                return Outcome {
                    error: Some(e.message),
                    llm_text: String::new(),
                    diff: None,
                    confirmation_diff: None,
                    file: std::fs::read(&path).unwrap(),
                };
            }
        };
        let confirmation_diff = match call.confirmation().await {
            Some(ConfirmationDetails::Edit { diff, .. }) => Some(diff),
            _ => None,
        };
        let r = call.execute(ExecContext::new(f.env.clone())).await;
        let diff = match &r.return_display {
            Display::FileDiff(d) => Some((d.diff.clone(), d.added_lines, d.removed_lines)),
            _ => None,
        };
        Outcome {
            error: r
                .error
                .as_ref()
                .map(|e| format!("{:?}: {}", e.kind, e.message)),
            llm_text: r.llm_text(),
            diff,
            confirmation_diff,
            file: std::fs::read(&path).unwrap(),
        }
    })
}

const IN_MEMORY: Streaming = Streaming {
    above: u64::MAX,
    chunk: CHUNK,
    spliced: None,
};

fn streamed(chunk: usize) -> Streaming {
    Streaming {
        above: 0,
        chunk,
        spliced: None,
    }
}

/// Asserts that the streamed edit gives what the in-memory edit gives, and returns it.
fn same_both_ways(f: &Fixture, original: &[u8], args: &Value, chunk: usize) -> Outcome {
    same_both_ways_counted(f, original, args, streamed(chunk))
}

/// [`same_both_ways`] with the streamed tool's configuration given, so a caller can count
/// how often the streamed path really wrote (rather than falling back).
fn same_both_ways_counted(
    f: &Fixture,
    original: &[u8],
    args: &Value,
    streaming: Streaming,
) -> Outcome {
    let chunk = streaming.chunk;
    let memory = run(f, IN_MEMORY, original, args);
    let stream = run(f, streaming, original, args);
    assert_eq!(
        stream,
        memory,
        "file {:?}, args {args}, chunk {chunk}",
        String::from_utf8_lossy(original)
    );
    memory
}

fn args(f: &Fixture, old: &str, new: &str, replace_all: bool) -> Value {
    json!({
        "file_path": f.ws().join("f.txt"),
        "old_string": old,
        "new_string": new,
        "replace_all": replace_all,
    })
}

#[test]
fn a_match_split_across_chunks_is_found_and_replaced() {
    let f = fixture();
    let body: String = (0..200).map(|i| format!("line {i}\n")).collect();
    for chunk in [1, 2, 3, 5, 7, 64, 4096] {
        let out = same_both_ways(
            &f,
            body.as_bytes(),
            &args(&f, "line 101\nline 102", "X", false),
            chunk,
        );
        assert_eq!(out.error, None);
        assert_eq!(
            out.file,
            body.replace("line 101\nline 102", "X").into_bytes()
        );
    }
}

#[test]
fn crlf_bom_and_multibyte_characters_split_across_chunks() {
    let f = fixture();
    let body = "\u{FEFF}première ligne\r\ndeuxième ligne\r\ntroisième ligne\r\n";
    for chunk in 1..12 {
        let out = same_both_ways(
            &f,
            body.as_bytes(),
            &args(&f, "deuxième ligne\ntroisième", "2e\n3e", false),
            chunk,
        );
        assert_eq!(out.error, None, "{}", out.llm_text);
        assert_eq!(
            out.file,
            "\u{FEFF}première ligne\r\n2e\r\n3e ligne\r\n".as_bytes()
        );
    }
}

#[test]
fn several_occurrences_errors_and_fallbacks_match_the_in_memory_path() {
    let f = fixture();
    let body = "fn a() {}\nfn b() {}\nfn a() {}\n";
    // Several occurrences without replace_all: the error lists their lines.
    let out = same_both_ways(&f, body.as_bytes(), &args(&f, "fn a", "fn c", false), 4);
    assert!(out.error.unwrap().contains("at lines 1, 3"));
    // replace_all replaces both.
    let out = same_both_ways(&f, body.as_bytes(), &args(&f, "fn a", "fn c", true), 4);
    assert_eq!(out.file, body.replace("fn a", "fn c").into_bytes());
    // No exact occurrence: the in-memory path matches tolerantly.
    let out = same_both_ways(
        &f,
        body.as_bytes(),
        &args(&f, "fn b() {}  \n", "", false),
        4,
    );
    assert_eq!(out.file, b"fn a() {}\nfn a() {}\n");
    // Not UTF-8: refused, untouched.
    let bad = b"ok\n\xFF\xFEbad\n";
    let out = same_both_ways(&f, bad, &args(&f, "ok", "no", false), 2);
    assert!(out.error.unwrap().contains("not UTF-8"));
    assert_eq!(out.file, bad);
}

#[tokio::test]
async fn a_large_file_is_streamed_and_its_diff_carries_no_whole_texts() {
    let f = fixture();
    let mut body = String::new();
    for i in 0..300_000 {
        body.push_str(&format!("line {i}: some text to make the file larger\n"));
    }
    assert!(body.len() > FileDiff::CONTENT_LIMIT);
    let path = f.write("f.txt", &body);
    let r = f
        .call(
            "edit",
            json!({"file_path": path, "old_string": "line 150000: some", "new_string": "line 150000: other"}),
        )
        .await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        body.replace("line 150000: some", "line 150000: other")
    );
    assert!(
        r.llm_text()
            .contains("Showing lines 149997-150005 of 300000 from the edited file"),
        "{}",
        r.llm_text()
    );
    let Display::FileDiff(diff) = r.return_display else {
        panic!("no diff")
    };
    assert_eq!((diff.added_lines, diff.removed_lines), (1, 1));
    assert!(
        diff.diff.contains("@@ -149998,7 +149998,7 @@"),
        "{}",
        diff.diff
    );
    assert_eq!(
        (diff.is_new_file, diff.original_content, diff.new_content),
        (false, None, None)
    );
}

#[test]
fn a_file_changed_between_confirmation_and_write_is_not_overwritten() {
    let f = fixture();
    let path = f.ws().join("f.txt");
    std::fs::write(&path, "alpha\nbeta\ngamma\n").unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tool = Edit::with_streaming(f.env.clone(), streamed(4));
        let call = tool.build(args(&f, "beta", "BETA", false)).unwrap();
        assert!(call.confirmation().await.is_some());
        // Same length, new inode: replaced the way editors save.
        let other = f.ws().join("other.txt");
        std::fs::write(&other, "alpha\nbetb\ngamma\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        let r = call.execute(ExecContext::new(f.env.clone())).await;
        assert!(
            r.llm_text()
                .contains("changed after the change was proposed"),
            "{}",
            r.llm_text()
        );
    });
    assert_eq!(std::fs::read(&path).unwrap(), b"alpha\nbetb\ngamma\n");
}

#[test]
fn writing_checks_the_replaced_bytes_are_still_the_needle() {
    let dir = tempfile::tempdir().unwrap();
    let src_path = dir.path().join("src");
    std::fs::write(&src_path, "one two three").unwrap();
    let src = File::open(&src_path).unwrap();
    let req = Request {
        old: "two",
        new: "2",
    };
    let Scan::Found(found) = scan(&src, 13, &req, 4).unwrap() else {
        panic!("not found")
    };
    let mut out = tempfile::tempfile().unwrap();
    found.write_into(&src, &mut out).unwrap();
    out.seek(SeekFrom::Start(0)).unwrap();
    let mut written = String::new();
    out.read_to_string(&mut written).unwrap();
    assert_eq!(written, "one 2 three");
    // The same plan against changed bytes of the same length.
    std::fs::write(&src_path, "one TWO three").unwrap();
    let src = File::open(&src_path).unwrap();
    let err = found
        .write_into(&src, &mut tempfile::tempfile().unwrap())
        .unwrap_err();
    assert!(is_changed(&err), "{err}");
}

#[test]
fn utf8_stream_accepts_any_split_of_valid_text_and_refuses_invalid() {
    let text = "aé€𝄞z".as_bytes();
    for cut in 0..=text.len() {
        let mut v = Utf8Stream::default();
        assert!(v.feed(&text[..cut]) && v.feed(&text[cut..]) && v.finish());
    }
    let mut v = Utf8Stream::default();
    assert!(v.feed(&text[..2]));
    assert!(!v.finish(), "a character cut at the end is not valid");
    for bad in [&b"\xC3\x28"[..], b"\xED\xA0\x80", b"\xF8"] {
        for cut in 0..=bad.len() {
            let mut v = Utf8Stream::default();
            assert!(
                !(v.feed(&bad[..cut]) && v.feed(&bad[cut..]) && v.finish()),
                "{bad:?} cut at {cut}"
            );
        }
    }
}

#[test]
fn line_windows() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("w");
    std::fs::write(&p, "l0\nl1\nl2\nl3\nl4").unwrap();
    let f = File::open(&p).unwrap();
    // Byte 7 is in "l2".
    assert_eq!(line_start_before(&f, 7, 0, 0).unwrap(), 6);
    assert_eq!(line_start_before(&f, 7, 1, 0).unwrap(), 3);
    assert_eq!(line_start_before(&f, 7, 5, 0).unwrap(), 0);
    assert_eq!(line_end_after(&f, 7, 0, 14).unwrap(), 9);
    assert_eq!(line_end_after(&f, 7, 1, 14).unwrap(), 12);
    assert_eq!(line_end_after(&f, 7, 5, 14).unwrap(), 14);
    // A position on a break belongs to the line the break ends.
    assert_eq!(line_end_after(&f, 8, 0, 14).unwrap(), 9);
}

/// Text of a few short lines built from pieces that make matches, CRLF, stray `\r`,
/// multi-byte characters and missing final newlines likely.
fn file_text() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop::sample::select(vec!["a", "b", "ab", "é", "\r", " ", "x"]);
    let line = prop::collection::vec(piece, 0..4).prop_map(|p| p.concat());
    (
        prop::collection::vec(line, 0..12),
        0..3u8,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, ending, bom, final_break)| {
            let mut text = String::new();
            if bom {
                text.push('\u{FEFF}');
            }
            for (i, line) in lines.iter().enumerate() {
                text.push_str(line);
                if i + 1 < lines.len() || final_break {
                    text.push_str(match ending {
                        0 => "\n",
                        1 => "\r\n",
                        _ if i % 2 == 0 => "\r\n",
                        _ => "\n",
                    });
                }
            }
            text.into_bytes()
        })
}

/// Runs `cases` generated cases of `check` and returns how many of them the streamed
/// path wrote by splicing. Both property tests assert that a good share did, so a change
/// that made every streamed edit fall back to the in-memory path cannot pass unnoticed.
fn run_counting<S: Strategy>(
    cases: u32,
    strategy: S,
    check: impl Fn(S::Value, Streaming) -> Result<(), TestCaseError>,
) -> usize {
    // One counter per run, leaked so the `Copy` configuration can point at it.
    let counter: &'static std::sync::atomic::AtomicUsize =
        Box::leak(Box::new(std::sync::atomic::AtomicUsize::new(0)));
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        ..ProptestConfig::default()
    });
    let outcome = runner.run(&strategy, |value| {
        check(
            value,
            Streaming {
                above: 0,
                chunk: CHUNK,
                spliced: Some(counter),
            },
        )
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    counter.load(std::sync::atomic::Ordering::Relaxed)
}

/// The streamed edit is indistinguishable from the in-memory one: same file, same text
/// for the model, same diff, same errors.
#[test]
fn streamed_and_in_memory_edits_agree() {
    let strategy = (
        file_text(),
        prop::sample::select(vec![
            "a", "ab", "b\n", "\na", "a\r\n", "é", "x\nb", "\n", "b",
        ]),
        prop::sample::select(vec!["", "y", "y\nz", "\n", "é", "a", "\r\n"]),
        any::<bool>(),
        1usize..10,
    );
    let spliced = run_counting(
        300,
        strategy,
        |(text, old, new, replace_all, chunk), streaming| {
            let f = fixture();
            let streaming = Streaming { chunk, ..streaming };
            same_both_ways_counted(&f, &text, &args(&f, old, new, replace_all), streaming);
            Ok(())
        },
    );
    assert!(
        spliced >= 30,
        "only {spliced} of 300 cases were written by the streamed path"
    );
}

/// The same with old_string cut from the file itself, so it always occurs, often several
/// times and across chunk boundaries.
#[test]
fn edits_of_text_taken_from_the_file_agree() {
    let strategy = (
        file_text(),
        any::<prop::sample::Index>(),
        1usize..8,
        prop::sample::select(vec!["", "y", "y\nz", "\n", "é"]),
        0..3u8,
        1usize..10,
    );
    let spliced = run_counting(
        200,
        strategy,
        |(text, start, len, new, how, chunk), streaming| {
            let body = String::from_utf8(text.clone()).unwrap();
            let body = body.strip_prefix('\u{FEFF}').unwrap_or(&body);
            let chars: Vec<char> = body.chars().collect();
            if chars.is_empty() {
                return Ok(());
            }
            let at = start.index(chars.len());
            let old: String = chars[at..(at + len).min(chars.len())].iter().collect();
            let f = fixture();
            let mut a = args(&f, &old, new, how == 1);
            if how == 2 {
                a["expected_replacements"] = json!(2);
            }
            let streaming = Streaming { chunk, ..streaming };
            same_both_ways_counted(&f, &text, &a, streaming);
            Ok(())
        },
    );
    assert!(
        spliced >= 40,
        "only {spliced} of 200 cases were written by the streamed path"
    );
}

fn scan_bytes(bytes: &[u8], old: &str, new: &str, chunk: usize) -> Scan {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    scan(&file, bytes.len() as u64, &Request { old, new }, chunk).unwrap()
}

#[test]
fn scan_finds_every_occurrence_and_its_line_at_any_chunk_size() {
    for chunk in 1..16 {
        let Scan::Found(found) = scan_bytes(b"ab\nxab\nab", "ab", "c", chunk) else {
            panic!("chunk {chunk}: fell back")
        };
        assert_eq!(found.ranges, vec![0..2, 4..6, 7..9], "chunk {chunk}");
        assert_eq!(found.lines, vec![0, 1, 2], "chunk {chunk}");
        // A CRLF file: the needle gets CRLF breaks, and its line is still counted.
        let Scan::Found(found) = scan_bytes(b"a\r\nb\r\nc\r\nb\r\nc", "b\nc", "x", chunk) else {
            panic!("chunk {chunk}: fell back on CRLF")
        };
        assert_eq!(found.format.line_ending, LineEnding::Crlf);
        assert_eq!(found.ranges, vec![3..7, 9..13], "chunk {chunk}");
        assert_eq!(found.lines, vec![1, 3], "chunk {chunk}");
    }
}

#[test]
fn scan_falls_back_where_the_whole_text_is_needed() {
    let fallback = |bytes: &[u8], old: &str, new: &str| {
        matches!(scan_bytes(bytes, old, new, 4), Scan::Fallback(_))
    };
    assert!(fallback(b"abc\n", "zzz", "y"), "no exact occurrence");
    assert!(fallback(b"a\xFFb\n", "a", "y"), "not UTF-8");
    assert!(
        fallback(b"a\r\nb\nc\r\n", "b\nc", "y"),
        "CRLF file with a bare LF"
    );
    assert!(
        fallback(b"a\r\nb\r\n", "a\r", "y"),
        "a CR in old_string of a CRLF edit"
    );
    assert!(fallback(b"same\n", "same", "same"), "no change");
    let many = "x\n".repeat(MAX_OCCURRENCES + 1);
    assert!(fallback(many.as_bytes(), "x", "y"), "too many occurrences");
    // Mixed endings are fine when the edit does not involve line breaks.
    assert!(!fallback(b"a\r\nb\nc\r\n", "b", "y"));
}
