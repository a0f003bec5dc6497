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

mod servers;

use servers::{global_rules, make_server, server_rules, Rules};
pub use servers::{Kind, Server};

mod requests;

pub use requests::{candidates, canonical, fold, kind_of, mcppol_request, mix, RequestSpec, KINDS};

/// Rule counts the benchmarks run at.
pub const SIZES: [usize; 4] = [10, 100, 1_000, 10_000];

/// Requests of each kind (by the deciding source) in a mix.
pub const PER_KIND: usize = 16;

/// A deterministic pseudo-random source (splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A source seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
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

    /// One of `items` (not empty), at random.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A rule's list: the engine's own `Effect` (`deny`, `ask`, `allow`).
pub use crate::model::Effect;

/// A segment pattern with `*` only: `lit`, `lit*`, `*lit`, `a*b` or `*`.
pub type Glob = String;

/// An anchored literal regex: `/^lit/` or `/lit$/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Re {
    /// `/^lit/`: names that begin with the literal.
    Prefix(String),
    /// `/lit$/`: names that end with it.
    Suffix(String),
}

impl Re {
    /// The regex source, with `/` escaped for `.mcppol` (`\/`).
    /// As `.mcppol` text.
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

    /// Whether the regex matches `s`.
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
    Pair {
        /// The server segment.
        server: Glob,
        /// The tool segment.
        tool: Glob,
    },
    /// `"tool"`: that tool on any server.
    Bare {
        /// The tool's glob.
        tool: Glob,
    },
    /// `"server" ~ /re/`.
    Regex {
        /// The server segment.
        server: Glob,
        /// The regex on tool names.
        re: Re,
    },
    /// `*`.
    Any,
}

/// A JSON scalar in a predicate.
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
}

impl Lit {
    /// As JSON text.
    pub fn json(&self) -> String {
        match self {
            Lit::Str(s) => format!("{s:?}"),
            Lit::Int(i) => i.to_string(),
            Lit::Bool(b) => b.to_string(),
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl Op {
    /// The operator as written.
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
    /// `read_only` (`readOnlyHint`).
    ReadOnly,
    /// `destructive` (`destructiveHint`).
    Destructive,
    /// `open_world` (`openWorldHint`).
    OpenWorld,
    /// `idempotent` (`idempotentHint`).
    Idempotent,
}

impl Ann {
    /// Every annotation.
    pub const ALL: [Ann; 4] = [
        Ann::ReadOnly,
        Ann::Destructive,
        Ann::OpenWorld,
        Ann::Idempotent,
    ];

    /// Its key, as `annotation.KEY` names it.
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
    /// `args.KEY OP value`.
    Cmp {
        /// The argument.
        key: String,
        /// The comparison.
        op: Op,
        /// What it is compared with.
        value: Lit,
    },
    /// `args.KEY in [values]`.
    In {
        /// The argument.
        key: String,
        /// The values it may be.
        values: Vec<Lit>,
    },
    /// `args.KEY matches /re/`.
    Matches {
        /// The argument.
        key: String,
        /// The regex.
        re: Re,
    },
    /// `args.KEY inside "root"`.
    Inside {
        /// The path argument.
        key: String,
        /// The root.
        root: String,
    },
    /// `args.KEY escapes "root"`.
    Escapes {
        /// The path argument.
        key: String,
        /// The root.
        root: String,
    },
    /// `tainted` or `tainted(ignore: [...])`.
    Tainted {
        /// The servers whose output does not count.
        ignore: Vec<String>,
    },
    /// `principal in [...]`.
    PrincipalIn(Vec<String>),
    /// `assigns.KEY == "value"`.
    AssignEq {
        /// The host datum.
        key: String,
        /// Its value.
        value: String,
    },
    /// Every one of them.
    And(Vec<Cond>),
}

impl Cond {
    /// As `.mcppol` text.
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
    /// Its list.
    pub effect: Effect,
    /// The rule id mcppol reports: the written id or `<list>:<index>`.
    pub id: String,
    /// Position within its list (deny, ask or allow), from 0.
    pub index: usize,
    /// Whether the id is written in the file.
    pub named: bool,
    /// What it is about.
    pub targets: Vec<Target>,
    /// When it applies (always without one).
    pub cond: Option<Cond>,
}

impl RuleSpec {
    /// As `.mcppol` text.
    pub fn mcppol(&self) -> String {
        let mut out = String::new();
        out.push_str(self.effect.as_str());
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
    /// The policy's name.
    pub name: String,
    /// Its rules, in file order.
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

    /// Whether the policy trusts `server`'s annotations.
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

/// A generated policy, its text, and a request mix with [`PER_KIND`]
/// requests of each kind.
pub struct Workload {
    /// The policy's rule count.
    pub size: usize,
    /// The policy, as data.
    pub spec: PolicySpec,
    /// The policy, as `.mcppol` text.
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
