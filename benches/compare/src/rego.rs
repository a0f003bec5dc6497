//! The generated policy in Rego, and deciding with `regorus`.
//!
//! Encoding: one partial-set rule per list, `deny_hits`, `ask_hits`,
//! `allow_hits`, holding the positions of the rules that match; a rule with
//! several targets (or a loose regex target, tried on the raw and the
//! folded name) is several bodies for the same position. Loose targets test
//! `input.server_f` / `input.tool_f` with folded patterns, exact ones
//! `input.server` / `input.tool`; a glob is `==`, `startswith`, `endswith`;
//! a regex is `regex.match`; taint is computed in Rego from `input.taint`
//! and `input.server`; paths are tested on the canonical path the harness
//! passes (`input.canon`). Precedence is Rego too: `decision` is
//! deny > ask > allow > default with the smallest position, so the harness
//! only maps the position back to the rule id.
//!
//! Per server ([`render_set`]): one module, loaded into its own engine, per
//! server (see `partition.rs`), without the server tests the dispatch has
//! decided.

use crate::gen::{fold, Cond, Effect, PolicySpec, RuleSpec, Target};
use crate::partition::Set;
use crate::Outcome;

fn glob_exprs(field: &str, pattern: &str, out: &mut Vec<String>) {
    if pattern == "*" {
        return;
    }
    let stars = pattern.matches('*').count();
    if stars == 0 {
        out.push(format!("{field} == {pattern:?}"));
    } else if let (1, Some(prefix)) = (stars, pattern.strip_suffix('*')) {
        out.push(format!("startswith({field}, {prefix:?})"));
    } else if let (1, Some(suffix)) = (stars, pattern.strip_prefix('*')) {
        out.push(format!("endswith({field}, {suffix:?})"));
    } else {
        // General `*` glob: as an anchored regex.
        let re: Vec<String> = pattern.split('*').map(regex_escape).collect();
        out.push(format!(
            "regex.match({:?}, {field})",
            format!("^{}$", re.join(".*"))
        ));
    }
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '/' || c == '-' {
                vec![c]
            } else {
                vec!['\\', c]
            }
        })
        .collect()
}

/// The bodies (alternatives) of one target. `named`: the target sits in a
/// named server's set (per-server mode), where the dispatch already decided
/// a loose server test.
fn target(t: &Target, loose: bool, named: bool) -> Vec<Vec<String>> {
    let (sf, tf) = if loose {
        ("input.server_f", "input.tool_f")
    } else {
        ("input.server", "input.tool")
    };
    let f = |p: &str| if loose { fold(p) } else { p.to_string() };
    let skip_server = named && loose;
    let mut base = Vec::new();
    match t {
        Target::Any => {}
        Target::Bare { tool } => glob_exprs(tf, &f(tool), &mut base),
        Target::Pair { server, tool } => {
            if !skip_server {
                glob_exprs(sf, &f(server), &mut base);
            }
            glob_exprs(tf, &f(tool), &mut base);
        }
        Target::Regex { server, re } => {
            if !skip_server {
                glob_exprs(sf, &f(server), &mut base);
            }
            let src = re.source();
            let fields: &[&str] = if loose {
                &["input.tool", "input.tool_f"]
            } else {
                &["input.tool"]
            };
            return fields
                .iter()
                .map(|field| {
                    let mut body = base.clone();
                    body.push(format!("regex.match({src:?}, {field})"));
                    body
                })
                .collect();
        }
    }
    vec![base]
}

fn cond(c: &Cond, out: &mut Vec<String>) {
    match c {
        Cond::Ann(a, v) => out.push(format!("input.ann.{} == {v}", a.key())),
        Cond::Cmp { key, op, value } => {
            out.push(format!("input.args.{key} {} {}", op.text(), value.json()))
        }
        Cond::In { key, values } => {
            let set: Vec<String> = values.iter().map(|v| v.json()).collect();
            out.push(format!("input.args.{key} in {{{}}}", set.join(", ")));
        }
        Cond::Matches { key, re } => {
            out.push(format!("regex.match({:?}, input.args.{key})", re.source()))
        }
        Cond::Inside { key, root } => {
            out.push(format!("inside(input.canon.{key}, {root:?}, \"{root}/\")"))
        }
        Cond::Escapes { key, root } => {
            out.push(format!("input.canon.{key}"));
            out.push(format!(
                "not inside(input.canon.{key}, {root:?}, \"{root}/\")"
            ));
        }
        Cond::Tainted { ignore } => {
            out.push("some t in input.taint".to_string());
            out.push("t != input.server".to_string());
            if !ignore.is_empty() {
                let set: Vec<String> = ignore.iter().map(|s| format!("{s:?}")).collect();
                out.push(format!("not t in {{{}}}", set.join(", ")));
            }
        }
        Cond::PrincipalIn(names) => {
            let set: Vec<String> = names.iter().map(|s| format!("{s:?}")).collect();
            out.push(format!("input.principal in {{{}}}", set.join(", ")));
        }
        Cond::AssignEq { key, value } => out.push(format!("input.assigns.{key} == {value:?}")),
        Cond::And(parts) => {
            for p in parts {
                cond(p, out);
            }
        }
    }
}

fn rule(r: &RuleSpec, named: bool, out: &mut String) {
    let head = match r.effect {
        Effect::Deny => "deny_hits",
        Effect::Ask => "ask_hits",
        Effect::Allow => "allow_hits",
    };
    let mut tail = Vec::new();
    if let Some(c) = &r.cond {
        cond(c, &mut tail);
    }
    for t in &r.targets {
        for mut body in target(t, r.effect.loose(), named) {
            body.extend(tail.iter().cloned());
            if body.is_empty() {
                body.push("true".to_string());
            }
            out.push_str(&format!(
                "{head} contains {} if {{\n  {}\n}}\n",
                r.index,
                body.join("\n  ")
            ));
        }
    }
}

/// The policy as one Rego module.
pub fn render(spec: &PolicySpec) -> String {
    let mut out = String::from(HEADER);
    for r in &spec.rules {
        rule(r, false, &mut out);
    }
    out
}

/// One set of the per-server mode as its own Rego module (loaded into its
/// own engine): the same encoding, without the server tests the dispatch
/// has decided.
pub fn render_set(set: &Set) -> String {
    let mut out = String::from(HEADER);
    for r in &set.rules {
        rule(r, set.named(), &mut out);
    }
    out
}

/// The module's head: the helpers and the precedence.
const HEADER: &str = r#"package mcppol

import rego.v1

inside(p, root, _) if p == root

inside(p, _, prefix) if startswith(p, prefix)

default decision := {"effect": "default", "index": -1}

decision := {"effect": "deny", "index": min(deny_hits)} if count(deny_hits) > 0

decision := {"effect": "ask", "index": min(ask_hits)} if {
  count(deny_hits) == 0
  count(ask_hits) > 0
}

decision := {"effect": "allow", "index": min(allow_hits)} if {
  count(deny_hits) == 0
  count(ask_hits) == 0
  count(allow_hits) > 0
}

deny_hits contains -1 if false

ask_hits contains -1 if false

allow_hits contains -1 if false

"#;

/// A loaded regorus engine.
pub struct Engine {
    pub engine: regorus::Engine,
    query: String,
}

impl Engine {
    pub fn new(text: &str) -> Result<Engine, String> {
        let mut engine = regorus::Engine::new();
        let big = std::num::NonZeroUsize::new(1 << 30).ok_or("limit")?;
        engine.set_policy_length_config(regorus::PolicyLengthConfig {
            max_col: std::num::NonZeroU32::new(1 << 16).ok_or("limit")?,
            max_file_bytes: big,
            max_lines: big,
        });
        engine
            .add_policy("generated.rego".to_string(), text.to_string())
            .map_err(|e| format!("regorus: {e}"))?;
        Ok(Engine {
            engine,
            query: "data.mcppol.decision".to_string(),
        })
    }

    /// Decides one input.
    pub fn decide(&mut self, input: regorus::Value) -> Result<Outcome, String> {
        self.engine.set_input(input);
        let v = self
            .engine
            .eval_rule(self.query.clone())
            .map_err(|e| format!("regorus: {e}"))?;
        let effect = v["effect"].as_string().map_err(|e| e.to_string())?;
        let index = v["index"].as_i64().map_err(|e| e.to_string())?;
        Ok(match (effect.as_ref(), usize::try_from(index)) {
            ("deny", Ok(i)) => Outcome::rule(Effect::Deny, i),
            ("ask", Ok(i)) => Outcome::rule(Effect::Ask, i),
            ("allow", Ok(i)) => Outcome::rule(Effect::Allow, i),
            _ => Outcome::DEFAULT,
        })
    }
}
