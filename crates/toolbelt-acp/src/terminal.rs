//! Commands in the editor's terminal (`terminal/*`, when the editor offers them),
//! without giving up toolbelt's confinement.
//!
//! An ACP terminal runs a process the editor starts. Running the model's command that way
//! would take it out of toolbelt's hands (its sandbox, namespace, descriptor rules,
//! limits and guardian). So the command still runs as every shell call does, and the
//! editor's terminal runs `toolbelt acp-terminal LOG PID` instead: a follower that prints
//! the call's output as toolbelt writes it to LOG, and exits with the call's status when
//! the call ends (or when toolbelt, PID, is gone). The follower only reads a file in the
//! session's own directory; it runs nothing else.
//!
//! For each execute call: `terminal/create` when it starts, the terminal as the call's
//! content, the output appended to LOG as it comes, the status written when it ends,
//! then `terminal/wait_for_exit` and `terminal/release`.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::rpc::Peer;

/// Where a session's followers' logs live, and the binary the editor runs.
pub(crate) struct Terminals {
    pub dir: PathBuf,
    pub exe: PathBuf,
}

/// One call's output on its way to the editor's terminal.
pub(crate) struct Mirror {
    log: PathBuf,
    file: Mutex<Option<std::fs::File>>,
    /// The editor's id of the terminal, once it answered.
    pub terminal: Mutex<Option<String>>,
    ended: Notify,
}

impl Mirror {
    /// Starts mirroring call `call_id`: creates its log and asks the editor for a
    /// terminal; `on_terminal` is told its id (to show it as the call's content).
    pub(crate) fn start(
        terminals: &Terminals,
        peer: &Arc<Peer>,
        session_id: &str,
        call_id: &str,
        cwd: &Path,
        on_terminal: impl FnOnce(String) + Send + 'static,
    ) -> Option<(Arc<Mirror>, tokio::task::JoinHandle<()>)> {
        std::fs::create_dir_all(&terminals.dir).ok()?;
        let name: String = call_id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let log = terminals.dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).ok()?;
        let mirror = Arc::new(Mirror {
            log: log.clone(),
            file: Mutex::new(Some(file)),
            terminal: Mutex::new(None),
            ended: Notify::new(),
        });
        let params = json!({
            "sessionId": session_id,
            "command": terminals.exe,
            "args": ["acp-terminal", log, std::process::id().to_string()],
            "cwd": cwd,
        });
        let (peer, this, session_id) = (peer.clone(), mirror.clone(), session_id.to_string());
        let task = tokio::spawn(async move {
            let created = peer.request("terminal/create", params).await;
            let Some(id) = created.ok().and_then(|r| {
                r.get("terminalId")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            }) else {
                return;
            };
            if let Ok(mut terminal) = this.terminal.lock() {
                *terminal = Some(id.clone());
            }
            on_terminal(id.clone());
            this.ended.notified().await;
            let asked = json!({"sessionId": session_id, "terminalId": id});
            // The follower exits within moments of the status being written; an editor
            // that does not say so in 3 s gets its terminal released all the same.
            let waited = peer.request("terminal/wait_for_exit", asked.clone());
            let _ = tokio::time::timeout(Duration::from_secs(3), waited).await;
            peer.request_detached("terminal/release", asked);
            let _ = std::fs::remove_file(&this.log);
            let _ = std::fs::remove_file(exit_marker(&this.log));
        });
        Some((mirror, task))
    }

    /// More output.
    pub(crate) fn write(&self, chunk: &str) {
        if let Ok(mut file) = self.file.lock()
            && let Some(file) = file.as_mut()
        {
            let _ = file.write_all(chunk.as_bytes());
        }
    }

    /// The call ended with `status`: the follower prints the rest and exits with it.
    pub(crate) fn end(&self, status: i32) {
        if let Ok(mut file) = self.file.lock() {
            file.take();
        }
        let marker = exit_marker(&self.log);
        let partial = marker.with_extension("exit.tmp");
        if std::fs::write(&partial, status.to_string()).is_ok() {
            let _ = std::fs::rename(&partial, &marker);
        }
        self.ended.notify_one();
    }

    /// The terminal's id, if the editor made one.
    pub(crate) fn terminal_id(&self) -> Option<String> {
        self.terminal.lock().ok().and_then(|t| t.clone())
    }
}

fn exit_marker(log: &Path) -> PathBuf {
    log.with_extension("exit")
}

/// `toolbelt acp-terminal LOG PID`: prints LOG as it grows until the call's status is
/// written (then exits with it) or process PID is gone (then exits 1).
pub fn follow(log: &Path, toolbelt_pid: u32) -> i32 {
    let mut out = std::io::stdout();
    let Ok(mut file) = std::fs::File::open(log) else {
        return 1;
    };
    let mut offset = 0u64;
    let mut buf = Vec::new();
    loop {
        // Read the marker first: output written before it is then surely in the file.
        let status = std::fs::read_to_string(exit_marker(log)).ok();
        buf.clear();
        if file.seek(SeekFrom::Start(offset)).is_ok() && file.read_to_end(&mut buf).is_ok() {
            offset += buf.len() as u64;
            if out.write_all(&buf).and_then(|()| out.flush()).is_err() {
                return 1;
            }
        }
        if let Some(status) = status {
            return status.trim().parse().unwrap_or(1);
        }
        if !Path::new(&format!("/proc/{toolbelt_pid}")).exists() {
            return 1;
        }
        // A display, not a synchronisation: the output shows within 30 ms.
        std::thread::sleep(Duration::from_millis(30));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_follower_prints_everything_then_exits_with_the_status() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("c1.log");
        std::fs::write(&log, "partial output\n").unwrap();
        std::fs::write(exit_marker(&log), "3").unwrap();
        assert_eq!(follow(&log, std::process::id()), 3);
    }

    #[test]
    fn the_follower_ends_when_toolbelt_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("c1.log");
        std::fs::write(&log, "").unwrap();
        // PID 0 is never a process of /proc.
        assert_eq!(follow(&log, 0), 1);
    }
}
