use proptest::prelude::*;
use serde::Deserialize;

use super::*;

/// The shape of a sub-agent definition, to show the module serves it as well as skills.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Agent {
    name: String,
    description: String,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    run_config: Option<RunConfig>,
}

#[derive(Debug, Deserialize, PartialEq)]
struct RunConfig {
    max_turns: u32,
}

#[test]
fn a_file_without_an_opening_line_has_no_front_matter() {
    let s = split("# Title\n---\nname: x\n---\n").unwrap();
    assert_eq!(s.yaml, None);
    assert_eq!(s.body, "# Title\n---\nname: x\n---\n");
    assert_eq!(s.body_line, 1);
    assert_eq!(split("").unwrap().yaml, None);
}

#[test]
fn the_block_ends_at_the_next_dashes_and_the_body_keeps_its_line() {
    let text = "\u{feff}---\r\nname: a\r\ndescription: b\r\n---\r\nBody line\r\n";
    let s = split(text).unwrap();
    assert_eq!(s.yaml, Some("name: a\r\ndescription: b\r\n"));
    assert_eq!(s.body, "Body line\r\n");
    assert_eq!(s.body_line, 5);
    let s = split("---\nname: a\n...\nrest").unwrap();
    assert_eq!(s.yaml, Some("name: a\n"));
    assert_eq!(s.body, "rest");
    let s = split("---\n---\n").unwrap();
    assert_eq!(s.yaml, Some(""));
    assert_eq!(s.body, "");
}

#[test]
fn an_unclosed_block_is_an_error_on_line_one() {
    let e = split("---\nname: a\n").unwrap_err();
    assert_eq!(e.line, Some(1));
    assert!(e.message.contains("never closed"), "{e}");
}

#[test]
fn an_agent_definition_parses_with_its_body() {
    let text = "---\nname: reviewer\ndescription: Reviews diffs\ntools:\n  - read_file\n  - mcp__github__*\nrunConfig:\n  max_turns: 5\n---\nYou review code.\n";
    let doc: Document<Agent> = parse(text).unwrap();
    assert_eq!(
        doc.front_matter,
        Agent {
            name: "reviewer".into(),
            description: "Reviews diffs".into(),
            tools: vec!["read_file".into(), "mcp__github__*".into()],
            run_config: Some(RunConfig { max_turns: 5 }),
        }
    );
    assert_eq!(doc.body, "You review code.\n");
    assert_eq!(doc.body_line, 10);
}

#[test]
fn a_wrong_type_names_the_line_of_the_file_and_the_key() {
    let text = "---\nname: reviewer\ndescription: d\nrunConfig:\n  max_turns: many\n---\n";
    let e = parse::<Agent>(text).unwrap_err();
    assert_eq!(e.line, Some(5), "{e}");
    assert_eq!(e.key.as_deref(), Some("runConfig.max_turns"), "{e}");
    let text = "---\nname: reviewer\ndescription: d\ntools:\n  - read_file\n  - {a: b}\n---\n";
    let e = parse::<Agent>(text).unwrap_err();
    assert_eq!(e.line, Some(6), "{e}");
    assert_eq!(e.key.as_deref(), Some("tools[1]"), "{e}");
    assert!(e.to_string().starts_with("line 6: key `tools[1]`: "), "{e}");
}

#[test]
fn a_missing_key_is_named() {
    let e = parse::<Agent>("---\nname: reviewer\n---\nbody").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("description"), "{e}");
    assert!(e.line.is_some());
    let e = parse::<Agent>("---\n---\nbody").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("name"), "{e}");
}

#[test]
fn bad_yaml_names_the_line() {
    let e = parse::<Agent>("---\nname: a\ndescription: [unclosed\n---\n").unwrap_err();
    assert!(e.line.is_some_and(|l| (3..=4).contains(&l)), "{e:?}");
    let e = parse::<Agent>("---\nname: a\nname: b\ndescription: d\n---\n").unwrap_err();
    assert_eq!(e.line, Some(3), "a duplicate key is an error: {e:?}");
    let e = parse::<Agent>("No front matter here").unwrap_err();
    assert!(e.message.contains("must start with a `---` line"), "{e}");
}

#[test]
fn spanned_fields_give_their_line_in_the_file() {
    #[derive(Deserialize)]
    struct Named {
        name: Spanned<String>,
    }
    let doc: Document<Named> = parse("---\n\n# comment\nname: x\n---\n").unwrap();
    assert_eq!(doc.line_of(&doc.front_matter.name), 4);
    assert_eq!(doc.front_matter.name.value, "x");
}

#[test]
fn hostile_front_matter_is_refused_within_its_budgets() {
    let huge = format!("---\nname: {}\n---\n", "a".repeat(MAX_FRONT_MATTER_BYTES));
    let e = parse::<Agent>(&huge).unwrap_err();
    assert!(e.message.contains("at most"), "{e}");
    let deep = format!("---\nname: {}x{}\n---\n", "[".repeat(500), "]".repeat(500));
    assert!(parse::<Agent>(&deep).is_err());
    // Billion laughs: aliases that expand exponentially.
    let mut laughs = String::from("---\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..12 {
        let refs = vec![format!("*a{}", i - 1); 8].join(", ");
        laughs.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    laughs.push_str("name: x\ndescription: y\n---\n");
    assert!(parse::<serde_json::Value>(&laughs).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_input_panics(text in "(---\n)?([a-z:\\[\\]{}&*!|>'\"#\\- \n\t]|\\PC){0,200}(\n---\n)?.{0,20}") {
        let _ = split(&text);
        let _ = parse::<Agent>(&text);
        let _ = parse::<serde_json::Value>(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        let framed = format!("---\n{text}\n---\nbody");
        let _ = parse::<Agent>(&framed);
        let _ = parse::<serde_json::Value>(&framed);
    }

    #[test]
    fn errors_point_inside_the_file(text in "---\n([a-z:\\[\\]{}\\- \n]){0,80}\n---\n") {
        if let Err(e) = parse::<Agent>(&text) {
            let lines = text.lines().count().max(1);
            prop_assert!(e.line.is_none_or(|l| l >= 1 && l <= lines + 1), "{e:?} for {text:?}");
        }
    }
}
