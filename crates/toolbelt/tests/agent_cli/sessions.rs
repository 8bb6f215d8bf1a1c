//! Whole sessions with every built-in tool: the seven-call session (offline and against
//! a loopback server) and the examples tour.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::parse_script;

use crate::support::Workspace;

pub const SEVEN_TOOLS: [&str; 7] = [
    "list_directory",
    "read_file",
    "write_file",
    "edit",
    "glob",
    "grep_search",
    "run_shell_command",
];

/// The files of the seven-call session's workspace (bench/make_workspace.sh).
pub fn seven_workspace(w: &Workspace) {
    w.write(
        "src/app.py",
        "\"\"\"The seven-call session's little app.\"\"\"\n\n\ndef compute(values):\n    return sum(values)\n\n\ndef main():\n    print(compute([1, 2, 3]))\n",
    );
    w.write("src/helpers.py", "def double(x):\n    return 2 * x\n");
    w.write(
        "README.md",
        "# Bench app\n\nUsed by the seven-call session.\n",
    );
}

pub fn seven_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/seven.jsonl")
}

/// What Qwen Code 0.24.4 leaves behind on the same script, byte for byte (run with
/// bench/agent_session.py; see BENCHMARKS.md).
pub fn check_seven_files(w: &Workspace) {
    let app = std::fs::read_to_string(w.ws().join("src/app.py")).unwrap();
    assert_eq!(
        app,
        "\"\"\"The seven-call session's little app.\"\"\"\n\n\ndef total(values):\n    \"\"\"Sum of the values.\"\"\"\n    return sum(values)\n\n\ndef main():\n    print(compute([1, 2, 3]))\n"
    );
    assert_eq!(
        std::fs::read_to_string(w.ws().join("notes/todo.md")).unwrap(),
        "# TODO\n\n- rename compute() to total()\n- add tests\n"
    );
    let counts = std::fs::read_to_string(w.ws().join("counts.txt")).unwrap();
    assert_eq!(counts, " 10 src/app.py\n  4 notes/todo.md\n 14 total\n");
    let mut names: Vec<String> = Vec::new();
    for entry in walk(&w.ws()) {
        names.push(entry);
    }
    names.sort();
    assert_eq!(
        names,
        [
            "README.md",
            "counts.txt",
            "notes/todo.md",
            "src/app.py",
            "src/helpers.py"
        ]
    );
}

/// Files under `dir`, relative.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seven_call_session_replayed_offline() {
    let w = Workspace::new();
    seven_workspace(&w);
    let script = seven_script();
    let run = w
        .run(
            &["--model-replay", script.to_str().unwrap(), "--yolo", "go"],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains('✗'), "{}", run.stderr);
    check_seven_files(&w);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seven_call_session_against_a_loopback_server() {
    let w = Workspace::new();
    seven_workspace(&w);
    let text = std::fs::read_to_string(seven_script()).unwrap();
    let script = parse_script(&text, Some(&w.ws())).unwrap();
    let replies = script
        .iter()
        .enumerate()
        .map(|(i, t)| Reply::turn(t.to_model_turn(i + 1)))
        .collect();
    let server = FakeOpenAi::start(replies).await.unwrap();
    let url = server.base_url();
    let env = [("OPENAI_BASE_URL", url.as_str()), ("OPENAI_MODEL", "m")];
    let run = w.run(&["--yolo", "go"], &env, None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
    assert_eq!(server.requests().len(), 8);
    check_seven_files(&w);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_examples_tour_runs_every_tool_on_the_demo_workspace() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tour = repo.join("examples/tour.jsonl");
    let script = parse_script(&std::fs::read_to_string(&tour).unwrap(), None).unwrap();
    let used: BTreeSet<String> = script
        .iter()
        .flat_map(|t| t.tool_calls.iter().map(|c| c.name.clone()))
        .collect();
    assert!(used.is_superset(&SEVEN_TOOLS.iter().map(|s| s.to_string()).collect()));
    let w = Workspace::new();
    for rel in ["README.md", "src/greet.py", "src/util.py", "explore.ipynb"] {
        w.write(
            rel,
            &std::fs::read_to_string(repo.join("examples/demo").join(rel)).unwrap(),
        );
    }
    let run = w
        .run(
            &[
                "--model-replay",
                tour.to_str().unwrap(),
                "--yolo",
                "-o",
                "json",
                "tour",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = crate::support::json_result(&run.stdout);
    let statuses: Vec<&str> = v["toolbelt"]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    // Everything succeeds except the misspelt tool name, on purpose.
    assert_eq!(
        statuses.iter().filter(|s| **s != "success").count(),
        1,
        "{v}"
    );
    let greet = std::fs::read_to_string(w.ws().join("src/greet.py")).unwrap();
    assert!(greet.contains("return f\"Hello, {name}!\""), "{greet}");
    assert!(w.ws().join("NOTES.md").exists());
    let names: Vec<&str> = v["toolbelt"]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for tool in [
        "run_shell_command",
        "todo_write",
        "read_many_files",
        "notebook_edit",
        "save_memory",
    ] {
        assert!(names.contains(&tool), "{tool} in {names:?}");
    }
    // Every call got the result the script was written for: the answer stands as is.
    assert!(!v["result"].as_str().unwrap().contains("[replay:"), "{v}");
    let notebook = std::fs::read_to_string(w.ws().join("explore.ipynb")).unwrap();
    assert!(
        notebook.contains("The greeting now comes from an f-string."),
        "{notebook}"
    );
    let memory = std::fs::read_to_string(w.ws().join("QWEN.md")).unwrap();
    assert!(memory.contains("- The demo prefers f-strings"), "{memory}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tour_in_a_folder_it_was_not_written_for_says_its_answer_may_not_fit() {
    // As a reader running the --help example from the wrong folder: the reads fail, and
    // the scripted "Tour finished" must not pass for the truth.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tour = repo.join("examples/tour.jsonl");
    let w = Workspace::new();
    let run = w
        .run(
            &[
                "--model-replay",
                tour.to_str().unwrap(),
                "--yolo",
                "-o",
                "json",
                "tour",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = crate::support::json_result(&run.stdout);
    let answer = v["result"].as_str().unwrap();
    assert!(answer.starts_with("Tour finished"), "{answer}");
    assert!(
        answer.contains("[replay: this scripted answer was written for other results"),
        "{answer}"
    );
    assert!(answer.contains("tour_2 read_file"), "{answer}");
    assert!(
        !answer.contains("tour_7"),
        "the misspelt name is meant to fail: {answer}"
    );
}
