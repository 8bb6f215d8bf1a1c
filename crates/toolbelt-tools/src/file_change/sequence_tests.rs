//! The one plan, confirm, apply sequence, held for each file-changing tool: a change
//! that cannot be planned asks nobody, fails when it runs, and writes nothing; one that
//! starts to work between the confirmation and the run is refused as unseen.

use serde_json::{Value, json};
use toolbelt_core::{ErrorKind, ExecContext, Invocation};

use crate::test_support::{Fixture, err_kind, fixture};

/// Confirms `call` (expecting no question), runs it, and returns the error kind and text.
async fn refused_without_asking(fx: &Fixture, call: Box<dyn Invocation>) -> (ErrorKind, String) {
    let question = call.confirmation().await;
    assert!(
        question.is_none(),
        "asked about a change that cannot be made: {question:?}"
    );
    let result = call.execute(ExecContext::new(fx.env.clone())).await;
    let kind = err_kind(&result).expect("the run fails");
    (kind, result.llm_text())
}

#[tokio::test]
async fn write_file_to_a_fifo_asks_nobody_and_writes_nothing() {
    let fx = fixture();
    let fifo = fx.ws().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let call = fx
        .build("write_file", json!({"file_path": fifo, "content": "x"}))
        .unwrap();
    let (_, text) = refused_without_asking(&fx, call).await;
    assert!(text.contains("pipe"), "{text}");
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

#[tokio::test]
async fn edit_whose_old_string_is_missing_asks_nobody_and_writes_nothing() {
    let fx = fixture();
    let path = fx.write("a.txt", "x\n");
    let call = fx
        .build(
            "edit",
            json!({"file_path": path, "old_string": "zzz", "new_string": "y"}),
        )
        .unwrap();
    let (kind, _) = refused_without_asking(&fx, call).await;
    assert_eq!(kind, ErrorKind::EditNoOccurrenceFound);
    assert_eq!(fx.read("a.txt"), b"x\n");
}

#[tokio::test]
async fn notebook_edit_of_a_file_that_is_no_notebook_asks_nobody_and_writes_nothing() {
    let fx = fixture();
    let path = fx.write("n.ipynb", "not json\n");
    let call = fx
        .build(
            "notebook_edit",
            json!({"notebook_path": path, "cell_id": "0", "new_source": "x"}),
        )
        .unwrap();
    let (_, text) = refused_without_asking(&fx, call).await;
    assert!(text.contains("not a Jupyter notebook"), "{text}");
    assert_eq!(fx.read("n.ipynb"), b"not json\n");
}

fn save_to_project(fx: &Fixture) -> Box<dyn Invocation> {
    fx.build(
        "save_memory",
        json!({"fact": "tests need Docker", "scope": "project"}),
    )
    .unwrap()
}

#[tokio::test]
async fn save_memory_into_a_file_that_is_not_text_asks_nobody_and_writes_nothing() {
    let fx = fixture();
    fx.write("QWEN.md", b"caf\xE9\n");
    let (kind, _) = refused_without_asking(&fx, save_to_project(&fx)).await;
    assert_eq!(kind, ErrorKind::MemoryToolExecutionError);
    assert_eq!(fx.read("QWEN.md"), b"caf\xE9\n");
}

/// A change nobody was asked about, because it could not be planned then, is not made
/// when it could be made by the time it runs: the person never saw it.
#[tokio::test]
async fn a_change_that_starts_to_work_after_the_confirmation_is_refused_as_unseen() {
    let fx = fixture();
    // Tool, file, content that cannot be changed, content that can, arguments.
    type Case<'a> = (&'a str, &'a str, &'a [u8], &'a [u8], Value);
    let cases: [Case; 3] = [
        (
            "edit",
            "a.txt",
            b"x\n",
            b"zzz\n",
            json!({"file_path": fx.path("a.txt"), "old_string": "zzz", "new_string": "y"}),
        ),
        (
            "save_memory",
            "QWEN.md",
            b"caf\xE9\n",
            b"# Project\n",
            json!({"fact": "f", "scope": "project"}),
        ),
        (
            "notebook_edit",
            "n.ipynb",
            b"not json\n",
            br#"{"cells": [{"cell_type": "code", "source": "a", "metadata": {}, "outputs": []}], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}"#,
            json!({"notebook_path": fx.path("n.ipynb"), "cell_id": "0", "new_source": "x"}),
        ),
    ];
    for (tool, file, before, fixed, args) in cases {
        fx.write(file, before);
        let call = fx.build(tool, args).unwrap();
        assert!(call.confirmation().await.is_none(), "{tool}");
        fx.write(file, fixed);
        let result = call.execute(ExecContext::new(fx.env.clone())).await;
        assert!(
            result.llm_text().contains("changed after"),
            "{tool}: {}",
            result.llm_text()
        );
        assert_eq!(fx.read(file), fixed, "{tool} wrote");
    }
}
