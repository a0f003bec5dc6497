//! The generated policy in Cedar, and deciding with `cedar-policy`.
//!
//! Encoding: every deny rule is a `forbid`, every ask and allow rule a
//! `permit`; the policy id says the rule's list and position (`d12`,
//! `k3`, `a7`). In the flat set-up ([`render`]) the scope is open
//! (`principal, action, resource`) and
//! everything is tested in `when` on the context the harness builds
//! (`input.rs`): loose targets on the folded names (`server_f`, `tool_f`,
//! patterns folded), exact targets on the names as sent; a glob is `like`;
//! an anchored literal regex is `like "lit*"` / `like "*lit"`, tried on the
//! raw and the folded name for loose rules; `inside` / `escapes` test the
//! canonical path (`== root || like "root/*"`); `tainted(ignore: L)` is
//! `!L.containsAll(context.foreign_taint)`.
//!
//! Per server ([`render_set`]): one policy set per server (see
//! `partition.rs`), one policy per target, a literal tool in the scope
//! (`resource == Tool::"<folded tool>"`).
//!
//! Precedence in the harness: a `Deny` response names the satisfied
//! forbids (deny, first in file order); an `Allow` response names the
//! satisfied permits, and any ask among them beats the allows; a `Deny`
//! with no reason is the default.

use std::collections::HashMap;
use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Decision, Entities, EntityId, EntityTypeName, EntityUid, PolicyId,
    PolicySet, Request,
};
use serde_json::Value;

use crate::gen::{Cond, Effect, Lit, Op, PolicySpec, RuleSpec, Target};
use crate::partition::Set;
use crate::Outcome;

fn lit(l: &Lit) -> String {
    l.json()
}

fn glob_test(field: &str, pattern: &str) -> Option<String> {
    if pattern == "*" {
        None
    } else if pattern.contains('*') {
        Some(format!("{field} like {pattern:?}"))
    } else {
        Some(format!("{field} == {pattern:?}"))
    }
}

fn target(t: &Target, loose: bool) -> String {
    and_all(target_tests(t, loose, false))
}

/// `(a && b && ...)`, or `true` for none.
fn and_all(parts: Vec<String>) -> String {
    if parts.is_empty() {
        "true".to_string()
    } else {
        format!("({})", parts.join(" && "))
    }
}

/// The tests of one target in `when`. `named`: the target sits in a named
/// server's set (per-server mode), where the dispatch already decided a
/// loose server test.
fn target_tests(t: &Target, loose: bool, named: bool) -> Vec<String> {
    let (sf, tf) = if loose {
        ("context.server_f", "context.tool_f")
    } else {
        ("context.server", "context.tool")
    };
    let f = |p: &str| {
        if loose {
            crate::gen::fold(p)
        } else {
            p.to_string()
        }
    };
    let server = |p: &str| {
        if named && loose {
            None
        } else {
            glob_test(sf, &f(p))
        }
    };
    match t {
        Target::Any => vec![],
        Target::Bare { tool } => glob_test(tf, &f(tool)).into_iter().collect(),
        Target::Pair { server: s, tool } => server(s)
            .into_iter()
            .chain(glob_test(tf, &f(tool)))
            .collect(),
        Target::Regex { server: s, re } => {
            let g = re.as_glob();
            let re_test = if loose {
                format!("(context.tool like {g:?} || context.tool_f like {g:?})")
            } else {
                format!("context.tool like {g:?}")
            };
            server(s).into_iter().chain([re_test]).collect()
        }
    }
}

fn inside(path: &str, root: &str) -> String {
    format!("({path} == {root:?} || {path} like \"{root}/*\")")
}

fn cond(c: &Cond) -> String {
    let arg = |k: &str| format!("context.args has {k} && context.args.{k}");
    match c {
        Cond::Ann(a, true) => format!("context.ann.{}", a.key()),
        Cond::Ann(a, false) => format!("!context.ann.{}", a.key()),
        Cond::Cmp { key, op, value } => {
            let op = match op {
                Op::Eq => "==",
                Op::Ne => "!=",
                Op::Lt => "<",
                Op::Le => "<=",
                Op::Gt => ">",
                Op::Ge => ">=",
            };
            format!("({} {op} {})", arg(key), lit(value))
        }
        Cond::In { key, values } => {
            let set: Vec<String> = values.iter().map(lit).collect();
            format!(
                "(context.args has {key} && [{}].contains(context.args.{key}))",
                set.join(", ")
            )
        }
        Cond::Matches { key, re } => format!("({} like {:?})", arg(key), re.as_glob()),
        Cond::Inside { key, root } => format!(
            "(context.canon has {key} && {})",
            inside(&format!("context.canon.{key}"), root)
        ),
        Cond::Escapes { key, root } => format!(
            "(context.canon has {key} && !{})",
            inside(&format!("context.canon.{key}"), root)
        ),
        Cond::Tainted { ignore } if ignore.is_empty() => {
            "!context.foreign_taint.isEmpty()".to_string()
        }
        Cond::Tainted { ignore } => {
            let set: Vec<String> = ignore.iter().map(|s| format!("{s:?}")).collect();
            format!("!([{}].containsAll(context.foreign_taint))", set.join(", "))
        }
        Cond::PrincipalIn(names) => {
            let set: Vec<String> = names.iter().map(|s| format!("{s:?}")).collect();
            format!("[{}].contains(context.principal)", set.join(", "))
        }
        Cond::AssignEq { key, value } => {
            format!("(context.assigns has {key} && context.assigns.{key} == {value:?})")
        }
        Cond::And(parts) => {
            let parts: Vec<String> = parts.iter().map(cond).collect();
            format!("({})", parts.join(" && "))
        }
    }
}

fn tag(effect: Effect) -> char {
    match effect {
        Effect::Deny => 'd',
        Effect::Ask => 'k',
        Effect::Allow => 'a',
    }
}

fn rule(r: &RuleSpec) -> String {
    let head = if r.effect == Effect::Deny {
        "forbid"
    } else {
        "permit"
    };
    let targets: Vec<String> = r
        .targets
        .iter()
        .map(|t| target(t, r.effect.loose()))
        .collect();
    let mut body = format!("({})", targets.join(" || "));
    if let Some(c) = &r.cond {
        body = format!("{body} && {}", cond(c));
    }
    format!(
        "@id(\"{}{}\")\n{head}(principal, action, resource) when {{ {body} }};\n",
        tag(r.effect),
        r.index
    )
}

/// The policy as Cedar text.
pub fn render(spec: &PolicySpec) -> String {
    spec.rules.iter().map(rule).collect()
}

/// The literal tool a target names, if it names one (no `*`).
fn literal_tool(t: &Target) -> Option<&str> {
    match t {
        Target::Pair { tool, .. } | Target::Bare { tool } if !tool.contains('*') => Some(tool),
        _ => None,
    }
}

/// One set of the per-server mode as Cedar text: one policy per target of
/// each rule (same `@id`), so that a target naming a literal tool puts it
/// in the scope, `resource == Tool::"<folded tool>"` (requests carry the
/// folded tool name as their resource, see [`Engine::request_scoped`]),
/// which Cedar tests before the `when` clause; an exact (allow) target
/// still tests the name as sent in `when`. In a named server's set the
/// dispatch has decided the server for loose targets, so they do not test
/// it again.
pub fn render_set(set: &Set) -> String {
    let mut out = String::new();
    for r in &set.rules {
        let head = if r.effect == Effect::Deny {
            "forbid"
        } else {
            "permit"
        };
        let loose = r.effect.loose();
        for t in &r.targets {
            let (scope, tests) = match literal_tool(t) {
                Some(tool) => {
                    // The server test only: the scope decides the folded
                    // tool; an exact target also tests the tool as sent.
                    let server_only = match t {
                        Target::Pair { server, .. } => Target::Pair {
                            server: server.clone(),
                            tool: "*".to_string(),
                        },
                        _ => Target::Any,
                    };
                    let mut tests = target_tests(&server_only, loose, set.named());
                    if !loose {
                        tests.push(format!("context.tool == {tool:?}"));
                    }
                    (
                        format!("resource == Tool::{:?}", crate::gen::fold(tool)),
                        tests,
                    )
                }
                None => ("resource".to_string(), target_tests(t, loose, set.named())),
            };
            let mut body: Vec<String> = tests;
            if let Some(c) = &r.cond {
                body.push(cond(c));
            }
            let when = if body.is_empty() {
                String::new()
            } else {
                format!(" when {{ {} }}", body.join(" && "))
            };
            out.push_str(&format!(
                "@id(\"{}{}\")\n{head}(principal, action, {scope}){when};\n",
                tag(r.effect),
                r.index
            ));
        }
    }
    out
}

/// A loaded Cedar policy set and what the harness needs to read answers.
pub struct Engine {
    pub policies: PolicySet,
    authorizer: Authorizer,
    entities: Entities,
    /// Policy id -> (list, position).
    ids: HashMap<PolicyId, (Effect, usize)>,
    user: EntityTypeName,
    tool: EntityTypeName,
    action: EntityUid,
}

impl Engine {
    /// Parses the Cedar text (what the load time measures).
    pub fn parse(text: &str) -> Result<PolicySet, String> {
        PolicySet::from_str(text).map_err(|e| format!("cedar: {e:?}"))
    }

    pub fn new(policies: PolicySet) -> Result<Engine, String> {
        let mut ids = HashMap::new();
        for p in policies.policies() {
            let tag = p
                .annotation("id")
                .ok_or_else(|| format!("cedar policy {} has no @id", p.id()))?;
            let effect = match tag.as_bytes().first() {
                Some(b'd') => Effect::Deny,
                Some(b'k') => Effect::Ask,
                _ => Effect::Allow,
            };
            let index: usize = tag[1..].parse().map_err(|e| format!("{tag}: {e}"))?;
            ids.insert(p.id().clone(), (effect, index));
        }
        let parse = |s: &str| EntityTypeName::from_str(s).map_err(|e| e.to_string());
        Ok(Engine {
            policies,
            authorizer: Authorizer::new(),
            entities: Entities::empty(),
            ids,
            user: parse("User")?,
            tool: parse("Tool")?,
            action: EntityUid::from_str(r#"Action::"call""#).map_err(|e| e.to_string())?,
        })
    }

    /// A Cedar request for one prepared input.
    pub fn request(
        &self,
        principal: &str,
        server: &str,
        tool: &str,
        context: Value,
    ) -> Result<Request, String> {
        let principal =
            EntityUid::from_type_name_and_id(self.user.clone(), EntityId::new(principal));
        let resource = EntityUid::from_type_name_and_id(
            self.tool.clone(),
            EntityId::new(format!("{server}/{tool}")),
        );
        let context = Context::from_json_value(context, None).map_err(|e| e.to_string())?;
        Request::new(principal, self.action.clone(), resource, context, None)
            .map_err(|e| e.to_string())
    }

    /// A Cedar request for the per-server sets: the resource is the folded
    /// tool name, `Tool::"<tool_f>"` (what their scopes test).
    pub fn request_scoped(
        &self,
        principal: &str,
        tool_f: &str,
        context: Value,
    ) -> Result<Request, String> {
        let principal =
            EntityUid::from_type_name_and_id(self.user.clone(), EntityId::new(principal));
        let resource = EntityUid::from_type_name_and_id(self.tool.clone(), EntityId::new(tool_f));
        let context = Context::from_json_value(context, None).map_err(|e| e.to_string())?;
        Request::new(principal, self.action.clone(), resource, context, None)
            .map_err(|e| e.to_string())
    }

    /// Decides a prepared request: the deciding list and rule position.
    pub fn decide(&self, request: &Request) -> Outcome {
        let response = self
            .authorizer
            .is_authorized(request, &self.policies, &self.entities);
        let mut best: Option<(Effect, usize)> = None;
        for id in response.diagnostics().reason() {
            if let Some(&(effect, index)) = self.ids.get(id) {
                if best.is_none_or(|b| (effect, index) < b) {
                    best = Some((effect, index));
                }
            }
        }
        match (response.decision(), best) {
            (Decision::Deny, Some((Effect::Deny, i))) => Outcome::rule(Effect::Deny, i),
            (Decision::Allow, Some((e, i))) => Outcome::rule(e, i),
            _ => Outcome::DEFAULT,
        }
    }

    /// Whether evaluating the request raised errors (a sign of a bad encoding).
    pub fn errors(&self, request: &Request) -> Vec<String> {
        let response = self
            .authorizer
            .is_authorized(request, &self.policies, &self.entities);
        response
            .diagnostics()
            .errors()
            .map(|e| e.to_string())
            .collect()
    }
}
