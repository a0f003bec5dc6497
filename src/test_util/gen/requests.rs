//! The generated requests: each rule's server and tool called with
//! arguments that reach its conditions, spelt the ways loose matching
//! allows, and the request forms the benches decide.

use serde_json::{json, Value};

use super::servers::{s, NOUNS};
use super::{PolicySpec, Rng, Server};

/// One request, owned: the benches borrow an `crate::Request` from it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSpec {
    /// The server id.
    pub server: String,
    /// The tool, as called (maybe spelt another way than the rule).
    pub tool: String,
    /// The call's arguments.
    pub args: Value,
    /// The tool's annotations.
    pub annotations: Value,
    /// The servers whose output is in the model's context.
    pub taint: Vec<String>,
    /// Who calls.
    pub principal: String,
    /// Host data (`assigns.KEY`).
    pub assigns: Value,
}

impl RequestSpec {
    /// The taint, borrowed.
    pub fn taint_refs(&self) -> Vec<&str> {
        self.taint.iter().map(String::as_str).collect()
    }
}

/// Lower-case, and `-`, `.`, `_` made `_` (the engine's folding, for ASCII
/// names).
pub fn fold(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '-' | '.' | '_' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

fn args_for(server: &Server, tool: &str, rng: &mut Rng) -> Value {
    let root = format!("/srv/{}", server.id);
    match tool {
        "push" | "push_tags" => json!({ "force": rng.chance(40), "remote": "origin" }),
        t if t.starts_with("merge_") => {
            json!({ "branch": rng.pick(&["dev", "staging", "main"]), "squash": true })
        }
        "run_workflow" => json!({
            "ref": rng.pick(&["refs/heads/release-1.2", "refs/heads/main", "refs/tags/v1"]),
            "workflow": "ci.yml",
        }),
        "read_file" | "write_file" | "move_file" | "list_directory" | "share_file" => {
            let path = match rng.below(6) {
                0 => format!("{root}/notes/todo.md"),
                1 => format!("{root}/a/../b/./c.txt"),
                2 => format!("{root}/../../etc/passwd"),
                3 => format!("{root}ed/x.txt"),
                4 => "/etc/shadow".to_string(),
                _ => format!("{root}/"),
            };
            json!({ "path": path, "content": "hello" })
        }
        "query" => json!({
            "sql": "select * from t",
            "limit": *rng.pick(&[10, 500, 5_000, 50_000]),
            "mode": rng.pick(&["read", "explain", "write"]),
            "table": rng.pick(&["users", "tmp_import", "orders"]),
        }),
        "post_message" | "send_dm" | "send_email" => json!({
            "channel": rng.pick(&["general", "eng", "random"]),
            "text": "build is green",
        }),
        "close_ticket" | "assign_ticket" => {
            json!({ "id": rng.pick(&["T-1042", "BUG-7"]), "note": "done" })
        }
        "create_ticket" => json!({ "title": "flaky test", "priority": rng.below(5) }),
        "deploy" | "scale_cluster" => json!({ "replicas": *rng.pick(&[2, 8, 40]) }),
        _ => json!({ "id": rng.below(1000), "query": "status:open" }),
    }
}

fn annotations_for(rng: &mut Rng) -> Value {
    match rng.below(4) {
        0 => json!({}),
        1 => json!({ "readOnlyHint": true, "openWorldHint": false }),
        2 => json!({ "readOnlyHint": false, "destructiveHint": false }),
        _ => json!({ "readOnlyHint": true, "destructiveHint": false, "openWorldHint": true }),
    }
}

/// A tool name as a client might send it: usually as listed, sometimes in
/// another case or punctuation (which deny and ask rules still catch).
fn spell(tool: &str, rng: &mut Rng) -> String {
    match rng.below(10) {
        0 => tool.replace('_', "-"),
        1 => tool.to_uppercase(),
        2 => {
            let mut c = tool.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect(),
                None => String::new(),
            }
        }
        _ => tool.to_string(),
    }
}

/// Candidate requests over the policy's servers, spread evenly, for the
/// benches to sort by outcome. Some name tools no rule knows, some name
/// servers the policy has never heard of.
pub fn candidates(policy: &PolicySpec, count: usize, seed: u64) -> Vec<RequestSpec> {
    let mut rng = Rng::new(seed ^ 0x0072_6571_7565_7374);
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let server = rng.pick(&policy.servers).clone();
        let tool = match rng.below(12) {
            0 => format!("frobnicate_{}", rng.pick(&NOUNS)),
            1 => rng
                .pick(&["status", "ping", "exec_shell", "purge_cache", "share_link"])
                .to_string(),
            _ => rng.pick(&server.tools).clone(),
        };
        let server_id = if rng.below(25) == 0 {
            format!("unknown-{}", rng.below(100))
        } else {
            server.id.clone()
        };
        let args = args_for(&server, &tool, &mut rng);
        let taint = match rng.below(10) {
            0..=5 => vec![],
            6 => vec![server_id.clone()],
            7 => vec![s("docs")],
            8 => vec![s("jira"), s("docs")],
            _ => vec![policy.servers[rng.below(policy.servers.len())].id.clone()],
        };
        out.push(RequestSpec {
            server: server_id,
            tool: spell(&tool, &mut rng),
            args,
            annotations: annotations_for(&mut rng),
            taint,
            principal: rng.pick(&["dana", "omar", "eve"]).to_string(),
            assigns: json!({ "role": rng.pick(&["ops", "dev"]), "team": "platform" }),
        });
    }
    out
}

/// Request kinds, by the source that decides them.
pub const KINDS: [&str; 4] = ["deny", "ask", "allow", "default"];

/// Picks `per_kind` requests of each kind from `candidates`, given each
/// candidate's kind (an index into [`KINDS`], as the engine decided it).
/// Returns (kind, request) in a deterministic interleaved order.
pub fn mix(
    candidates: Vec<RequestSpec>,
    kinds: &[usize],
    per_kind: usize,
) -> Vec<(usize, RequestSpec)> {
    let mut buckets: [Vec<RequestSpec>; 4] = Default::default();
    for (request, &kind) in candidates.into_iter().zip(kinds) {
        if let Some(bucket) = buckets.get_mut(kind) {
            if bucket.len() < per_kind {
                bucket.push(request);
            }
        }
    }
    let mut out = Vec::new();
    for i in 0..per_kind {
        for (kind, bucket) in buckets.iter().enumerate() {
            if let Some(r) = bucket.get(i) {
                out.push((kind, r.clone()));
            }
        }
    }
    out
}

/// Lexical canonical form of an absolute path (the contract's rules, for
/// the ASCII absolute paths the generator makes): `None` when it fails.
pub fn canonical(path: &str) -> Option<String> {
    if path.contains('\0') || path.contains('\\') || !path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// A borrowed mcppol request over an owned one (`taint` from
/// [`RequestSpec::taint_refs`]). Building it allocates nothing.
pub fn mcppol_request<'a>(r: &'a RequestSpec, taint: &'a [&'a str]) -> crate::Request<'a> {
    crate::Request::tool(&r.server, &r.tool)
        .with_args(&r.args)
        .with_annotations(&r.annotations)
        .with_taint(taint)
        .with_principal(&r.principal)
        .with_assigns(&r.assigns)
}

/// The kind of a decision: an index into [`KINDS`] (4 for any other source).
pub fn kind_of(decision: &crate::Decision) -> usize {
    match decision.source {
        crate::Source::Deny => 0,
        crate::Source::Ask => 1,
        crate::Source::Allow => 2,
        crate::Source::Default => 3,
        _ => 4,
    }
}
