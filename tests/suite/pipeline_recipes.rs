//! The recipes of the reference documents, as working code: an audit log,
//! secret redaction, a path sandbox, a cost guard, a read-only freeze and
//! answering from a cache.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mcppol::mcp::text_result;
use mcppol::mcp::{FakeServer, MemoryTransport};
use mcppol::pipeline::*;
use mcppol::{PolicySet, Reason};
use serde_json::{json, Value};

fn pipeline(fake: &FakeServer, server: &str, text: &str, hooks: Vec<Hook>) -> Pipeline {
    let set = PolicySet::from_text("r.mcppol", text)
        .map_err(|e| e.render(false))
        .unwrap();
    let policy = set.iter().next().unwrap().clone();
    Pipeline::builder(
        server,
        Arc::new(MemoryTransport::new(fake.clone())),
        PolicySource::Fixed(policy),
    )
    .hooks(hooks)
    .build()
    .unwrap()
}

/// Audit log: an after-hook that records who called what (the digest, not
/// the arguments) and never blocks the result, even when the sink fails.
#[tokio::test]
async fn audit_log() {
    let fake = FakeServer::new().tool(json!({"name": "get_issue"}), |_| Ok(text_result("issue 7")));
    let sink: Arc<Mutex<Vec<String>>> = Arc::default();
    let broken = Arc::new(AtomicBool::new(false));
    let (s, b) = (sink.clone(), broken.clone());
    let audit = Hook::after(
        "audit",
        Matcher::All,
        move |call: ToolCall, r: ToolResult, ctx: HookCtx| {
            let (s, b) = (s.clone(), b.clone());
            async move {
                if b.load(Ordering::SeqCst) {
                    return Err(HookError("audit sink unreachable".into()));
                }
                s.lock().unwrap().push(format!(
                    "{} {}/{} {} error={}",
                    ctx.principal.as_deref().unwrap_or("-"),
                    call.server,
                    call.name,
                    call.digest(),
                    r.is_error
                ));
                Ok(After::Continue)
            }
        },
    )
    .on_error(OnError::Ignore);
    let p = pipeline(
        &fake,
        "github",
        r#"policy r { allow "github/get_issue" }"#,
        vec![audit],
    );
    let args = json!({"number": 7, "note": "private"});
    let opts = CallOptions::default().principal("ann");
    p.call_tool("get_issue", args.clone(), &opts).await.unwrap();
    let line = sink.lock().unwrap()[0].clone();
    assert_eq!(
        line,
        format!("ann github/get_issue {} error=false", args_digest(&args))
    );
    assert!(!line.contains("private"));
    broken.store(true, Ordering::SeqCst);
    assert_eq!(
        p.call_tool("get_issue", args, &opts)
            .await
            .unwrap()
            .joined_text(),
        "issue 7"
    );
}

/// Secret redaction: an after-hook that rewrites tokens out of the
/// result; if it fails, the result is withheld, not passed unredacted.
#[tokio::test]
async fn secret_redaction() {
    let token = format!("ghp_{}", "a1".repeat(18));
    let t = token.clone();
    let fake = FakeServer::new().tool(json!({"name": "get_file"}), move |_| {
        Ok(text_result(&format!("key={t} end")))
    });
    let re = regex::Regex::new(r"\b(ghp|gho|ghs)_[A-Za-z0-9]{36}\b").unwrap();
    let redact = Hook::after(
        "redact",
        Matcher::pattern("github/*"),
        move |_, mut r: ToolResult, _| {
            let re = re.clone();
            async move {
                for block in &mut r.content {
                    if let Some(text) = block.get("text").and_then(Value::as_str) {
                        block["text"] = json!(re.replace_all(text, "[redacted]"));
                    }
                }
                Ok(After::Replace(r))
            }
        },
    );
    let p = pipeline(
        &fake,
        "github",
        r#"policy r { allow "github/get_file" }"#,
        vec![redact],
    );
    let r = p
        .call_tool("get_file", json!({}), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "key=[redacted] end");

    let crashing = Hook::after("redact", Matcher::pattern("github/*"), |_, _, _| async {
        Err::<After, _>(HookError("regex engine failed".into()))
    });
    let p = pipeline(
        &fake,
        "github",
        r#"policy r { allow "github/get_file" }"#,
        vec![crashing],
    );
    let r = p
        .call_tool("get_file", json!({}), &CallOptions::default())
        .await
        .unwrap();
    assert!(r.is_error && !r.joined_text().contains(&token));
}

/// Path sandbox: deny any call whose path leaves the sandbox, ask for
/// writes, allow reads inside it.
#[tokio::test]
async fn path_sandbox() {
    let fake = FakeServer::new()
        .tool(json!({"name": "read_file"}), |_| Ok(text_result("data")))
        .tool(json!({"name": "write_file"}), |_| {
            Ok(text_result("written"))
        });
    let text = r#"policy r {
        deny sandbox: "fs/*" when args.path escapes "/srv/sandbox"
        ask "fs/write_*"
        allow "fs/read_file" when args.path inside "/srv/sandbox"
    }"#;
    let p = pipeline(&fake, "fs", text, vec![]);
    let o = CallOptions::default();
    assert!(p
        .call_tool("read_file", json!({"path": "/srv/sandbox/a/../b"}), &o)
        .await
        .is_ok());
    for path in ["/srv/sandbox/../../etc/passwd", "/srv/sandboxed/x", "../x"] {
        let e = p
            .call_tool("read_file", json!({"path": path}), &o)
            .await
            .unwrap_err();
        assert_eq!(
            e.decision.unwrap().rule_id.as_deref(),
            Some("sandbox"),
            "{path}"
        );
    }
    let e = p
        .call_tool("write_file", json!({"path": "/srv/sandbox/a"}), &o)
        .await
        .unwrap_err();
    assert_eq!(e.reason, ErrorReason::Policy(Reason::NoApprover));
}

/// Cost guard: a before-hook that answers with a synthetic result once a
/// principal's budget is spent; nothing is sent then.
#[tokio::test]
async fn cost_guard() {
    let fake = FakeServer::new().tool(json!({"name": "query"}), |_| Ok(text_result("results")));
    let budget = Arc::new(AtomicI64::new(2));
    let b = budget.clone();
    let guard = Hook::before("cost_guard", Matcher::pattern("search/*"), move |_, _| {
        let b = b.clone();
        async move {
            if b.fetch_sub(1, Ordering::SeqCst) > 0 {
                Ok(Before::Continue)
            } else {
                Ok(Before::Halt(ToolResult::error_text(
                    "Tool budget exhausted for today.",
                )))
            }
        }
    });
    let p = pipeline(
        &fake,
        "search",
        r#"policy r { allow "search/query" }"#,
        vec![guard],
    );
    let o = CallOptions::default();
    for _ in 0..2 {
        assert_eq!(
            p.call_tool("query", json!({}), &o)
                .await
                .unwrap()
                .joined_text(),
            "results"
        );
    }
    let r = p.call_tool("query", json!({}), &o).await.unwrap();
    assert!(r.is_error);
    assert_eq!(r.joined_text(), "Tool budget exhausted for today.");
    assert_eq!(fake.calls().len(), 2);
}

/// Read-only freeze: during a change freeze a before-hook denies every
/// tool whose name says it writes (loosely matched, like deny rules).
#[tokio::test]
async fn read_only_freeze() {
    let fake = FakeServer::new()
        .tool(json!({"name": "list_repos"}), |_| Ok(text_result("repos")))
        .tool(json!({"name": "Create-Branch"}), |_| {
            Ok(text_result("created"))
        })
        .tool(json!({"name": "merge_pull_request"}), |_| {
            Ok(text_result("merged"))
        });
    let frozen = Arc::new(AtomicBool::new(true));
    let f = frozen.clone();
    let freeze = Hook::before(
        "freeze",
        Matcher::regex("*", "^(create|update|delete|merge|push)").unwrap(),
        move |_, _| {
            let f = f.clone();
            async move {
                if f.load(Ordering::SeqCst) {
                    Ok(Before::Deny("change freeze in effect".into()))
                } else {
                    Ok(Before::Continue)
                }
            }
        },
    );
    let text = r#"policy r { allow "github/list_repos", "github/Create-Branch", "github/merge_pull_request" }"#;
    let p = pipeline(&fake, "github", text, vec![freeze]);
    let o = CallOptions::default();
    assert!(p.call_tool("list_repos", json!({}), &o).await.is_ok());
    for tool in ["Create-Branch", "merge_pull_request"] {
        let e = p.call_tool(tool, json!({}), &o).await.unwrap_err();
        assert_eq!(
            (e.reason, e.hook_id.as_deref()),
            (ErrorReason::HookDenied, Some("freeze")),
            "{tool}"
        );
    }
    frozen.store(false, Ordering::SeqCst);
    assert!(p
        .call_tool("merge_pull_request", json!({}), &o)
        .await
        .is_ok());
    assert_eq!(fake.calls().len(), 2);
}

/// Answering from a cache: an around hook keyed by the argument digest;
/// a hit never reaches the server, but policy still runs first.
#[tokio::test]
async fn answering_from_a_cache() {
    let fetched = Arc::new(AtomicUsize::new(0));
    let f = fetched.clone();
    let fake = FakeServer::new().tool(json!({"name": "get_weather"}), move |a| {
        f.fetch_add(1, Ordering::SeqCst);
        Ok(text_result(&format!(
            "sunny in {}",
            a["city"].as_str().unwrap_or("?")
        )))
    });
    let cache: Arc<Mutex<HashMap<String, ToolResult>>> = Arc::default();
    let c = cache.clone();
    let caching = Hook::around(
        "cache",
        Matcher::pattern("weather/get_weather"),
        move |call: ToolCall, next: Next, _| {
            let c = c.clone();
            async move {
                let key = call.digest();
                if let Some(hit) = c.lock().unwrap().get(&key).cloned() {
                    return Ok(hit);
                }
                let fresh = next.run().await?;
                if !fresh.is_error {
                    c.lock().unwrap().insert(key, fresh.clone());
                }
                Ok(fresh)
            }
        },
    );
    let text = r#"policy r { deny "weather/get_weather" when args.city == "Atlantis"
                             allow "weather/get_weather" }"#;
    let p = pipeline(&fake, "weather", text, vec![caching]);
    let o = CallOptions::default();
    for _ in 0..3 {
        let r = p
            .call_tool("get_weather", json!({"city": "Oslo"}), &o)
            .await
            .unwrap();
        assert_eq!(r.joined_text(), "sunny in Oslo");
    }
    assert_eq!(fetched.load(Ordering::SeqCst), 1);
    let e = p
        .call_tool("get_weather", json!({"city": "Atlantis"}), &o)
        .await
        .unwrap_err();
    assert_eq!(e.reason, ErrorReason::Policy(Reason::DenyRule));
}
