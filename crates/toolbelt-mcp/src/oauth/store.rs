//! The tokens of one server, in a file of toolbelt's store (`<toolbelt home>/mcp-oauth/`,
//! the directory `0700`, the file `0600`, written atomically): rmcp's
//! [`CredentialStore`] on disk.
//!
//! The file's name comes from the server's alias, made safe (letters, digits, `-`, `_`)
//! and followed by a hash of the exact alias, so no alias (`../x`, `a/b`) reaches
//! outside the directory and two aliases never share a file. Nothing the server sends
//! goes into a path.
//!
//! A file holds the alias and URL it was made for, and is used only for that same
//! alias and URL: a settings file that points an alias at another URL (a project's
//! settings, say) does not get the tokens of the server the person logged in to.
//! Every token read or written is registered with the redactor, so it is masked in any
//! text toolbelt shows or logs. A refresh holds a lock on the file's `.lock` beside it,
//! so sessions that share the tokens refresh one at a time.

use std::io;
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use sha2::Digest;

/// The file of one server's tokens.
#[derive(Debug, Clone)]
pub(crate) struct TokenFile {
    path: PathBuf,
    alias: String,
    url: String,
}

/// What the file holds.
#[derive(Serialize, Deserialize)]
struct Saved {
    alias: String,
    url: String,
    credentials: StoredCredentials,
}

impl TokenFile {
    /// The file for `alias` at `url` in `dir`.
    pub(crate) fn new(dir: &Path, alias: &str, url: &str) -> TokenFile {
        TokenFile {
            path: dir.join(file_name(alias)),
            alias: alias.to_string(),
            url: url.to_string(),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The credentials kept for this alias and URL, if any.
    fn read(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(store_error("read", &self.path, &e)),
        };
        let Ok(saved) = serde_json::from_slice::<Saved>(&bytes) else {
            tracing::warn!(
                "the OAuth token file {} is not readable; log in again",
                self.path.display()
            );
            return Ok(None);
        };
        if saved.alias != self.alias || saved.url != self.url {
            tracing::warn!(
                "the OAuth tokens of MCP server \"{}\" were for another URL; log in again",
                self.alias
            );
            return Ok(None);
        }
        register_secrets(&saved.credentials);
        Ok(Some(saved.credentials))
    }

    /// Whether an access or refresh token is kept for this alias and URL.
    pub(crate) fn has_tokens(&self) -> bool {
        matches!(self.read(), Ok(Some(c)) if c.token_response.is_some())
    }

    /// Removes the file (and its refresh lock); whether there was one.
    pub(crate) fn remove(&self) -> io::Result<bool> {
        let _ = std::fs::remove_file(self.path.with_extension("lock"));
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read()
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        register_secrets(&credentials);
        let saved = Saved {
            alias: self.alias.clone(),
            url: self.url.clone(),
            credentials,
        };
        let bytes = serde_json::to_vec_pretty(&saved)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        if let Some(dir) = self.path.parent() {
            toolbelt_config::store_files::create_dir_all(dir)
                .map_err(|e| store_error("create", dir, &e))?;
        }
        toolbelt_config::store_files::write_atomic(&self.path, &bytes)
            .map_err(|e| store_error("write", &self.path, &e))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove()
            .map(|_| ())
            .map_err(|e| store_error("remove", &self.path, &e))
    }

    /// An exclusive lock on `<file>.lock` for the whole of a refresh: two sessions that
    /// find the token expired at once refresh one after the other, and the second reads
    /// the tokens the first saved (a refresh token may be good for one use only).
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let path = self.path.with_extension("lock");
        let locked = tokio::task::spawn_blocking(move || -> io::Result<std::fs::File> {
            if let Some(dir) = path.parent() {
                toolbelt_config::store_files::create_dir_all(dir)?;
            }
            let file = toolbelt_config::store_files::open_options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)?;
            rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
            Ok(file)
        })
        .await
        .map_err(|e| AuthError::CredentialStoreError(format!("the refresh lock: {e}")))?
        .map_err(|e| store_error("lock", &self.path, &e))?;
        // The lock goes with the file, when rmcp drops the guard.
        Ok(Some(CredentialRefreshGuard::new(locked)))
    }
}

/// `<safe alias>-<12 hex digits of the alias's SHA-256>.json`.
fn file_name(alias: &str) -> String {
    let safe: String = alias
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let digest = sha2::Sha256::digest(alias.as_bytes());
    let hash: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    format!("{safe}-{hash}.json")
}

/// The tokens are masked wherever text leaves toolbelt.
fn register_secrets(credentials: &StoredCredentials) {
    use oauth2::TokenResponse;
    let Some(tokens) = &credentials.token_response else {
        return;
    };
    let redactor = toolbelt_config::redact::global();
    redactor.add_secret(tokens.access_token().secret());
    if let Some(refresh) = tokens.refresh_token() {
        redactor.add_secret(refresh.secret());
    }
}

fn store_error(what: &str, path: &Path, e: &io::Error) -> AuthError {
    AuthError::CredentialStoreError(format!("cannot {what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn credentials(access: &str) -> StoredCredentials {
        let tokens = serde_json::from_value(serde_json::json!({
            "access_token": access,
            "token_type": "bearer",
            "refresh_token": "refresh-1",
            "expires_in": 60
        }))
        .unwrap();
        StoredCredentials::new("client-1".into(), Some(tokens), vec![], Some(1))
    }

    #[tokio::test]
    async fn a_refresh_holds_the_file_lock_until_rmcp_drops_its_guard() {
        let dir = tempfile::tempdir().unwrap();
        let file = TokenFile::new(dir.path(), "docs", "https://mcp.example.com/mcp");
        let try_lock = || {
            let other = std::fs::File::open(file.path().with_extension("lock")).unwrap();
            let op = rustix::fs::FlockOperation::NonBlockingLockExclusive;
            rustix::fs::flock(&other, op).is_ok()
        };
        let guard = file.acquire_refresh_guard().await.unwrap();
        assert!(guard.is_some());
        assert!(
            !try_lock(),
            "another session could refresh at the same time"
        );
        drop(guard);
        assert!(try_lock());
    }

    #[test]
    fn no_alias_names_a_file_outside_the_directory_and_none_share_one() {
        let names: Vec<String> = ["../../etc/x", "a/b", "a_b", "", ".."]
            .iter()
            .map(|a| file_name(a))
            .collect();
        for name in &names {
            assert!(!name.contains('/') && !name.starts_with('.'), "{name}");
        }
        assert_ne!(names[1], names[2]);
    }

    #[tokio::test]
    async fn tokens_are_kept_0600_and_only_for_the_same_alias_and_url() {
        let dir = tempfile::tempdir().unwrap();
        let store_dir = dir.path().join("mcp-oauth");
        let file = TokenFile::new(&store_dir, "docs", "https://mcp.example.com/mcp");
        assert!(file.load().await.unwrap().is_none());
        file.save(credentials("access-token-0001")).await.unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(file.path()), 0o600);
        assert_eq!(mode(&store_dir), 0o700);
        assert!(file.has_tokens());
        let loaded = file.load().await.unwrap().unwrap();
        assert_eq!(loaded.client_id, "client-1");
        assert_eq!(
            toolbelt_config::redact::redact("x access-token-0001 y"),
            "x *** y"
        );

        let moved = TokenFile::new(&store_dir, "docs", "https://evil.example.com/mcp");
        assert!(moved.load().await.unwrap().is_none());
        assert!(!moved.has_tokens());

        assert!(file.remove().unwrap());
        assert!(!file.remove().unwrap());
        assert!(file.load().await.unwrap().is_none());
    }
}
