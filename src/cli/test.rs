//! `mcppol test PATH...`: run policy test files (`*.mcppoltest`), report
//! failures with expected and actual, and with `--coverage` the rules that
//! decided no case.

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};

use super::{exit, usage_error, Format};
use crate::testing::{run_file, FileReport, TEST_EXTENSION};

#[derive(Args, Debug)]
pub struct TestArgs {
    /// Test files, and folders to search for `*.mcppoltest` files.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Also list the rules that decided no case (and fail on any that the
    /// test file does not justify with `uncovered ID REASON`).
    #[arg(long)]
    coverage: bool,
    /// `human` (failures and a summary on stdout) or `json` (one object).
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let out = super::files::under(paths, TEST_EXTENSION)?;
    if out.is_empty() {
        return Err(format!("no `*.{TEST_EXTENSION}` files found"));
    }
    Ok(out)
}

fn print_human(report: &FileReport, coverage: bool) {
    let file = report.file.display();
    for case in report.cases.iter().filter(|c| !c.passed) {
        println!("{file}:{}: FAIL {}", case.line, case.title);
        println!(
            "    expected: {}",
            crate::testing::run_expect_text(&case.expected)
        );
        match &case.actual {
            Ok(d) => println!("    actual:   {}", crate::testing::run_decision_text(d)),
            Err(e) => println!("    error:    {e}"),
        }
    }
    let failed = report.failed();
    println!(
        "{file}: {} case(s), {} passed, {failed} failed",
        report.cases.len(),
        report.cases.len() - failed
    );
    if coverage {
        let cov = &report.coverage;
        let open = cov
            .uncovered
            .iter()
            .filter(|u| u.justified.is_none())
            .count();
        for u in &cov.uncovered {
            match &u.justified {
                None => println!(
                    "{}:{}:{}: uncovered: {} rule `{}` decided no case",
                    u.policy_file, u.line, u.column, u.effect, u.rule_id
                ),
                Some(why) => println!(
                    "{}:{}:{}: uncovered (justified): {} rule `{}`: {why}",
                    u.policy_file, u.line, u.column, u.effect, u.rule_id
                ),
            }
        }
        println!(
            "{}: coverage: {} of {} rule(s) decided some case{}",
            report.policy_file.display(),
            cov.rules - cov.uncovered.len(),
            cov.rules,
            if open > 0 {
                format!(", {open} uncovered without a reason")
            } else {
                String::new()
            }
        );
    }
}

pub fn run(args: TestArgs) -> u8 {
    let files = match collect(&args.paths) {
        Ok(f) => f,
        Err(e) => return usage_error(&e, None),
    };
    let mut reports = Vec::new();
    for file in &files {
        match run_file(file) {
            Ok(r) => reports.push(r),
            Err(e) => return usage_error(&e, Some("see docs/testing.md for the test file format")),
        }
    }
    let failed: usize = reports.iter().map(FileReport::failed).sum();
    let cases: usize = reports.iter().map(|r| r.cases.len()).sum();
    let uncovered: usize = reports
        .iter()
        .map(|r| {
            r.coverage
                .uncovered
                .iter()
                .filter(|u| u.justified.is_none())
                .count()
        })
        .sum();
    match args.format {
        Format::Human => {
            for r in &reports {
                print_human(r, args.coverage);
            }
            // Rules uncovered without a reason fail the run, so the closing
            // line counts them as failures: a CI reader of `N passed, N
            // failed` must not see a clean run.
            let counted = if args.coverage { uncovered } else { 0 };
            if args.coverage {
                if counted > 0 {
                    println!(
                        "coverage: {uncovered} rule(s) uncovered without a reason, counted as failed below"
                    );
                } else {
                    println!("coverage: {uncovered} rule(s) uncovered");
                }
            }
            println!("{} policy test file(s), {cases} case(s)", reports.len());
            // The plain closing line that CI readers know.
            println!("{} passed, {} failed", cases - failed, failed + counted);
        }
        Format::Json => {
            let files: Vec<Value> = reports.iter().map(FileReport::to_json).collect();
            println!(
                "{}",
                json!({"files": files, "cases": cases, "failed": failed, "uncovered": uncovered})
            );
        }
    }
    if failed > 0 || (args.coverage && uncovered > 0) {
        exit::FAILED
    } else {
        exit::OK
    }
}
