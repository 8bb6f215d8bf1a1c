//! Masking credentials in text a person or a log may see: status lines, error messages,
//! `toolbelt mcp list`, and every tracing line.
//!
//! Two kinds of secret are masked:
//!
//! - **known values**: the values of environment variables that the settings expanded
//!   (`"Authorization": "Bearer $TOKEN"`), configured HTTP header values, secret-looking
//!   query parameters and server `env` entries. Whoever reads them registers them with
//!   [`Redactor::add_secret`] (or the helpers beside it);
//! - **URL user-info** of any URL, known or not (`http://user:TOKEN@host` becomes
//!   `http://***@host`), since error texts from HTTP libraries repeat the URL they were
//!   given.
//!
//! The set of secrets is process-wide ([`global`]) because the tracing subscriber is:
//! it is installed before the settings are read, and it must mask what they name from
//! then on. A secret, once known, stays masked for the life of the process. Values
//! shorter than [`MIN_SECRET_LEN`] are not registered: masking `8080` or `true` would
//! wreck every line that holds them, and they are no credentials.
//!
//! What this cannot do: mask a secret it was never told about (a server printing a key
//! from its own configuration). That is why a server's stderr is never shown at all, only
//! the path of its log.

use std::borrow::Cow;
use std::io::Write;
use std::sync::{OnceLock, PoisonError, RwLock};

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// Shorter values are never masked (see the module documentation).
pub const MIN_SECRET_LEN: usize = 6;

/// Environment variables whose values are paths or names, never credentials; masking
/// them (`$HOME` in a `cwd`) would hide every path in the output.
const NOT_SECRET_VARIABLES: &[&str] = &[
    "HOME", "USER", "LOGNAME", "PWD", "OLDPWD", "PATH", "SHELL", "TMPDIR", "TERM", "LANG",
];

/// Names of settings, query parameters, flags and variables that hold credentials.
const SECRET_NAME_PARTS: &[&str] = &[
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "auth",
    "credential",
    "cookie",
    "session",
    "signature",
    "sig",
];

/// The secrets to mask. Cheap to share; see [`global`].
#[derive(Debug, Default)]
pub struct Redactor {
    /// Longest first, so a secret that contains another is masked whole.
    secrets: RwLock<Vec<String>>,
}

impl Redactor {
    /// An empty redactor: it masks only URL user-info until secrets are added (see
    /// [`global`] for the one the process shares).
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// Masks `value` from now on (ignored when shorter than [`MIN_SECRET_LEN`]).
    pub fn add_secret(&self, value: &str) {
        let value = value.trim();
        if value.chars().count() < MIN_SECRET_LEN {
            return;
        }
        let mut secrets = self.secrets.write().unwrap_or_else(PoisonError::into_inner);
        if secrets.iter().any(|s| s == value) {
            return;
        }
        secrets.push(value.to_string());
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// The value of an environment variable that settings expanded, unless the variable
    /// is one of the well-known non-secret ones (`HOME`, `PATH`, ...).
    pub fn add_expanded_variable(&self, name: &str, value: &str) {
        if !NOT_SECRET_VARIABLES.contains(&name) {
            self.add_secret(value);
        }
    }

    /// A configured HTTP header value: the whole value, and the credential after an
    /// authentication scheme (`Bearer X`, `Basic X`), which errors may quote alone.
    pub fn add_header_value(&self, value: &str) {
        self.add_secret(value);
        if let Some((_scheme, credential)) = value.trim().split_once(' ') {
            self.add_secret(credential);
        }
    }

    /// The credentials inside a URL: user name and password, and the values of query
    /// parameters with secret-looking names (`?api_key=...`).
    pub fn add_url(&self, url: &str) {
        if let Some(userinfo) = userinfo_of(url) {
            self.add_secret(userinfo);
            for part in userinfo.split(':') {
                self.add_secret(part);
            }
        }
        if let Some((_, query)) = url.split_once('?') {
            let query = query.split('#').next().unwrap_or_default();
            for pair in query.split('&') {
                if let Some((name, value)) = pair.split_once('=')
                    && looks_secret(name)
                {
                    self.add_secret(value);
                }
            }
        }
    }

    /// `NAME=value` settings such as a server's `env`: the value when the name looks
    /// like a credential (`API_KEY`, `GITHUB_TOKEN`).
    pub fn add_named_value(&self, name: &str, value: &str) {
        if looks_secret(name) {
            self.add_secret(value);
        }
    }

    /// Command-line arguments: the value after a secret-looking flag (`--token X`,
    /// `--api-key=X`).
    pub fn add_arguments(&self, args: &[String]) {
        let mut previous_was_secret_flag = false;
        for arg in args {
            if previous_was_secret_flag {
                self.add_secret(arg);
            }
            previous_was_secret_flag = false;
            if let Some(flag) = arg.strip_prefix('-') {
                match flag.split_once('=') {
                    Some((name, value)) if looks_secret(name) => self.add_secret(value),
                    Some(_) => {}
                    None => previous_was_secret_flag = looks_secret(flag),
                }
            }
        }
    }

    /// `text` with every known secret and every URL user-info masked.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let secrets = self.secrets.read().unwrap_or_else(PoisonError::into_inner);
        let mut out = Cow::Borrowed(text);
        for secret in secrets.iter() {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), MASK));
            }
        }
        drop(secrets);
        match mask_userinfo(&out) {
            Some(masked) => Cow::Owned(masked),
            None => out,
        }
    }
}

/// The process-wide redactor: the tracing subscriber masks with it, and every component
/// that reads a secret registers it here.
pub fn global() -> &'static Redactor {
    static GLOBAL: OnceLock<Redactor> = OnceLock::new();
    GLOBAL.get_or_init(Redactor::new)
}

/// `text` masked with the [`global`] redactor.
pub fn redact(text: &str) -> String {
    global().redact(text).into_owned()
}

/// Whether a setting, header, flag or parameter name suggests a credential.
pub fn looks_secret(name: &str) -> bool {
    let name = name.trim_start_matches('-').to_ascii_lowercase();
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| SECRET_NAME_PARTS.iter().any(|part| word.contains(part)))
}

/// The `user:password` part of `url`, if it has one.
fn userinfo_of(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = &rest[..rest.find(authority_end).unwrap_or(rest.len())];
    authority.rfind('@').map(|at| &authority[..at])
}

/// Where the authority of a URL in running text ends.
fn authority_end(c: char) -> bool {
    matches!(
        c,
        '/' | '?' | '#' | '"' | '\'' | '<' | '>' | '`' | ')' | ']' | ','
    ) || c.is_whitespace()
}

/// Every `scheme://userinfo@` in `text` as `scheme://***@`; `None` when there is none.
fn mask_userinfo(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = text;
    let mut changed = false;
    while let Some(pos) = rest.find("://") {
        let after = pos + 3;
        out.push_str(&rest[..after]);
        rest = &rest[after..];
        let end = rest.find(authority_end).unwrap_or(rest.len());
        match rest[..end].rfind('@') {
            Some(at) if rest[..at] != *MASK => {
                out.push_str(MASK);
                rest = &rest[at..];
                changed = true;
            }
            _ => {}
        }
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// A writer that masks each buffered write with the [`global`] redactor before it goes
/// to stderr: `tracing_subscriber::fmt().with_writer(RedactingStderr::default)`. The
/// formatter writes one event per writer, so a secret is never split between writes.
#[derive(Debug, Default)]
pub struct RedactingStderr {
    buffer: Vec<u8>,
}

impl Write for RedactingStderr {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&self.buffer).into_owned();
        self.buffer.clear();
        let masked = global().redact(&text);
        // A closed stderr ends quietly: there is nobody left to tell.
        let _ = std::io::stderr().lock().write_all(masked.as_bytes());
        Ok(())
    }
}

impl Drop for RedactingStderr {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_secrets_and_url_userinfo_are_masked() {
        let r = Redactor::new();
        r.add_secret("s3cr3t-token-value");
        r.add_secret("abc"); // too short to register
        assert_eq!(
            r.redact("auth failed for s3cr3t-token-value (abc)"),
            "auth failed for *** (abc)"
        );
        assert_eq!(
            r.redact("GET http://user:pw@host:8/x failed; see https://a@b/c"),
            "GET http://***@host:8/x failed; see https://***@b/c"
        );
        assert_eq!(r.redact("http://host/a@b"), "http://host/a@b");
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn urls_headers_flags_and_named_values_register_their_credentials() {
        let r = Redactor::new();
        r.add_url("https://alice:hunter22@example.com/sse?api_key=QWERTY123&page=100000");
        r.add_header_value("Bearer tok-123456");
        r.add_arguments(&[
            "--token".into(),
            "flag-secret-1".into(),
            "--api-key=flag-secret-2".into(),
            "--verbose".into(),
            "visible-arg".into(),
        ]);
        r.add_named_value("GITHUB_TOKEN", "ghp_named_value");
        r.add_named_value("LOG_LEVEL", "verbose-level");
        r.add_expanded_variable("HOME", "/home/alice");
        r.add_expanded_variable("MY_VAR", "expanded-value");
        let text = "hunter22 QWERTY123 100000 tok-123456 flag-secret-1 flag-secret-2 \
                    visible-arg ghp_named_value verbose-level /home/alice expanded-value";
        assert_eq!(
            r.redact(text),
            "*** *** 100000 *** *** *** visible-arg *** verbose-level /home/alice ***"
        );
    }

    #[test]
    fn longer_secrets_are_masked_before_the_shorter_ones_inside_them() {
        let r = Redactor::new();
        r.add_secret("token1");
        r.add_secret("Bearer token1");
        assert_eq!(r.redact("sent Bearer token1"), "sent ***");
    }
}
