//! The server process: started in a process group of its own with piped
//! stdin and stdout (its stderr is the proxy's), stopped by closing its
//! stdin, a grace period, then a kill of the whole group, and always
//! reaped, so nothing is left running.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, Command};

/// The proxy's status when the server cannot be started (as a shell says
/// "command not found").
pub(crate) const CANNOT_START: u8 = 127;

/// How the server ended, as the proxy's exit status and in words.
pub(crate) struct Ended {
    pub(crate) code: u8,
    pub(crate) describe: String,
}

/// Starts `command[0]` with the rest as arguments, `env` added to the
/// proxy's environment, in `cwd` when given (a servers file's entry).
pub(crate) fn spawn(
    command: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
) -> Result<Child, String> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| "no server command after `--`".to_string())?;
    let mut cmd = Command::new(program);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    cmd.args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    cmd.spawn()
        .map_err(|e| format!("cannot start the server `{program}`: {e}"))
}

/// Waits up to `grace` for the server to exit (its stdin already closed,
/// or the server already gone), then kills its process group; reaps it.
pub(crate) async fn stop(child: &mut Child, grace: Duration) -> Ended {
    let pid = child.id();
    let status = match tokio::time::timeout(grace, child.wait()).await {
        Ok(Ok(status)) => Some(status),
        Ok(Err(_)) | Err(_) => None,
    };
    // Whatever the server started in its group goes with it.
    kill_group(pid).await;
    let status = match status {
        Some(s) => Ok(s),
        None => {
            tracing::warn!(target: "mcppol::proxy", grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX), "the server did not exit in time: killed");
            let _ = child.start_kill();
            child.wait().await
        }
    };
    match status {
        Ok(s) => ended(s),
        Err(e) => Ended {
            code: 1,
            describe: format!("unknown ({e})"),
        },
    }
}

async fn kill_group(pid: Option<u32>) {
    signal_group(pid, "-KILL").await;
}

#[cfg(unix)]
async fn signal_group(pid: Option<u32>, signal: &str) {
    // The group's id is the child's pid (process_group(0)).
    let Some(pid) = pid else {
        return;
    };
    let _ = Command::new("kill")
        .arg(signal)
        .arg("--")
        .arg(format!("-{pid}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
}

#[cfg(not(unix))]
async fn signal_group(_pid: Option<u32>, _signal: &str) {}

/// How long the server's group has after SIGTERM before it is killed,
/// when the proxy itself was signalled: hosts give a server about two
/// seconds between SIGTERM and SIGKILL, and the proxy must be done first.
pub(crate) const TERM_GRACE: Duration = Duration::from_millis(1000);

/// The signals that end the proxy: SIGTERM, SIGINT and SIGHUP.
pub(crate) struct Signals {
    #[cfg(unix)]
    streams: Vec<(i32, tokio::signal::unix::Signal)>,
}

impl Signals {
    /// Listens from now on (a signal that cannot be listened to is logged
    /// and keeps its default action).
    pub(crate) fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let mut streams = Vec::new();
            for (number, kind) in [
                (15, SignalKind::terminate()),
                (2, SignalKind::interrupt()),
                (1, SignalKind::hangup()),
            ] {
                match signal(kind) {
                    Ok(s) => streams.push((number, s)),
                    Err(e) => {
                        tracing::warn!(target: "mcppol::proxy", signal = number, error = %e, "cannot listen to a signal")
                    }
                }
            }
            Signals { streams }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The number of the next signal; never, when none is listened to.
    pub(crate) async fn next(&mut self) -> i32 {
        #[cfg(unix)]
        {
            if self.streams.is_empty() {
                return std::future::pending().await;
            }
            let waits = self.streams.iter_mut().map(|(number, s)| {
                let number = *number;
                Box::pin(async move {
                    s.recv().await;
                    number
                })
            });
            futures_select_all(waits).await
        }
        #[cfg(not(unix))]
        std::future::pending().await
    }
}

/// The first of several futures to finish.
#[cfg(unix)]
async fn futures_select_all<F>(futures: impl Iterator<Item = F>) -> i32
where
    F: std::future::Future<Output = i32> + Unpin,
{
    let mut futures: Vec<F> = futures.collect();
    std::future::poll_fn(move |cx| {
        for f in futures.iter_mut() {
            if let std::task::Poll::Ready(n) = std::pin::Pin::new(f).poll(cx) {
                return std::task::Poll::Ready(n);
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// The proxy was signalled: the server's process group gets SIGTERM, then
/// SIGKILL after [`TERM_GRACE`] if the server has not exited, and the
/// server is reaped. The proxy's status is 128 + the signal it got.
pub(crate) async fn terminate(child: &mut Child, signal: i32) -> Ended {
    let pid = child.id();
    signal_group(pid, "-TERM").await;
    let exited = matches!(
        tokio::time::timeout(TERM_GRACE, child.wait()).await,
        Ok(Ok(_))
    );
    // Whatever is left in the group goes, the server too if it is still
    // there.
    kill_group(pid).await;
    if !exited {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    Ended {
        code: u8::try_from(128 + signal).unwrap_or(1),
        describe: format!("the proxy got signal {signal}: the server's group was ended"),
    }
}

fn ended(status: ExitStatus) -> Ended {
    if let Some(code) = status.code() {
        return Ended {
            code: u8::try_from(code).unwrap_or(1),
            describe: format!("exit status {code}"),
        };
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return Ended {
                code: u8::try_from(128 + signal).unwrap_or(1),
                describe: format!("killed by signal {signal}"),
            };
        }
    }
    Ended {
        code: 1,
        describe: status.to_string(),
    }
}
