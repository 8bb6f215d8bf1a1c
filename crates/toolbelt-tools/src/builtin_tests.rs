//! Adding a built-in tool is its module and one line in a list of declarations: here a
//! tool of this test's own (`demo`, a module with its `BUILTIN`) joins the real list by
//! one line, and both the tools a session makes and the words its rules know have it.

use std::sync::Arc;

use serde_json::{Value, json};
use toolbelt_core::PathOperation;
use toolbelt_core::{Kind, Tool, ToolError};
use toolbelt_engine::rules::RuleVocabulary;

use super::{BUILTINS, Builtin, add_rule_words, make_from};
use crate::test_support::fixture;

/// A tool module as a new built-in would be written: the tool and its declaration.
mod demo {
    use super::*;

    pub(super) struct Demo(Value);

    impl Tool for Demo {
        fn name(&self) -> &str {
            "demo_tool"
        }
        fn display_name(&self) -> &str {
            "Demo"
        }
        fn description(&self) -> &str {
            "A tool this test adds."
        }
        fn kind(&self) -> Kind {
            Kind::Read
        }
        fn parameter_schema(&self) -> &Value {
            &self.0
        }
        fn build(&self, _args: Value) -> Result<Box<dyn toolbelt_core::Invocation>, ToolError> {
            Err(ToolError::invalid_params("the demo runs nothing"))
        }
    }

    pub(super) const BUILTIN: Builtin = Builtin {
        name: "demo_tool",
        rule_aliases: &["Demo"],
        path_operation: Some(PathOperation::Read),
        make: super::super::Make::Env(|_env| Some(Arc::new(Demo(json!({"type": "object"}))))),
    };
}

#[test]
fn a_tool_declared_in_its_module_and_listed_once_is_made_and_ruled() {
    let mut list: Vec<Builtin> = BUILTINS.iter().map(copy).collect();
    list.push(demo::BUILTIN); // the one line
    let fx = fixture();
    let shell = Arc::new(crate::shell::RunShellCommand::new(fx.env.clone()));
    let tools = make_from(&list, &fx.env, shell);
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(names.last(), Some(&"demo_tool"), "{names:?}");
    assert!(names.contains(&"run_shell_command"), "{names:?}");
    let mut vocabulary = RuleVocabulary::default();
    add_rule_words(&list, &mut vocabulary);
    assert_eq!(
        vocabulary.tools_of("Demo").map(<[String]>::to_vec),
        Some(vec!["demo_tool".to_string()])
    );
}

#[test]
fn every_declared_built_in_is_made_under_its_declared_name() {
    let fx = fixture();
    let shell = Arc::new(crate::shell::RunShellCommand::new(fx.env.clone()));
    let tools = make_from(BUILTINS, &fx.env, shell);
    // web_search needs a provider, which the fixture's settings do not name.
    let declared: Vec<&str> = BUILTINS
        .iter()
        .map(|b| b.name)
        .filter(|n| *n != "web_search")
        .collect();
    let made: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(made, declared);
    for tool in &tools {
        let builtin = BUILTINS.iter().find(|b| b.name == tool.name()).unwrap();
        assert_eq!(tool.rule_aliases(), builtin.rule_aliases, "{}", tool.name());
        assert_eq!(
            tool.path_operation(),
            builtin.path_operation,
            "{}",
            tool.name()
        );
    }
}

/// A declaration's copy (the list is `'static`; the test adds to a copy of it).
fn copy(b: &Builtin) -> Builtin {
    Builtin {
        name: b.name,
        rule_aliases: b.rule_aliases,
        path_operation: b.path_operation,
        make: match &b.make {
            super::Make::Env(f) => super::Make::Env(*f),
            super::Make::Shell => super::Make::Shell,
        },
    }
}
