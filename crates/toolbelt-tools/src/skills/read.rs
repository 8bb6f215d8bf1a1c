//! Reading one skill folder: resolving `SKILL.md` inside its boundary, reading it
//! bounded, and checking its front matter (name, description, `allowed-tools`); every
//! problem is a warning naming the file, line and key.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toolbelt_config::{
    front_matter, front_matter::Document, front_matter::FrontMatterError, front_matter::Spanned,
};
use toolbelt_engine::rules::Rule;

use super::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, MAX_SKILL_FILE_BYTES, Skill, SkillFolder};
use crate::listed_name::escaped;

/// The front matter of `SKILL.md`. Unknown keys (`license`, `metadata`,
/// `compatibility`, ...) are allowed and ignored.
#[derive(Debug, Deserialize)]
struct FrontMatter {
    name: Option<Spanned<String>>,
    description: Option<Spanned<String>>,
    #[serde(
        rename = "allowed-tools",
        alias = "allowedTools",
        alias = "allowed_tools"
    )]
    allowed_tools: Option<Spanned<AllowedTools>>,
}

/// `allowed-tools` as a list, or as one string (`Bash(git:*) Read`, `Read, Grep`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum AllowedTools {
    List(Vec<String>),
    Line(String),
}

/// Reads one skill folder: `Ok(None)` when it has no `SKILL.md`; `Err` is the warning
/// of a skill that does not load.
pub(super) fn read_skill(
    folder: SkillFolder,
    dir: &Path,
    boundary: Option<&Path>,
    project_trusted: bool,
) -> Result<Option<Skill>, String> {
    let given = dir.join("SKILL.md");
    if std::fs::symlink_metadata(&given).is_err() {
        return Ok(None);
    }
    let shown = escaped(&given);
    let (dir_real, file) = resolve_skill_file(dir, &given, boundary, &shown)?;
    let text = read_bounded(&file).map_err(|e| format!("{shown}: {e}"))?;
    let doc = front_matter::parse::<FrontMatter>(&text).map_err(|e| format!("{shown}: {e}"))?;
    let mut warnings = Vec::new();
    let name_value = skill_name(&doc, dir, &shown, &mut warnings)?;
    let one_line = skill_description(&doc, &shown, &mut warnings)?;
    let allowed_tools = skill_allowed_tools(&doc, &shown, &mut warnings);
    let grants = !folder.is_project() || project_trusted;
    if !grants && !allowed_tools.is_empty() {
        warnings.push(format!(
            "{shown}: its allowed-tools ({}) are not granted: this folder is not trusted, and a repository's skill cannot approve calls. Trust the folder with `toolbelt trust` to let it.",
            allowed_tools.join(", ")
        ));
    }
    let body = doc.body.trim_start_matches(['\r', '\n']).to_string();
    Ok(Some(Skill {
        name: name_value,
        description: one_line,
        folder,
        file,
        dir: dir_real,
        allowed_tools,
        grants,
        body,
        warnings,
    }))
}

/// The skill folder and its `SKILL.md` (`given`), resolved; in the project neither may
/// lead outside it.
fn resolve_skill_file(
    dir: &Path,
    given: &Path,
    boundary: Option<&Path>,
    shown: &str,
) -> Result<(PathBuf, PathBuf), String> {
    let (dir_real, file) = match (dir.canonicalize(), given.canonicalize()) {
        (Ok(d), Ok(f)) => (d, f),
        (_, Err(e)) | (Err(e), _) => return Err(format!("{shown}: cannot resolve the path: {e}")),
    };
    if let Some(project) = boundary
        && !(dir_real.starts_with(project) && file.starts_with(project))
    {
        return Err(format!(
            "{shown}: leads outside the project (to {}) through a symbolic link; the skill is not loaded",
            escaped(&file)
        ));
    }
    Ok((dir_real, file))
}

/// The skill's `name`, checked; a name that differs from the folder's is a warning.
fn skill_name(
    doc: &Document<'_, FrontMatter>,
    dir: &Path,
    shown: &str,
    warnings: &mut Vec<String>,
) -> Result<String, String> {
    let fm = &doc.front_matter;
    let Some(name) = &fm.name else {
        return Err(format!(
            "{shown}: key `name`: missing; the front matter needs `name` and `description`"
        ));
    };
    let name_line = doc.line_of(name);
    let name_value = name.value.trim();
    if let Err(why) = check_name(name_value) {
        return Err(format!(
            "{shown}: {}",
            FrontMatterError::at(name_line, "name", why)
        ));
    }
    let dir_name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    if dir_name.as_deref() != Some(name_value) {
        warnings.push(format!(
            "{shown}: {}",
            FrontMatterError::at(
                name_line,
                "name",
                format!(
                    "\"{name_value}\" differs from the folder name \"{}\"; the skill loads as \"{name_value}\"",
                    dir_name.unwrap_or_default()
                )
            )
        ));
    }
    Ok(name_value.to_string())
}

/// The skill's `description` on one line, cut to [`MAX_DESCRIPTION_CHARS`].
fn skill_description(
    doc: &Document<'_, FrontMatter>,
    shown: &str,
    warnings: &mut Vec<String>,
) -> Result<String, String> {
    let fm = &doc.front_matter;
    let Some(description) = &fm.description else {
        return Err(format!(
            "{shown}: key `description`: missing; the front matter needs `name` and `description`"
        ));
    };
    let description_line = doc.line_of(description);
    let mut one_line = one_line(&description.value);
    if one_line.is_empty() {
        return Err(format!(
            "{shown}: {}",
            FrontMatterError::at(
                description_line,
                "description",
                "is empty; say when the skill should be used"
            )
        ));
    }
    if one_line.chars().count() > MAX_DESCRIPTION_CHARS {
        one_line = one_line.chars().take(MAX_DESCRIPTION_CHARS).collect();
        warnings.push(format!(
            "{shown}: {}",
            FrontMatterError::at(
                description_line,
                "description",
                format!("longer than {MAX_DESCRIPTION_CHARS} characters; cut")
            )
        ));
    }
    Ok(one_line)
}

/// The skill's `allowed-tools` that are permission rules; the others are warnings.
fn skill_allowed_tools(
    doc: &Document<'_, FrontMatter>,
    shown: &str,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    let fm = &doc.front_matter;
    let mut allowed_tools = Vec::new();
    if let Some(allowed) = &fm.allowed_tools {
        let line = doc.line_of(allowed);
        let entries = match &allowed.value {
            AllowedTools::List(list) => list.iter().map(|e| e.trim().to_string()).collect(),
            AllowedTools::Line(text) => split_rules(text),
        };
        for entry in entries.into_iter().filter(|e| !e.is_empty()) {
            if entry.chars().any(char::is_control) || !Rule::is_well_formed(&entry) {
                warnings.push(format!(
                    "{shown}: {}",
                    FrontMatterError::at(
                        line,
                        "allowed-tools",
                        format!(
                            "{entry:?} is no permission rule (write a tool name, or a rule such as `run_shell_command(git *)`); it is ignored"
                        )
                    )
                ));
            } else {
                allowed_tools.push(entry);
            }
        }
    }
    allowed_tools
}

/// The text of a regular file of at most [`MAX_SKILL_FILE_BYTES`].
fn read_bounded(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file; the skill is not loaded".into());
    }
    if meta.len() > MAX_SKILL_FILE_BYTES {
        return Err(format!(
            "{} bytes; a SKILL.md of at most {MAX_SKILL_FILE_BYTES} bytes is read (put long material in other files of the skill)",
            meta.len()
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_SKILL_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_SKILL_FILE_BYTES {
        return Err(format!(
            "longer than {MAX_SKILL_FILE_BYTES} bytes; the skill is not loaded"
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (at byte {}); the skill is not loaded",
            e.utf8_error().valid_up_to()
        )
    })
}

/// Why `name` cannot name a skill.
fn check_name(name: &str) -> Result<(), String> {
    let count = name.chars().count();
    if count == 0 {
        return Err("is empty".into());
    }
    if count > MAX_NAME_CHARS {
        return Err(format!(
            "is {count} characters; a skill name has at most {MAX_NAME_CHARS}"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_')))
    {
        return Err(format!(
            "{name:?} holds {c:?}; a skill name is letters, digits, `-` and `_`"
        ));
    }
    Ok(())
}

/// The description as one line: control characters, invisible direction and width
/// marks, and runs of whitespace become one space.
fn one_line(text: &str) -> String {
    let invisible = |c: char| matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}' | '\u{feff}');
    text.split(|c: char| c.is_whitespace() || c.is_control() || invisible(c))
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `Bash(git:*) Read, Grep` → `["Bash(git:*)", "Read", "Grep"]`: entries are separated by
/// commas or whitespace outside parentheses (a rule's specifier may hold both).
fn split_rules(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            c if depth == 0 && (c == ',' || c.is_whitespace()) => {
                if !current.trim().is_empty() {
                    out.push(current.trim().to_string());
                }
                current.clear();
            }
            c => current.push(c),
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}
