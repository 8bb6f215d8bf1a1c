use serde_json::{Value, json};
use toolbelt_core::{Display, ErrorKind, ExecContext, Part, ToolResult};

use crate::test_support::{Fixture, err_kind, fixture};

/// Written by Jupyter (indent 1, sorted keys, non-ASCII as is, trailing newline), with
/// a stream output, an image, an execute_result and a coloured traceback.
const ANALYSIS: &str = include_str!("testdata/analysis.ipynb");
/// nbformat 4.4: cells without ids.
const OLD_FORMAT: &str = include_str!("testdata/old_format.ipynb");

async fn notebook_edit(f: &Fixture, args: Value) -> ToolResult {
    f.call("notebook_edit", args).await
}

fn text_of(f: &Fixture, rel: &str) -> String {
    String::from_utf8(f.read(rel)).unwrap()
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn cells(text: &str) -> Vec<Value> {
    parse(text)["cells"].as_array().unwrap().clone()
}

/// The lines of `new` that differ from `old`, as the 0-based line range of `old` that
/// was replaced and the lines that replaced it (common head and tail cut off).
fn changed_lines<'a>(old: &'a str, new: &'a str) -> (std::ops::Range<usize>, Vec<&'a str>) {
    let old: Vec<&str> = old.split('\n').collect();
    let new: Vec<&str> = new.split('\n').collect();
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    (head..old.len() - tail, new[head..new.len() - tail].to_vec())
}

/// The 0-based line range of the cell with this id in Jupyter-formatted `text`.
fn cell_lines(text: &str, id: &str) -> std::ops::Range<usize> {
    let lines: Vec<&str> = text.split('\n').collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == format!("\"id\": \"{id}\","))
        .unwrap();
    let start = (0..at).rev().find(|&i| lines[i] == "  {").unwrap();
    let end = (at..lines.len())
        .find(|&i| lines[i] == "  }," || lines[i] == "  }")
        .unwrap();
    start..end + 1
}

#[tokio::test]
async fn replacing_a_cell_changes_only_that_cells_lines() {
    let f = fixture();
    let path = f.write("analysis.ipynb", ANALYSIS);
    let (r, details) = f
        .call_confirmed(
            "notebook_edit",
            json!({
                "notebook_path": path,
                "cell_id": "a1b2c3d4",
                "new_source": "import math\nprint(\"données: π\")\n",
            }),
        )
        .await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    assert!(
        r.llm_text().contains("Replaced cell id=a1b2c3d4"),
        "{}",
        r.llm_text()
    );
    let new = text_of(&f, "analysis.ipynb");
    let expected = ANALYSIS.replace(
        concat!(
            "   \"source\": [\n",
            "    \"import math\\n\",\n",
            "    \"print(\\\"chargé: 3 lignes\\\")\\n\",\n",
            "    \"print(\\\"ok\\\")\"\n",
            "   ]\n",
        ),
        concat!(
            "   \"source\": [\n",
            "    \"import math\\n\",\n",
            "    \"print(\\\"données: π\\\")\\n\"\n",
            "   ]\n",
        ),
    );
    assert_ne!(expected, ANALYSIS);
    assert_eq!(new, expected);
    // Line by line: what changed lies inside the cell, and is its source.
    let (replaced, with) = changed_lines(ANALYSIS, &new);
    let cell = cell_lines(ANALYSIS, "a1b2c3d4");
    assert!(
        cell.start <= replaced.start && replaced.end <= cell.end,
        "{replaced:?} outside {cell:?}"
    );
    assert_eq!(
        with,
        ["    \"print(\\\"données: π\\\")\\n\""],
        "only the source lines change"
    );
    assert!(new.ends_with("}\n"));
    // The confirmation and the result show the same diff of the file.
    let shown = details.expect("a confirmation");
    let toolbelt_core::ConfirmationDetails::Edit { diff: shown, .. } = shown else {
        panic!("{shown:?}")
    };
    assert!(
        shown.contains("+    \"print(\\\"données: π\\\")\\n\""),
        "{shown}"
    );
    let Display::FileDiff(diff) = r.return_display else {
        panic!()
    };
    assert_eq!((diff.added_lines, diff.removed_lines), (1, 2));
    assert_eq!(diff.diff, shown);
}

#[tokio::test]
async fn inserts_after_a_cell_with_a_fresh_id() {
    let f = fixture();
    let path = f.write("analysis.ipynb", ANALYSIS);
    let r = notebook_edit(
        &f,
        json!({
            "notebook_path": path,
            "cell_id": "b5e6f7a8",
            "edit_mode": "insert",
            "cell_type": "markdown",
            "new_source": "## Résultats\nLa courbe monte.",
        }),
    )
    .await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    let new = text_of(&f, "analysis.ipynb");
    let after = cells(&new);
    assert_eq!(after.len(), 6);
    let inserted = &after[3];
    let id = inserted["id"].as_str().unwrap();
    assert_eq!(id.len(), 8);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    assert!(cells(ANALYSIS).iter().all(|c| c["id"] != id));
    assert_eq!(
        inserted,
        &json!({"cell_type": "markdown", "id": id, "metadata": {}, "source": ["## Résultats\n", "La courbe monte."]})
    );
    assert!(
        r.llm_text().contains(&format!("id={id} (index 3)")),
        "{}",
        r.llm_text()
    );
    // The new cell's lines are added right after the cell, formatted as Jupyter would.
    let mut expected: Vec<String> = ANALYSIS.split('\n').map(str::to_string).collect();
    let block = format!(
        "  {{\n   \"cell_type\": \"markdown\",\n   \"id\": \"{id}\",\n   \"metadata\": {{}},\n   \"source\": [\n    \"## Résultats\\n\",\n    \"La courbe monte.\"\n   ]\n  }},"
    );
    let end = cell_lines(ANALYSIS, "b5e6f7a8").end;
    expected.splice(end..end, block.split('\n').map(str::to_string));
    assert_eq!(new, expected.join("\n"));
}

#[tokio::test]
async fn inserts_a_code_cell_at_the_start_without_cell_id() {
    let f = fixture();
    let path = f.write("analysis.ipynb", ANALYSIS);
    let r = notebook_edit(
        &f,
        json!({"notebook_path": path, "edit_mode": "insert", "cell_type": "code", "new_source": "x = 1"}),
    )
    .await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    let after = cells(&text_of(&f, "analysis.ipynb"));
    assert_eq!(after.len(), 6);
    assert_eq!(after[0]["cell_type"], "code");
    assert_eq!(after[0]["source"], json!(["x = 1"]));
    assert_eq!(after[0]["outputs"], json!([]));
    assert_eq!(after[0]["execution_count"], Value::Null);
    assert_eq!(after[1..], cells(ANALYSIS)[..]);
    let keys: Vec<&String> = after[0].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "cell_type",
            "execution_count",
            "id",
            "metadata",
            "outputs",
            "source"
        ]
    );
}

#[tokio::test]
async fn deletes_a_cell_and_only_its_lines() {
    let f = fixture();
    let path = f.write("analysis.ipynb", ANALYSIS);
    for (id, remaining) in [("c9d0e1f2", 4), ("d3e4f5a6", 3), ("3f9a1c2e", 2)] {
        let before = text_of(&f, "analysis.ipynb");
        let r = notebook_edit(
            &f,
            json!({"notebook_path": path, "cell_id": id, "edit_mode": "delete"}),
        )
        .await;
        assert_eq!(r.error, None, "{}", r.llm_text());
        let new = text_of(&f, "analysis.ipynb");
        let after = cells(&new);
        assert_eq!(after.len(), remaining, "{id}");
        assert!(after.iter().all(|c| c["id"] != id));
        // The text is the old one without the cell's lines (and the separator).
        let old_lines: Vec<&str> = before.split('\n').collect();
        let cell = cell_lines(&before, id);
        let (replaced, with) = changed_lines(&before, &new);
        assert!(
            with.len() <= 1 && replaced.len() >= cell.len(),
            "{id}: {replaced:?} {with:?}"
        );
        assert!(
            replaced.start + 1 >= cell.start && replaced.end <= cell.end + 1,
            "{id}: {replaced:?} {cell:?} {:?}",
            &old_lines[replaced.clone()]
        );
        parse(&new);
    }
    // Deleting the last cells leaves an empty list, and a cell can be inserted into it.
    for id in ["a1b2c3d4", "b5e6f7a8"] {
        let r = notebook_edit(
            &f,
            json!({"notebook_path": path, "cell_id": id, "edit_mode": "delete"}),
        )
        .await;
        assert_eq!(r.error, None, "{}", r.llm_text());
    }
    assert!(text_of(&f, "analysis.ipynb").starts_with("{\n \"cells\": [],\n \"metadata\""));
    let r = notebook_edit(
        &f,
        json!({"notebook_path": path, "edit_mode": "insert", "cell_type": "markdown", "new_source": "# Again"}),
    )
    .await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    let new = text_of(&f, "analysis.ipynb");
    let id = cells(&new)[0]["id"].as_str().unwrap().to_string();
    assert!(new.starts_with(&format!(
        "{{\n \"cells\": [\n  {{\n   \"cell_type\": \"markdown\",\n   \"id\": \"{id}\",\n   \"metadata\": {{}},\n   \"source\": [\n    \"# Again\"\n   ]\n  }}\n ],\n \"metadata\""
    )));
}

#[tokio::test]
async fn changing_the_type_drops_or_adds_outputs() {
    let f = fixture();
    let path = f.write("analysis.ipynb", ANALYSIS);
    let r = notebook_edit(
        &f,
        json!({"notebook_path": path, "cell_id": "a1b2c3d4", "new_source": "Plus de code.", "cell_type": "markdown"}),
    )
    .await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    let cell = &cells(&text_of(&f, "analysis.ipynb"))[1];
    assert_eq!(
        cell,
        &json!({"cell_type": "markdown", "id": "a1b2c3d4", "metadata": {"tags": ["setup"]}, "source": ["Plus de code."]})
    );

    let r = notebook_edit(
        &f,
        json!({"notebook_path": path, "cell_id": "d3e4f5a6", "new_source": "print('fin')", "cell_type": "code"}),
    )
    .await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    let cell = &cells(&text_of(&f, "analysis.ipynb"))[4];
    assert_eq!(
        cell,
        &json!({"cell_type": "code", "execution_count": null, "id": "d3e4f5a6", "metadata": {}, "outputs": [], "source": ["print('fin')"]})
    );
    // Keys stay in Jupyter's (sorted) order.
    let keys: Vec<&String> = cell.as_object().unwrap().keys().collect();
    assert!(keys.is_sorted(), "{keys:?}");
}

#[tokio::test]
async fn an_unknown_cell_id_lists_the_ids() {
    let f = fixture();
    let path = f.write("analysis.ipynb", ANALYSIS);
    let r = notebook_edit(
        &f,
        json!({"notebook_path": path, "cell_id": "nope", "new_source": "x"}),
    )
    .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::InvalidToolParams));
    let text = r.llm_text();
    assert!(text.contains("No cell with id 'nope'"), "{text}");
    assert!(
        text.contains("3f9a1c2e, a1b2c3d4, b5e6f7a8, c9d0e1f2, d3e4f5a6"),
        "{text}"
    );
    // An index is not an id when the cells have ids.
    let r = notebook_edit(
        &f,
        json!({"notebook_path": path, "cell_id": "cell-1", "new_source": "x"}),
    )
    .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::InvalidToolParams));
    assert_eq!(text_of(&f, "analysis.ipynb"), ANALYSIS);
}

#[tokio::test]
async fn missing_arguments_are_refused_before_anything_is_read() {
    let f = fixture();
    let path = f.write("analysis.ipynb", ANALYSIS);
    for (args, needle) in [
        (
            json!({"notebook_path": path, "cell_id": "a1b2c3d4"}),
            "new_source is required",
        ),
        (
            json!({"notebook_path": path, "new_source": "x"}),
            "cell_id is required",
        ),
        (
            json!({"notebook_path": path, "edit_mode": "delete"}),
            "cell_id is required",
        ),
        (
            json!({"notebook_path": path, "edit_mode": "insert", "new_source": "x"}),
            "cell_type",
        ),
    ] {
        let r = notebook_edit(&f, args.clone()).await;
        assert_eq!(err_kind(&r), Some(ErrorKind::InvalidToolParams), "{args}");
        assert!(r.llm_text().contains(needle), "{args}: {}", r.llm_text());
    }
    let r = notebook_edit(
        &f,
        json!({"notebook_path": path, "cell_id": "a1b2c3d4", "edit_mode": "move"}),
    )
    .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::InvalidToolParams));
    assert_eq!(text_of(&f, "analysis.ipynb"), ANALYSIS);
}

#[tokio::test]
async fn a_notebook_outside_the_workspace_is_refused() {
    let f = fixture();
    let outside = f.outside().join("other.ipynb");
    std::fs::write(&outside, ANALYSIS).unwrap();
    std::os::unix::fs::symlink(&outside, f.ws().join("link.ipynb")).unwrap();
    for given in [
        outside.display().to_string(),
        format!("{}/../outside/other.ipynb", f.ws().display()),
        f.path("link.ipynb"),
    ] {
        let r = notebook_edit(
            &f,
            json!({"notebook_path": given, "cell_id": "a1b2c3d4", "new_source": "x"}),
        )
        .await;
        assert_eq!(err_kind(&r), Some(ErrorKind::PathNotInWorkspace), "{given}");
    }
    // A relative path is refused as by edit.
    let r = notebook_edit(
        &f,
        json!({"notebook_path": "analysis.ipynb", "cell_id": "a1b2c3d4", "new_source": "x"}),
    )
    .await;
    assert!(r.is_error());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), ANALYSIS);
}

#[tokio::test]
async fn a_notebook_changed_after_the_confirmation_is_not_written() {
    let f = fixture();
    let path = f.write("analysis.ipynb", ANALYSIS);
    let call = f
        .build(
            "notebook_edit",
            json!({"notebook_path": path, "cell_id": "a1b2c3d4", "new_source": "x = 2"}),
        )
        .unwrap();
    assert!(call.confirmation().await.is_some());
    let changed = ANALYSIS.replace("## Fin", "## Fin du carnet");
    std::fs::write(&path, &changed).unwrap();
    let r = call.execute(ExecContext::new(f.env.clone())).await;
    assert_eq!(err_kind(&r), Some(ErrorKind::FileWriteFailure));
    assert!(r.llm_text().contains("changed after"), "{}", r.llm_text());
    assert_eq!(text_of(&f, "analysis.ipynb"), changed);
}

#[tokio::test]
async fn a_file_that_is_not_a_notebook_is_left_alone() {
    let f = fixture();
    for (name, body, why) in [
        ("script.py", "print('hi')\n", "invalid JSON at line 1"),
        ("broken.ipynb", "{\"cells\": [\n", "invalid JSON"),
        ("data.ipynb", "{\"rows\": [1, 2]}\n", "no \"cells\" list"),
        ("list.ipynb", "[1, 2]\n", "no \"cells\" list"),
    ] {
        let path = f.write(name, body);
        let r = notebook_edit(
            &f,
            json!({"notebook_path": path, "edit_mode": "insert", "cell_type": "code"}),
        )
        .await;
        assert_eq!(err_kind(&r), Some(ErrorKind::ReadContentFailure), "{name}");
        let text = r.llm_text();
        assert!(text.contains("is not a Jupyter notebook"), "{text}");
        assert!(text.contains(why), "{name}: {text}");
        assert!(text.contains("Nothing was written"), "{text}");
        assert_eq!(text_of(&f, name), body);
    }
    let r = notebook_edit(
        &f,
        json!({"notebook_path": f.path("missing.ipynb"), "edit_mode": "insert", "cell_type": "code"}),
    )
    .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::FileNotFound));
}

#[tokio::test]
async fn cells_without_ids_are_addressed_by_index() {
    let f = fixture();
    let path = f.write("old.ipynb", OLD_FORMAT);
    for cell_id in ["cell-1", "1", " cell-1 "] {
        let r = notebook_edit(
            &f,
            json!({"notebook_path": path, "cell_id": cell_id, "new_source": format!("print({cell_id:?})")}),
        )
        .await;
        assert_eq!(r.error, None, "{}", r.llm_text());
        assert_eq!(
            cells(&text_of(&f, "old.ipynb"))[1]["source"],
            json!([format!("print({cell_id:?})")])
        );
    }
    // The stream output is kept; nothing gets an id.
    let r = notebook_edit(
        &f,
        json!({"notebook_path": path, "cell_id": "cell-0", "edit_mode": "insert", "cell_type": "code"}),
    )
    .await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    let new = text_of(&f, "old.ipynb");
    let after = cells(&new);
    assert_eq!(after.len(), 4);
    assert_eq!(after[2]["outputs"][0]["text"], json!(["2\n"]));
    assert!(after.iter().all(|c| c.get("id").is_none()), "{new}");
    assert_eq!(
        after[1],
        json!({"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": []})
    );
    let r = notebook_edit(
        &f,
        json!({"notebook_path": path, "cell_id": "cell-3", "edit_mode": "delete"}),
    )
    .await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    assert_eq!(cells(&text_of(&f, "old.ipynb")).len(), 3);
    // Out of range, or not an index.
    for cell_id in ["cell-3", "abc", "-1"] {
        let r = notebook_edit(
            &f,
            json!({"notebook_path": path, "cell_id": cell_id, "edit_mode": "delete"}),
        )
        .await;
        assert_eq!(
            err_kind(&r),
            Some(ErrorKind::InvalidToolParams),
            "{cell_id}"
        );
        assert!(
            r.llm_text().contains("cell-0 to cell-2"),
            "{}",
            r.llm_text()
        );
    }
}

/// `value` serialized with this indentation (`None`: compact) and ending.
fn serialize(value: &Value, indent: Option<&str>, newline: bool) -> String {
    let mut text = match indent {
        None => serde_json::to_string(value).unwrap(),
        Some(indent) => {
            let mut out = Vec::new();
            let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
            let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
            serde::Serialize::serialize(value, &mut ser).unwrap();
            String::from_utf8(out).unwrap()
        }
    };
    if newline {
        text.push('\n');
    }
    text
}

#[tokio::test]
async fn the_files_indentation_and_final_newline_are_kept() {
    // Keys deliberately not sorted: their order is kept too.
    let before = json!({
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"title": "ünïcödé"},
        "cells": [
            {"id": "aaaa0001", "cell_type": "code", "source": ["1"], "metadata": {}, "outputs": [], "execution_count": null},
            {"id": "aaaa0002", "cell_type": "markdown", "source": ["# Ω"], "metadata": {}},
        ]
    });
    let mut after = before.clone();
    after["cells"][1]["source"] = json!(["# Ω\n", "\tdone"]);
    for (indent, newline) in [
        (Some(" "), true),
        (Some("  "), false),
        (Some("    "), true),
        (Some("\t"), false),
        (None, false),
    ] {
        let f = fixture();
        let original = serialize(&before, indent, newline);
        let path = f.write("nb.ipynb", &original);
        let r = notebook_edit(
            &f,
            json!({"notebook_path": path, "cell_id": "aaaa0002", "new_source": "# Ω\n\tdone"}),
        )
        .await;
        assert_eq!(r.error, None, "{}", r.llm_text());
        assert_eq!(
            text_of(&f, "nb.ipynb"),
            serialize(&after, indent, newline),
            "{indent:?}"
        );
    }
}

#[tokio::test]
async fn crlf_line_endings_are_kept() {
    let f = fixture();
    let path = f.write("nb.ipynb", OLD_FORMAT.replace('\n', "\r\n"));
    let r = notebook_edit(
        &f,
        json!({"notebook_path": path, "cell_id": "0", "new_source": "# New title\nwith two lines"}),
    )
    .await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    let new = text_of(&f, "nb.ipynb");
    assert!(!new.replace("\r\n", "").contains('\n'), "{new:?}");
    assert_eq!(
        cells(&new)[0]["source"],
        json!(["# New title\n", "with two lines"])
    );
}

#[tokio::test]
async fn the_same_source_is_no_change() {
    let f = fixture();
    let path = f.write("analysis.ipynb", ANALYSIS);
    let r = notebook_edit(
        &f,
        json!({"notebook_path": path, "cell_id": "d3e4f5a6", "new_source": "## Fin"}),
    )
    .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::EditNoChange));
}

// read_file of notebooks.

async fn read(f: &Fixture, args: Value) -> ToolResult {
    f.call("read_file", args).await
}

fn images(r: &ToolResult) -> Vec<(&str, &[u8])> {
    r.llm_content
        .iter()
        .filter_map(|p| match p {
            Part::InlineData {
                mime_type, data, ..
            } => Some((mime_type.as_str(), data.as_slice())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn read_file_shows_a_notebook_as_cells_with_outputs_and_images() {
    let f = fixture();
    let path = f.write("analysis.ipynb", ANALYSIS);
    let r = read(&f, json!({"absolute_path": path})).await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    let text = r.llm_text();
    let expected_parts = [
        "Jupyter notebook analysis.ipynb: 5 cells, nbformat 4.5, language python.",
        "--- cell 0 [markdown] id=3f9a1c2e ---\n# Analyse des données — π ≈ 3.14\n\nRésumé: 東京 🚀\n",
        "--- cell 1 [code] id=a1b2c3d4 execution_count=1 ---\nimport math\nprint(\"chargé: 3 lignes\")\nprint(\"ok\")\n[output stdout]\nchargé: 3 lignes\nok\n",
        "--- cell 2 [code] id=b5e6f7a8 execution_count=2 ---\n",
        "[output image/png: attached as image 1]\n[output execute_result]\n0.5\n",
        "--- cell 4 [markdown] id=d3e4f5a6 ---\n## Fin",
    ];
    for part in expected_parts {
        assert!(text.contains(part), "missing {part:?} in\n{text}");
    }
    assert!(!text.contains("\"cell_type\""), "{text}");
    let images = images(&r);
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].0, "image/png");
    assert!(images[0].1.starts_with(b"\x89PNG\r\n\x1a\n"));
}

#[tokio::test]
async fn read_file_strips_ansi_escapes_from_tracebacks() {
    let f = fixture();
    let path = f.write("analysis.ipynb", ANALYSIS);
    let text = read(&f, json!({"absolute_path": path})).await.llm_text();
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(
        text.contains("[error]\nZeroDivisionError: division by zero\n"),
        "{text}"
    );
    assert!(
        text.contains("ZeroDivisionError                         Traceback (most recent call last)\nCell In[3], line 1\n----> 1 1/0\n"),
        "{text}"
    );
}

#[tokio::test]
async fn read_file_cuts_long_outputs_and_caps_images() {
    let f = fixture();
    let png = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        b"\x89PNG\r\n\x1a\nfake",
    );
    let image = json!({"output_type": "display_data", "metadata": {}, "data": {"image/png": png}});
    let nb = json!({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{
            "cell_type": "code", "id": "x", "metadata": {}, "execution_count": 1, "source": "show()",
            "outputs": [
                {"output_type": "stream", "name": "stderr", "text": "é".repeat(5000)},
                image.clone(), image.clone(), image.clone(), image.clone(), image,
            ]
        }]
    });
    let path = f.write("big.ipynb", nb.to_string());
    let r = read(&f, json!({"absolute_path": path})).await;
    let text = r.llm_text();
    assert!(text.contains("[output stderr]"), "{text}");
    assert!(text.contains(&"é".repeat(2000)), "{text}");
    assert!(!text.contains(&"é".repeat(2001)), "{text}");
    assert!(
        text.contains(
            "[... output cut: 3000 more characters; outputs are shown up to 2000 characters]"
        ),
        "{text}"
    );
    assert_eq!(images(&r).len(), 3);
    assert!(
        text.contains("2 more image output(s) not attached"),
        "{text}"
    );
}

#[tokio::test]
async fn read_file_of_an_old_notebook_names_cells_by_index() {
    let f = fixture();
    let path = f.write("old.ipynb", OLD_FORMAT);
    let text = read(&f, json!({"absolute_path": path})).await.llm_text();
    assert!(text.contains("have no ids"), "{text}");
    assert!(
        text.contains(
            "--- cell 1 [code] execution_count=1 ---\nprint(1 + 1)\n[output stdout]\n2\n"
        ),
        "{text}"
    );
    assert!(text.contains("--- cell 2 [code] ---"), "{text}");
}

#[tokio::test]
async fn read_file_pages_through_a_notebook_and_attaches_the_images_shown() {
    let f = fixture();
    let path = f.write("analysis.ipynb", ANALYSIS);
    let whole = read(&f, json!({"absolute_path": path})).await.llm_text();
    let image_line = whole
        .lines()
        .position(|l| l.starts_with("[output image/png"))
        .unwrap() as u64;
    let r = read(&f, json!({"absolute_path": path, "offset": 0, "limit": 3})).await;
    assert!(
        r.llm_text().starts_with("Showing lines 1-3 of"),
        "{}",
        r.llm_text()
    );
    assert!(images(&r).is_empty());
    let r = read(
        &f,
        json!({"absolute_path": path, "offset": image_line, "limit": 1}),
    )
    .await;
    assert!(
        r.llm_text().contains("[output image/png"),
        "{}",
        r.llm_text()
    );
    assert_eq!(images(&r).len(), 1);
}

#[tokio::test]
async fn read_file_of_invalid_notebook_json_falls_back_to_text() {
    let f = fixture();
    let path = f.write("broken.ipynb", "{\"cells\": [\n  oops\n");
    let r = read(&f, json!({"absolute_path": path})).await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    let text = r.llm_text();
    assert!(
        text.starts_with("[broken.ipynb is not a valid Jupyter notebook ("),
        "{text}"
    );
    assert!(
        text.ends_with("showing it as text.]\n{\"cells\": [\n  oops"),
        "{text}"
    );
}

#[tokio::test]
async fn a_notebook_with_two_cells_lists_is_refused_not_misedited() {
    let f = fixture();
    let text = r#"{"cells": [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["first"]}],
 "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
 "cells": [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["second"]}]}
"#;
    let path = f.write("dup.ipynb", text.as_bytes());
    let r = notebook_edit(
        &f,
        json!({"notebook_path": path, "cell_id": "a", "new_source": "changed"}),
    )
    .await;
    assert!(r.error.is_some(), "{}", r.llm_text());
    assert_eq!(text_of(&f, "dup.ipynb"), text);
}

/// Any notebook, in any of the layouts Jupyter and other tools write, with sources full
/// of JSON's special characters: replacing one cell gives exactly the expected notebook,
/// and every byte outside that cell stays as it was. Arbitrary damaged text never panics
/// and is never written.
mod properties {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::{notebook_edit, serialize};
    use crate::test_support::fixture;
    use toolbelt_core::ErrorKind;

    fn source() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                "a",
                "\"",
                "\\",
                "{",
                "}",
                "[",
                "]",
                ",",
                ":",
                "\n",
                "é",
                "\u{1F600}",
                " ",
                "\t",
                "\\u0041",
                "null",
            ]),
            0..12,
        )
        .prop_map(|parts| parts.concat())
    }

    fn notebook() -> impl Strategy<Value = (Value, usize, String, usize, bool)> {
        (
            prop::collection::vec((source(), any::<bool>()), 1..6),
            source(),
            0usize..5,
            any::<bool>(),
            any::<prop::sample::Index>(),
        )
            .prop_map(|(cells, new_source, layout, newline, which)| {
                let cells: Vec<Value> = cells
                    .iter()
                    .enumerate()
                    .map(|(i, (src, code))| {
                        let mut cell = json!({
                            "cell_type": if *code { "code" } else { "markdown" },
                            "id": format!("c{i}"),
                            "metadata": {"tags": ["]", "\"x\""]},
                            "source": super::super::source_lines(src),
                        });
                        if *code {
                            cell["execution_count"] = Value::Null;
                            cell["outputs"] = json!([{"name": "stdout", "output_type": "stream", "text": ["}{"]}]);
                        }
                        cell
                    })
                    .collect();
                let target = which.index(cells.len());
                let nb = json!({
                    "metadata": {"kernelspec": {"name": "python3"}, "odd": "\"cells\": ["},
                    "cells": cells,
                    "nbformat": 4,
                    "nbformat_minor": 5,
                });
                (nb, target, new_source, layout, newline)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn replacing_a_cell_changes_that_cell_and_nothing_else(
            (nb, target, new_source, layout, newline) in notebook()
        ) {
            let indent = [None, Some(" "), Some("  "), Some("    "), Some("\t")][layout];
            let text = serialize(&nb, indent, newline);
            let f = fixture();
            let path = f.write("nb.ipynb", text.as_bytes());
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let r = rt.block_on(notebook_edit(&f, json!({
                "notebook_path": path,
                "cell_id": format!("c{target}"),
                "new_source": new_source,
            })));
            let after = String::from_utf8(f.read("nb.ipynb")).unwrap();
            let mut expected = nb.clone();
            expected["cells"][target]["source"] = super::super::source_lines(&new_source);
            if expected == nb {
                prop_assert_eq!(r.error.map(|e| e.kind), Some(ErrorKind::EditNoChange));
                prop_assert_eq!(after, text);
                return Ok(());
            }
            prop_assert!(r.error.is_none(), "{:?}", r.error);
            let got: Value = serde_json::from_str(&after).unwrap();
            prop_assert_eq!(&got, &expected);
            // What changed in the text lies inside the edited cell: no other cell's id,
            // no notebook-level key is in the replaced stretch.
            let head = text.bytes().zip(after.bytes()).take_while(|(a, b)| a == b).count();
            let tail = text
                .bytes()
                .rev()
                .zip(after.bytes().rev())
                .take_while(|(a, b)| a == b)
                .count()
                .min(text.len() - head)
                .min(after.len() - head);
            let replaced = &text.as_bytes()[head..text.len() - tail];
            let replaced = String::from_utf8_lossy(replaced);
            for other in 0..nb["cells"].as_array().unwrap().len() {
                if other != target {
                    prop_assert!(!replaced.contains(&format!("\"c{other}\"")), "{replaced}");
                }
            }
            for key in ["kernelspec", "nbformat", "odd"] {
                prop_assert!(!replaced.contains(key), "{replaced}");
            }
            prop_assert_eq!(after.ends_with('\n'), newline);
        }

        #[test]
        fn damaged_notebooks_never_panic_and_are_never_written(
            (nb, target, _new, layout, newline) in notebook(),
            cut in any::<prop::sample::Index>(),
            junk in prop::sample::select(vec!["", "\"", "]", "}", "{", "\\", ","]),
        ) {
            let indent = [None, Some(" "), Some("  "), Some("    "), Some("\t")][layout];
            let text = serialize(&nb, indent, newline);
            let mut at = cut.index(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let damaged = format!("{}{junk}", &text[..at]);
            let f = fixture();
            let path = f.write("nb.ipynb", damaged.as_bytes());
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let r = rt.block_on(notebook_edit(&f, json!({
                "notebook_path": path,
                "cell_id": format!("c{target}"),
                "new_source": "x",
            })));
            let after = f.read("nb.ipynb");
            if serde_json::from_str::<Value>(&damaged).is_err() {
                prop_assert!(r.error.is_some());
                prop_assert_eq!(after, damaged.into_bytes());
            } else {
                let _: Value = serde_json::from_slice(&after).unwrap();
            }
        }
    }
}
