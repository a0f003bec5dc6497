//! A governed MCP client against the real `@modelcontextprotocol/server-filesystem`
//! (installed by `.ci/e2e-deps` into `.e2e/node`).
//!
//! It starts the server on a fresh sandbox folder, governs it with a policy
//! (paths confined to the sandbox, dotfiles denied, writes asked), an audit
//! hook, a redaction hook and an approver, then checks that every governed
//! outcome is the expected one. It exits non-zero on the first that is not.
//!
//!     .ci/e2e-deps && cargo run --example governed_client

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcppol::mcp::{ConnectOptions, StdioTransport, Transport};
use mcppol::pipeline::{
    After, Approval, ApprovalRequest, CallError, CallOptions, ErrorKind, ErrorReason, Hook,
    Matcher, OnError, Pipeline, PolicySource, ToolResult, Validation,
};
use mcppol::{PolicySet, Reason};
use serde_json::{json, Value};

const SERVER_JS: &str =
    ".e2e/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js";

type Check = Result<(), String>;

fn expect(what: &str, ok: bool, detail: impl std::fmt::Debug) -> Check {
    if ok {
        println!("ok   {what}");
        Ok(())
    } else {
        Err(format!("FAIL {what}: {detail:?}"))
    }
}

fn denied(out: &Result<ToolResult, CallError>, reason: ErrorReason) -> bool {
    matches!(out, Err(e) if e.kind == ErrorKind::Denied && e.reason == reason)
}

fn sandbox() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("mcppol-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let dir = dir.canonicalize().map_err(|e| e.to_string())?;
    std::fs::write(
        dir.join("notes.txt"),
        "hello from the sandbox\ntoken: ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\n",
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(dir.join(".env"), "API_KEY=do-not-read").map_err(|e| e.to_string())?;
    Ok(dir)
}

fn policy(root: &Path) -> Result<PolicySource, String> {
    let root = root.display();
    let text = format!(
        r#"policy fs {{
  default deny
  trusted "fs"
  deny outside: "fs/*" when args.path escapes "{root}"
  deny dotfiles: "fs/*" when args.path matches /(^|\/)\.env$/
  ask changes: "fs/write_file", "fs/edit_file"
  allow reads: "fs/read_text_file", "fs/list_directory", "fs/get_file_info"
    when args.path inside "{root}"
  allow "fs/list_allowed_directories"
}}"#
    );
    let set = PolicySet::from_text("fs.mcppol", &text).map_err(|e| e.render(false))?;
    let p = set.get("fs").ok_or("no policy fs")?.clone();
    Ok(PolicySource::Fixed(p))
}

fn redact(text: &str) -> String {
    // GitHub tokens: ghp_ followed by 36 letters or digits.
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("ghp_") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 4..];
        let n = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .count();
        if n >= 36 {
            out.push_str("[redacted]");
            rest = &tail[n..];
        } else {
            out.push_str("ghp_");
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

async fn run(root: &Path) -> Check {
    let mut command = tokio::process::Command::new("node");
    command.arg(SERVER_JS).arg(root).stderr(Stdio::null());
    let options = ConnectOptions {
        request_timeout: Duration::from_secs(30),
        ..ConnectOptions::default()
    };
    let transport = Arc::new(
        StdioTransport::spawn(command, options)
            .await
            .map_err(|e| format!("cannot start the filesystem server (run .ci/e2e-deps): {e}"))?,
    );
    println!(
        "server speaks protocol {}",
        transport.server().protocol_version
    );

    let audited = Arc::new(AtomicUsize::new(0));
    let a = audited.clone();
    let audit = Hook::after("audit", Matcher::All, move |call, result: ToolResult, _| {
        let a = a.clone();
        async move {
            // Log the digest, never the arguments.
            println!(
                "     audit: {} {} error={}",
                call.name,
                call.digest(),
                result.is_error
            );
            a.fetch_add(1, Ordering::SeqCst);
            Ok(After::Continue)
        }
    })
    .on_error(OnError::Ignore);
    let redaction = Hook::after(
        "redact",
        Matcher::pattern("fs/read_*"),
        |_, mut r: ToolResult, _| async move {
            for block in &mut r.content {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    block["text"] = json!(redact(text));
                }
            }
            Ok(After::Replace(r))
        },
    );
    let approver = |req: ApprovalRequest| async move {
        let content = req
            .arguments
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or("");
        if content.contains("rm -rf") {
            Ok(Approval::Deny("looks destructive".into()))
        } else {
            Ok(Approval::AllowOnce)
        }
    };
    let pipeline = Pipeline::builder("fs", transport.clone(), policy(root)?)
        .hooks(vec![audit, redaction])
        .approver(approver)
        .validation(Validation {
            arguments: true,
            output: false,
        })
        .build()
        .map_err(|e| e.to_string())?;
    let opts = CallOptions::default().principal("e2e");
    let path = |name: &str| root.join(name).display().to_string();

    let tools = pipeline
        .list_tools(&opts)
        .await
        .map_err(|e| e.to_string())?;
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    expect(
        "the listing has read_text_file and write_file",
        names.contains(&"read_text_file") && names.contains(&"write_file"),
        &names,
    )?;

    let out = pipeline
        .call_tool(
            "read_text_file",
            json!({"path": path("notes.txt")}),
            &opts.clone().shaped(),
        )
        .await;
    let text = out
        .as_ref()
        .map(ToolResult::joined_text)
        .unwrap_or_default();
    expect(
        "a read inside the sandbox is allowed",
        text.contains("hello from the sandbox"),
        &out,
    )?;
    expect(
        "the redaction hook removed the token",
        text.contains("[redacted]") && !text.contains("ghp_"),
        &text,
    )?;
    let from_fs = out
        .as_ref()
        .ok()
        .and_then(|r| r.provenance.as_ref())
        .is_some_and(|p| p.server == "fs");
    expect("the shaped result says where it came from", from_fs, &out)?;

    let out = pipeline
        .call_tool("read_text_file", json!({"path": "/etc/passwd"}), &opts)
        .await;
    expect(
        "a read outside the sandbox is denied by `outside`",
        denied(&out, ErrorReason::Policy(Reason::DenyRule))
            && out
                .as_ref()
                .err()
                .and_then(|e| e.decision.as_ref())
                .and_then(|d| d.rule_id.as_deref())
                == Some("outside"),
        &out,
    )?;

    let out = pipeline
        .call_tool(
            "read_text_file",
            json!({"path": format!("{}/../../etc/passwd", root.display())}),
            &opts,
        )
        .await;
    expect(
        "a dot-dot escape is denied",
        denied(&out, ErrorReason::Policy(Reason::DenyRule)),
        &out,
    )?;

    let out = pipeline
        .call_tool("read_text_file", json!({"path": path(".env")}), &opts)
        .await;
    expect(
        "a dotfile is denied by `dotfiles`",
        denied(&out, ErrorReason::Policy(Reason::DenyRule)),
        &out,
    )?;

    let out = pipeline
        .call_tool("read_text_file", json!({"path": 42}), &opts)
        .await;
    expect(
        "arguments that break the schema are refused",
        matches!(&out, Err(e) if e.reason == ErrorReason::InvalidArguments),
        &out,
    )?;

    let out = pipeline
        .call_tool(
            "write_file",
            json!({"path": path("ok.txt"), "content": "approved"}),
            &opts,
        )
        .await;
    let written = std::fs::read_to_string(root.join("ok.txt")).unwrap_or_default();
    expect(
        "an approved write is sent",
        out.is_ok() && written == "approved",
        (&out, &written),
    )?;

    let out = pipeline
        .call_tool(
            "write_file",
            json!({"path": path("bad.sh"), "content": "rm -rf /"}),
            &opts,
        )
        .await;
    expect(
        "a write the approver declines is not sent",
        denied(&out, ErrorReason::AskDenied) && !root.join("bad.sh").exists(),
        &out,
    )?;

    let out = pipeline
        .call_tool(
            "move_file",
            json!({"source": path("ok.txt"), "destination": path("moved.txt")}),
            &opts,
        )
        .await;
    expect(
        "a tool no rule allows falls to the default deny",
        denied(&out, ErrorReason::Policy(Reason::NoRule)),
        &out,
    )?;

    let out = pipeline.call_tool("run_shell", json!({}), &opts).await;
    expect(
        "an unknown tool is not found",
        matches!(&out, Err(e) if e.kind == ErrorKind::NotFound),
        &out,
    )?;

    expect(
        "the audit hook saw every sent call",
        audited.load(Ordering::SeqCst) == 2,
        audited.load(Ordering::SeqCst),
    )?;

    drop(pipeline);
    let transport =
        Arc::try_unwrap(transport).map_err(|_| "the transport is still shared".to_string())?;
    let status = transport
        .shutdown(Duration::from_secs(5))
        .await
        .map_err(|e| e.to_string())?;
    println!("server stopped: {status}");
    Ok(())
}

fn main() -> ExitCode {
    let root = match sandbox() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot make the sandbox: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start tokio: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(&root));
    let _ = std::fs::remove_dir_all(&root);
    match outcome {
        Ok(()) => {
            println!("every governed outcome was the expected one");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
