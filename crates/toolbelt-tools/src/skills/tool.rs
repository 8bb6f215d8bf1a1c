//! The `skill` tool: `{skill}` returns the skill's instructions and the paths of its
//! other files; its `allowed-tools` are granted for the rest of the turn (see
//! `toolbelt_engine::scheduler::grants`).
//!
//! The description lists every skill by name and description in an
//! `<available_skills>` block, XML-escaped, as Qwen Code's does, so the model knows
//! what exists without loading any of it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::TurnGrant;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Display, ExecContext, Invocation, Kind, PermissionSubject,
    Tool, ToolError, ToolResult,
};

use super::{Skill, Skills};
use crate::listed_name;

/// The tool's name.
pub(super) const SKILL_TOOL: &str = "skill";

/// Most files of a skill listed in its result.
const MAX_LISTED_FILES: usize = 100;

/// Deepest folder level under the skill's folder that is listed.
const MAX_LISTED_DEPTH: usize = 4;

/// Loads a skill's instructions for the model.
pub struct SkillTool {
    skills: Arc<Skills>,
    description: String,
    schema: Value,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(description = "The name of the skill, exactly as in <available_skills>.")]
    skill: String,
}

impl SkillTool {
    /// The tool over the session's skills.
    pub fn new(skills: Arc<Skills>) -> Self {
        let mut description = String::from(
            "Loads a skill: instructions for one kind of task, written by the user or the project, often with files (references, scripts, templates) that go with them. When the user's task matches the description of a skill below, call this tool with that skill's name before you start on the task, then follow the instructions it returns; read the skill's other files with read_file only when the instructions refer to them. Use only the names listed here, and do not load a skill that is already loaded in this conversation.\n\n<available_skills>\n",
        );
        for skill in skills.all() {
            description.push_str(&format!(
                "<skill>\n<name>{}</name>\n<description>{}</description>\n<location>{}</location>\n</skill>\n",
                xml_escape(&skill.name),
                xml_escape(&skill.description),
                skill.folder.level()
            ));
        }
        description.push_str("</available_skills>");
        let schema = crate::params::schema_for::<Params>();
        SkillTool {
            skills,
            description,
            schema,
        }
    }
}

/// The tool's name.
pub(crate) const NAME: &str = SKILL_TOOL;
/// What permission rules may call it besides its name (see `crate::rule_vocabulary`).
pub(crate) const RULE_ALIASES: &[&str] = &["Skill"];

impl Tool for SkillTool {
    fn name(&self) -> &str {
        NAME
    }

    fn display_name(&self) -> &str {
        "Skill"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn kind(&self) -> Kind {
        Kind::Read
    }

    fn parameter_schema(&self) -> &Value {
        &self.schema
    }

    fn hint_for_unknown_name(&self, name: &str) -> Option<String> {
        let skill = self.skills.find_loosely(name)?;
        Some(format!(
            "\"{name}\" is a skill, not a tool. To use this skill, call the \"{SKILL_TOOL}\" tool with parameter skill: \"{}\".",
            skill.name
        ))
    }

    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let wanted = params.skill.trim();
        let Some(skill) = self.skills.find_loosely(wanted) else {
            let names: Vec<&str> = self.skills.all().iter().map(|s| s.name.as_str()).collect();
            return Err(ToolError::invalid_params(format!(
                "there is no skill named {wanted:?}; the skills are: {}",
                names.join(", ")
            )));
        };
        Ok(Box::new(SkillCall {
            skill: skill.clone(),
        }))
    }
}

struct SkillCall {
    skill: Arc<Skill>,
}

impl Invocation for SkillCall {
    fn describe(&self) -> String {
        format!("Load skill \"{}\"", self.skill.name)
    }

    fn locations(&self) -> Vec<PathBuf> {
        vec![self.skill.file.clone()]
    }

    /// `skill(name)` / `Skill(name)` rules name the skill.
    fn permission_subject(&self) -> PermissionSubject {
        PermissionSubject::Literal(self.skill.name.clone())
    }

    fn turn_grant(&self) -> Option<TurnGrant> {
        (self.skill.grants && !self.skill.allowed_tools.is_empty()).then(|| TurnGrant {
            source: format!("skill \"{}\"", self.skill.name),
            rules: self.skill.allowed_tools.clone(),
        })
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let skill = self.skill;
            let dir = skill.dir.clone();
            let file = skill.file.clone();
            let listed = tokio::task::spawn_blocking(move || other_files(&dir, &file))
                .await
                .unwrap_or_default();
            let _ = ctx;
            let text = result_text(&skill, &listed);
            let display = format!(
                "Loaded skill **{}** ({} skill, {})",
                skill.name,
                skill.folder.level(),
                skill.file.display()
            );
            ToolResult::with_display(text, Display::markdown(display))
        })
    }
}

/// What the model reads: where the skill is, its instructions, its other files and what
/// it allows.
fn result_text(skill: &Skill, listed: &Listed) -> String {
    let mut text = format!(
        "Skill \"{}\" ({} skill; its folder is {}). Follow these instructions for the task at hand.\n\n{}",
        skill.name,
        skill.folder.level(),
        listed_name::escaped(&skill.dir),
        skill.body.trim_end()
    );
    if !listed.files.is_empty() {
        text.push_str("\n\nOther files of this skill (read them with read_file when the instructions refer to them):\n");
        for file in &listed.files {
            text.push_str(&format!("- {}\n", listed_name::escaped(file)));
        }
        if listed.more {
            text.push_str(&format!(
                "(only the first {MAX_LISTED_FILES} files are listed; use list_directory for the rest)\n"
            ));
        }
    }
    if !skill.allowed_tools.is_empty() {
        let rules = skill.allowed_tools.join(", ");
        if skill.grants {
            text.push_str(&format!(
                "\n\nFor the rest of this turn these calls run without asking the user: {rules}. Deny rules and plan mode still apply."
            ));
        } else {
            text.push_str(&format!(
                "\n\nThis skill asks that these calls run without asking ({rules}), but it comes from a folder that is not trusted, so they need the usual approval."
            ));
        }
    }
    text
}

#[derive(Debug, Default)]
struct Listed {
    files: Vec<PathBuf>,
    more: bool,
}

/// The regular files under `dir` besides `skill_file`, sorted, without following
/// symbolic links or entering hidden folders.
fn other_files(dir: &Path, skill_file: &Path) -> Listed {
    let mut listed = Listed::default();
    let mut pending = vec![(dir.to_path_buf(), 0usize)];
    let mut found = Vec::new();
    while let Some((current, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() && depth + 1 < MAX_LISTED_DEPTH {
                pending.push((path, depth + 1));
            } else if kind.is_file() && path != skill_file {
                found.push(path);
            }
        }
        if found.len() > MAX_LISTED_FILES * 4 {
            listed.more = true;
            break;
        }
    }
    found.sort();
    if found.len() > MAX_LISTED_FILES {
        found.truncate(MAX_LISTED_FILES);
        listed.more = true;
    }
    listed.files = found;
    listed
}

/// Text for an XML element's content.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}
