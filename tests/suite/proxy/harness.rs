//! Drives the real `mcppol proxy` binary over pipes, as a host does.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub const WAIT: Duration = Duration::from_secs(20);

pub fn scripted_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proxy/scripted_server.py")
}

/// A running proxy with the host side in the test's hands.
pub struct Proxy {
    pub child: Child,
    stdin: Option<ChildStdin>,
    out: Receiver<Value>,
    /// Messages read while waiting for something else.
    pub backlog: Vec<Value>,
    pub stderr: PathBuf,
    next_id: i64,
}

impl Proxy {
    /// `mcppol proxy ARGS... -- python3 scripted_server.py`, with the
    /// server's log at `log`.
    pub fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Proxy {
        let stderr = dir.join("proxy.stderr");
        let mut cmd = Command::new(crate::common::MCPPOL);
        cmd.arg("proxy")
            .args(args)
            .arg("--")
            .arg("python3")
            .arg(scripted_server())
            .env("SCRIPTED_LOG", dir.join("server.log"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap());
        for (k, v) in env {
            cmd.env(k, v);
        }
        Proxy::spawn(cmd, stderr)
    }

    pub fn spawn(mut cmd: Command, stderr: PathBuf) -> Proxy {
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, out) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("the proxy wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        Proxy {
            stdin: child.stdin.take(),
            child,
            out,
            backlog: Vec::new(),
            stderr,
            next_id: 1,
        }
    }

    pub fn send(&mut self, msg: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message the proxy writes.
    pub fn recv(&mut self) -> Value {
        if !self.backlog.is_empty() {
            return self.backlog.remove(0);
        }
        self.out.recv_timeout(WAIT).unwrap_or_else(|e| {
            panic!(
                "no message from the proxy: {e}; stderr:\n{}",
                self.stderr_text()
            )
        })
    }

    /// Waits for the first message `pick` accepts; keeps the others.
    pub fn wait_for(&mut self, pick: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&pick) {
            return self.backlog.remove(i);
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.out.recv_timeout(left) {
                Ok(v) if pick(&v) => return v,
                Ok(v) => self.backlog.push(v),
                Err(e) => panic!(
                    "waited in vain ({e:?}); backlog {:?}; stderr:\n{}",
                    self.backlog,
                    self.stderr_text()
                ),
            }
        }
    }

    /// Whether the proxy writes anything within `d`.
    pub fn quiet_for(&mut self, d: Duration) -> bool {
        match self.out.recv_timeout(d) {
            Ok(v) => {
                self.backlog.push(v);
                false
            }
            Err(RecvTimeoutError::Timeout) => true,
            Err(RecvTimeoutError::Disconnected) => true,
        }
    }

    /// Sends a request with a fresh id and waits for its answer.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait_for(|m| m.get("id") == Some(&json!(id)) && m.get("method").is_none())
    }

    /// The handshake, as a host with `capabilities`.
    pub fn initialize(&mut self, capabilities: Value) -> Value {
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                   "clientInfo": {"name": "test-host", "version": "1"}}),
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }

    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// Closes the host side and waits for the proxy to exit.
    pub fn close(&mut self) -> std::process::ExitStatus {
        self.close_input();
        self.wait_exit(WAIT)
    }

    /// The proxy's stdin, for a test that writes it on a thread of its own
    /// (dropping it closes it).
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().unwrap()
    }

    /// Closes the proxy's stdin (the host goes away) and leaves it running.
    pub fn close_input(&mut self) {
        drop(self.stdin.take());
    }

    /// Waits up to `within` for the proxy to exit on its own.
    pub fn wait_exit(&mut self, within: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the proxy did not exit within {within:?}; stderr:\n{}",
                self.stderr_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the first message `pick` accepts and drops the others
    /// (a flood is not kept in memory); the message and how many were
    /// dropped.
    pub fn wait_dropping(&mut self, pick: impl Fn(&Value) -> bool) -> (Value, usize) {
        let mut dropped = 0;
        if let Some(i) = self.backlog.iter().position(&pick) {
            dropped = i;
            let v = self.backlog.remove(i);
            self.backlog.drain(..i);
            return (v, dropped);
        }
        dropped += self.backlog.len();
        self.backlog.clear();
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.out.recv_timeout(left) {
                Ok(v) if pick(&v) => return (v, dropped),
                Ok(_) => dropped += 1,
                Err(e) => panic!(
                    "waited in vain ({e:?}) after dropping {dropped} messages; stderr:\n{}",
                    self.stderr_text()
                ),
            }
        }
    }

    /// A field of the proxy's `/proc/PID/status` in KiB (`VmRSS:`,
    /// `VmHWM:`), while it runs.
    #[cfg(target_os = "linux")]
    pub fn status_kib(&self, field: &str) -> u64 {
        proc_status_kib(self.child.id(), field)
    }

    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A field of `/proc/PID/status` in KiB (`VmRSS:`, `VmHWM:`); 0 when the
/// process is gone.
#[cfg(target_os = "linux")]
pub fn proc_status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The text of a tool result's first block.
pub fn text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// The messages the scripted server received.
pub fn server_log(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("server.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
