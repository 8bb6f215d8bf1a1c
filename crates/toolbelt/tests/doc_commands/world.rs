//! The world a block runs in: the fake model and page servers, a temporary checkout
//! with homes of its own, and the stubs of slow or networked commands with their checks.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use super::{ANSWER, repo};

/// The fake model server and the page server, shared by every block of a test.
pub struct Servers {
    pub _runtime: tokio::runtime::Runtime,
    pub _model: FakeOpenAi,
    pub model_url: String,
    pub page_url: String,
}

pub fn servers() -> Servers {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let model = runtime.block_on(FakeOpenAi::start(Vec::new())).unwrap();
    model.set_fallback(Reply::text(ANSWER));
    model.set_side_reply(Reply::text(ANSWER));
    let model_url = model.base_url();
    Servers {
        _runtime: runtime,
        _model: model,
        model_url,
        page_url: page_server(),
    }
}

/// A web page on 127.0.0.1 for `web_fetch`: every GET gets the same small HTML page.
pub fn page_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "<html><body><h1>tokio::spawn</h1><p>Spawns a new asynchronous task.</p></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}/tokio")
}

/// What the person's `~/.qwen/settings.json` holds before any snippet runs: a snippet
/// may add to it, never lose it.
pub const PERSONS_SETTINGS: &str = r#"{"ui": {"theme": "the person's own"}, "tools": {"webFetch": {"allowHosts": ["127.0.0.1"]}}}"#;

/// One block's temporary checkout, the person's own project beside it, homes and tools.
pub struct World {
    pub dir: tempfile::TempDir,
    pub model_url: String,
    pub page_url: String,
    /// Where the block's lines run: the person's project, or the checkout for a block
    /// that uses the checkout's files (see [`World::for_block`]).
    pub cwd: PathBuf,
}

impl World {
    pub fn new(servers: &Servers) -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let checkout = root.join("repo");
        copy_dir(&repo().join("examples"), &checkout.join("examples"));
        copy_dir(
            &repo().join("crates/toolbelt/tests/fixtures/docs/checkout"),
            &checkout,
        );
        copy_dir(
            &repo().join("crates/toolbelt/tests/fixtures/docs/checkout"),
            &root.join("project"),
        );
        for d in [
            "home/.qwen",
            "tbhome",
            "bin",
            "lib",
            "repo/target/release",
            "repo/scripts",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("lib/x.rs"), "pub fn x() {}\n").unwrap();
        std::fs::write(root.join("home/.qwen/settings.json"), PERSONS_SETTINGS).unwrap();
        let bin = Path::new(env!("CARGO_BIN_EXE_toolbelt"));
        std::os::unix::fs::symlink(bin, root.join("bin/toolbelt")).unwrap();
        std::os::unix::fs::symlink(bin, checkout.join("target/release/toolbelt")).unwrap();
        let log = root.join("stubs.log");
        let stub = format!(
            "#!/bin/sh\nprintf '%s\\t%s\\n' \"$PWD\" \"$*\" >> '{}'\n",
            log.display()
        );
        write_exec(&root.join("bin/cargo"), &stub);
        write_exec(
            &checkout.join("scripts/setup.sh"),
            &stub.replace("\"$*\"", "\"setup.sh\""),
        );
        for repo in [&checkout, &root.join("project")] {
            let git = Command::new("git")
                .args(["init", "-q"])
                .current_dir(repo)
                .status()
                .unwrap();
            assert!(git.success());
        }
        World {
            cwd: root.join("project"),
            dir,
            model_url: servers.model_url.clone(),
            page_url: servers.page_url.clone(),
        }
    }

    /// The world of a block: its lines run in a project of the person's own, outside
    /// the checkout, unless the block uses the checkout's files (`examples/`,
    /// `scripts/`, `crates/`, a cargo command), as a person in their clone would.
    pub fn for_block(servers: &Servers, text: &str) -> World {
        let mut world = World::new(servers);
        let in_checkout = ["examples/", "scripts/", "crates/", "cargo "]
            .iter()
            .any(|m| text.contains(m));
        if in_checkout {
            world.cwd = world.checkout();
        }
        world
    }

    /// The person's settings are still there after a snippet (added to, never lost),
    /// and no hook in them points into the checkout or the project it was installed
    /// from: such a hook fails in every other project, and a guard failing open lets
    /// through what it was written to stop.
    pub fn check_home(&self) -> Result<(), String> {
        let path = self.dir.path().join("home/.qwen/settings.json");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("~/.qwen/settings.json: {e}"))?;
        let now: Value = serde_json::from_str(&text)
            .map_err(|e| format!("~/.qwen/settings.json is no longer JSON: {e}"))?;
        let before: Value = serde_json::from_str(PERSONS_SETTINGS).unwrap();
        for (key, value) in before.as_object().unwrap() {
            if now.get(key) != Some(value) {
                return Err(format!(
                    "~/.qwen/settings.json lost the person's {key:?} (now {text})"
                ));
            }
        }
        let checkout = self.checkout().display().to_string();
        for (event, groups) in now["hooks"].as_object().into_iter().flatten() {
            for hook in groups
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
            {
                let command = hook["command"].as_str().unwrap_or("");
                if ["examples/", "PROJECT_DIR", &checkout]
                    .iter()
                    .any(|m| command.contains(m))
                {
                    return Err(format!(
                        "~/.qwen/settings.json: a {event} hook points into the checkout or the project: {command}"
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn checkout(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    /// The doc's text with this world's addresses and paths.
    pub fn substitute(&self, command: &str, port: u16) -> String {
        command
            .replace("http://127.0.0.1:8000/v1", &self.model_url)
            .replace("https://docs.rs/tokio", &self.page_url)
            .replace(":8765", &format!(":{port}"))
    }

    pub fn env(&self) -> Vec<(String, String)> {
        let root = self.dir.path();
        let path = format!(
            "{}:{}",
            root.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        vec![
            ("PATH".into(), path),
            ("HOME".into(), root.join("home").display().to_string()),
            (
                "TOOLBELT_HOME".into(),
                root.join("tbhome").display().to_string(),
            ),
            (
                "TOOLBELT_SYSTEM_SETTINGS_PATH".into(),
                root.join("none.json").display().to_string(),
            ),
            ("OPENAI_BASE_URL".into(), self.model_url.clone()),
            ("OPENAI_MODEL".into(), "qwen3-coder".into()),
            ("OPENAI_API_KEY".into(), "sk-test".into()),
            ("COLUMNS".into(), "400".into()),
            ("RUST_LOG".into(), String::new()),
        ]
    }

    /// The stubbed commands run since the last call, each `(cwd, args)`.
    pub fn take_stub_calls(&self) -> Vec<(String, String)> {
        let log = self.dir.path().join("stubs.log");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        text.lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

pub fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

// ---------------------------------------------------------------------------------
// The substitutes' checks

/// `cargo metadata` of the repository: each package's name, manifest and targets.
pub fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

pub fn package<'a>(meta: &'a Value, name: &str) -> Option<&'a Value> {
    meta["packages"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

pub fn has_target(pkg: &Value, kind: &str, name: &str) -> bool {
    pkg["targets"].as_array().is_some_and(|ts| {
        ts.iter().any(|t| {
            t["name"] == name
                && t["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == kind))
        })
    })
}

pub fn flag<'a>(words: &[&'a str], name: &str) -> Option<&'a str> {
    words
        .iter()
        .position(|w| *w == name)
        .and_then(|i| words.get(i + 1).copied())
}

/// Checks one stubbed call against the repository (see the table in the module doc).
pub fn check_stub(meta: &Value, checkout: &Path, cwd: &str, args: &str) -> Result<(), String> {
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    let words: Vec<&str> = args.split_whitespace().collect();
    let ci_runs = |cmd: &str| ci.lines().any(|l| l.trim() == cmd);
    match words.as_slice() {
        ["setup.sh"]
            if repo().join("scripts/setup.sh").is_file() && ci_runs("bash scripts/setup.sh") =>
        {
            Ok(())
        }
        ["test", "--workspace"] if ci.lines().any(|l| l.contains("cargo test --workspace")) => {
            Ok(())
        }
        ["install", ..] => {
            let path = flag(&words, "--path").ok_or("cargo install without --path")?;
            // The install reuses the tour's release build (`target/release`, built from
            // Cargo.lock) instead of a second cold build in a folder of its own.
            let reuses = flag(&words, "--target-dir")
                .is_some_and(|t| Path::new(cwd).join(t) == checkout.join("target"));
            if !words.contains(&"--locked") || !reuses {
                return Err(format!(
                    "`cargo {args}` does not reuse the tour's build: it needs --locked and --target-dir target (from the checkout)"
                ));
            }
            let rel = Path::new(cwd).join(path);
            let rel = rel
                .strip_prefix(checkout)
                .map_err(|_| format!("{path}: not in the checkout"))?;
            let manifest = repo()
                .join(rel)
                .join("Cargo.toml")
                .canonicalize()
                .map_err(|e| format!("{path}: {e}"))?;
            let pkg = meta["packages"]
                .as_array()
                .and_then(|ps| {
                    ps.iter()
                        .find(|p| p["manifest_path"] == manifest.display().to_string())
                })
                .ok_or(format!("{path}: no package of the workspace"))?;
            if pkg["name"] == "toolbelt" && has_target(pkg, "bin", "toolbelt") {
                Ok(())
            } else {
                Err(format!(
                    "{path}: not the package toolbelt with the binary toolbelt"
                ))
            }
        }
        ["build", rest @ ..] if rest.contains(&"--release") => {
            let name = flag(&words, "-p").ok_or("cargo build without -p")?;
            let pkg = package(meta, name).ok_or(format!("no package {name}"))?;
            if has_target(pkg, "bin", name) {
                Ok(())
            } else {
                Err(format!("{name} has no binary"))
            }
        }
        ["run", ..] => {
            let name = flag(&words, "-p").ok_or("cargo run without -p")?;
            let example = flag(&words, "--example").ok_or("cargo run without --example")?;
            let pkg = package(meta, name).ok_or(format!("no package {name}"))?;
            if has_target(pkg, "example", example) {
                Ok(())
            } else {
                Err(format!("{name} has no example {example}"))
            }
        }
        _ => Err(format!(
            "no substitute for `cargo {args}`: add a row to doc_commands.rs's table"
        )),
    }
}
