//! Running a test file: each case's request decided against its policy,
//! compared with what it expects; which rules decided some case.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use super::parse::{parse_test_file, Case, Expect};
use crate::eval::owned::fixed_host_predicates;
use crate::{Decision, LoadOptions, Policy, PolicySet};

/// How one case came out.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub title: String,
    pub line: usize,
    pub expected: Expect,
    /// The decision, or why the case could not be decided.
    pub actual: Result<Decision, String>,
    pub passed: bool,
}

/// A rule that decided no case.
#[derive(Debug, Clone)]
pub struct UncoveredRule {
    pub policy_file: String,
    pub policy: String,
    pub rule_id: String,
    pub effect: &'static str,
    pub line: usize,
    pub column: usize,
    /// The reason written in the test file (`uncovered ID REASON`), if any.
    pub justified: Option<String>,
}

/// Which rules of the tested policies decided some case.
#[derive(Debug, Clone, Default)]
pub struct Coverage {
    pub rules: usize,
    pub uncovered: Vec<UncoveredRule>,
}

/// The results of one test file.
#[derive(Debug, Clone)]
pub struct FileReport {
    pub file: PathBuf,
    pub policy_file: PathBuf,
    pub cases: Vec<CaseResult>,
    /// The cases `mcppol test --run` left out (their names did not match).
    pub not_run: usize,
    pub coverage: Coverage,
}

impl FileReport {
    pub fn failed(&self) -> usize {
        self.cases.iter().filter(|c| !c.passed).count()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "file": self.file.display().to_string(),
            "policy_file": self.policy_file.display().to_string(),
            "cases": self.cases.len(),
            "passed": self.cases.len() - self.failed(),
            "failures": self.cases.iter().filter(|c| !c.passed).map(|c| json!({
                "line": c.line,
                "case": c.title,
                "expected": expect_json(&c.expected),
                "actual": match &c.actual {
                    Ok(d) => d.to_json(),
                    Err(e) => json!({"error": e}),
                },
            })).collect::<Vec<_>>(),
            "coverage": {
                "rules": self.coverage.rules,
                "uncovered": self.coverage.uncovered.iter().map(|u| json!({
                    "policy_file": u.policy_file,
                    "policy": u.policy,
                    "rule_id": u.rule_id,
                    "effect": u.effect,
                    "line": u.line,
                    "column": u.column,
                    "justified": u.justified,
                })).collect::<Vec<_>>(),
            },
        })
    }
}

fn expect_json(e: &Expect) -> Value {
    json!({
        "decision": e.decision,
        "source": e.source,
        "reason": e.reason,
        "rule_id": e.rule_id.as_ref().map(|r| r.as_deref()),
    })
}

/// `allow source=allow reason=allow_rule rule_id=x`, as a test file writes it.
pub fn expect_text(e: &Expect) -> String {
    let mut s = e.decision.clone();
    if let Some(v) = &e.source {
        s.push_str(&format!(" source={v}"));
    }
    if let Some(v) = &e.reason {
        s.push_str(&format!(" reason={v}"));
    }
    if let Some(v) = &e.rule_id {
        s.push_str(&format!(" rule_id={}", v.as_deref().unwrap_or("null")));
    }
    s
}

/// A decision written the same way, every field.
pub fn decision_text(d: &Decision) -> String {
    format!(
        "{} source={} reason={} rule_id={}",
        d.decision.as_str(),
        d.source.as_str(),
        d.reason.as_str(),
        d.rule_id.as_deref().unwrap_or("null")
    )
}

fn matches(e: &Expect, d: &Decision) -> bool {
    e.decision == d.decision.as_str()
        && e.source.as_deref().is_none_or(|s| s == d.source.as_str())
        && e.reason.as_deref().is_none_or(|r| r == d.reason.as_str())
        && e.rule_id
            .as_ref()
            .is_none_or(|r| r.as_deref() == d.rule_id.as_deref())
}

/// The policy file a test file is about: `policy PATH`, else the test
/// file's own name with `.mcppol`.
fn policy_path(test: &Path, named: Option<&str>) -> PathBuf {
    match named {
        Some(p) => test.parent().unwrap_or(Path::new(".")).join(p),
        None => test.with_extension("mcppol"),
    }
}

/// Runs one test file: every case, or with `only` the cases whose name it
/// matches (the others are counted in [`FileReport::not_run`]). `Err` when
/// the file or its policy cannot be read (a usage error rather than a
/// failed case).
pub fn run_file(path: &Path, only: Option<&regex::Regex>) -> Result<FileReport, String> {
    let text = crate::io::read_text(path, crate::io::MAX_TEST_FILE_BYTES, "policy test file")?;
    let base = path.parent().unwrap_or(Path::new("."));
    let file = parse_test_file(&text, base)
        .map_err(|e| format!("{}:{}: {}", path.display(), e.line, e.message))?;
    let policy_file = policy_path(path, file.policy.as_deref());
    let policy_text = crate::read_policy_file(&policy_file)?;
    let origin = policy_file.display().to_string();
    // Loaded once without host predicates, and once for each distinct set
    // of `host` values the cases give.
    let mut loaded: HashMap<String, PolicySet> = HashMap::new();
    let mut load = |case: &Case| -> Result<PolicySet, String> {
        let key = format!("{:?}", case.host);
        if let Some(set) = loaded.get(&key) {
            return Ok(set.clone());
        }
        let options = LoadOptions {
            host: fixed_host_predicates(&case.host),
        };
        let set = PolicySet::from_text_with(&origin, &policy_text, &options)
            .map_err(|e| e.render(false))?;
        loaded.insert(key, set.clone());
        Ok(set)
    };
    let base_set = load(&Case::default())?;
    let mut decided: BTreeSet<(String, String)> = BTreeSet::new();
    let mut tested_policies: BTreeSet<String> = BTreeSet::new();
    let mut results = Vec::new();
    let chosen = |case: &&Case| only.is_none_or(|only| only.is_match(&case.title));
    let not_run = file.cases.len() - file.cases.iter().filter(chosen).count();
    for case in file.cases.iter().filter(chosen) {
        let expected = case.expect.clone().unwrap_or_default();
        let actual = decide_case(case, &mut load);
        if let Ok((policy, d)) = &actual {
            tested_policies.insert(policy.name.clone());
            if let Some(id) = &d.rule_id {
                decided.insert((policy.name.clone(), id.to_string()));
            }
        }
        let actual = actual.map(|(_, d)| d);
        let passed = actual.as_ref().is_ok_and(|d| matches(&expected, d));
        results.push(CaseResult {
            title: case.title.clone(),
            line: case.line,
            expected,
            actual,
            passed,
        });
    }
    // Coverage over some of the cases would call rules uncovered that the
    // others decide: measured only when every case ran.
    let coverage = if only.is_some() {
        Coverage::default()
    } else {
        coverage(
            &base_set,
            &tested_policies,
            &decided,
            &file.uncovered,
            &origin,
        )
    };
    Ok(FileReport {
        file: path.to_path_buf(),
        policy_file,
        cases: results,
        not_run,
        coverage,
    })
}

fn decide_case(
    case: &Case,
    load: &mut dyn FnMut(&Case) -> Result<PolicySet, String>,
) -> Result<(Arc<Policy>, Decision), String> {
    let request = case.spec.build("")?;
    let set = load(case)?;
    let policy = set
        .pick(case.name.as_deref())
        .map_err(|e| e.to_string())?
        .clone();
    let decision = request.with_request(|r| policy.decide(r));
    Ok((policy, decision))
}

fn coverage(
    set: &PolicySet,
    tested: &BTreeSet<String>,
    decided: &BTreeSet<(String, String)>,
    justified: &[(String, String, usize)],
    origin: &str,
) -> Coverage {
    let mut out = Coverage::default();
    for policy in set.iter().filter(|p| tested.contains(&p.name)) {
        for rule in policy.all_rules() {
            out.rules += 1;
            if decided.contains(&(policy.name.clone(), rule.id.to_string())) {
                continue;
            }
            let (line, column) = policy.source.line_col(rule.span.start);
            out.uncovered.push(UncoveredRule {
                policy_file: origin.to_string(),
                policy: policy.name.clone(),
                rule_id: rule.id.to_string(),
                effect: rule.effect.as_str(),
                line,
                column,
                justified: justified
                    .iter()
                    .find(|(id, _, _)| **id == *rule.id)
                    .map(|(_, why, _)| why.clone()),
            });
        }
    }
    out
}
