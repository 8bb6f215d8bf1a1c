//! The editor as the approver: `session/request_permission` with the terminal's
//! choices, and what each answer does to the files and to later calls.

use serde_json::{Value, json};

use crate::turns::edit_turn;
use crate::{Editor, option_kinds, say, sdk_dir, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_once_keeps_the_file_and_fails_the_call() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    e.write("code.txt", "let x = 1;\n");
    let mut refused = edit_turn(&e, "c_edit", "code.txt", "let x = 1;", "let x = 2;");
    refused["tool_calls"][0]["expect_error"] = json!(true);
    let script = e.script("model.jsonl", &[refused, say("You kept x as it is.")]);
    let mut steps = start();
    steps.push(json!({"op": "prompt", "text": "make x 2"}));
    let seen = e
        .drive(
            &["--model-replay", &script],
            &["reject_once"],
            json!(steps),
            json!({}),
        )
        .await;
    assert_eq!(seen.result(2)["stopReason"], "end_turn");
    assert_eq!(e.read("code.txt"), "let x = 1;\n");
    assert_eq!(seen.permissions().len(), 1);
    let edit = seen.tool_call("edit");
    assert_eq!(edit["status"], "failed", "{edit}");
    assert!(
        !edit["statuses"]
            .as_array()
            .unwrap()
            .contains(&json!("completed")),
        "{edit}"
    );
    assert_eq!(
        seen.text_of("agent_message_chunk", Some(2)),
        "You kept x as it is."
    );
}

/// In a trusted workspace the question offers all four kinds of choice; the
/// `allow_always` option writes the rule the terminal writes (`edit` in
/// `.qwen/settings.json` `permissions.allow`) and the next edit of the session, in the
/// next prompt, is not asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_always_writes_the_rule_and_is_not_asked_again() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    e.trust_workspace();
    e.write("a.txt", "a = 1\n");
    e.write("b.txt", "b = 1\n");
    let script = e.script(
        "model.jsonl",
        &[
            edit_turn(&e, "c_a", "a.txt", "a = 1", "a = 2"),
            say("a is 2."),
            edit_turn(&e, "c_b", "b.txt", "b = 1", "b = 2"),
            say("b is 2."),
        ],
    );
    let mut steps = start();
    steps.push(json!({"op": "prompt", "text": "make a 2"}));
    steps.push(json!({"op": "prompt", "text": "make b 2"}));
    let seen = e
        .drive(
            &["--model-replay", &script],
            &["allow_always"],
            json!(steps),
            json!({}),
        )
        .await;
    assert_eq!(seen.result(2)["stopReason"], "end_turn");
    assert_eq!(seen.result(3)["stopReason"], "end_turn");
    let asked = seen.permissions();
    assert_eq!(asked.len(), 1, "asked once: {asked:?}");
    let mut kinds = option_kinds(&asked[0]);
    kinds.sort();
    kinds.dedup();
    assert_eq!(
        kinds,
        ["allow_always", "allow_once", "reject_always", "reject_once"]
    );
    assert_eq!(asked[0]["answer"], "allow_always");
    assert_eq!(e.read("a.txt"), "a = 2\n");
    assert_eq!(e.read("b.txt"), "b = 2\n");
    let settings: Value = serde_json::from_str(&e.read(".qwen/settings.json")).unwrap();
    let allow = settings["permissions"]["allow"].as_array().unwrap();
    assert!(allow.contains(&json!("edit")), "{settings}");
}

/// An untrusted folder's rules are ignored, so the terminal offers no "always in this
/// workspace" there: whichever "always" choice the editor is offered, none writes a
/// rule into the folder's `.qwen/settings.json`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_workspace_gets_no_rule_written() {
    let Some(sdk) = sdk_dir() else { return };
    let run = |answer: String| {
        let sdk = sdk.clone();
        async move {
            let e = Editor::new(sdk);
            e.write("a.txt", "a = 1\n");
            let script = e.script(
                "model.jsonl",
                &[
                    edit_turn(&e, "c_a", "a.txt", "a = 1", "a = 2"),
                    say("Done."),
                ],
            );
            let mut steps = start();
            steps.push(json!({"op": "prompt", "text": "make a 2"}));
            let seen = e
                .drive(
                    &["--model-replay", &script],
                    &[&answer],
                    json!(steps),
                    json!({}),
                )
                .await;
            let written = e.ws().join(".qwen/settings.json").exists();
            (seen.permissions()[0].clone(), written)
        }
    };
    let (question, _) = run("reject_once".to_string()).await;
    let always: Vec<String> = question["request"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "allow_always")
        .map(|o| o["optionId"].as_str().unwrap().to_string())
        .collect();
    for option in always {
        let (_, written) = run(option.clone()).await;
        assert!(
            !written,
            "answering {option} wrote a rule into an untrusted folder: {}",
            question["request"]["options"]
        );
    }
}
