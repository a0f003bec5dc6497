//! `mcppol table`: the effective decision for every listed tool (no
//! arguments, untainted, no principal), with and without an approver, and
//! what else a rule could make it depend on. The review artefact a security
//! team signs off.

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};

use super::listing::read_listings;
use super::request_args::read_lock;
use super::{color, exit, usage_error, Format};
use crate::enforce::render::{decision_cell, decision_json};
use crate::eval::owned::RequestSpec;
use crate::policy::{names::fold, Cond, Operand, Rule, Test};
use crate::syntax::Effect;
use crate::{Decision, LoadOptions, Policy, PolicySet, Source, TargetKind};

#[derive(Args, Debug)]
pub struct TableArgs {
    /// The policy file.
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,
    /// Which policy of the file (needed when it holds several).
    #[arg(long, value_name = "POLICY")]
    name: Option<String>,
    /// A listing: `[ID=]FILE` holding a `tools/list` result, an array of
    /// tools, or a map of server id to either. May repeat (several
    /// servers' listings).
    #[arg(long, value_name = "[ID=]FILE", required = true)]
    tools: Vec<String>,
    /// The server id of a listing that names none.
    #[arg(long, value_name = "ID")]
    server: Option<String>,
    /// Approved fingerprints: tools not in it are new, tools whose
    /// definition differs are changed.
    #[arg(long, value_name = "FILE")]
    lock: Option<PathBuf>,
    /// The host trusts the servers' annotations.
    #[arg(long = "trust-server")]
    trust_server: bool,
    /// `human` (an aligned table) or `json`.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

/// What a condition reads besides annotations: the inputs that can change
/// a decision the table shows for a bare call.
fn reads(cond: &Cond, out: &mut BTreeSet<&'static str>) {
    match cond {
        Cond::And(parts) | Cond::Or(parts) => parts.iter().for_each(|p| reads(p, out)),
        Cond::Not(inner) => reads(inner, out),
        Cond::Pred(pred) => {
            let operand = match &pred.test {
                Test::Tainted { .. } => {
                    out.insert("taint");
                    return;
                }
                Test::Host { .. } => {
                    out.insert("host");
                    return;
                }
                Test::Annotation(_) => return,
                Test::Exists(o) => o,
                Test::Compare { operand, .. }
                | Test::In { operand, .. }
                | Test::Matches { operand, .. }
                | Test::Inside { operand, .. }
                | Test::Escapes { operand, .. } => operand,
            };
            match operand {
                Operand::Args(_) => out.insert("args"),
                Operand::Principal => out.insert("principal"),
                Operand::Assigns(_) => out.insert("assigns"),
                Operand::Annotation(_) => false,
            };
        }
    }
}

fn rank(source: Source) -> usize {
    match source {
        Source::Protected | Source::Request | Source::Visibility => 0,
        Source::Deny => 1,
        Source::Pin => 2,
        Source::Ask => 3,
        Source::Allow => 4,
        Source::Default => 5,
    }
}

fn effect_rank(effect: Effect) -> usize {
    match effect {
        Effect::Deny => 1,
        Effect::Ask => 3,
        Effect::Allow => 4,
    }
}

fn rule_names(rule: &Rule, server: &str, name: &str) -> bool {
    if rule.effect == Effect::Allow {
        rule.targets.iter().any(|t| t.matches(server, name, name))
    } else {
        let (fs, fname) = (fold(server), fold(name));
        rule.targets.iter().any(|t| t.matches(&fs, &fname, name))
    }
}

/// The inputs that a rule reached before (or at) the deciding stage reads:
/// with other values, it could decide differently.
fn depends_on(
    policy: &Policy,
    server: &str,
    name: &str,
    decisions: &[&Decision],
) -> Vec<&'static str> {
    let mut out = BTreeSet::new();
    for d in decisions {
        if d.source == Source::Visibility {
            continue;
        }
        let decided = rank(d.source);
        for rule in policy.all_rules() {
            if rule.kind != TargetKind::Tool || !rule_names(rule, server, name) {
                continue;
            }
            let at = effect_rank(rule.effect);
            let is_decider = d.rule_id.as_deref() == Some(&*rule.id);
            if at < decided || is_decider {
                if let Some(c) = &rule.condition {
                    reads(c, &mut out);
                }
            }
        }
    }
    out.into_iter().collect()
}

pub fn run(args: TableArgs) -> u8 {
    let listed = match read_listings(&args.tools, args.server.as_deref()) {
        Ok(l) => l,
        Err(e) => return usage_error(&e, None),
    };
    let lock = match args
        .lock
        .as_deref()
        .map(|p| read_lock("--lock", p))
        .transpose()
    {
        Ok(l) => l,
        Err(e) => return usage_error(&e, None),
    };
    let set = match PolicySet::from_file(&args.policy, &LoadOptions::default()) {
        Ok(s) => s,
        Err(e) => {
            eprint!("{}", e.render(color()));
            return exit::USAGE;
        }
    };
    let policy = match set.pick(args.name.as_deref()) {
        Ok(p) => p,
        Err(e) => return super::pick_error(&e),
    };
    let mut rows = Vec::new();
    for tool in &listed {
        let mut spec = RequestSpec {
            kind: Some(TargetKind::Tool),
            target: format!("{}/{}", tool.server, tool.name),
            tool_def: Some(tool.def.clone()),
            lock: lock.clone(),
            trust_server: args.trust_server,
            ..RequestSpec::default()
        };
        let with = match spec.build("") {
            Ok(r) => r,
            Err(e) => return usage_error(&format!("tool `{}`: {e}", spec.target), None),
        };
        spec.no_approver = true;
        let without = match spec.build("") {
            Ok(r) => r,
            Err(e) => return usage_error(&format!("tool `{}`: {e}", spec.target), None),
        };
        let d_with = with.with_request(|r| policy.decide(r));
        let d_without = without.with_request(|r| policy.decide(r));
        let depends = depends_on(policy, &tool.server, &tool.name, &[&d_with, &d_without]);
        rows.push((tool, with.approval, d_with, d_without, depends));
    }
    match args.format {
        Format::Json => {
            let tools: Vec<Value> = rows
                .iter()
                .map(|(tool, approval, w, wo, dep)| {
                    json!({
                        "server": tool.server,
                        "tool": tool.name,
                        "approval": serde_json::to_value(approval).unwrap_or(Value::Null),
                        "with_approver": decision_json(w),
                        "without_approver": decision_json(wo),
                        "depends_on": dep,
                    })
                })
                .collect();
            println!(
                "{}",
                json!({
                    "policy": policy.name,
                    "file": policy.source.name,
                    "tools": tools,
                })
            );
        }
        Format::Human => {
            let names: Vec<String> = rows
                .iter()
                .map(|(t, ..)| {
                    crate::escape::escape(&format!("{}/{}", t.server, t.name)).into_owned()
                })
                .collect();
            let w0 = names.iter().map(String::len).max().unwrap_or(4).max(4);
            let cells: Vec<(String, String)> = rows
                .iter()
                .map(|(_, _, w, wo, _)| (decision_cell(w), decision_cell(wo)))
                .collect();
            let w1 = cells.iter().map(|c| c.0.len()).max().unwrap_or(0).max(13);
            let w2 = cells.iter().map(|c| c.1.len()).max().unwrap_or(0).max(11);
            let show_lock = lock.is_some();
            let mut header = format!(
                "{:<w0$}  {:<w1$}  {:<w2$}",
                "TOOL", "WITH APPROVER", "NO APPROVER"
            );
            if show_lock {
                header.push_str(&format!("  {:<8}", "LOCK"));
            }
            header.push_str("  DEPENDS ON");
            println!("{}", header.trim_end());
            for (i, (_, approval, _, _, dep)) in rows.iter().enumerate() {
                let mut line = format!(
                    "{:<w0$}  {:<w1$}  {:<w2$}",
                    names[i], cells[i].0, cells[i].1
                );
                if show_lock {
                    let a = serde_json::to_value(approval)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    line.push_str(&format!("  {a:<8}"));
                }
                line.push_str(&format!("  {}", dep.join(", ")));
                println!("{}", line.trim_end());
            }
            println!(
                "\npolicy `{}` ({}): {} tool(s); each decided for a call with no arguments, untainted, no principal.",
                policy.name,
                policy.source.name,
                rows.len()
            );
            if rows.iter().any(|r| !r.4.is_empty()) {
                println!("DEPENDS ON: a rule reached before the decision reads these, so a real call may be decided differently.");
            }
        }
    }
    exit::OK
}
