//! Saving and loading sessions: the history comes back exactly, damage is named by file
//! and line, a cut-short file still loads, and no input panics the loader.

use std::time::UNIX_EPOCH;

use proptest::prelude::*;

use super::*;
use toolbelt_model::{ToolCall, UserPart};

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: "read_file".to_string(),
        arguments: format!("{{\"absolute_path\":\"/w/{id}.txt\"}}"),
    }
}

/// A conversation with every kind of message: text and image prompts, two calls in one
/// turn (with a thinking block), results (a failed one with an image, a successful one
/// whose text starts as an error's would), a final answer.
fn conversation() -> Vec<Message> {
    vec![
        Message::User(vec![
            UserPart::Text("read both\nplease".to_string()),
            UserPart::Image {
                mime_type: "image/png".to_string(),
                data: vec![0, 1, 2, 255, b'\n', b'"'],
            },
        ]),
        // A signed thinking block, which a resumed tool-use turn must send back.
        Message::Assistant {
            text: "Reading.".to_string(),
            tool_calls: vec![call("c1"), call("c2")],
            reasoning: vec![toolbelt_model::OpaquePart {
                format: "anthropic".to_string(),
                value: serde_json::json!({"type": "thinking", "thinking": "Both.", "signature": "c2ln"}),
            }],
        },
        Message::Tool {
            call_id: "c1".to_string(),
            text: "one\n\"quoted\"".to_string(),
            is_error: true,
            images: vec![toolbelt_model::ToolImage {
                mime_type: "image/png".to_string(),
                data: vec![0x89, b'P', b'N', b'G', 0, 255],
            }],
        },
        Message::Tool {
            call_id: "c2".to_string(),
            text: "Error: printed by the command, which succeeded".to_string(),
            is_error: false,
            images: Vec::new(),
        },
        Message::Assistant {
            text: "Both say hello.".to_string(),
            tool_calls: Vec::new(),
            // A thinking model's signature, which a resumed conversation must send back.
            reasoning: vec![toolbelt_model::OpaquePart {
                format: "gemini".to_string(),
                value: serde_json::json!({"text": "c2lnbmF0dXJl"}),
            }],
        },
    ]
}

fn header() -> SessionHeader {
    SessionHeader::new(PathBuf::from("/w"), "test-model".to_string(), None)
}

/// A session file's text with `messages`, as a run writes it.
fn file_text(messages: &[Message]) -> String {
    let mut lines = vec![serde_json::to_string(&Line::Session(header())).unwrap()];
    for m in messages {
        if let Some(line) = Line::from_message(m) {
            lines.push(serde_json::to_string(&line).unwrap());
        }
    }
    lines.join("\n") + "\n"
}

fn saved(store: &SessionStore, messages: &[Message]) -> String {
    let writer = store.create(header()).unwrap();
    writer
        .append(&Message::System("not saved".to_string()))
        .unwrap();
    for m in messages {
        writer.append(m).unwrap();
    }
    writer.id().to_string()
}

#[test]
fn a_saved_session_loads_back_as_the_same_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions/project"));
    let id = saved(&store, &conversation());
    let loaded = store.load(&id).unwrap();
    assert_eq!(loaded.messages, conversation());
    assert_eq!(loaded.header.id, id);
    assert_eq!(loaded.header.model, "test-model");
    assert_eq!(loaded.header.version, FORMAT_VERSION);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(store.first_prompt(&id).as_deref(), Some("read both"));
}

#[test]
fn a_result_line_keeps_its_error_flag_and_images_and_an_older_line_still_loads() {
    let text = file_text(&conversation());
    let tool_lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "tool")
        .collect();
    assert_eq!(tool_lines[0]["is_error"], true);
    assert_eq!(
        tool_lines[0]["images"],
        serde_json::json!([{"mime_type": "image/png", "data": "iVBORwD/"}])
    );
    assert_eq!(tool_lines[1]["is_error"], false);
    assert!(tool_lines[1].get("images").is_none(), "{}", tool_lines[1]);
    // Lines written before the fields existed: the flag is read from the text, as the
    // wire formats then did; no images.
    let old = [
        serde_json::to_string(&Line::Session(header())).unwrap(),
        r#"{"type":"assistant","text":"","tool_calls":[{"id":"c1","name":"read_file","arguments":"{}"},{"id":"c2","name":"read_file","arguments":"{}"}]}"#.to_string(),
        r#"{"type":"tool","call_id":"c1","text":"Error: File not found: /w/a.txt"}"#.to_string(),
        r#"{"type":"tool","call_id":"c2","text":"[image/png attached in the following user message]"}"#.to_string(),
        r#"{"type":"user","content":[{"text":"Media returned by the tool calls above:"},{"image":{"mime_type":"image/png","data":"iVBORw=="}}]}"#.to_string(),
    ]
    .join("\n")
        + "\n";
    let loaded = parse(Path::new("old.jsonl"), old.as_bytes()).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert!(matches!(
        &loaded.messages[1],
        Message::Tool { call_id, is_error: true, images, .. } if call_id == "c1" && images.is_empty()
    ));
    assert!(matches!(
        &loaded.messages[2],
        Message::Tool { call_id, is_error: false, images, .. } if call_id == "c2" && images.is_empty()
    ));
    assert!(matches!(&loaded.messages[3], Message::User(parts) if parts.len() == 2));
    // Images that are not base64 are damage, named by line.
    let bad = file_text(&conversation()).replace("iVBORwD/", "not base64!");
    let err = parse(Path::new("s.jsonl"), bad.as_bytes()).unwrap_err();
    assert!(
        err.to_string()
            .contains("s.jsonl:4: an image that is not base64"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn the_directory_is_private_and_so_is_each_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions/project"));
    let id = saved(&store, &conversation());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.path().join("sessions")), 0o700);
    assert_eq!(mode(store.dir()), 0o700);
    assert_eq!(mode(&store.dir().join(format!("{id}.jsonl"))), 0o600);
}

#[test]
fn ids_sort_by_start_time_and_the_latest_is_the_newest() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().to_path_buf());
    assert!(matches!(
        store.latest(),
        Err(TranscriptError::NoSessions { .. })
    ));
    // Names do not sort by time: an old-format ID above a UUID, started earlier.
    let mut older = header();
    older.id = "20250101T000000.000Z-00000000".to_string();
    older.started = "2025-01-01T00:00:00.000Z".to_string();
    store.create(older).unwrap();
    let mut newer = header();
    newer.id = "00000000-0000-4000-8000-000000000000".to_string();
    let newer = store.create(newer).unwrap().id().to_string();
    std::fs::write(dir.path().join("notes.txt"), "not a session").unwrap();
    assert_eq!(
        store.ids().unwrap(),
        [newer.clone(), "20250101T000000.000Z-00000000".to_string()]
    );
    assert_eq!(store.latest().unwrap().header.id, newer);
}

#[test]
fn new_ids_are_unique_uuids_and_times_are_utc() {
    let id = header().id;
    assert!(is_uuid(&id) && valid_id(&id), "{id}");
    assert_ne!(header().id, id);
    let at = UNIX_EPOCH + std::time::Duration::from_millis(20_780 * 86_400_000 + 61_234);
    assert_eq!(rfc3339(at), "2026-11-23T00:01:01.234Z");
    assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    let leap_day = UNIX_EPOCH + std::time::Duration::from_secs(11_016 * 86_400);
    assert_eq!(rfc3339(leap_day), "2000-02-29T00:00:00.000Z");
}

/// A continuation keeps a UUID session's ID in a file of its own (the parent's file is
/// never touched); loading the ID loads the newest; the listing shows the ID once. An
/// old-format session's continuation takes a UUID.
#[test]
fn a_continuation_keeps_a_uuid_and_loads_as_the_newest() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().to_path_buf());
    let id = saved(&store, &conversation()[..1]);
    let first = std::fs::read(dir.path().join(format!("{id}.jsonl"))).unwrap();
    for n in 1..=2 {
        let parent = store.load(&id).unwrap();
        let header = SessionHeader::continuing(PathBuf::from("/w"), "m".into(), &parent.header);
        let writer = store.create(header).unwrap();
        assert_eq!(writer.id(), id);
        assert!(writer.path().ends_with(format!("{id}.{n}.jsonl")));
        for m in &parent.messages {
            writer.append(m).unwrap();
        }
        writer
            .append(&Message::User(vec![UserPart::Text(format!("turn {n}"))]))
            .unwrap();
    }
    let loaded = store.load(&id).unwrap();
    assert_eq!(loaded.messages.len(), 3, "{:?}", loaded.messages);
    assert_eq!(loaded.header.parent.as_deref(), Some(id.as_str()));
    assert_eq!(store.ids().unwrap(), std::slice::from_ref(&id));
    assert_eq!(
        std::fs::read(dir.path().join(format!("{id}.jsonl"))).unwrap(),
        first
    );

    let mut old = header();
    old.id = "20250101T000000.000Z-00000000".to_string();
    store.create(old).unwrap();
    let parent = store.load("20250101T000000.000Z-00000000").unwrap();
    let next = SessionHeader::continuing(PathBuf::from("/w"), "m".into(), &parent.header);
    assert!(is_uuid(&next.id), "{}", next.id);
    assert_eq!(
        next.parent.as_deref(),
        Some("20250101T000000.000Z-00000000")
    );
}

#[test]
fn an_id_is_never_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("s"));
    for bad in [
        "",
        "../x",
        "/etc/passwd",
        "a/b",
        ".hidden",
        "..",
        "x\0y",
        "a\\b",
    ] {
        assert!(!valid_id(bad), "{bad:?}");
        assert!(
            matches!(store.load(bad), Err(TranscriptError::InvalidId(_))),
            "{bad:?}"
        );
    }
    assert!(valid_id("20261123T171500.123Z-1a2b3c4d"));
}

#[test]
fn an_unknown_id_names_the_latest_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().to_path_buf());
    let id = saved(&store, &conversation());
    let err = store.load("20200101T000000.000Z-deadbeef").unwrap_err();
    let TranscriptError::UnknownId { latest, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(latest, std::slice::from_ref(&id));
    assert!(err.to_string().contains(&id), "{err}");
}

#[test]
fn a_call_left_without_a_result_is_answered_with_an_error() {
    let mut messages = conversation();
    messages.truncate(3); // the assistant asked for c1 and c2; only c1 came back
    let text = file_text(&messages);
    let loaded = parse(Path::new("s.jsonl"), text.as_bytes()).unwrap();
    assert_eq!(loaded.messages.len(), 4);
    assert_eq!(
        loaded.messages[3],
        Message::Tool {
            call_id: "c2".to_string(),
            text: UNFINISHED_CALL_TEXT.to_string(),
            is_error: true,
            images: Vec::new(),
        }
    );
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].contains("s.jsonl"),
        "{:?}",
        loaded.warnings
    );
    assert!(loaded.warnings[0].contains("c2"), "{:?}", loaded.warnings);
}

#[test]
fn a_truncated_last_line_is_skipped_with_a_warning() {
    let text = file_text(&conversation());
    let cut = &text[..text.len() - 10];
    let loaded = parse(Path::new("s.jsonl"), cut.as_bytes()).unwrap();
    assert_eq!(loaded.messages[..4], conversation()[..4]);
    assert_eq!(loaded.messages.len(), 4);
    assert!(
        loaded.warnings[0].starts_with("s.jsonl:6: incomplete last line"),
        "{:?}",
        loaded.warnings
    );
}

fn summary() -> Vec<Message> {
    vec![
        Message::user_text("[Summary] read both files; both say hello"),
        Message::Assistant {
            text: "Understood.".to_string(),
            tool_calls: Vec::new(),
            reasoning: Vec::new(),
        },
    ]
}

#[test]
fn a_compression_replaces_the_history_before_it_and_later_messages_follow() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions/project"));
    let writer = store.create(header()).unwrap();
    for m in conversation() {
        writer.append(&m).unwrap();
    }
    writer.replace_history(&summary()).unwrap();
    let after = Message::user_text("and now?");
    writer.append(&after).unwrap();
    let loaded = store.load(writer.id()).unwrap();
    let mut expected = summary();
    expected.push(after);
    assert_eq!(loaded.messages, expected);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    // The replaced messages are still in the file, above the compression.
    let text = std::fs::read_to_string(writer.path()).unwrap();
    assert!(text.contains("Both say hello."), "{text}");
    // Listings still show the prompt the session began with.
    assert_eq!(
        store.first_prompt(writer.id()).as_deref(),
        Some("read both")
    );
    // A second compression replaces the first.
    writer.replace_history(&conversation()[..1]).unwrap();
    assert_eq!(
        store.load(writer.id()).unwrap().messages,
        conversation()[..1]
    );
}

#[test]
fn a_compression_cut_short_loads_the_history_before_it() {
    let text = file_text(&conversation());
    let line = serde_json::to_string(&Line::Compressed {
        history: summary().iter().filter_map(Line::from_message).collect(),
    })
    .unwrap();
    let whole = format!("{text}{line}\n");
    assert_eq!(
        parse(Path::new("s.jsonl"), whole.as_bytes())
            .unwrap()
            .messages,
        summary()
    );
    let cut = &whole[..whole.len() - 8];
    let loaded = parse(Path::new("s.jsonl"), cut.as_bytes()).unwrap();
    assert_eq!(loaded.messages, conversation());
    assert!(
        loaded.warnings[0].contains("incomplete last line"),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn a_compressed_history_that_is_not_well_formed_is_an_error() {
    let good = file_text(&conversation()[..1]);
    let cases = [
        (
            r#"{"type":"compressed","history":[{"type":"tool","call_id":"c9","text":"x"}]}"#,
            "a result for tool call \"c9\"",
        ),
        (
            r#"{"type":"compressed","history":[{"type":"compressed","history":[]}]}"#,
            "a compression inside a compressed history",
        ),
        (
            r#"{"type":"compressed","history":[{"type":"session","version":1,"id":"x","cwd":"/","model":"m","started":"s"}]}"#,
            "a second session header",
        ),
    ];
    for (line, says) in cases {
        let text = format!("{good}{line}\n");
        let e = parse(Path::new("s.jsonl"), text.as_bytes()).unwrap_err();
        assert!(e.to_string().starts_with("s.jsonl:3: "), "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
    // A call the compressed history leaves open is answered, as anywhere else.
    let open = format!(
        "{good}{}\n",
        r#"{"type":"compressed","history":[{"type":"assistant","text":"","tool_calls":[{"id":"c1","name":"read_file","arguments":"{}"}]}]}"#
    );
    let loaded = parse(Path::new("s.jsonl"), open.as_bytes()).unwrap();
    assert_well_formed(&loaded.messages);
    assert_eq!(loaded.messages.len(), 2);
}

/// Each case: the file's text, and what the error says.
#[test]
fn damage_is_an_error_naming_the_file_and_line() {
    let good = file_text(&conversation());
    let lines: Vec<&str> = good.lines().collect();
    let with = |i: usize, line: &str| {
        let mut l = lines.clone();
        l[i] = line;
        l.join("\n") + "\n"
    };
    let cases = [
        (
            with(2, "{\"type\":\"assistant\",\"te"),
            "s.jsonl:3: not a session record",
        ),
        (
            with(3, "{\"type\":\"novel\"}"),
            "s.jsonl:4: not a session record",
        ),
        (with(1, lines[0]), "s.jsonl:2: a second session header"),
        (
            with(3, "{\"type\":\"tool\",\"call_id\":\"zz\",\"text\":\"\"}"),
            "s.jsonl:4: a result for tool call \"zz\"",
        ),
        (String::new(), "s.jsonl:1: an empty file"),
        (
            with(0, "{\"type\":\"user\",\"content\":[]}"),
            "s.jsonl:1: not a session header",
        ),
        (
            with(
                1,
                "{\"type\":\"user\",\"content\":[{\"image\":{\"mime_type\":\"image/png\",\"data\":\"!!\"}}]}",
            ),
            "s.jsonl:2: an image that is not base64",
        ),
        (format!("\u{feff}{good}"), "s.jsonl:1: not a session header"),
    ];
    for (text, expected) in cases {
        let err = parse(Path::new("s.jsonl"), text.as_bytes()).unwrap_err();
        assert!(err.to_string().starts_with(expected), "{err} / {expected}");
    }
    let other = good.replacen("\"version\":1", "\"version\":2", 1);
    let err = parse(Path::new("s.jsonl"), other.as_bytes()).unwrap_err();
    assert!(
        matches!(&err, TranscriptError::UnsupportedVersion { found, .. } if found == "2"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "s.jsonl: session format version 2; this toolbelt reads version 1"
    );
}

#[cfg(unix)]
#[test]
fn an_unreadable_directory_is_an_error_naming_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("s");
    std::fs::create_dir(&sessions).unwrap();
    std::fs::set_permissions(&sessions, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read_dir(&sessions).is_ok() {
        return; // running as root: permissions do not apply
    }
    let err = SessionStore::new(sessions.clone()).ids().unwrap_err();
    assert!(
        err.to_string().starts_with(&sessions.display().to_string()),
        "{err}"
    );
    std::fs::set_permissions(&sessions, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// Every history the loader accepts is well formed: each call of an assistant message
/// is answered by exactly one tool message before the next other message.
fn assert_well_formed(messages: &[Message]) {
    let mut pending: Vec<&str> = Vec::new();
    for m in messages {
        match m {
            Message::Tool { call_id, .. } => {
                let at = pending.iter().position(|p| p == call_id).unwrap();
                pending.remove(at);
            }
            Message::Assistant { tool_calls, .. } => {
                assert!(pending.is_empty());
                pending = tool_calls.iter().map(|c| c.id.as_str()).collect();
            }
            _ => assert!(pending.is_empty()),
        }
    }
    assert!(pending.is_empty());
}

#[test]
fn a_file_cut_anywhere_loads_a_prefix_or_fails_cleanly() {
    let text = file_text(&conversation());
    let header_end = text.find('\n').unwrap();
    for cut in 0..=text.len() {
        match parse(Path::new("s.jsonl"), &text.as_bytes()[..cut]) {
            Ok(loaded) => {
                assert!(cut >= header_end, "{cut}");
                assert_well_formed(&loaded.messages);
                let kept = loaded
                    .messages
                    .iter()
                    .filter(|m| !matches!(m, Message::Tool { text, .. } if text == UNFINISHED_CALL_TEXT))
                    .cloned()
                    .collect::<Vec<_>>();
                assert_eq!(kept[..], conversation()[..kept.len()], "cut at {cut}");
            }
            Err(e) => assert!(cut < header_end, "cut at {cut}: {e}"),
        }
    }
}

proptest! {
    /// Random bytes, random lines among good ones: an answer or an error, never a
    /// panic, and what loads is well formed.
    #[test]
    fn no_input_panics_the_loader(
        garbage in proptest::collection::vec(any::<u8>(), 0..200),
        at in 0usize..8,
        cut in any::<prop::sample::Index>(),
    ) {
        let good = file_text(&conversation());
        let mut lines: Vec<Vec<u8>> = good.lines().map(|l| l.as_bytes().to_vec()).collect();
        let at = at.min(lines.len());
        lines.insert(at, garbage.clone());
        let mut bytes = lines.join(&b'\n');
        bytes.truncate(cut.index(bytes.len() + 1));
        if let Ok(loaded) = parse(Path::new("s.jsonl"), &bytes) {
            assert_well_formed(&loaded.messages);
        }
        if let Ok(loaded) = parse(Path::new("s.jsonl"), &garbage) {
            assert_well_formed(&loaded.messages);
        }
    }

    /// Line-shaped noise: JSON objects of the right `type` with wrong fields.
    #[test]
    fn records_of_the_wrong_shape_are_errors_not_panics(
        kind in prop::sample::select(vec!["user", "assistant", "tool", "session", "compressed"]),
        field in "[a-z_]{1,12}",
        value in prop_oneof![Just("null".to_string()), Just("[]".to_string()), Just("{}".to_string()), "\"[a-z]{0,5}\"", "-?[0-9]{1,20}"],
    ) {
        let good = file_text(&conversation()[..1]);
        let line = format!("{{\"type\":\"{kind}\",\"{field}\":{value}}}\n");
        let text = format!("{good}{line}");
        if let Ok(loaded) = parse(Path::new("s.jsonl"), text.as_bytes()) {
            assert_well_formed(&loaded.messages);
        }
    }
}

#[test]
fn compressions_nested_deep_are_an_error_not_a_stack_overflow() {
    let good = file_text(&conversation()[..1]);
    let depth = 100_000;
    let line = format!(
        "{}{}",
        r#"{"type":"compressed","history":["#.repeat(depth),
        "]}".repeat(depth)
    );
    let text = format!("{good}{line}\n");
    let e = parse(Path::new("s.jsonl"), text.as_bytes()).unwrap_err();
    assert!(e.to_string().starts_with("s.jsonl:3: "), "{e}");
}

#[test]
fn listings_show_the_persons_prompt_not_a_hooks_context() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions/project"));
    let writer = store.create(header()).unwrap();
    let context = toolbelt_engine::hooks::context_block(
        toolbelt_engine::hooks::HookEvent::SessionStart,
        &["abc123 last commit".to_string()],
    )
    .unwrap();
    writer
        .append(&Message::User(vec![
            UserPart::Text(context),
            UserPart::Text("fix the failing test".to_string()),
        ]))
        .unwrap();
    assert_eq!(
        store.first_prompt(writer.id()).as_deref(),
        Some("fix the failing test")
    );
}
