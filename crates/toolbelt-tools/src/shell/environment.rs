//! What of toolbelt's environment a command of the model's gets: a policy, not a copy.
//!
//! toolbelt runs with the person's environment, which holds the model's API key
//! (`OPENAI_API_KEY`, `DASHSCOPE_API_KEY`), cloud credentials (`AWS_SECRET_ACCESS_KEY`)
//! and tokens (`GITHUB_TOKEN`). A command the model runs, asked or not, could print
//! them into the conversation (`printenv`), so every variable whose *name* looks like a
//! secret ([`SECRET_NAMES`], case-insensitive) is removed from the command's
//! environment, as Codex's `shell_environment_policy` does by default. The person names
//! the ones a command needs in `tools.shell.environment.passthrough` (exact names or
//! `*` globs); only the person's settings or a trusted folder may set it
//! (`settings/untrusted.rs`), so a cloned repository cannot ask for the keys.
//!
//! This covers shell commands, background jobs and monitors (all started by
//! [`super::process::spawn`]). The person's own configured programs (hooks, discovered
//! and declared tools, MCP and language servers) keep the environment: they are
//! started from the person's or a trusted folder's settings, and often need exactly
//! these keys. toolbelt's own use of the key (the model client) reads its own
//! environment, which this never changes.
//!
//! A name is judged, not a value: a secret under an innocent name (`DB=postgres://u:pw@`)
//! still reaches the command.

use std::ffi::OsStr;

use toolbelt_engine::rules::wildcard;

/// Names that look like secrets, as globs (`*` any run of characters), matched against
/// the upper-cased name. `*_AUTH*` covers `SSH_AUTH_SOCK` too: the agent socket signs
/// with the person's keys.
pub(crate) const SECRET_NAMES: &[&str] = &[
    "*KEY*",
    "*SECRET*",
    "*TOKEN*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*CREDENTIAL*",
    "*_AUTH*",
    "*COOKIE*",
    "*_PAT",
    "*_DSN",
    "*DATABASE_URL*",
];

/// The policy of one session: the built-in list, and what the settings pass through.
#[derive(Debug, Clone, Default)]
pub(crate) struct EnvironmentPolicy {
    /// Upper-cased names or globs of `tools.shell.environment.passthrough`.
    passthrough: Vec<String>,
}

impl EnvironmentPolicy {
    /// The policy with `passthrough` (the setting's names and globs).
    pub(crate) fn new(passthrough: &[String]) -> Self {
        EnvironmentPolicy {
            passthrough: passthrough
                .iter()
                .map(|p| p.trim().to_ascii_uppercase())
                .filter(|p| !p.is_empty())
                .collect(),
        }
    }

    /// Whether a command is not given variable `name`.
    pub(crate) fn withholds(&self, name: &OsStr) -> bool {
        let name = name.to_string_lossy().to_ascii_uppercase();
        SECRET_NAMES.iter().any(|p| wildcard(p, &name))
            && !self.passthrough.iter().any(|p| wildcard(p, &name))
    }

    /// Removes from `command` every variable of toolbelt's environment it withholds.
    pub(crate) fn apply(&self, command: &mut std::process::Command) {
        for (name, _) in std::env::vars_os() {
            if self.withholds(&name) {
                command.env_remove(&name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_look_like_secrets_are_withheld_unless_passed_through() {
        let none = EnvironmentPolicy::default();
        let some = EnvironmentPolicy::new(&["foo_token".into(), "AWS_*".into(), " ".into()]);
        // (name, withheld by default, withheld with the passthrough list)
        let table: &[(&str, bool, bool)] = &[
            ("OPENAI_API_KEY", true, true),
            ("ANTHROPIC_API_KEY", true, true),
            ("DASHSCOPE_API_KEY", true, true),
            ("openai_api_key", true, true),
            ("GH_TOKEN", true, true),
            ("GITHUB_TOKEN", true, true),
            ("FOO_TOKEN", true, false),
            ("foo_token", true, false),
            ("AWS_ACCESS_KEY_ID", true, false),
            ("AWS_SECRET_ACCESS_KEY", true, false),
            ("AWS_SESSION_TOKEN", true, false),
            ("AWS_REGION", false, false),
            ("GOOGLE_APPLICATION_CREDENTIALS", true, true),
            ("AZURE_CLIENT_SECRET", true, true),
            ("DB_PASSWORD", true, true),
            ("MYSQL_PWD_PASSWD", true, true),
            ("GPG_PASSPHRASE", true, true),
            ("NPM_CONFIG__AUTH", true, true),
            ("SSH_AUTH_SOCK", true, true),
            ("AZURE_DEVOPS_EXT_PAT", true, true),
            ("SENTRY_DSN", true, true),
            ("DATABASE_URL", true, true),
            ("PATH", false, false),
            ("HOME", false, false),
            ("LANG", false, false),
            ("TERM", false, false),
            ("OPENAI_BASE_URL", false, false),
            ("TOOLBELT_OWNER", false, false),
            ("PATHOLOGY", false, false),
        ];
        for &(name, default, passed) in table {
            assert_eq!(
                none.withholds(OsStr::new(name)),
                default,
                "{name} by default"
            );
            assert_eq!(some.withholds(OsStr::new(name)), passed, "{name} passed");
        }
    }
}
