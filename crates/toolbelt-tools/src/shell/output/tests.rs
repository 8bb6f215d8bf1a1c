use std::path::PathBuf;

use super::*;
use toolbelt_process::log::{LOG_CAP, LogBudget};

fn policy(max_chars: usize, max_lines: usize) -> OutputPolicy {
    OutputPolicy::new(max_chars, max_lines, PathBuf::from("/nonexistent"))
}

#[test]
fn small_output_is_kept_whole_without_a_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.log");
    let mut c = OutputCapture::new(
        &policy(1000, 100),
        log.clone(),
        LOG_CAP,
        LogBudget::new(LOG_CAP),
    );
    c.push(b"one\n");
    c.push(b"two\n");
    let out = c.finish(&policy(1000, 100));
    assert_eq!(out.text, "one\ntwo");
    assert!(!out.truncated);
    assert_eq!(out.log_path, None);
    assert!(!log.exists());
}

#[test]
fn memory_stays_bounded_and_the_log_holds_everything() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sub/x.log");
    let p = policy(1000, 50);
    let mut c = OutputCapture::new(&p, log.clone(), LOG_CAP, LogBudget::new(LOG_CAP));
    let line = b"0123456789abcdef0123456789abcdef0123456789abcdef012345678\n";
    let mut expected = 0u64;
    for _ in 0..200_000 {
        c.push(line);
        expected += line.len() as u64;
        assert!(c.head.len() + c.tail.len() <= 3 * MIN_KEEP + line.len());
    }
    c.push(b"the end");
    expected += 7;
    let out = c.finish(&p);
    assert!(out.truncated);
    assert_eq!(out.total_bytes, expected);
    assert_eq!(out.log_path.as_deref(), Some(log.as_path()));
    assert_eq!(std::fs::metadata(&log).unwrap().len(), expected);
    assert!(out.text.starts_with("[Output truncated:"));
    assert!(out.text.ends_with("the end"));
    assert!(out.text.chars().count() < 1400, "{}", out.text.len());
    assert!(out.text.lines().count() <= 55);
}

#[test]
fn the_log_stops_at_its_cap_and_the_result_still_ends_with_the_last_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.log");
    let p = policy(1000, 50);
    let cap = 300_000;
    let mut c = OutputCapture::new(&p, log.clone(), cap, LogBudget::new(LOG_CAP));
    let line = b"0123456789abcdef0123456789abcdef0123456789abcdef012345678\n";
    for _ in 0..20_000 {
        c.push(line);
    }
    c.push(b"the end");
    let total = 20_000 * line.len() as u64 + 7;
    let out = c.finish(&p);
    let saved = std::fs::read(&log).unwrap();
    let note = format!(
        "\n[toolbelt: this log stops after its first {cap} bytes; the {} bytes of output after them were not saved]\n",
        total - cap
    );
    assert_eq!(saved.len() as u64, cap + note.len() as u64);
    assert!(saved.ends_with(note.as_bytes()));
    assert!(saved.starts_with(line));
    assert!(
        out.text
            .contains(&format!("The first {cap} bytes of the output are saved in")),
        "{}",
        out.text
    );
    assert!(out.text.ends_with("the end"));
}

#[test]
fn output_over_the_budget_but_in_memory_is_still_saved() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.log");
    let p = policy(100, 1000);
    let mut c = OutputCapture::new(&p, log.clone(), LOG_CAP, LogBudget::new(LOG_CAP));
    let text = "word ".repeat(200);
    c.push(text.as_bytes());
    let out = c.finish(&p);
    assert!(out.truncated);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), text);
}

#[test]
fn binary_is_detected_in_the_first_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(1000, 100);
    let mut c = OutputCapture::new(
        &p,
        dir.path().join("b.log"),
        LOG_CAP,
        LogBudget::new(LOG_CAP),
    );
    c.push(b"PK\x03\x04\x00\x00binary");
    let out = c.finish(&p);
    assert!(out.binary);
    assert!(
        out.text.starts_with("[Binary output: 12 bytes"),
        "{}",
        out.text
    );
    let mut c = OutputCapture::new(
        &p,
        dir.path().join("t.log"),
        LOG_CAP,
        LogBudget::new(LOG_CAP),
    );
    c.push(&vec![b'a'; 5000]);
    c.push(b"\x00 late NUL is not a sniff");
    assert!(!c.finish(&p).binary);
}

#[test]
fn ansi_and_redraws_are_cleaned() {
    assert_eq!(strip_ansi("\x1b[1;31mred\x1b[0m plain"), "red plain");
    assert_eq!(strip_ansi("\x1b]0;title\x07text"), "text");
    assert_eq!(
        strip_ansi("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"),
        "link"
    );
    assert_eq!(strip_ansi("\x1b(Bok"), "ok");
    assert_eq!(clean_text("10%\r50%\r100%\nnext\r\n"), "100%\nnext\n");
}

#[test]
fn live_decoder_carries_split_characters() {
    let mut d = LiveDecoder::default();
    let bytes = "é€".as_bytes();
    assert_eq!(d.decode(&bytes[..1]), "");
    assert_eq!(d.decode(&bytes[1..3]), "é");
    assert_eq!(d.decode(&bytes[3..]), "€");
    assert_eq!(d.decode(b"\xff!"), "\u{fffd}!");
}

#[test]
fn a_tail_starting_mid_character_is_decoded_cleanly() {
    let bytes = "€x".as_bytes();
    assert_eq!(decode_tail(&bytes[1..]), "x");
}
