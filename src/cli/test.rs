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
    /// Run only the cases whose name this regex matches (anywhere in the
    /// name, as `cargo test` filters); the others are counted as not run.
    #[arg(long = "run", value_name = "REGEX")]
    run: Option<String>,
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
    if report.cases.is_empty() && report.not_run > 0 {
        // `--run` chose none of this file's cases: nothing to say of it.
        return;
    }
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

/// `--run`'s regex, or the usage error it is.
fn case_filter(args: &TestArgs) -> Result<Option<regex::Regex>, u8> {
    let Some(pattern) = &args.run else {
        return Ok(None);
    };
    if args.coverage {
        // Coverage counts the rules every case decides: over a few cases
        // it would call most rules uncovered.
        return Err(usage_error(
            "`--coverage` and `--run` cannot be combined: coverage needs every case run",
            Some("drop `--run` to measure coverage"),
        ));
    }
    regex::Regex::new(pattern).map(Some).map_err(|e| {
        usage_error(
            &format!("`--run {pattern}` is not a valid regex: {e}"),
            Some("`--run` takes a Rust `regex` pattern matched anywhere in a case's name"),
        )
    })
}

pub fn run(args: TestArgs) -> u8 {
    let only = match case_filter(&args) {
        Ok(only) => only,
        Err(status) => return status,
    };
    let files = match collect(&args.paths) {
        Ok(f) => f,
        Err(e) => return usage_error(&e, None),
    };
    let mut reports = Vec::new();
    for file in &files {
        match run_file(file, only.as_ref()) {
            Ok(r) => reports.push(r),
            Err(e) => return usage_error(&e, Some("see docs/testing.md for the test file format")),
        }
    }
    let failed: usize = reports.iter().map(FileReport::failed).sum();
    let cases: usize = reports.iter().map(|r| r.cases.len()).sum();
    let not_run: usize = reports.iter().map(|r| r.not_run).sum();
    if let (Some(pattern), 0) = (&args.run, cases) {
        // A filter that matches nothing would end in `0 passed, 0 failed`:
        // a green run of nothing, most likely a misspelt name.
        return usage_error(
            &format!("no case name matches `--run {pattern}` ({not_run} case(s) in all)"),
            Some("`--run` is matched anywhere in a case's name, the text after `case`"),
        );
    }
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
            if args.run.is_some() {
                println!("{not_run} case(s) not run: their names do not match `--run`");
            }
            println!("{} policy test file(s), {cases} case(s)", reports.len());
            // The plain closing line that CI readers know.
            println!("{} passed, {} failed", cases - failed, failed + counted);
        }
        Format::Json => {
            let files: Vec<Value> = reports.iter().map(FileReport::to_json).collect();
            let mut out =
                json!({"files": files, "cases": cases, "failed": failed, "uncovered": uncovered});
            if args.run.is_some() {
                out["not_run"] = json!(not_run);
            }
            println!("{out}");
        }
    }
    if failed > 0 || (args.coverage && uncovered > 0) {
        exit::FAILED
    } else {
        exit::OK
    }
}
