//! The generated gateway's servers (what each is for, its tools) and the
//! rules about each, and the global rules before them.

use super::{Ann, Cond, Effect, Lit, Op, Re, Rng, RuleSpec, Target};

/// What a server is for: picks its tools and its rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Source hosting (`github`, ...).
    Code,
    /// Files (`fs`, ...).
    Files,
    /// A database.
    Database,
    /// Chat.
    Chat,
    /// Tickets.
    Tickets,
    /// A cloud provider.
    Cloud,
}

/// One MCP server of the gateway.
#[derive(Debug, Clone)]
pub struct Server {
    /// Its id.
    pub id: String,
    /// What it is for.
    pub kind: Kind,
    /// Its tools.
    pub tools: Vec<String>,
}

const BASES: [(&str, Kind); 16] = [
    ("github", Kind::Code),
    ("fs", Kind::Files),
    ("postgres", Kind::Database),
    ("slack", Kind::Chat),
    ("jira", Kind::Tickets),
    ("aws", Kind::Cloud),
    ("gitlab", Kind::Code),
    ("google-drive", Kind::Files),
    ("my_sql", Kind::Database),
    ("teams", Kind::Chat),
    ("linear", Kind::Tickets),
    ("k8s", Kind::Cloud),
    ("bitbucket", Kind::Code),
    ("s3", Kind::Files),
    ("snowflake", Kind::Database),
    ("zendesk", Kind::Tickets),
];

pub(super) const NOUNS: [&str; 24] = [
    "issue",
    "repo",
    "file",
    "user",
    "message",
    "channel",
    "ticket",
    "table",
    "record",
    "branch",
    "commit",
    "invoice",
    "report",
    "page",
    "dashboard",
    "bucket",
    "cluster",
    "secret",
    "comment",
    "label",
    "project",
    "workflow",
    "alert",
    "schema",
];

fn kind_tools(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Code => &[
            "push",
            "push_tags",
            "merge_branch",
            "merge_pull_request",
            "run_workflow",
            "delete_repo",
            "fork_repo",
        ],
        Kind::Files => &[
            "read_file",
            "write_file",
            "move_file",
            "list_directory",
            "share_file",
        ],
        Kind::Database => &["query", "run_migration", "drop_table", "export_table"],
        Kind::Chat => &["post_message", "send_dm", "send_email", "invite_user"],
        Kind::Tickets => &["close_ticket", "assign_ticket", "create_ticket"],
        Kind::Cloud => &["deploy", "scale_cluster", "rotate_secret", "admin_reset"],
    }
}

pub(super) fn make_server(i: usize, rng: &mut Rng) -> Server {
    let (base, kind) = BASES[i % BASES.len()];
    let round = i / BASES.len();
    let id = if round == 0 {
        base.to_string()
    } else {
        format!("{base}-{round}")
    };
    let mut tools: Vec<String> = kind_tools(kind).iter().map(|t| t.to_string()).collect();
    // Generic CRUD tools on a few of the server's nouns.
    let first = rng.below(NOUNS.len());
    for k in 0..4 {
        let noun = NOUNS[(first + k * 5) % NOUNS.len()];
        for verb in ["get", "list", "search", "create", "update", "delete"] {
            tools.push(format!("{verb}_{noun}"));
        }
    }
    tools.push("user_admin".to_string());
    Server { id, kind, tools }
}

/// Builds rules with their list indexes.
pub(super) struct Rules {
    pub(super) rules: Vec<RuleSpec>,
    pub(super) next: [usize; 3],
    pub(super) limit: usize,
}

impl Rules {
    pub(super) fn full(&self) -> bool {
        self.rules.len() >= self.limit
    }

    fn add(
        &mut self,
        effect: Effect,
        name: Option<String>,
        targets: Vec<Target>,
        cond: Option<Cond>,
    ) {
        if self.full() {
            return;
        }
        let slot = effect as usize;
        let index = self.next[slot];
        self.next[slot] += 1;
        let (id, named) = match name {
            Some(n) => (n, true),
            None => (format!("{}:{index}", effect.as_str()), false),
        };
        self.rules.push(RuleSpec {
            effect,
            id,
            index,
            named,
            targets,
            cond,
        });
    }
}

fn pair(server: &str, tool: &str) -> Target {
    Target::Pair {
        server: server.to_string(),
        tool: tool.to_string(),
    }
}

pub(super) fn s(v: &str) -> String {
    v.to_string()
}

fn nouns_of(server: &Server) -> Vec<&str> {
    server
        .tools
        .iter()
        .filter_map(|t| t.strip_prefix("get_"))
        .collect()
}

/// The rules about one server, in file order.
pub(super) fn server_rules(rules: &mut Rules, server: &Server, n: usize, rng: &mut Rng) {
    let id = server.id.as_str();
    let nouns = nouns_of(server);
    let noun = |k: usize| nouns[k % nouns.len()];
    rules.add(
        Effect::Allow,
        None,
        vec![pair(id, "get_*"), pair(id, "list_*")],
        None,
    );
    rules.add(
        Effect::Allow,
        None,
        vec![pair(id, "search_*")],
        Some(Cond::Ann(Ann::ReadOnly, true)),
    );
    rules.add(
        Effect::Ask,
        None,
        vec![pair(id, "create_*"), pair(id, "update_*")],
        None,
    );
    if n.is_multiple_of(3) {
        rules.add(Effect::Deny, None, vec![pair(id, "delete_*")], None);
    } else {
        rules.add(
            Effect::Deny,
            None,
            vec![pair(id, &format!("delete_{}", noun(1)))],
            None,
        );
        rules.add(Effect::Ask, None, vec![pair(id, "delete_*")], None);
    }
    match server.kind {
        Kind::Code => {
            rules.add(
                Effect::Deny,
                Some(format!("no_force_push_{n}")),
                vec![Target::Regex {
                    server: s(id),
                    re: Re::Prefix(s("push")),
                }],
                Some(Cond::Cmp {
                    key: s("force"),
                    op: Op::Eq,
                    value: Lit::Bool(true),
                }),
            );
            rules.add(
                Effect::Allow,
                None,
                vec![pair(id, "merge_*")],
                Some(Cond::And(vec![
                    Cond::In {
                        key: s("branch"),
                        values: vec![Lit::Str(s("dev")), Lit::Str(s("staging"))],
                    },
                    Cond::PrincipalIn(vec![s("dana"), s("omar")]),
                ])),
            );
            rules.add(
                Effect::Allow,
                None,
                vec![pair(id, "run_workflow")],
                Some(Cond::And(vec![
                    Cond::Matches {
                        key: s("ref"),
                        re: Re::Prefix(s("refs/heads/release-")),
                    },
                    Cond::AssignEq {
                        key: s("role"),
                        value: s("ops"),
                    },
                ])),
            );
            rules.add(Effect::Allow, None, vec![pair(id, "push")], None);
        }
        Kind::Files => {
            let root = format!("/srv/{id}");
            rules.add(
                Effect::Deny,
                Some(format!("sandbox_{n}")),
                vec![pair(id, "write_file"), pair(id, "move_file")],
                Some(Cond::Escapes {
                    key: s("path"),
                    root: root.clone(),
                }),
            );
            rules.add(
                Effect::Allow,
                None,
                vec![pair(id, "read_file"), pair(id, "write_file")],
                Some(Cond::Inside {
                    key: s("path"),
                    root,
                }),
            );
            rules.add(
                Effect::Allow,
                None,
                vec![pair(id, "list_directory")],
                Some(Cond::Ann(Ann::ReadOnly, true)),
            );
            rules.add(
                Effect::Ask,
                None,
                vec![pair(id, "share_*")],
                Some(Cond::Ann(Ann::OpenWorld, true)),
            );
        }
        Kind::Database => {
            rules.add(
                Effect::Deny,
                None,
                vec![pair(id, "query")],
                Some(Cond::Cmp {
                    key: s("limit"),
                    op: Op::Gt,
                    value: Lit::Int(10_000),
                }),
            );
            rules.add(Effect::Deny, None, vec![pair(id, "drop_*")], None);
            rules.add(
                Effect::Ask,
                None,
                vec![pair(id, "query")],
                Some(Cond::Matches {
                    key: s("table"),
                    re: Re::Prefix(s("tmp_")),
                }),
            );
            rules.add(
                Effect::Allow,
                None,
                vec![pair(id, "query")],
                Some(Cond::And(vec![
                    Cond::Cmp {
                        key: s("limit"),
                        op: Op::Le,
                        value: Lit::Int(1_000),
                    },
                    Cond::In {
                        key: s("mode"),
                        values: vec![Lit::Str(s("read")), Lit::Str(s("explain"))],
                    },
                ])),
            );
            rules.add(
                Effect::Allow,
                None,
                vec![pair(id, "export_*")],
                Some(Cond::Ann(Ann::Destructive, false)),
            );
        }
        Kind::Chat => {
            rules.add(
                Effect::Deny,
                None,
                vec![pair(id, "send_*")],
                Some(Cond::Tainted { ignore: vec![] }),
            );
            rules.add(
                Effect::Ask,
                None,
                vec![pair(id, "post_message")],
                Some(Cond::Tainted {
                    ignore: vec![s("jira"), s("linear")],
                }),
            );
            rules.add(
                Effect::Allow,
                None,
                vec![pair(id, "post_message"), pair(id, "send_dm")],
                Some(Cond::In {
                    key: s("channel"),
                    values: vec![
                        Lit::Str(s("general")),
                        Lit::Str(s("eng")),
                        Lit::Str(s("ops")),
                    ],
                }),
            );
        }
        Kind::Tickets => {
            rules.add(
                Effect::Allow,
                None,
                vec![pair(id, "close_ticket"), pair(id, "assign_ticket")],
                Some(Cond::And(vec![
                    Cond::Matches {
                        key: s("id"),
                        re: Re::Prefix(s("T-")),
                    },
                    Cond::PrincipalIn(vec![s("dana"), s("omar")]),
                ])),
            );
            rules.add(
                Effect::Ask,
                None,
                vec![pair(id, "create_ticket")],
                Some(Cond::Cmp {
                    key: s("priority"),
                    op: Op::Ge,
                    value: Lit::Int(3),
                }),
            );
            rules.add(Effect::Allow, None, vec![pair(id, "create_ticket")], None);
        }
        Kind::Cloud => {
            rules.add(
                Effect::Deny,
                None,
                vec![Target::Regex {
                    server: s(id),
                    re: Re::Prefix(s("admin_")),
                }],
                None,
            );
            rules.add(
                Effect::Ask,
                None,
                vec![pair(id, "deploy"), pair(id, "scale_*")],
                Some(Cond::Cmp {
                    key: s("replicas"),
                    op: Op::Gt,
                    value: Lit::Int(10),
                }),
            );
            rules.add(
                Effect::Allow,
                None,
                vec![pair(id, "deploy"), pair(id, "scale_cluster")],
                Some(Cond::AssignEq {
                    key: s("role"),
                    value: s("ops"),
                }),
            );
        }
    }
    // Exact allows on a few plain tools (the bulk of a real allow list).
    let mut exact: Vec<Target> = Vec::new();
    for k in 0..3 {
        exact.push(pair(id, &format!("create_{}", noun(k + 2))));
    }
    rules.add(Effect::Allow, None, exact, None);
    rules.add(
        Effect::Allow,
        None,
        vec![pair(id, &format!("update_{}", noun(0)))],
        Some(Cond::PrincipalIn(vec![s("dana")])),
    );
    if n % 2 == 1 {
        rules.add(
            Effect::Ask,
            None,
            vec![Target::Regex {
                server: s(id),
                re: Re::Suffix(s("_admin")),
            }],
            None,
        );
    }
    if rng.chance(30) {
        rules.add(
            Effect::Deny,
            None,
            vec![pair(id, &format!("*_{}", noun(3)))],
            Some(Cond::Tainted {
                ignore: vec![s(id)],
            }),
        );
    }
}

/// A rule before it gets its id: list, written id, targets, condition.
type Draft = (Effect, Option<String>, Vec<Target>, Option<Cond>);

/// The few rules a gateway has about every server.
pub(super) fn global_rules(rules: &mut Rules, count: usize) {
    let all: Vec<Draft> = vec![
        (
            Effect::Deny,
            None,
            vec![
                pair("*", "delete_repo"),
                Target::Bare {
                    tool: s("drop_database"),
                },
            ],
            None,
        ),
        (
            Effect::Ask,
            Some(s("tainted_open_world")),
            vec![Target::Any],
            Some(Cond::And(vec![
                Cond::Ann(Ann::OpenWorld, true),
                Cond::Tainted {
                    ignore: vec![s("docs")],
                },
            ])),
        ),
        (Effect::Deny, None, vec![pair("*", "purge_*")], None),
        (Effect::Ask, None, vec![pair("*", "share_*")], None),
        (Effect::Deny, None, vec![pair("git*", "force_push")], None),
        (
            Effect::Allow,
            None,
            vec![Target::Bare { tool: s("status") }],
            None,
        ),
        (Effect::Allow, None, vec![pair("*", "ping")], None),
        (
            Effect::Deny,
            None,
            vec![Target::Bare { tool: s("exec_*") }],
            Some(Cond::Tainted { ignore: vec![] }),
        ),
    ];
    for (effect, name, targets, cond) in all.into_iter().take(count) {
        rules.add(effect, name, targets, cond);
    }
}
