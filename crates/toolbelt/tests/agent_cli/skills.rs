//! Skills end to end: `SKILL.md` folders in the project and the home directory, the
//! `skill` tool against the fake OpenAI server, `allowed-tools` granted for one turn,
//! folder trust, the hint for a skill called as a tool, and `toolbelt skills list`.

use std::path::PathBuf;

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{FinishReason, ModelTurn, ToolCall};

use crate::support::Workspace;

fn call(id: &str, name: &str, arguments: Value) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.to_string(),
        }],
        finish_reason: FinishReason::ToolCalls,
        ..Default::default()
    })
}

/// The tool message answering `id` in a request.
fn answer(body: &Value, id: &str) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no answer to {id}"))
        .to_string()
}

fn declaration<'a>(body: &'a Value, name: &str) -> Option<&'a Value> {
    body["tools"]
        .as_array()?
        .iter()
        .find(|t| t["function"]["name"] == name)
}

fn home(w: &Workspace) -> PathBuf {
    w.dir.path().join("home")
}

fn write_home(w: &Workspace, rel: &str, text: &str) {
    let p = home(w).join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const RELEASE: &str = "---\nname: release\ndescription: Cut a release of this project (tags & notes)\nallowed-tools: run_shell_command(touch *)\n---\n# Release\n\nRun `touch released.txt`, then read checklist.md.\n";

fn env(url: &str, trusted: bool) -> Vec<(&str, &str)> {
    let mut env = vec![
        ("OPENAI_BASE_URL", url),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "qwen3-coder-plus"),
    ];
    if trusted {
        env.push(("TOOLBELT_TRUST_WORKSPACE", "1"));
    }
    env
}

fn touch(id: &str, file: &str) -> Reply {
    call(
        id,
        "run_shell_command",
        json!({"command": format!("touch {file}")}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_lets_its_allowed_command_run_headless_for_the_rest_of_the_turn() {
    let w = Workspace::new();
    w.write(".qwen/skills/release/SKILL.md", RELEASE);
    w.write(".qwen/skills/release/checklist.md", "1. tag\n");
    let server = FakeOpenAi::start(vec![
        call("s1", "skill", json!({"skill": "release"})),
        touch("c2", "released.txt"),
        Reply::text("released"),
    ])
    .await
    .unwrap();
    let url = server.base_url();
    let run = w
        .run(&["-p", "cut a release"], &env(&url, true), None)
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.requests();
    let skill = declaration(&requests[0].body, "skill").expect("the skill tool is declared");
    let description = skill["function"]["description"].as_str().unwrap();
    assert!(
        description.contains("<name>release</name>\n<description>Cut a release of this project (tags &amp; notes)</description>"),
        "{description}"
    );
    let loaded = answer(&requests[1].body, "s1");
    assert!(
        loaded.contains("Run `touch released.txt`, then read checklist.md."),
        "{loaded}"
    );
    let checklist = w.ws().join(".qwen/skills/release/checklist.md");
    assert!(
        loaded.contains(&format!("- {}", checklist.display())),
        "{loaded}"
    );
    let ran = answer(&requests[2].body, "c2");
    assert!(!ran.starts_with("Error"), "{ran}");
    assert!(
        w.ws().join("released.txt").exists(),
        "the granted command ran"
    );
    assert_eq!(server.violations(), Vec::<String>::new());

    // The next turn (the same session, continued) has no grant: the model did not load
    // the skill again, so the command is refused as any headless command is.
    let server = FakeOpenAi::start(vec![touch("c3", "again.txt"), Reply::text("refused")])
        .await
        .unwrap();
    let url = server.base_url();
    let run = w
        .run(&["--continue", "-p", "once more"], &env(&url, true), None)
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let refused = answer(&server.requests()[1].body, "c3");
    assert!(refused.contains("needs the user's approval"), "{refused}");
    assert!(!w.ws().join("again.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_folder_s_skill_grants_nothing_but_the_user_s_own_skill_does() {
    let w = Workspace::new();
    w.write(".qwen/skills/release/SKILL.md", RELEASE);
    write_home(
        &w,
        ".qwen/skills/mine/SKILL.md",
        "---\nname: mine\ndescription: The user's own routine\nallowed-tools: [\"run_shell_command(touch *)\"]\n---\nTouch mine.txt.\n",
    );
    write_home(&w, ".qwen/skills/mine/notes.md", "user notes\n");
    let server = FakeOpenAi::start(vec![
        call("s1", "skill", json!({"skill": "release"})),
        touch("c2", "released.txt"),
        call("s3", "skill", json!({"skill": "mine"})),
        touch("c4", "mine.txt"),
        call("r5", "read_file", json!({"absolute_path": home(&w).join(".qwen/skills/mine/notes.md").canonicalize().unwrap()})),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let url = server.base_url();
    let run = w.run(&["-p", "release"], &env(&url, false), None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("are not granted: this folder is not trusted"),
        "{}",
        run.stderr
    );
    let requests = server.requests();
    let loaded = answer(&requests[1].body, "s1");
    assert!(
        loaded.contains("comes from a folder that is not trusted"),
        "{loaded}"
    );
    let refused = answer(&requests[2].body, "c2");
    assert!(refused.contains("needs the user's approval"), "{refused}");
    assert!(!w.ws().join("released.txt").exists());
    let ran = answer(&requests[4].body, "c4");
    assert!(!ran.starts_with("Error"), "{ran}");
    assert!(
        w.ws().join("mine.txt").exists(),
        "the user's skill granted its command"
    );
    let notes = answer(&requests[5].body, "r5");
    assert!(
        notes.contains("user notes"),
        "a user skill's files are readable: {notes}"
    );
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_called_as_a_tool_gets_the_hint_to_use_the_skill_tool() {
    let w = Workspace::new();
    w.write(".agents/skills/release/SKILL.md", RELEASE);
    let server = FakeOpenAi::start(vec![call("x1", "release", json!({})), Reply::text("ok")])
        .await
        .unwrap();
    let url = server.base_url();
    let run = w.run(&["-p", "release"], &env(&url, true), None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let hint = answer(&server.requests()[1].body, "x1");
    assert!(
        hint.contains("\"release\" is a skill, not a tool. To use this skill, call the \"skill\" tool with parameter skill: \"release\"."),
        "{hint}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_list_shows_every_folder_its_precedence_and_the_broken_files() {
    let w = Workspace::new();
    w.write(".qwen/skills/release/SKILL.md", RELEASE);
    w.write(
        ".agents/skills/release/SKILL.md",
        "---\nname: release\ndescription: the shared one\n---\nbody\n",
    );
    w.write(
        ".agents/skills/lint/SKILL.md",
        "---\nname: lint\ndescription: Lint the code\n---\nbody\n",
    );
    w.write(
        ".qwen/skills/broken/SKILL.md",
        "---\nname: broken\ndescription: d\nallowed-tools:\n  nested: [1\n---\n",
    );
    write_home(
        &w,
        ".qwen/skills/lint/SKILL.md",
        "---\nname: lint\ndescription: user lint\n---\nbody\n",
    );
    write_home(
        &w,
        ".qwen/skills/notes/SKILL.md",
        "---\nname: notes\ndescription: Take notes\n---\nbody\n",
    );
    let run = w
        .run(
            &["skills", "list", "--json"],
            &[("TOOLBELT_TRUST_WORKSPACE", "1")],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    let skills: Vec<(String, String, String)> = out["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["level"].as_str().unwrap().to_string(),
                s["folder"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("lint", "project", ".agents/skills"),
        ("notes", "user", "~/.qwen/skills"),
        ("release", "project", ".qwen/skills"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(skills, expected);
    let release = &out["skills"][2];
    assert_eq!(
        release["allowed_tools"],
        json!(["run_shell_command(touch *)"])
    );
    assert_eq!(release["grants"], json!(true));
    assert_eq!(
        release["description"],
        "Cut a release of this project (tags & notes)"
    );
    let hidden: Vec<(&str, &str)> = out["shadowed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["name"].as_str().unwrap(), h["folder"].as_str().unwrap()))
        .collect();
    assert_eq!(
        hidden,
        vec![("release", ".agents/skills"), ("lint", "~/.qwen/skills")]
    );
    let warnings = out["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let broken = w.ws().join(".qwen/skills/broken/SKILL.md");
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.starts_with(&format!("{}: line ", broken.display()))
            && warning.contains("key `allowed-tools"),
        "{warning}"
    );
}
