use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ExecContext, OutputPolicy, ToolEnvironment, WorkspaceRoots};

use super::*;

struct Fixture {
    dir: tempfile::TempDir,
    env: Arc<ToolEnvironment>,
}

fn fixture() -> Fixture {
    fixture_with(25_000, 1_000)
}

fn fixture_with(max_chars: usize, max_lines: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let roots = WorkspaceRoots::new([dir.path().join("ws")]).unwrap();
    let mut env = ToolEnvironment::new(
        roots,
        Arc::new(Settings::default()),
        dir.path().join("session"),
    );
    env.output = OutputPolicy::new(max_chars, max_lines, dir.path().join("spill"));
    Fixture {
        dir,
        env: Arc::new(env),
    }
}

impl Fixture {
    fn ws(&self) -> std::path::PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }
    fn write(&self, rel: &str, bytes: &[u8]) -> String {
        let p = self.ws().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    }
    fn build(&self, args: serde_json::Value) -> Result<Box<dyn Invocation>, ToolError> {
        let mut registry = toolbelt_engine::registry::ToolRegistry::new();
        crate::register_builtins(&mut registry, &self.env);
        registry.build("read_file", args).map(|(_, call)| call)
    }
    async fn call(&self, args: serde_json::Value) -> ToolResult {
        match self.build(args) {
            Ok(call) => call.execute(ExecContext::new(self.env.clone())).await,
            Err(e) => ToolResult::error(e),
        }
    }
}

fn err_kind(r: &ToolResult) -> Option<ErrorKind> {
    r.error.as_ref().map(|e| e.kind)
}

#[tokio::test]
async fn reads_a_small_text_file_whole() {
    let f = fixture();
    let p = f.write("a.txt", b"one\ntwo  \nthree\n");
    let r = f.call(json!({"absolute_path": p})).await;
    assert_eq!(r.llm_text(), "one\ntwo\nthree");
    assert_eq!(r.return_display, Display::markdown("one\ntwo\nthree"));
}

#[tokio::test]
async fn file_path_is_accepted_as_the_older_name() {
    let f = fixture();
    let p = f.write("a.txt", b"x\n");
    assert_eq!(f.call(json!({"file_path": p})).await.llm_text(), "x");
}

#[tokio::test]
async fn offset_and_limit_page_with_a_notice() {
    let f = fixture();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    let p = f.write("a.txt", text.as_bytes());
    let r = f
        .call(json!({"absolute_path": p, "offset": 2, "limit": 3}))
        .await;
    assert_eq!(
        r.llm_text(),
        "Showing lines 3-5 of 10 total lines. To read more, call read_file again with offset: 5.\n\n---\n\nline 3\nline 4\nline 5"
    );
    let r = f.call(json!({"absolute_path": p, "offset": 8})).await;
    assert!(
        r.llm_text()
            .starts_with("Showing lines 9-10 of 10 total lines.\n"),
        "{}",
        r.llm_text()
    );
    let r = f.call(json!({"absolute_path": p, "offset": 10})).await;
    assert_eq!(err_kind(&r), Some(ErrorKind::InvalidToolParams));
    assert!(r.llm_text().contains("has 10 lines"));
}

#[tokio::test]
async fn line_budget_from_the_output_policy() {
    let f = fixture_with(25_000, 4);
    let text: String = (1..=10).map(|i| format!("{i}\n")).collect();
    let p = f.write("a.txt", text.as_bytes());
    let r = f.call(json!({"absolute_path": p})).await;
    assert!(
        r.llm_text()
            .starts_with("Showing lines 1-4 of 10 total lines."),
        "{}",
        r.llm_text()
    );
    assert!(r.llm_text().ends_with("1\n2\n3\n4"));
}

#[tokio::test]
async fn character_budget_cuts_a_long_line() {
    let f = fixture_with(50, 1_000);
    let p = f.write(
        "a.txt",
        format!("short\n{}\nafter\n", "x".repeat(200)).as_bytes(),
    );
    let r = f.call(json!({"absolute_path": p})).await;
    let text = r.llm_text();
    assert!(
        text.contains("A line longer than the character limit was cut."),
        "{text}"
    );
    assert!(
        text.contains(&format!("short\n{}... [truncated]", "x".repeat(44))),
        "{text}"
    );
    assert!(!text.contains("after"));
}

#[tokio::test]
async fn crlf_bom_and_invalid_utf8_are_handled() {
    let f = fixture();
    let p = f.write("a.txt", b"\xEF\xBB\xBFfirst\r\nbad \xFF byte\r\n");
    assert_eq!(
        f.call(json!({"absolute_path": p})).await.llm_text(),
        "first\nbad \u{FFFD} byte"
    );
}

#[tokio::test]
async fn utf16_text_is_decoded() {
    let f = fixture();
    let mut bytes = vec![0xFF, 0xFE];
    for u in "héllo\nworld".encode_utf16() {
        bytes.extend(u.to_le_bytes());
    }
    let p = f.write("u16.txt", &bytes);
    assert_eq!(
        f.call(json!({"absolute_path": p})).await.llm_text(),
        "héllo\nworld"
    );
}

#[tokio::test]
async fn empty_file_is_empty() {
    let f = fixture();
    let p = f.write("empty.txt", b"");
    let r = f.call(json!({"absolute_path": p})).await;
    assert!(!r.is_error());
    assert_eq!(r.llm_text(), "");
}

#[tokio::test]
async fn png_is_inline_data_with_its_mime_type() {
    let f = fixture();
    let png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR";
    let p = f.write("img.png", png);
    let r = f.call(json!({"absolute_path": p})).await;
    assert_eq!(
        r.llm_content,
        vec![Part::InlineData {
            mime_type: "image/png".into(),
            data: png.to_vec(),
            display_name: Some("img.png".into())
        }]
    );
}

#[tokio::test]
async fn pdf_and_audio_are_inline_data() {
    let f = fixture();
    for (name, mime) in [
        ("doc.pdf", "application/pdf"),
        ("s.wav", "audio/wav"),
        ("s.mp3", "audio/mpeg"),
    ] {
        let p = f.write(name, b"\x00\x01data");
        let r = f.call(json!({"absolute_path": p})).await;
        match &r.llm_content[0] {
            Part::InlineData { mime_type, .. } => assert_eq!(mime_type, mime, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn svg_is_text() {
    let f = fixture();
    let p = f.write("i.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>\n");
    assert_eq!(
        f.call(json!({"absolute_path": p})).await.llm_text(),
        "<svg xmlns='http://www.w3.org/2000/svg'/>"
    );
}

#[tokio::test]
async fn binary_file_is_named_not_dumped() {
    let f = fixture();
    let p = f.write("bin/blob.dat", b"\x00\x01\x02\x03garbage");
    let r = f.call(json!({"absolute_path": p})).await;
    assert!(!r.is_error());
    assert_eq!(
        r.llm_text(),
        "Cannot display content of binary file: bin/blob.dat"
    );
}

#[tokio::test]
async fn missing_file_and_directory_are_errors_with_hints() {
    let f = fixture();
    let r = f
        .call(json!({"absolute_path": f.ws().join("nope.txt")}))
        .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::FileNotFound));
    std::fs::create_dir(f.ws().join("sub")).unwrap();
    let r = f.call(json!({"absolute_path": f.ws().join("sub")})).await;
    assert_eq!(err_kind(&r), Some(ErrorKind::TargetIsDirectory));
    assert!(r.llm_text().contains("list_directory"));
}

#[tokio::test]
async fn fifo_is_refused_without_blocking() {
    let f = fixture();
    let fifo = f.ws().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let r = f.call(json!({"absolute_path": fifo})).await;
    assert_eq!(err_kind(&r), Some(ErrorKind::ReadContentFailure));
    assert!(r.llm_text().contains("FIFO"));
}

/// A regular file swapped for a FIFO between the check and the open (a race a hostile
/// process could win) is refused at once; the open must not wait for a writer.
#[test]
fn a_fifo_swapped_in_after_the_check_is_refused_without_blocking() {
    let f = fixture();
    let regular = f.write("regular.txt", b"text\n");
    let fifo = f.ws().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let call = ReadFileCall {
        env: f.env.clone(),
        path: fifo.clone(),
        display_path: "pipe".into(),
        offset: 0,
        limit: None,
    };
    // What the check saw: the regular file's metadata.
    let (done, waiting) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = call.read_with(std::fs::metadata(&regular), None);
        let _ = done.send(r);
    });
    let r = waiting
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the read blocked on the FIFO");
    assert_eq!(err_kind(&r), Some(ErrorKind::ReadContentFailure));
    assert!(
        r.llm_text().contains("stopped being a regular file"),
        "{}",
        r.llm_text()
    );
}

#[tokio::test]
async fn device_is_refused() {
    let f = fixture_devnull();
    let r = f.call(json!({"absolute_path": "/dev/null"})).await;
    assert_eq!(err_kind(&r), Some(ErrorKind::ReadContentFailure));
}

fn fixture_devnull() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let roots = WorkspaceRoots::new([Path::new("/dev")]).unwrap();
    let env = ToolEnvironment::new(roots, Arc::new(Settings::default()), dir.path().join("s"));
    Fixture {
        dir,
        env: Arc::new(env),
    }
}

#[tokio::test]
async fn too_large_for_a_whole_read_but_pageable() {
    let f = fixture();
    let p = f.ws().join("big.log");
    std::fs::write(&p, "a\n".repeat((MAX_WHOLE_READ as usize / 2) + 1)).unwrap();
    let r = f.call(json!({"absolute_path": p})).await;
    assert_eq!(err_kind(&r), Some(ErrorKind::FileTooLarge));
    assert!(r.llm_text().contains("offset"));
    let r = f
        .call(json!({"absolute_path": p, "offset": 5, "limit": 2}))
        .await;
    assert!(
        r.llm_text()
            .starts_with("Showing lines 6-7 of 10485761 total lines."),
        "{}",
        &r.llm_text()[..80]
    );
}

#[tokio::test]
async fn relative_outside_and_escaping_symlinks_are_refused() {
    let f = fixture();
    let outside = f.dir.path().join("outside.txt");
    std::fs::write(&outside, "secret").unwrap();
    std::os::unix::fs::symlink(&outside, f.ws().join("link.txt")).unwrap();
    for (args, kind) in [
        (
            json!({"absolute_path": "a.txt"}),
            ErrorKind::InvalidToolParams,
        ),
        (
            json!({"absolute_path": outside}),
            ErrorKind::PathNotInWorkspace,
        ),
        (
            json!({"absolute_path": f.ws().join("link.txt")}),
            ErrorKind::PathNotInWorkspace,
        ),
        (
            json!({"absolute_path": format!("{}/../outside.txt", f.ws().display())}),
            ErrorKind::PathNotInWorkspace,
        ),
    ] {
        let e = f.build(args.clone()).unwrap_err();
        assert_eq!(e.kind, kind, "{args}: {}", e.message);
    }
}

#[tokio::test]
async fn schema_errors_name_the_parameter() {
    let f = fixture();
    let e = f.build(json!({"absolute_path": 5})).unwrap_err();
    assert_eq!(e.message, "absolute_path: 5 is not of type \"string\"");
    let e = f
        .build(json!({"absolute_path": "/x", "limit": 0}))
        .unwrap_err();
    assert!(e.message.starts_with("limit:"), "{}", e.message);
}

#[tokio::test]
async fn description_says_what_the_call_does() {
    let f = fixture();
    let p = f.write("src/main.rs", b"fn main() {}\n");
    assert_eq!(
        f.build(json!({"absolute_path": p})).unwrap().describe(),
        "Read src/main.rs"
    );
    assert_eq!(
        f.build(json!({"absolute_path": p, "offset": 0, "limit": 200}))
            .unwrap()
            .describe(),
        "Read src/main.rs lines 1-200"
    );
}

#[tokio::test]
async fn cancellation_ends_the_call() {
    let f = fixture();
    // A small file (read on the task) and a large one (read on a blocking thread).
    let large = "x\n".repeat(READ_ON_TASK as usize);
    for (name, content) in [("a.txt", "x\n"), ("large.txt", large.as_str())] {
        let p = f.write(name, content.as_bytes());
        let call = f.build(json!({"absolute_path": p})).unwrap();
        let ctx = ExecContext::new(f.env.clone());
        ctx.cancel.cancel();
        let r = call.execute(ctx).await;
        assert_eq!(err_kind(&r), Some(ErrorKind::Cancelled), "{name}");
    }
}

#[tokio::test]
async fn files_on_either_side_of_the_read_on_task_limit_read_the_same() {
    let f = fixture();
    // Lines of 16 bytes: one file just under the limit, one just over, a UTF-16 file
    // and a BOM file under it; each must read exactly like the streamed path.
    let line = "0123456789abcde\n";
    let lines = READ_ON_TASK as usize / line.len();
    for (name, count) in [("under.txt", lines), ("over.txt", lines + 1)] {
        let p = f.write(name, line.repeat(count).as_bytes());
        let text = f
            .call(json!({"absolute_path": p, "offset": count - 2}))
            .await
            .llm_text();
        let expected = format!(
            "Showing lines {}-{count} of {count} total lines.\n\n---\n\n{}",
            count - 1,
            [line.trim_end(); 2].join("\n")
        );
        assert_eq!(text, expected, "{name}");
    }
    let mut utf16 = vec![0xFF, 0xFE];
    for unit in "héllo\nwörld\n".encode_utf16() {
        utf16.extend_from_slice(&unit.to_le_bytes());
    }
    let p = f.write("u16.txt", &utf16);
    assert_eq!(
        f.call(json!({"absolute_path": p})).await.llm_text(),
        "héllo\nwörld"
    );
    let p = f.write("bom.txt", b"\xEF\xBB\xBFfirst\nsecond\n");
    assert_eq!(
        f.call(json!({"absolute_path": p})).await.llm_text(),
        "first\nsecond"
    );
}

proptest::proptest! {
    /// Lines taken from bytes in memory (small files) are exactly the lines read from a
    /// stream (large files): same text, same counts, same cut.
    #[test]
    fn slice_and_stream_lines_agree(
        bytes in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just(b'\n'),
                proptest::strategy::Just(b' '),
                proptest::strategy::Just(b'\r'),
                proptest::strategy::Just(0xC3u8),
                proptest::strategy::Just(0xA9u8),
                proptest::strategy::Just(0xEFu8),
                proptest::strategy::Just(0xBBu8),
                proptest::strategy::Just(0xBFu8),
                b'a'..=b'c',
            ],
            0..200,
        ),
        offset in 0u64..12,
        max_lines in 1usize..12,
        max_chars in 0usize..80,
    ) {
        let streamed = collect_lines(bytes.as_slice(), offset, max_lines, max_chars).unwrap();
        let sliced = collect_slice_lines(&bytes, offset, max_lines, max_chars);
        proptest::prop_assert_eq!(&streamed.body, &sliced.body);
        proptest::prop_assert_eq!(streamed.kept, sliced.kept);
        proptest::prop_assert_eq!(streamed.total, sliced.total);
        proptest::prop_assert_eq!(streamed.cut, sliced.cut);
    }
}

#[test]
fn a_line_of_hundreds_of_mib_is_read_past_not_kept() {
    // A reader that yields a 256 MiB line lazily: keeping it would take 256 MiB.
    let huge = std::io::repeat(b'a').take(256 << 20);
    let mut reader = std::io::BufReader::new(huge.chain(&b"\nsecond\n"[..]));
    let mut buf = Vec::new();
    assert_eq!(
        read_line_capped(&mut reader, &mut buf, 4004).unwrap(),
        (256 << 20) + 1
    );
    assert_eq!(buf.len(), 4004);
    buf.clear();
    assert_eq!(read_line_capped(&mut reader, &mut buf, 4004).unwrap(), 7);
    assert_eq!(buf, b"second\n");
    buf.clear();
    assert_eq!(read_line_capped(&mut reader, &mut buf, 4004).unwrap(), 0);
    // Paged, the long line is cut as before and the lines after it are counted.
    let long = std::io::repeat(b'b').take(64 << 20);
    let reader = std::io::BufReader::new(long.chain(&b"\nsecond\nthird"[..]));
    let lines = collect_lines(reader, 0, 10, 1000).unwrap();
    assert!(lines.cut);
    assert!(
        lines.body.starts_with(&"b".repeat(1000)),
        "{}",
        &lines.body[..40]
    );
    assert_eq!(lines.total, 3);
}
