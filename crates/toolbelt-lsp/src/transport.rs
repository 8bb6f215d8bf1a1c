//! How toolbelt reaches a language server: the pipes of a program it starts (stdio), or
//! a socket (`"transport": "tcp"` or `"socket"`) of a server that already listens or
//! that toolbelt starts from `command` first and then connects to, retrying until the
//! server listens or `startupTimeout` passes.
//!
//! A TCP host is resolved once, here, and every address is checked before a connection
//! is tried: a project's server must be on this machine (the configuration already
//! refuses a host that does not say so; this catches a name that resolves elsewhere).
//! A program toolbelt starts runs in its own process group with the owner marker, as
//! every child does; a server toolbelt only connected to is not toolbelt's to end.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::path::Path;
use std::process::{Child, ChildStderr, Stdio};
use std::time::{Duration, Instant};

use toolbelt_process::{GroupCommand, KILL_GRACE, Owner};

use crate::config::{ConfigOwner, ServerConfig, Transport};

/// How long to wait before trying again to connect to a server toolbelt started.
const RETRY: Duration = Duration::from_millis(20);

/// An open way to the server.
pub(crate) struct Channel {
    /// What the server writes.
    pub(crate) reader: Box<dyn Read + Send>,
    /// What the server reads.
    pub(crate) writer: Box<dyn Write + Send>,
    /// The program toolbelt started for it, if it did.
    pub(crate) process: Option<Started>,
    /// The socket, shut down when the client ends (its reader then sees the end).
    pub(crate) socket: Option<Socket>,
}

/// A server process toolbelt started.
pub(crate) struct Started {
    pub(crate) child: Child,
    /// Its process group (its pid: it leads the group).
    pub(crate) pgid: u32,
    pub(crate) stderr: Option<ChildStderr>,
}

/// A connected socket.
pub(crate) enum Socket {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Socket {
    /// Ends the connection both ways (the reader thread then ends).
    pub(crate) fn close(&self) {
        let _ = match self {
            Socket::Tcp(s) => s.shutdown(Shutdown::Both),
            Socket::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }
}

/// Starts the server's program (when it has one) and opens the way to it. On failure
/// nothing toolbelt started is left running.
pub(crate) async fn open(
    config: &ServerConfig,
    root: &Path,
    owner: &Owner,
) -> Result<Channel, String> {
    let process = match &config.command {
        Some(_) => Some(spawn(config, root, owner)?),
        None => None,
    };
    if config.transport == Transport::Stdio {
        return stdio(process);
    }
    let mut process = process;
    let connected = connect(config, process.as_mut()).await;
    match connected {
        Ok(socket) => socket_channel(socket, process),
        Err(e) => {
            if let Some(p) = &process {
                toolbelt_process::terminate_groups_blocking(&[p.pgid], KILL_GRACE);
            }
            let tail = process
                .and_then(|p| p.stderr)
                .map(stderr_now)
                .unwrap_or_default();
            Err(match tail.trim() {
                "" => e,
                tail => format!("{e}; its error output: {tail}"),
            })
        }
    }
}

fn spawn(config: &ServerConfig, root: &Path, owner: &Owner) -> Result<Started, String> {
    let program = config.command.as_deref().unwrap_or_default();
    let mut command = GroupCommand::new(program, owner);
    let stdio = config.transport == Transport::Stdio;
    let piped_if = |yes: bool| if yes { Stdio::piped() } else { Stdio::null() };
    command
        .args(&config.args)
        .envs(&config.env)
        .current_dir(root)
        .stdin(piped_if(stdio))
        .stdout(piped_if(stdio))
        .stderr(Stdio::piped());
    let mut child = command.spawn_std().map_err(|e| {
        format!(
            "cannot start the language server `{}` (`{program}`): {e}",
            config.name
        )
    })?;
    let stderr = child.stderr.take();
    Ok(Started {
        pgid: child.id(),
        child,
        stderr,
    })
}

fn stdio(process: Option<Started>) -> Result<Channel, String> {
    let Some(mut started) = process else {
        return Err("a stdio server needs a command".into());
    };
    let (Some(stdin), Some(stdout)) = (started.child.stdin.take(), started.child.stdout.take())
    else {
        toolbelt_process::terminate_groups_blocking(&[started.pgid], KILL_GRACE);
        return Err("the server's pipes are missing".into());
    };
    Ok(Channel {
        reader: Box::new(stdout),
        writer: Box::new(stdin),
        process: Some(started),
        socket: None,
    })
}

fn socket_channel(socket: Socket, process: Option<Started>) -> Result<Channel, String> {
    let cloned =
        |e: std::io::Error| format!("cannot use the connection to the language server: {e}");
    let (reader, writer): (Box<dyn Read + Send>, Box<dyn Write + Send>) = match &socket {
        Socket::Tcp(s) => (
            Box::new(s.try_clone().map_err(cloned)?),
            Box::new(s.try_clone().map_err(cloned)?),
        ),
        Socket::Unix(s) => (
            Box::new(s.try_clone().map_err(cloned)?),
            Box::new(s.try_clone().map_err(cloned)?),
        ),
    };
    Ok(Channel {
        reader,
        writer,
        process,
        socket: Some(socket),
    })
}

/// Connects within `startupTimeout`. A server toolbelt started may not listen yet: the
/// connection is tried again until it does, while the program runs.
async fn connect(
    config: &ServerConfig,
    mut process: Option<&mut Started>,
) -> Result<Socket, String> {
    let deadline = Instant::now() + config.startup_timeout;
    let addresses = match &config.transport {
        Transport::Tcp { host, port } => Some(resolve(config, host, *port).await?),
        _ => None,
    };
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let attempt = match (&config.transport, &addresses) {
            (Transport::Tcp { .. }, Some(addresses)) => connect_tcp(addresses, left).await,
            (Transport::Unix(path), _) => connect_unix(path, left).await,
            _ => return Err("not a socket transport".into()),
        };
        let error = match attempt {
            Ok(socket) => return Ok(socket),
            Err(e) => e,
        };
        let Some(started) = process.as_deref_mut() else {
            return Err(cannot_connect(config, &error));
        };
        if let Ok(Some(status)) = started.child.try_wait() {
            return Err(format!(
                "the language server `{}` exited ({status}) before it listened",
                config.name
            ));
        }
        if Instant::now() + RETRY >= deadline {
            return Err(format!(
                "{} within its startupTimeout of {} ms",
                cannot_connect(config, &error),
                config.startup_timeout.as_millis()
            ));
        }
        tokio::time::sleep(RETRY).await;
    }
}

fn cannot_connect(config: &ServerConfig, error: &str) -> String {
    let at = match &config.transport {
        Transport::Tcp { host, port } => format!("{host}:{port}"),
        Transport::Unix(path) => path.display().to_string(),
        Transport::Stdio => "stdio".into(),
    };
    format!(
        "cannot connect to the language server `{}` at {at}: {error}",
        config.name
    )
}

/// The addresses of `host`; for a project's server, only if every one is this
/// machine's.
async fn resolve(config: &ServerConfig, host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host((bare, port))
        .await
        .map_err(|e| {
            format!(
                "cannot resolve `{host}` for the language server `{}`: {e}",
                config.name
            )
        })?
        .collect();
    if addresses.is_empty() {
        return Err(format!("`{host}` has no address"));
    }
    if config.owner == ConfigOwner::Project
        && let Some(far) = addresses.iter().find(|a| !a.ip().is_loopback())
    {
        return Err(format!(
            "`{}.socket.host` ({host}) resolves to {}, which is not this machine; a project's file may only name this machine",
            config.key,
            far.ip()
        ));
    }
    Ok(addresses)
}

async fn connect_tcp(addresses: &[SocketAddr], left: Duration) -> Result<Socket, String> {
    let mut last = String::from("no address");
    for address in addresses {
        let limit = left.max(Duration::from_millis(1));
        match tokio::time::timeout(limit, tokio::net::TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let stream = stream.into_std().map_err(|e| e.to_string())?;
                stream.set_nonblocking(false).map_err(|e| e.to_string())?;
                let _ = stream.set_nodelay(true);
                return Ok(Socket::Tcp(stream));
            }
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = "timed out".into(),
        }
    }
    Err(last)
}

async fn connect_unix(path: &Path, left: Duration) -> Result<Socket, String> {
    let limit = left.max(Duration::from_millis(1));
    match tokio::time::timeout(limit, tokio::net::UnixStream::connect(path)).await {
        Ok(Ok(stream)) => {
            let stream = stream.into_std().map_err(|e| e.to_string())?;
            stream.set_nonblocking(false).map_err(|e| e.to_string())?;
            Ok(Socket::Unix(stream))
        }
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".into()),
    }
}

/// What a failed server wrote to stderr so far (it is no longer running).
fn stderr_now(stderr: ChildStderr) -> String {
    let mut file = std::fs::File::from(std::os::fd::OwnedFd::from(stderr));
    let mut tail = Vec::new();
    crate::client::read_available(&mut file, &mut tail);
    String::from_utf8_lossy(&tail).into_owned()
}
