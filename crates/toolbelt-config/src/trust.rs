//! Folder trust, in Qwen Code's format: `~/.qwen/trustedFolders.json` maps absolute paths
//! to `"TRUST_FOLDER"` (that folder and everything under it), `"TRUST_PARENT"` (the folder's
//! parent and everything under it) or `"DO_NOT_TRUST"`.
//!
//! Only the person's own file counts: it is found through `HOME`, never in a project (a
//! repository that ships `.qwen/trustedFolders.json` trusts nothing).
//!
//! Paths are compared after resolving symbolic links on both sides, so a link to a trusted
//! folder is trusted and a link inside a trusted folder that points elsewhere is judged by
//! where it points. When several rules cover a folder the most specific one (the deepest
//! folder) wins, and at equal depth `DO_NOT_TRUST` wins: a person can trust `~/src` and
//! still keep `~/src/downloads` untrusted. (Qwen Code lets any trusting rule win; its
//! `DO_NOT_TRUST` covers only the exact folder.)

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use crate::settings::parse_settings_text;

/// The file name, in `~/.qwen/`.
pub const TRUSTED_FOLDERS_FILE: &str = "trustedFolders.json";

/// What a rule of the trusted-folders file says about its folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustLevel {
    /// `TRUST_FOLDER`: the folder and everything under it are trusted.
    TrustFolder,
    /// `TRUST_PARENT`: the folder's parent and everything under it are trusted.
    TrustParent,
    /// `DO_NOT_TRUST`: the folder and everything under it are not trusted (unless a deeper
    /// rule trusts a part).
    DoNotTrust,
}

impl TrustLevel {
    /// The spelling in the file (`TRUST_FOLDER`, `TRUST_PARENT`, `DO_NOT_TRUST`).
    pub fn as_str(self) -> &'static str {
        match self {
            TrustLevel::TrustFolder => "TRUST_FOLDER",
            TrustLevel::TrustParent => "TRUST_PARENT",
            TrustLevel::DoNotTrust => "DO_NOT_TRUST",
        }
    }

    fn parse(s: &str) -> Option<TrustLevel> {
        match s {
            "TRUST_FOLDER" => Some(TrustLevel::TrustFolder),
            "TRUST_PARENT" => Some(TrustLevel::TrustParent),
            "DO_NOT_TRUST" => Some(TrustLevel::DoNotTrust),
            _ => None,
        }
    }
}

/// Why the trusted-folders file could not be read or written; every variant names the file
/// where there is one.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The file exists but could not be read, or could not be written.
    #[error("{path}: {message}")]
    Io {
        /// The trusted-folders file.
        path: PathBuf,
        /// The operating system's error.
        message: String,
    },
    /// The file is not JSON, not an object, or holds a value other than the three levels.
    #[error("{path}: {message}")]
    Invalid {
        /// The trusted-folders file.
        path: PathBuf,
        /// What is wrong, naming the accepted values.
        message: String,
    },
    /// No home directory, so there is no trusted-folders file to use.
    #[error("no home directory (HOME is not set): cannot find ~/.qwen/{TRUSTED_FOLDERS_FILE}")]
    NoHome,
}

/// The rule that decided, and what it decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustDecision {
    /// Whether the folder is trusted (`false` only for `DO_NOT_TRUST`).
    pub trusted: bool,
    /// The path as written in the file.
    pub rule_path: String,
    /// The rule's level.
    pub level: TrustLevel,
}

/// The contents of one trusted-folders file.
#[derive(Debug, Clone)]
pub struct TrustedFolders {
    path: PathBuf,
    rules: BTreeMap<String, TrustLevel>,
}

impl TrustedFolders {
    /// `$HOME/.qwen/trustedFolders.json`.
    pub fn user_file() -> Option<PathBuf> {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".qwen").join(TRUSTED_FOLDERS_FILE))
    }

    /// Reads the file; a missing file has no rules. A value other than the three levels
    /// is an error naming the path and the accepted values, not a rule silently dropped.
    pub fn load(path: &Path) -> Result<TrustedFolders, TrustError> {
        let mut folders = TrustedFolders {
            path: path.to_path_buf(),
            rules: BTreeMap::new(),
        };
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(folders),
            Err(e) => {
                return Err(TrustError::Io {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                });
            }
        };
        let invalid = |message: String| TrustError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let value = parse_settings_text(&text).map_err(|e| invalid(e.to_string()))?;
        let Value::Object(map) = value else {
            return Err(invalid(
                "must be a JSON object of \"<absolute path>\": \"TRUST_FOLDER\" | \"TRUST_PARENT\" | \"DO_NOT_TRUST\"".into(),
            ));
        };
        for (key, level) in map {
            let parsed = level.as_str().and_then(TrustLevel::parse).ok_or_else(|| {
                invalid(format!(
                    "{key}: {} is not accepted; accepted values: \"TRUST_FOLDER\", \"TRUST_PARENT\", \"DO_NOT_TRUST\"",
                    crate::settings::show_value(&level)
                ))
            })?;
            folders.rules.insert(key, parsed);
        }
        Ok(folders)
    }

    /// The file these rules were read from and [`TrustedFolders::save`] writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rules, by path.
    pub fn rules(&self) -> impl Iterator<Item = (&str, TrustLevel)> {
        self.rules.iter().map(|(p, l)| (p.as_str(), *l))
    }

    /// Whether `location` is trusted, by the most specific rule that covers it; `None`
    /// when no rule does.
    pub fn decide(&self, location: &Path) -> Option<TrustDecision> {
        let location = canonical(location)?;
        let mut best: Option<(usize, TrustDecision)> = None;
        for (rule_path, level) in &self.rules {
            let Some(folder) = canonical(Path::new(rule_path)) else {
                continue;
            };
            let covered = match level {
                TrustLevel::TrustParent => folder.parent().map(Path::to_path_buf),
                _ => Some(folder),
            };
            let Some(covered) = covered else { continue };
            if !location.starts_with(&covered) {
                continue;
            }
            let depth = covered.components().count();
            let decision = TrustDecision {
                trusted: *level != TrustLevel::DoNotTrust,
                rule_path: rule_path.clone(),
                level: *level,
            };
            let better = match &best {
                None => true,
                Some((d, b)) => depth > *d || (depth == *d && b.trusted && !decision.trusted),
            };
            if better {
                best = Some((depth, decision));
            }
        }
        best.map(|(_, d)| d)
    }

    /// Sets the rule of `folder` (made absolute and resolved, so a later lookup through
    /// any link finds it).
    pub fn set(&mut self, folder: &Path, level: TrustLevel) {
        let key = canonical(folder).unwrap_or_else(|| folder.to_path_buf());
        self.rules.insert(key.to_string_lossy().into_owned(), level);
    }

    /// Removes the rule of `folder`, written either way (as given or resolved). Returns
    /// whether there was one.
    pub fn remove(&mut self, folder: &Path) -> bool {
        let as_given = self.rules.remove(&*folder.to_string_lossy()).is_some();
        let resolved = canonical(folder)
            .map(|c| self.rules.remove(&*c.to_string_lossy()).is_some())
            .unwrap_or(false);
        as_given || resolved
    }

    /// Writes the file (its directory created, owner-only permissions), through a
    /// temporary file and a rename so a crash never leaves half a file.
    pub fn save(&self) -> Result<(), TrustError> {
        let io = |e: std::io::Error| TrustError::Io {
            path: self.path.clone(),
            message: e.to_string(),
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let map: Map<String, Value> = self
            .rules
            .iter()
            .map(|(p, l)| (p.clone(), Value::String(l.as_str().to_string())))
            .collect();
        let mut text = serde_json::to_string_pretty(&Value::Object(map))
            .map_err(|e| io(std::io::Error::other(e)))?;
        text.push('\n');
        // tempfile creates the file with mode 0600.
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        tmp.write_all(text.as_bytes()).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(&self.path).map_err(|e| io(e.error))?;
        Ok(())
    }
}

/// An absolute path with `..` and symbolic links resolved. A path that does not exist
/// is only made lexically clean: a rule for a folder not yet created still reads right.
fn canonical(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Some(p);
    }
    if !path.is_absolute() {
        return None;
    }
    let mut clean = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            other => clean.push(other),
        }
    }
    Some(clean)
}

#[cfg(test)]
mod tests;
