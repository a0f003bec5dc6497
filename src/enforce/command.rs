//! The one runner of commands that speak JSON over `sh -c`: the Claude
//! style command hooks (`pipeline::command_hooks`) and the proxy's
//! `--approver` command each keep their own protocol on top of it.
//!
//! The command runs in a process group of its own, gets its input on
//! stdin (then end of file), and both of its output streams are read side
//! by side, each to a bound: past it the run fails at once. Its deadline is
//! the caller's (a hook's timeout, the approver's): when the caller gives
//! up, the run's future is dropped and the whole group is killed, so
//! nothing it started outlives it.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// One command to run.
pub(crate) struct ShCommand<'a> {
    /// The shell text, run as `sh -c TEXT`.
    pub(crate) text: &'a str,
    /// The working folder, when not this process's.
    pub(crate) cwd: Option<&'a Path>,
    /// Variables added to the environment.
    pub(crate) env: &'a [(&'a str, &'a OsStr)],
    /// What is written to its stdin, which is then closed.
    pub(crate) input: Vec<u8>,
    /// The most bytes read from its stdout; more fails the run.
    pub(crate) max_stdout: usize,
    /// The most bytes read from its stderr; more fails the run.
    pub(crate) max_stderr: usize,
}

/// How a command ended, with what it printed.
#[derive(Debug)]
pub(crate) struct Ran {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
}

/// Why a command could not be run to its end.
#[derive(Debug)]
pub(crate) enum RunError {
    /// `sh` could not be started.
    Spawn(std::io::Error),
    /// Reading one of its streams failed.
    Read(&'static str, std::io::Error),
    /// It printed more than the bound on a stream.
    TooLong(&'static str, usize),
    /// Waiting for it failed.
    Wait(std::io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spawn(e) => write!(f, "cannot start `sh`: {e}"),
            RunError::Read(stream, e) => write!(f, "cannot read the command's {stream}: {e}"),
            RunError::TooLong(stream, max) => {
                write!(f, "the command printed more than {max} bytes on {stream}")
            }
            RunError::Wait(e) => write!(f, "cannot wait for the command: {e}"),
        }
    }
}

/// Kills the command's process group when dropped (the caller gave up, a
/// stream went past its bound), unless it was disarmed after the command
/// ended.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pgid) = self.0.take() {
            // No waiting here (a drop may run on the runtime's thread): a
            // thread of its own sends the signal and reaps `kill`.
            let _ = std::thread::Builder::new()
                .name("mcppol-kill-group".into())
                .spawn(move || {
                    let _ = std::process::Command::new("kill")
                        .arg("-KILL")
                        .arg("--")
                        .arg(format!("-{pgid}"))
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status();
                });
        }
    }
}

/// Reads `stream` to its end, failing past `max` bytes.
async fn read_bounded(
    stream: Option<impl AsyncRead + Unpin>,
    name: &'static str,
    max: usize,
) -> Result<Vec<u8>, RunError> {
    let mut out = Vec::new();
    if let Some(s) = stream {
        s.take(u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1))
            .read_to_end(&mut out)
            .await
            .map_err(|e| RunError::Read(name, e))?;
    }
    if out.len() > max {
        return Err(RunError::TooLong(name, max));
    }
    Ok(out)
}

/// Runs `command` to its end (see the [module](self)).
pub(crate) async fn run(command: ShCommand<'_>) -> Result<Ran, RunError> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command.text)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = command.cwd {
        cmd.current_dir(cwd);
    }
    for (key, value) in command.env {
        cmd.env(key, value);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(RunError::Spawn)?;
    // The group's id is the child's pid (process_group(0)).
    let mut guard = GroupGuard(child.id());
    let input = command.input;
    let stdin = child.stdin.take();
    let write = async move {
        if let Some(mut stdin) = stdin {
            // A command that does not read its input may close it early.
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        }
        Ok(())
    };
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    // The first failure ends the run at once (the child and its group are
    // killed as they are dropped), not when the command is done printing.
    let ((), stdout, stderr, status) = tokio::try_join!(
        write,
        read_bounded(stdout, "stdout", command.max_stdout),
        read_bounded(stderr, "stderr", command.max_stderr),
        async { child.wait().await.map_err(RunError::Wait) }
    )?;
    guard.0 = None;
    Ok(Ran {
        status,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(text: &str, input: &str) -> ShCommand<'static> {
        ShCommand {
            text: Box::leak(text.to_string().into_boxed_str()),
            cwd: None,
            env: &[],
            input: input.as_bytes().to_vec(),
            max_stdout: 16,
            max_stderr: 16,
        }
    }

    #[tokio::test]
    async fn both_streams_are_read_and_bounded() {
        let ran = run(sh("cat; echo oops >&2; exit 3", "{\"a\":1}"))
            .await
            .unwrap();
        assert_eq!(ran.stdout, b"{\"a\":1}");
        assert_eq!(ran.stderr, b"oops\n");
        assert_eq!(ran.status.code(), Some(3));
        let over = run(sh("printf '%040d' 0", "")).await;
        assert!(
            matches!(over, Err(RunError::TooLong("stdout", 16))),
            "{over:?}"
        );
        let over = run(sh("printf '%040d' 0 >&2", "")).await;
        assert!(
            matches!(over, Err(RunError::TooLong("stderr", 16))),
            "{over:?}"
        );
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_run_given_up_kills_its_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let text = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let given_up =
            tokio::time::timeout(std::time::Duration::from_millis(500), run(sh(&text, ""))).await;
        assert!(given_up.is_err());
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let proc = format!("/proc/{}", pid.trim());
        let mut gone = false;
        for _ in 0..100 {
            // Gone, or a zombie left for its (killed) parent's reaper.
            let state = std::fs::read_to_string(format!("{proc}/stat")).unwrap_or_default();
            if state.is_empty() || state.contains(") Z ") {
                gone = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(gone, "the background `sleep` outlived the run");
    }
}
