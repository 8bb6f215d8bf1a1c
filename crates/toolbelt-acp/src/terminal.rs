//! Commands in the editor's terminal (`terminal/*`, when the editor offers them),
//! without giving up toolbelt's confinement.
//!
//! An ACP terminal runs a process the editor starts. Running the model's command that way
//! would take it out of toolbelt's hands (its sandbox, namespace, descriptor rules,
//! limits and guardian). So the command still runs as every shell call does, and the
//! editor's terminal runs `toolbelt acp-terminal LOG PID START` instead: a follower that prints
//! the call's output as toolbelt writes it to LOG, and exits with the call's status when
//! the call ends (or when toolbelt, PID, is gone). The follower only reads a file in the
//! session's own directory; it runs nothing else.
//!
//! For each execute call: `terminal/create` when it starts, the terminal as the call's
//! content, the output appended to LOG as it comes, the status written when it ends,
//! then `terminal/wait_for_exit` and `terminal/release`.
//!
//! The output is the command's, and a command may be hostile (an unasked `cat` of a
//! cloned repository's file): the follower passes colours (SGR sequences) and drops
//! every other control sequence and control character, so no output can set the
//! editor's clipboard (OSC 52), title or modes, or type into it ([`Printable`]).

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
    /// Starts mirroring a call: creates its log and asks the editor for a
    /// terminal; `on_terminal` is told its id (to show it as the call's content).
    pub(crate) fn start(
        terminals: &Terminals,
        peer: &Arc<Peer>,
        session_id: &str,
        cwd: &Path,
        on_terminal: impl FnOnce(String) + Send + 'static,
    ) -> Option<(Arc<Mirror>, tokio::task::JoinHandle<()>)> {
        std::fs::create_dir_all(&terminals.dir).ok()?;
        // The model chooses call ids: the name takes none of its characters, so two
        // calls never share a log and no id names a path.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = terminals.dir.join(format!("call-{n}.log"));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&log)
            .ok()?;
        let mirror = Arc::new(Mirror {
            log: log.clone(),
            file: Mutex::new(Some(file)),
            terminal: Mutex::new(None),
            ended: Notify::new(),
        });
        let params = json!({
            "sessionId": session_id,
            "command": terminals.exe,
            "args": ["acp-terminal", log, std::process::id().to_string(), own_start_time()],
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

/// This process's start time (clock ticks since boot), which with its PID names it
/// even after the PID is reused.
fn own_start_time() -> String {
    toolbelt_process::procfs::stat(std::process::id())
        .map_or(0, |s| s.start_time)
        .to_string()
}

/// Whether the toolbelt that started the follower still runs: its PID names a process
/// that started when it did (a reused PID names another), or, without `start`, any.
fn toolbelt_runs(pid: u32, start: Option<u64>) -> bool {
    match toolbelt_process::procfs::stat(pid) {
        Some(stat) => stat.is_alive() && start.is_none_or(|t| t == stat.start_time),
        None => false,
    }
}

/// `toolbelt acp-terminal LOG PID [START]`: prints LOG as it grows until the call's
/// status is written (then exits with it) or process PID, started at START, is gone
/// (then exits 1).
pub fn follow(log: &Path, toolbelt_pid: u32, start: Option<u64>) -> i32 {
    let mut out = std::io::stdout();
    let Ok(mut file) = std::fs::File::open(log) else {
        return 1;
    };
    let mut offset = 0u64;
    let mut buf = Vec::new();
    let mut printable = Printable::default();
    loop {
        // Read the marker first: output written before it is then surely in the file.
        let status = std::fs::read_to_string(exit_marker(log)).ok();
        buf.clear();
        if file.seek(SeekFrom::Start(offset)).is_ok() && file.read_to_end(&mut buf).is_ok() {
            offset += buf.len() as u64;
            let shown = printable.filter(&buf);
            if out.write_all(&shown).and_then(|()| out.flush()).is_err() {
                return 1;
            }
        }
        if let Some(status) = status {
            return status.trim().parse().unwrap_or(1);
        }
        if !toolbelt_runs(toolbelt_pid, start) {
            return 1;
        }
        // A display, not a synchronisation: the output shows within 30 ms.
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// What of a command's output reaches a terminal: text, newlines, tabs, carriage
/// returns and colours (`ESC [ digits ; ... m`); nothing else that a terminal would act
/// on (other escape sequences, C0 and C1 controls, DEL). Sequences may be split across
/// reads, so the filter keeps its state between them.
#[derive(Default)]
struct Printable {
    /// An escape sequence being read (from its ESC).
    pending: Vec<u8>,
    /// The byte before was 0xC2 (a C1 control in UTF-8 would follow).
    after_c2: bool,
}

impl Printable {
    /// The longest sequence kept while it is read; a longer one is dropped.
    const MAX_SEQUENCE: usize = 64;

    fn filter(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        for &b in bytes {
            if self.after_c2 {
                self.after_c2 = false;
                if (0x80..=0x9f).contains(&b) {
                    continue;
                }
                out.push(0xc2);
            }
            if !self.pending.is_empty() {
                self.sequence(b, &mut out);
                continue;
            }
            match b {
                0x1b => self.pending.push(b),
                0xc2 => self.after_c2 = true,
                b'\n' | b'\t' | b'\r' => out.push(b),
                0x00..=0x1f | 0x7f => {}
                _ => out.push(b),
            }
        }
        out
    }

    /// One more byte of an escape sequence: a colour is passed once whole, the rest
    /// dropped.
    fn sequence(&mut self, b: u8, out: &mut Vec<u8>) {
        self.pending.push(b);
        let csi = self.pending.get(1) == Some(&b'[');
        match (self.pending.len(), b) {
            (2, b'[') => {}
            // ESC and anything but `[`: dropped with the byte after it.
            (2, _) => self.pending.clear(),
            (_, b'0'..=b'9' | b';') if csi && self.pending.len() <= Self::MAX_SEQUENCE => {}
            (_, b'm') if csi => {
                out.extend_from_slice(&self.pending);
                self.pending.clear();
            }
            // Any other final byte, or a sequence grown too long: dropped.
            (_, 0x40..=0x7e) => self.pending.clear(),
            _ if self.pending.len() > Self::MAX_SEQUENCE => self.pending.clear(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_pass_and_other_control_sequences_do_not() {
        let mut p = Printable::default();
        let out =
            p.filter(b"\x1b[1;31mred\x1b[0m ok\n\x1b]52;c;ZXZpbA==\x07\x1b[2Jx\x1b[?1049h\tz\r\n");
        assert_eq!(out, b"\x1b[1;31mred\x1b[0m ok\n52;c;ZXZpbA==x\tz\r\n");
        // A title set with OSC and ST, C1 controls in UTF-8, and a bell.
        let out = p.filter("\x1b]0;title\x1b\\ a\u{9b}2Jb\u{7}é".as_bytes());
        assert_eq!(String::from_utf8(out).unwrap(), "0;title a2Jbé");
    }

    #[test]
    fn a_sequence_split_across_reads_is_judged_whole() {
        let mut p = Printable::default();
        let mut out = p.filter(b"a\x1b[3");
        out.extend(p.filter(b"2mb\x1b"));
        out.extend(p.filter(b"[5Cc"));
        assert_eq!(out, b"a\x1b[32mbc");
    }

    #[test]
    fn the_follower_prints_everything_then_exits_with_the_status() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("c1.log");
        std::fs::write(&log, "partial output\n").unwrap();
        std::fs::write(exit_marker(&log), "3").unwrap();
        let start = own_start_time().parse().ok();
        assert!(start.is_some_and(|t: u64| t > 0));
        assert_eq!(follow(&log, std::process::id(), start), 3);
    }

    #[test]
    fn the_follower_ends_when_toolbelt_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("c1.log");
        std::fs::write(&log, "").unwrap();
        // PID 0 is never a process of /proc.
        assert_eq!(follow(&log, 0, None), 1);
        // A PID now naming a process that started at another time: reused, so gone.
        let start: u64 = own_start_time().parse().unwrap();
        assert_eq!(follow(&log, std::process::id(), Some(start + 1)), 1);
    }
}
