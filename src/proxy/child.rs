//! The server process: started in a process group of its own with piped
//! stdin and stdout (its stderr is the proxy's), stopped by closing its
//! stdin, a grace period, then a kill of the whole group, and always
//! reaped, so nothing is left running.

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

/// Starts `command[0]` with the rest as arguments.
pub(crate) fn spawn(command: &[String]) -> Result<Child, String> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| "no server command after `--`".to_string())?;
    let mut cmd = Command::new(program);
    cmd.args(args)
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

#[cfg(unix)]
async fn kill_group(pid: Option<u32>) {
    // The group's id is the child's pid (process_group(0)).
    let Some(pid) = pid else {
        return;
    };
    let _ = Command::new("kill")
        .arg("-KILL")
        .arg("--")
        .arg(format!("-{pid}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
}

#[cfg(not(unix))]
async fn kill_group(_pid: Option<u32>) {}

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
