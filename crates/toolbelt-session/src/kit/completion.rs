//! `#reference` completion: the names a prompt can use to bring a tool in (a tool's
//! `reference_name`, such as a declared tool's `toolReferenceName`, and tool sets), ranked
//! like `@path` candidates (`toolbelt_tools::completion::score`). `@path` candidates
//! come from `toolbelt_tools::completion::PathIndex`.

use toolbelt_engine::registry::ToolRegistry;
use toolbelt_tools::completion::score;

/// One `#name` candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceCandidate {
    /// What follows `#`.
    pub name: String,
    /// What it brings in: the tool's description, or the set's.
    pub description: String,
    /// The registered tools it stands for.
    pub tools: Vec<String>,
}

/// Up to `limit` references for the text typed after `#`, best first.
pub fn reference_candidates(
    registry: &ToolRegistry,
    typed: &str,
    limit: usize,
) -> Vec<ReferenceCandidate> {
    let mut all: Vec<ReferenceCandidate> = registry
        .all()
        .filter_map(|r| {
            r.tool.reference_name().map(|name| ReferenceCandidate {
                name: name.to_string(),
                description: r.tool.description().to_string(),
                tools: vec![r.name.clone()],
            })
        })
        .collect();
    for set in registry.tool_sets() {
        if !all.iter().any(|c| c.name == set.name) {
            all.push(ReferenceCandidate {
                name: set.name.clone(),
                description: set.description.clone(),
                tools: set.tools.clone(),
            });
        }
    }
    let mut scored: Vec<(u32, usize, ReferenceCandidate)> = all
        .into_iter()
        .filter_map(|c| score(&c.name, typed).map(|s| (s, c.name.len(), c)))
        .collect();
    scored.sort_by(|a, b| (a.0, a.1, &a.2.name).cmp(&(b.0, b.1, &b.2.name)));
    scored.into_iter().take(limit).map(|(_, _, c)| c).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Arc;

    use serde_json::{Value, json};
    use toolbelt_core::{
        BoxFuture, ConfirmationDetails, ExecContext, Invocation, Kind, Tool, ToolError, ToolResult,
    };
    use toolbelt_engine::{registry::Origin, registry::ToolSet};

    use super::*;

    struct Named {
        name: &'static str,
        reference: Option<&'static str>,
        schema: Value,
    }

    impl Tool for Named {
        fn name(&self) -> &str {
            self.name
        }
        fn display_name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            "does a thing"
        }
        fn kind(&self) -> Kind {
            Kind::Read
        }
        fn parameter_schema(&self) -> &Value {
            &self.schema
        }
        fn reference_name(&self) -> Option<&str> {
            self.reference
        }
        fn build(&self, _args: Value) -> Result<Box<dyn Invocation>, ToolError> {
            Ok(Box::new(Nothing))
        }
    }

    struct Nothing;

    impl Invocation for Nothing {
        fn describe(&self) -> String {
            String::new()
        }
        fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
            Box::pin(async { None })
        }
        fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
            Box::pin(async { ToolResult::text("") })
        }
    }

    #[test]
    fn referenceable_tools_and_sets_are_offered_best_first() {
        let mut registry = ToolRegistry::new();
        for (name, reference) in [
            ("count_tabs", Some("countTabs")),
            ("count_lines", Some("lines")),
            ("read_file", None),
        ] {
            registry.register(
                Arc::new(Named {
                    name,
                    reference,
                    schema: json!({"type": "object"}),
                }),
                Origin::Declared,
            );
        }
        registry.add_tool_set(ToolSet {
            name: "counting".into(),
            description: "every counter".into(),
            tools: vec!["count_tabs".into(), "count_lines".into()],
        });
        let names = |typed: &str| -> Vec<String> {
            reference_candidates(&registry, typed, 10)
                .into_iter()
                .map(|c| c.name)
                .collect()
        };
        assert_eq!(names("count"), ["counting", "countTabs"]);
        assert_eq!(names("li"), ["lines"]);
        assert_eq!(names(""), ["lines", "counting", "countTabs"]);
        assert!(names("read").is_empty(), "no reference name, no candidate");
        let set = &reference_candidates(&registry, "counting", 1)[0];
        assert_eq!(set.tools, ["count_tabs", "count_lines"]);
        assert_eq!(set.description, "every counter");
    }
}
