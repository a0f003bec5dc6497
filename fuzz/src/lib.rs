//! What the fuzz targets share: the bundled policies, arbitrary JSON and
//! arbitrary requests built from the fuzzer's bytes, and a fixed spread of
//! requests to compare two policies' decisions on.

use std::sync::{Arc, OnceLock};

use arbitrary::{Arbitrary, Result, Unstructured};
use mcppol::{Decision, Policy, PolicySet, Request, TargetKind, ToolApproval};
use serde_json::{Map, Number, Value};

/// The bundled policies (`policies/*.mcppol`), compiled once.
pub fn bundled() -> &'static [Arc<Policy>] {
    static POLICIES: OnceLock<Vec<Arc<Policy>>> = OnceLock::new();
    POLICIES.get_or_init(|| {
        let texts = [
            (
                "filesystem.mcppol",
                include_str!("../../policies/filesystem.mcppol"),
            ),
            (
                "github.mcppol",
                include_str!("../../policies/github.mcppol"),
            ),
            ("mail.mcppol", include_str!("../../policies/mail.mcppol")),
            (
                "strict.mcppol",
                include_str!("../../policies/strict.mcppol"),
            ),
        ];
        let mut out = Vec::new();
        for (origin, text) in texts {
            match PolicySet::from_text(origin, text) {
                Ok(set) => out.extend(set.iter().cloned()),
                // The bundled policies load in `cargo test`; a fuzz build
                // that cannot load them is broken, not a finding.
                Err(e) => panic!("{origin} does not load: {}", e.render(false)),
            }
        }
        out
    })
}

/// Server ids the bundled policies name, and some that are odd.
const SERVERS: &[&str] = &[
    "fs", "github", "mail", "docs", "web", "wiki", "ops", "ci", "git", "x", "", "a/b", "FS",
    "Git-Hub",
];

/// Names the bundled policies name, and their loose cousins.
const NAMES: &[&str] = &[
    "read_text_file",
    "write_file",
    "move_file",
    "edit_file",
    "read_multiple_files",
    "delete_repository",
    "Delete-Repository",
    "create_issue",
    "push_files",
    "merge_pull_request",
    "get_file_contents",
    "send_message",
    "reply_all",
    "forward",
    "restart_service",
    "search",
    "fetch",
    "drop_table",
    "shutdown_now",
    "list_secrets",
    "file:///srv/sandbox/a",
    "file:///srv/sandbox/../../etc/passwd",
    "repo://o/r/%2e%2e/x",
    "inbox://me/1",
    "repo://%zz",
];

/// Argument keys the bundled policies test.
const KEYS: &[&str] = &[
    "path",
    "paths",
    "source",
    "destination",
    "branch",
    "to",
    "attachments",
    "attempt",
    "recipient_count",
    "team",
    "odd key",
];

/// Strings worth trying as values: paths and their tricks.
const STRINGS: &[&str] = &[
    "/srv/sandbox",
    "/srv/sandbox/a",
    "/srv/sandbox/../etc/passwd",
    "/srv/sandboxed",
    "a/../../x",
    "./x",
    "a\\b",
    "x\u{0}y",
    "main",
    "ops-bot",
    "a@example.com",
    "",
    "e\u{301}",
];

/// A string: one of `pool`, or the fuzzer's own.
pub fn string(u: &mut Unstructured, pool: &[&str]) -> Result<String> {
    if u.ratio(3, 4)? {
        Ok((*u.choose(pool)?).to_string())
    } else {
        Ok(String::arbitrary(u)?)
    }
}

/// A JSON value at most `depth` containers deep.
pub fn json(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let top = if depth == 0 { 4 } else { 6 };
    Ok(match u.int_in_range(0..=top)? {
        0 => Value::Null,
        1 => Value::Bool(bool::arbitrary(u)?),
        2 => Value::from(i64::arbitrary(u)?),
        3 => {
            let n = match u.int_in_range(0..=2)? {
                0 => Number::from(u64::arbitrary(u)?),
                _ => Number::from_f64(f64::arbitrary(u)?).unwrap_or_else(|| Number::from(0)),
            };
            Value::Number(n)
        }
        4 => Value::String(string(u, STRINGS)?),
        5 => {
            let n = u.int_in_range(0..=4)?;
            let mut items = Vec::new();
            for _ in 0..n {
                items.push(json(u, depth - 1)?);
            }
            Value::Array(items)
        }
        _ => Value::Object(object(u, depth - 1)?),
    })
}

/// A JSON object whose keys mostly come from [`KEYS`].
pub fn object(u: &mut Unstructured, depth: u32) -> Result<Map<String, Value>> {
    let n = u.int_in_range(0..=4)?;
    let mut map = Map::new();
    for _ in 0..n {
        map.insert(string(u, KEYS)?, json(u, depth)?);
    }
    Ok(map)
}

/// An owned request the fuzzer builds; [`FuzzRequest::with`] lends it as a
/// [`Request`].
#[derive(Debug)]
pub struct FuzzRequest {
    pub kind: TargetKind,
    pub server: String,
    pub name: String,
    pub args: Option<Value>,
    pub annotations: Option<Value>,
    pub taint: Vec<String>,
    pub principal: Option<String>,
    pub assigns: Option<Value>,
    pub has_approver: bool,
    pub approval: ToolApproval,
    pub trusted: bool,
}

impl<'a> Arbitrary<'a> for FuzzRequest {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let kind = *u.choose(&TargetKind::ALL)?;
        let server = string(u, SERVERS)?;
        let name = string(u, NAMES)?;
        let args = if u.ratio(7, 8)? {
            Some(Value::Object(object(u, 4)?))
        } else {
            Some(json(u, 2)?)
        };
        let annotations = if bool::arbitrary(u)? {
            let mut m = Map::new();
            for key in [
                "readOnlyHint",
                "destructiveHint",
                "openWorldHint",
                "idempotentHint",
            ] {
                if bool::arbitrary(u)? {
                    m.insert(key.into(), json(u, 0)?);
                }
            }
            Some(Value::Object(m))
        } else {
            None
        };
        let mut taint = Vec::new();
        for _ in 0..u.int_in_range(0..=3)? {
            taint.push(string(u, SERVERS)?);
        }
        let principal = if bool::arbitrary(u)? {
            Some(string(u, &["ops-bot", "dana", "ann", ""])?)
        } else {
            None
        };
        let assigns = if bool::arbitrary(u)? {
            Some(Value::Object(object(u, 2)?))
        } else {
            None
        };
        Ok(FuzzRequest {
            kind,
            server,
            name,
            args,
            annotations,
            taint,
            principal,
            assigns,
            has_approver: bool::arbitrary(u)?,
            approval: *u.choose(&[
                ToolApproval::Approved,
                ToolApproval::Changed,
                ToolApproval::New,
            ])?,
            trusted: bool::arbitrary(u)?,
        })
    }
}

impl FuzzRequest {
    /// Runs `f` on the borrowed [`Request`].
    pub fn with<T>(&self, f: impl FnOnce(&Request<'_>) -> T) -> T {
        let taint: Vec<&str> = self.taint.iter().map(String::as_str).collect();
        let mut r = Request::new(self.kind, &self.server, &self.name)
            .with_taint(&taint)
            .with_approval(self.approval)
            .with_trusted_server(self.trusted);
        if let Some(a) = &self.args {
            r = r.with_args(a);
        }
        if let Some(a) = &self.annotations {
            r = r.with_annotations(a);
        }
        if let Some(p) = &self.principal {
            r = r.with_principal(p);
        }
        if let Some(a) = &self.assigns {
            r = r.with_assigns(a);
        }
        if !self.has_approver {
            r = r.without_approver();
        }
        f(&r)
    }
}

/// The invariants every decision keeps, whatever the request:
/// - without an approver (or for a resource or prompt) nothing is `ask`;
/// - `allow` comes only from an allow rule or an ungoverned kind;
/// - a request naming a server with `/` is denied before any rule.
pub fn check_decision(r: &Request<'_>, d: &Decision) {
    use mcppol::{Reason, Source, Verdict};
    if !r.approver_available() {
        assert_ne!(
            d.decision,
            Verdict::Ask,
            "ask without an approver: {r:?} {d:?}"
        );
    }
    if d.decision == Verdict::Allow {
        assert!(
            d.source == Source::Allow
                || (d.source == Source::Default && d.reason == Reason::OutOfScope),
            "allow from {:?}/{:?}: {r:?}",
            d.source,
            d.reason
        );
    }
    if r.server.contains('/') {
        assert_eq!(
            (d.decision, d.reason),
            (Verdict::Deny, Reason::BadServer),
            "{r:?}"
        );
    }
    if d.source == Source::Allow {
        assert_eq!(d.decision, Verdict::Allow);
        assert!(d.rule_id.is_some());
    }
}

/// A fixed spread of requests (names, arguments, taint, approval states)
/// to compare two policies on.
pub fn spread() -> &'static [FuzzRequest] {
    static SPREAD: OnceLock<Vec<FuzzRequest>> = OnceLock::new();
    SPREAD.get_or_init(|| {
        let args = [
            serde_json::json!({}),
            serde_json::json!({"path": "/srv/a", "mode": "r", "n": 2, "id": "T-1"}),
            serde_json::json!({"path": "/etc", "source": "/srv/x", "destination": "/tmp", "to": "a@example.com"}),
            serde_json::json!({"path": 3, "n": "x", "paths": ["/srv/sandbox/a"], "odd key": [{"name": "z"}]}),
        ];
        let names = [
            ("a", "x"),
            ("a", "b"),
            ("b", "y"),
            ("c", "z"),
            ("s", "r/e"),
            ("fs", "read_text_file"),
            ("fs", "write_file"),
            ("github", "delete_repo"),
            ("mail", "send"),
            ("x", "y"),
            ("x", "Delete-Repo"),
            ("a", "file:///srv/a"),
        ];
        let mut out = Vec::new();
        for (server, name) in names {
            for (i, a) in args.iter().enumerate() {
                for kind in TargetKind::ALL {
                    out.push(FuzzRequest {
                        kind,
                        server: server.into(),
                        name: name.into(),
                        args: Some(a.clone()),
                        annotations: None,
                        taint: if i % 2 == 1 { vec!["web".into()] } else { vec![] },
                        principal: Some(["dana", "p", "ann"][i % 3].into()),
                        assigns: None,
                        has_approver: i % 3 != 2,
                        approval: [ToolApproval::Approved, ToolApproval::New, ToolApproval::Changed][i % 3],
                        trusted: false,
                    });
                }
            }
        }
        out
    })
}

/// Every policy's decisions over [`spread`], lines left out (formatting may
/// move a rule to another line).
pub fn decisions(set: &PolicySet) -> Vec<String> {
    let mut out = Vec::new();
    for p in set.iter() {
        for r in spread() {
            let mut d = r.with(|req| p.decide(req));
            d.line = None;
            d.rule_span = None;
            out.push(format!("{} {} {}", p.name(), r.name, d.to_json()));
        }
    }
    out
}
