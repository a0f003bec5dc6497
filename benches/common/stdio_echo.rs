//! What benches/proxy.rs and benches/otlp.rs share: the policy they run,
//! the echo server (the bench binary itself, started with
//! `MCPPOL_BENCH_ECHO_SERVER=1`), and a client session over a child's
//! pipes that has done the MCP handshake. Each bench adds its own
//! `time_calls` to `Session`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

pub const POLICY: &str = r#"
policy bench {
  default deny
  deny outside: "bench/*" when args.path escapes "/srv"
  allow "bench/echo" when args.path inside "/srv"
}
"#;

pub fn echo_server() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            continue;
        };
        let result = match msg["method"].as_str() {
            Some("initialize") => {
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                         "serverInfo": {"name": "echo", "version": "1"}})
            }
            Some("tools/list") => {
                json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
            }
            Some("tools/call") => {
                json!({"content": [{"type": "text", "text": msg["params"]["arguments"]["path"]}]})
            }
            _ => json!({}),
        };
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
        writeln!(out, "{answer}").unwrap();
        out.flush().unwrap();
    }
}

pub struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: i64,
}

impl Session {
    pub fn start(mut cmd: Command) -> Session {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Session {
            child,
            stdin,
            stdout,
            next: 1,
        };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "bench", "version": "1"}}),
        );
        writeln!(
            s.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        s.request("tools/list", json!({}));
        s
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        let mut answer = String::new();
        loop {
            answer.clear();
            assert!(
                self.stdout.read_line(&mut answer).unwrap() > 0,
                "the other side closed"
            );
            let v: Value = serde_json::from_str(&answer).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
