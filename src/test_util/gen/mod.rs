//! Generator of realistic policy sets and request mixes for the benchmarks.
//!
//! Shared by the crate's criterion benches, its tests (the parser's
//! differential test, the allocation and wire tests) and the Cedar /
//! regorus comparison crate (`benches/compare`), all as
//! `mcppol::test_util::gen` (feature `test-util`).
//!
//! A policy set of N rules looks like a gateway's: a few global rules (bare
//! tool names, `*/...` globs, a `*` rule on taint and annotations), then one
//! block of rules per MCP server. Scale comes from more servers, each with
//! its own tools: exact targets, prefix and suffix globs, regexes on tool
//! names, argument predicates (comparisons, `in`, `matches`), path
//! predicates (`inside` / `escapes`), taint, annotations, principals and
//! host assigns. Everything is deterministic (a fixed-seed splitmix64).
//!
//! The rules are generated as data ([`RuleSpec`]) and rendered to `.mcppol`
//! text here; the comparison crate renders the same data to Cedar and Rego.
//! Only forms that Cedar can express exactly are generated: globs use `*`
//! only (no `?`), regexes are anchored literals (`/^lit/`, `/lit$/`, which
//! are `like "lit*"` / `like "*lit"`), request paths are absolute (so their
//! canonical form does not depend on the root), numbers are integers.

use std::fmt::Write as _;

use serde_json::{json, Value};

mod servers;

use servers::{global_rules, make_server, s, server_rules, Rules, NOUNS};
pub use servers::{Kind, Server};

/// Rule counts the benchmarks run at.
pub const SIZES: [usize; 4] = [10, 100, 1_000, 10_000];

/// Requests of each kind (by the deciding source) in a mix.
pub const PER_KIND: usize = 16;

/// A deterministic pseudo-random source (splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A rule's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Effect {
    Deny,
    Ask,
    Allow,
}

impl Effect {
    pub fn keyword(self) -> &'static str {
        match self {
            Effect::Deny => "deny",
            Effect::Ask => "ask",
            Effect::Allow => "allow",
        }
    }

    /// Deny and ask rules match names loosely (folded).
    pub fn loose(self) -> bool {
        self != Effect::Allow
    }
}

/// A segment pattern with `*` only: `lit`, `lit*`, `*lit`, `a*b` or `*`.
pub type Glob = String;

/// An anchored literal regex: `/^lit/` or `/lit$/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Re {
    Prefix(String),
    Suffix(String),
}

impl Re {
    /// The regex source, with `/` escaped for `.mcppol` (`\/`).
    pub fn mcppol(&self) -> String {
        match self {
            Re::Prefix(l) => format!("/^{}/", l.replace('/', "\\/")),
            Re::Suffix(l) => format!("/{}$/", l.replace('/', "\\/")),
        }
    }

    /// The regex source as plain text (Rust / RE2 syntax).
    pub fn source(&self) -> String {
        match self {
            Re::Prefix(l) => format!("^{l}"),
            Re::Suffix(l) => format!("{l}$"),
        }
    }

    /// The same test as a `*` glob (Cedar's `like`).
    pub fn as_glob(&self) -> String {
        match self {
            Re::Prefix(l) => format!("{l}*"),
            Re::Suffix(l) => format!("*{l}"),
        }
    }

    pub fn is_match(&self, s: &str) -> bool {
        match self {
            Re::Prefix(l) => s.starts_with(l.as_str()),
            Re::Suffix(l) => s.ends_with(l.as_str()),
        }
    }
}

/// One target of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `"server/tool"`, each segment a glob.
    Pair { server: Glob, tool: Glob },
    /// `"tool"`: that tool on any server.
    Bare { tool: Glob },
    /// `"server" ~ /re/`.
    Regex { server: Glob, re: Re },
    /// `*`.
    Any,
}

/// A JSON scalar in a predicate.
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    Str(String),
    Int(i64),
    Bool(bool),
}

impl Lit {
    pub fn json(&self) -> String {
        match self {
            Lit::Str(s) => format!("{s:?}"),
            Lit::Int(i) => i.to_string(),
            Lit::Bool(b) => b.to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    pub fn text(self) -> &'static str {
        match self {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// MCP tool annotations, as `annotation.KEY` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ann {
    ReadOnly,
    Destructive,
    OpenWorld,
    Idempotent,
}

impl Ann {
    pub const ALL: [Ann; 4] = [
        Ann::ReadOnly,
        Ann::Destructive,
        Ann::OpenWorld,
        Ann::Idempotent,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Ann::ReadOnly => "read_only",
            Ann::Destructive => "destructive",
            Ann::OpenWorld => "open_world",
            Ann::Idempotent => "idempotent",
        }
    }

    /// MCP's hint name.
    pub fn hint(self) -> &'static str {
        match self {
            Ann::ReadOnly => "readOnlyHint",
            Ann::Destructive => "destructiveHint",
            Ann::OpenWorld => "openWorldHint",
            Ann::Idempotent => "idempotentHint",
        }
    }

    /// MCP's default for an absent hint.
    pub fn mcp_default(self) -> bool {
        matches!(self, Ann::Destructive | Ann::OpenWorld)
    }

    /// The value for a server that is not trusted.
    pub fn conservative(self) -> bool {
        matches!(self, Ann::Destructive | Ann::OpenWorld)
    }
}

/// A condition. Argument selectors are one key deep (`args.KEY`).
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// `annotation.KEY` (true) or `not annotation.KEY` (false).
    Ann(Ann, bool),
    Cmp {
        key: String,
        op: Op,
        value: Lit,
    },
    In {
        key: String,
        values: Vec<Lit>,
    },
    Matches {
        key: String,
        re: Re,
    },
    Inside {
        key: String,
        root: String,
    },
    Escapes {
        key: String,
        root: String,
    },
    /// `tainted` or `tainted(ignore: [...])`.
    Tainted {
        ignore: Vec<String>,
    },
    PrincipalIn(Vec<String>),
    AssignEq {
        key: String,
        value: String,
    },
    And(Vec<Cond>),
}

impl Cond {
    pub fn mcppol(&self) -> String {
        match self {
            Cond::Ann(a, true) => format!("annotation.{}", a.key()),
            Cond::Ann(a, false) => format!("not annotation.{}", a.key()),
            Cond::Cmp { key, op, value } => format!("args.{key} {} {}", op.text(), value.json()),
            Cond::In { key, values } => format!("args.{key} in [{}]", list(values)),
            Cond::Matches { key, re } => format!("args.{key} matches {}", re.mcppol()),
            Cond::Inside { key, root } => format!("args.{key} inside {root:?}"),
            Cond::Escapes { key, root } => format!("args.{key} escapes {root:?}"),
            Cond::Tainted { ignore } if ignore.is_empty() => "tainted".to_string(),
            Cond::Tainted { ignore } => format!("tainted(ignore: [{}])", quoted(ignore)),
            Cond::PrincipalIn(names) => format!("principal in [{}]", quoted(names)),
            Cond::AssignEq { key, value } => format!("assigns.{key} == {value:?}"),
            Cond::And(parts) => parts
                .iter()
                .map(Cond::mcppol)
                .collect::<Vec<_>>()
                .join(" and "),
        }
    }
}

fn list(values: &[Lit]) -> String {
    values.iter().map(Lit::json).collect::<Vec<_>>().join(", ")
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One rule statement.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleSpec {
    pub effect: Effect,
    /// The rule id mcppol reports: the written id or `<list>:<index>`.
    pub id: String,
    /// Position within its list (deny, ask or allow), from 0.
    pub index: usize,
    /// Whether the id is written in the file.
    pub named: bool,
    pub targets: Vec<Target>,
    pub cond: Option<Cond>,
}

impl RuleSpec {
    pub fn mcppol(&self) -> String {
        let mut out = String::new();
        out.push_str(self.effect.keyword());
        out.push(' ');
        if self.named {
            let _ = write!(out, "{}: ", self.id);
        }
        let targets: Vec<String> = self
            .targets
            .iter()
            .map(|t| match t {
                Target::Pair { server, tool } => format!("\"{server}/{tool}\""),
                Target::Bare { tool } => format!("{tool:?}"),
                Target::Regex { server, re } => format!("{server:?} ~ {}", re.mcppol()),
                Target::Any => "*".to_string(),
            })
            .collect();
        out.push_str(&targets.join(", "));
        if let Some(c) = &self.cond {
            out.push_str(" when ");
            out.push_str(&c.mcppol());
        }
        out
    }
}

/// One generated policy.
#[derive(Debug, Clone)]
pub struct PolicySpec {
    pub name: String,
    pub rules: Vec<RuleSpec>,
    /// Servers whose annotations are believed.
    pub trusted: Vec<String>,
    /// `default ask` (else `default deny`).
    pub default_ask: bool,
    /// Servers that have at least one rule, with their tools.
    pub servers: Vec<Server>,
}

impl PolicySpec {
    /// The policy as `.mcppol` text.
    pub fn mcppol(&self) -> String {
        let mut out = String::with_capacity(self.rules.len() * 80);
        let _ = writeln!(out, "# generated: {} rules", self.rules.len());
        let _ = writeln!(out, "policy {} {{", self.name);
        let _ = writeln!(
            out,
            "  default {}",
            if self.default_ask { "ask" } else { "deny" }
        );
        if !self.trusted.is_empty() {
            let _ = writeln!(out, "  trusted {}", quoted(&self.trusted));
        }
        for rule in &self.rules {
            let _ = writeln!(out, "  {}", rule.mcppol());
        }
        out.push_str("}\n");
        out
    }

    pub fn is_trusted(&self, server: &str) -> bool {
        self.trusted.iter().any(|t| t == server)
    }
}

/// How many of the global rules a policy of `size` rules has: one at 10
/// rules, all eight from 80 rules on.
pub fn default_globals(size: usize) -> usize {
    (size / 10).clamp(1, 8)
}

/// A policy of exactly `size` rules.
pub fn policy(size: usize) -> PolicySpec {
    policy_with(size, default_globals(size))
}

/// A policy of exactly `size` rules, the first `globals` (at most eight) of
/// them the global rules.
pub fn policy_with(size: usize, globals: usize) -> PolicySpec {
    let mut rng = Rng::new(0x6d63_7070_6f6c_0000 ^ size as u64);
    let mut rules = Rules {
        rules: Vec::with_capacity(size),
        next: [0; 3],
        limit: size,
    };
    global_rules(&mut rules, globals);
    let mut servers = Vec::new();
    while !rules.full() {
        let server = make_server(servers.len(), &mut rng);
        server_rules(&mut rules, &server, servers.len(), &mut rng);
        servers.push(server);
    }
    let trusted = servers
        .iter()
        .enumerate()
        .filter(|(i, _)| i.is_multiple_of(3))
        .map(|(_, s)| s.id.clone())
        .collect();
    PolicySpec {
        name: format!("gateway_{size}"),
        rules: rules.rules,
        trusted,
        default_ask: true,
        servers,
    }
}

/// One request, owned: the benches borrow an `crate::Request` from it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSpec {
    pub server: String,
    pub tool: String,
    pub args: Value,
    pub annotations: Value,
    pub taint: Vec<String>,
    pub principal: String,
    pub assigns: Value,
}

impl RequestSpec {
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

/// The raw `tools/call` params of `r` as a host sends them.
pub fn wire_params(r: &RequestSpec) -> Vec<u8> {
    serde_json::to_vec(&json!({"name": r.tool, "arguments": r.args})).unwrap_or_default()
}

/// The request `params` (read from [`wire_params`]) makes, with the rest of
/// `r`'s context, the same as [`mcppol_request`] builds.
pub fn wire_request<'a>(
    params: &'a crate::ToolCallParams<'_>,
    r: &'a RequestSpec,
    taint: &'a [&'a str],
) -> crate::Request<'a> {
    params
        .request(&r.server)
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

/// A generated policy, its text, and a request mix with [`PER_KIND`]
/// requests of each kind.
pub struct Workload {
    pub size: usize,
    pub spec: PolicySpec,
    pub text: String,
    /// (kind, request), kinds interleaved.
    pub requests: Vec<(usize, RequestSpec)>,
}

impl Workload {
    /// Generates the workload of `size` rules; the request mix is sorted by
    /// what mcppol decides (the comparison then checks the other engines
    /// agree).
    ///
    /// `MCPPOL_BENCH_GLOBAL_RULES=8` gives every size the same global
    /// rules (by default a 10-rule policy has one, every size from 80 rules
    /// on all eight): a diagnostic that tells what a larger policy costs
    /// from what its different rules cost (docs/performance.md).
    pub fn new(size: usize) -> Result<Workload, String> {
        let globals = match std::env::var("MCPPOL_BENCH_GLOBAL_RULES") {
            Ok(n) => n
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("MCPPOL_BENCH_GLOBAL_RULES={n}: not a number"))?
                .min(size),
            Err(_) => default_globals(size),
        };
        let spec = policy_with(size, globals);
        let text = spec.mcppol();
        let set =
            crate::PolicySet::from_text("generated.mcppol", &text).map_err(|e| e.render(false))?;
        let policy = set
            .get(&spec.name)
            .ok_or_else(|| format!("no policy {}", spec.name))?;
        let candidates = candidates(&spec, 4_000, size as u64);
        let kinds: Vec<usize> = candidates
            .iter()
            .map(|r| {
                let taint = r.taint_refs();
                kind_of(&policy.decide(&mcppol_request(r, &taint)))
            })
            .collect();
        let requests = mix(candidates, &kinds, PER_KIND);
        for (kind, name) in KINDS.iter().enumerate() {
            let n = requests.iter().filter(|(k, _)| *k == kind).count();
            if n < PER_KIND {
                return Err(format!(
                    "{size} rules: only {n} `{name}` requests in the mix"
                ));
            }
        }
        Ok(Workload {
            size,
            spec,
            text,
            requests,
        })
    }
}
