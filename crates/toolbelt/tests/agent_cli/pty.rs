//! The real binary in a pseudo-terminal, its screen kept by a `vt100` parser.
//!
//! A reader thread feeds everything the program writes to the parser and wakes the
//! waiters; it also answers the cursor-position query (`ESC [6n`) the way a terminal
//! does, since the inline viewport asks where it starts. Waiting is for screen contents
//! with a deadline, never for a fixed time.

use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

pub const ROWS: u16 = 50;
pub const COLS: u16 = 120;
pub const DEADLINE: Duration = Duration::from_secs(20);

struct Shared {
    parser: Mutex<(vt100::Parser, bool)>,
    changed: Condvar,
}

pub struct Pty {
    shared: Arc<Shared>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

/// Keys as a terminal sends them.
pub mod keys {
    pub const ENTER: &str = "\r";
    pub const TAB: &str = "\t";
    pub const ESC: &str = "\x1b";
    pub const SHIFT_TAB: &str = "\x1b[Z";
    pub const CTRL_C: &str = "\x03";
    pub const CTRL_D: &str = "\x04";
    pub const DOWN: &str = "\x1b[B";
}

impl Pty {
    /// `BIN ARGS` in `cwd`, with `HOME` and `TOOLBELT_HOME` under `state` and no model
    /// settings from the environment (the environment `Workspace::command` gives).
    pub fn spawn(
        bin: &std::path::Path,
        cwd: &std::path::Path,
        state: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Pty {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(bin);
        cmd.args(args);
        cmd.cwd(cwd);
        for var in [
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "OPENAI_MODEL",
            "RUST_LOG",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("TERM", "xterm-256color");
        cmd.env("HOME", state.join("home"));
        cmd.env("TOOLBELT_HOME", state.join("tbhome"));
        cmd.env("TOOLBELT_SYSTEM_SETTINGS_PATH", state.join("none.json"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer: Arc<Mutex<Box<dyn Write + Send>>> =
            Arc::new(Mutex::new(pair.master.take_writer().unwrap()));
        let shared = Arc::new(Shared {
            parser: Mutex::new((vt100::Parser::new(ROWS, COLS, 2000), false)),
            changed: Condvar::new(),
        });
        let (s, answer) = (shared.clone(), writer.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let mut guard = s.parser.lock().unwrap_or_else(|e| e.into_inner());
                guard.0.process(&buf[..n]);
                if buf[..n].windows(4).any(|w| w == b"\x1b[6n") {
                    let (row, col) = guard.0.screen().cursor_position();
                    let reply = format!("\x1b[{};{}R", row + 1, col + 1);
                    let _ = answer
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .write_all(reply.as_bytes());
                }
                drop(guard);
                s.changed.notify_all();
            }
            s.parser.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
            s.changed.notify_all();
        });
        Pty {
            shared,
            writer,
            child,
            _master: pair.master,
        }
    }

    /// The program's process id (the benchmark reads its CPU time and RSS).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.process_id().unwrap_or(0)
    }

    pub fn send(&self, keys: &str) {
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        w.write_all(keys.as_bytes()).unwrap();
        w.flush().unwrap();
    }

    /// Types text, then Enter.
    pub fn line(&self, text: &str) {
        self.send(text);
        self.send(keys::ENTER);
    }

    /// Waits until `ready` holds for the screen; fails with the screen after the deadline.
    pub fn wait_until(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + DEADLINE;
        let mut guard = self.shared.parser.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let text = guard.0.screen().contents();
            if ready(&text) {
                return text;
            }
            let now = Instant::now();
            if now >= deadline || guard.1 {
                panic!("the screen never showed {what}; it shows:\n{text}");
            }
            guard = self
                .shared
                .changed
                .wait_timeout(guard, deadline - now)
                .unwrap()
                .0;
        }
    }

    /// Waits until the screen shows `text`.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_until(&format!("{text:?}"), |screen| screen.contains(text))
    }

    /// Waits for the program to end (bounded), then gives its status and the screen
    /// it left.
    pub fn wait_exit_screen(self) -> (u32, String) {
        let shared = self.shared.clone();
        let code = self.wait_exit();
        let guard = shared.parser.lock().unwrap_or_else(|e| e.into_inner());
        (code, guard.0.screen().contents())
    }

    /// Waits for the program to end (bounded): its output closes, then its status.
    pub fn wait_exit(mut self) -> u32 {
        let deadline = Instant::now() + DEADLINE;
        let mut guard = self.shared.parser.lock().unwrap_or_else(|e| e.into_inner());
        while !guard.1 {
            let now = Instant::now();
            assert!(
                now < deadline,
                "toolbelt did not exit:\n{}",
                guard.0.screen().contents()
            );
            guard = self
                .shared
                .changed
                .wait_timeout(guard, deadline - now)
                .unwrap()
                .0;
        }
        drop(guard);
        self.child.wait().unwrap().exit_code()
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}
