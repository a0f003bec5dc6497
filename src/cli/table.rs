//! `mcppol table`: for every listed tool, with and without an approver,
//! the one decision a call gets whatever it says, or what the decision
//! depends on (the arguments, taint, the principal, ...) and each outcome
//! (`eval::outcomes`, the one procedure run what-if). The review artefact
//! a security team signs off.

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};

use super::listing::{read_listings, Listed};
use super::request_args::read_lock;
use super::{color, exit, usage_error, Format};
use crate::enforce::render::{
    decision_cell, decision_json, depends_cell, outcome_label, table_summary, DEPENDS_NOTE,
};
use crate::escape::escape;
use crate::eval::outcomes::{outcomes, Outcome, Outcomes};
use crate::eval::owned::RequestSpec;
use crate::fingerprint::ToolApproval;
use crate::{Decision, LoadOptions, PolicySet, TargetKind};

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
        // The bare call's decisions, as before, for `--format json`.
        let bare = [&with, &without].map(|r| r.with_request(|r| policy.decide(r)));
        let outcomes = with.with_request(|w| without.with_request(|wo| outcomes(policy, w, wo)));
        rows.push(Row {
            tool,
            approval: with.approval,
            bare,
            outcomes,
        });
    }
    let outcome_json = |o: &Outcome| {
        json!({
            "when": o.when.as_deref(),
            "with_approver": decision_json(&o.with_approver),
            "without_approver": decision_json(&o.without_approver),
        })
    };
    match args.format {
        Format::Json => {
            let tools: Vec<Value> = rows
                .iter()
                .map(|row| {
                    let mut tool = json!({
                        "server": row.tool.server,
                        "tool": row.tool.name,
                        "approval": serde_json::to_value(row.approval).unwrap_or(Value::Null),
                        "with_approver": decision_json(&row.bare[0]),
                        "without_approver": decision_json(&row.bare[1]),
                        "depends_on": row.outcomes.depends_on,
                        "outcomes": row.outcomes.cases.iter().map(outcome_json).collect::<Vec<_>>(),
                    });
                    let limits = policy.limits_for(&row.tool.server, &row.tool.name);
                    if let (Value::Object(map), false) = (&mut tool, limits.is_empty()) {
                        let limits: Vec<Value> = limits
                            .iter()
                            .map(|l| json!({"rule_id": l.id.as_str(), "budget": l.window_text(), "line": l.line}))
                            .collect();
                        map.insert("limits".into(), Value::from(limits));
                    }
                    tool
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
            print_human(&rows, lock.is_some());
            let depend = rows.iter().filter(|r| !r.outcomes.settled()).count();
            println!(
                "\n{}",
                table_summary(&policy.name, &policy.source.name, rows.len(), depend)
            );
            if depend > 0 {
                println!("{DEPENDS_NOTE}");
            }
            print_budgets(policy, &rows);
        }
    }
    exit::OK
}

/// The budgets each tool counts against: a call the table shows allowed
/// or asked is denied (`limit_exceeded`) once one of them is spent, which
/// the table (holding no counters) cannot show.
fn print_budgets(policy: &crate::Policy, rows: &[Row<'_>]) {
    let mut lines = Vec::new();
    for row in rows {
        for limit in policy.limits_for(&row.tool.server, &row.tool.name) {
            lines.push(format!(
                "  {}/{}: limit `{}` ({}, line {})",
                escape(&row.tool.server),
                escape(&row.tool.name),
                escape(&limit.id),
                limit.window_text(),
                limit.line
            ));
        }
    }
    if !lines.is_empty() {
        println!("\nBudgets (a call they match is denied, limit_exceeded, once one is spent; not counted here):");
        for line in lines {
            println!("{line}");
        }
    }
}

/// One listed tool: what a bare call comes to, and what a real one can.
struct Row<'a> {
    tool: &'a Listed,
    approval: ToolApproval,
    /// The bare call's decisions, with and without an approver.
    bare: [Decision; 2],
    outcomes: Outcomes,
}

/// One line of the human table: its first column, the tool it names (not
/// for an outcome line), and its two decision cells or, for a "depends
/// on" line, the text that spans both.
type Line<'a> = (String, Option<&'a Row<'a>>, Result<[String; 2], String>);

/// The aligned table: a tool whose decision is settled on one line; one
/// that depends on a line saying on what, then a line an outcome.
fn print_human(rows: &[Row<'_>], show_lock: bool) {
    let mut lines: Vec<Line<'_>> = Vec::new();
    for row in rows {
        let name = escape(&format!("{}/{}", row.tool.server, row.tool.name)).into_owned();
        let cells = |o: &Outcome| {
            [
                decision_cell(&o.with_approver),
                decision_cell(&o.without_approver),
            ]
        };
        match row.outcomes.cases.as_slice() {
            [only] => lines.push((name, Some(row), Ok(cells(only)))),
            cases => {
                lines.push((name, Some(row), Err(depends_cell(&row.outcomes.depends_on))));
                for case in cases {
                    lines.push((outcome_label(case.when.as_deref()), None, Ok(cells(case))));
                }
            }
        }
    }
    let w0 = lines.iter().map(|l| l.0.len()).max().unwrap_or(0).max(4);
    let cell_width = |i: usize, min: usize| {
        lines
            .iter()
            .filter_map(|l| l.2.as_ref().ok().map(|c| c[i].len()))
            .max()
            .unwrap_or(0)
            .max(min)
    };
    let (w1, w2) = (cell_width(0, 13), cell_width(1, 11));
    let lock_cell = |row: Option<&Row<'_>>| {
        row.and_then(|r| serde_json::to_value(r.approval).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    let mut header = format!("{:<w0$}", "TOOL");
    if show_lock {
        header.push_str(&format!("  {:<8}", "LOCK"));
    }
    header.push_str(&format!(
        "  {:<w1$}  {:<w2$}",
        "WITH APPROVER", "NO APPROVER"
    ));
    println!("{}", header.trim_end());
    for (first, row, cells) in &lines {
        let mut line = format!("{first:<w0$}");
        if show_lock {
            line.push_str(&format!("  {:<8}", lock_cell(*row)));
        }
        match cells {
            Ok([with, without]) => line.push_str(&format!("  {with:<w1$}  {without:<w2$}")),
            Err(depends) => line.push_str(&format!("  {depends}")),
        }
        println!("{}", line.trim_end());
    }
}
