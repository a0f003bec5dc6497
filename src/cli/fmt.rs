//! `mcppol fmt [--check [--diff]] PATH...`: rewrite policy files in the
//! canonical layout, or with `--check` name the files that would change
//! (with `--diff`, show how, as a unified diff).

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::check::collect_files;
use super::{color, exit, usage_error, Format};
use crate::diagnostics::render_all;
use crate::fmt::{format, FmtError};

#[derive(Args, Debug)]
pub struct FmtArgs {
    /// Policy files, and folders to search for `*.mcppol` files; `-` alone
    /// formats standard input to standard output.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Change nothing: list the files that are not formatted (exit 1 if any).
    #[arg(long)]
    check: bool,
    /// With `--check`: print a unified diff of what fmt would change,
    /// instead of the files' names.
    #[arg(long, requires = "check")]
    diff: bool,
    /// `human` (one file a line) or `json` (one object).
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

/// How long the diff may look for the smallest edit before it settles for
/// a correct but larger one (a whole file rewritten, in the worst case).
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// The unified diff (3 lines of context) that turns `text` into `formatted`,
/// both sides named `name`, so that `patch -p0` applies it in place.
fn unified_diff(name: &str, text: &str, formatted: &str) -> String {
    similar::TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(text, formatted)
        .unified_diff()
        .context_radius(3)
        .header(name, name)
        .to_string()
}

/// `mcppol fmt -`: standard input to standard output, for editors.
fn stdin_to_stdout(check: bool, diff: bool) -> u8 {
    let text = match crate::io::read_stdin(crate::syntax::MAX_FILE_BYTES as u64) {
        Ok(text) => text,
        Err(e) => return usage_error(&e, None),
    };
    match format("<stdin>", &text) {
        Ok(out) => {
            if check {
                if out == text {
                    exit::OK
                } else {
                    if diff {
                        print!("{}", unified_diff("<stdin>", &text, &out));
                    } else {
                        println!("would reformat <stdin>");
                    }
                    exit::FAILED
                }
            } else {
                print!("{out}");
                exit::OK
            }
        }
        Err(FmtError::Syntax(diagnostics)) => {
            eprint!("{}", render_all(&diagnostics, color()));
            exit::FAILED
        }
        Err(FmtError::Unsafe(message)) => {
            eprintln!("error: {message}");
            exit::FAILED
        }
    }
}

pub fn run(args: FmtArgs) -> u8 {
    if args.paths.len() == 1 && args.paths[0].as_os_str() == "-" {
        return stdin_to_stdout(args.check, args.diff);
    }
    let files = match collect_files(&args.paths) {
        Ok(f) => f,
        Err(e) => return usage_error(&e, None),
    };
    let mut changed = Vec::new();
    let mut diffs = Vec::new();
    let mut failed = Vec::new();
    for path in &files {
        let name = path.display().to_string();
        let text = match crate::read_policy_file(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: {e}");
                failed.push(name);
                continue;
            }
        };
        let out = match format(&name, &text) {
            Ok(out) => out,
            Err(FmtError::Syntax(diagnostics)) => {
                eprint!("{}", render_all(&diagnostics, color()));
                eprintln!("error: `{name}` has syntax errors: not formatted");
                failed.push(name);
                continue;
            }
            Err(FmtError::Unsafe(message)) => {
                eprintln!("error: `{name}`: {message}");
                failed.push(name);
                continue;
            }
        };
        if out == text {
            continue;
        }
        if args.diff {
            diffs.push(unified_diff(&name, &text, &out));
        }
        if !args.check {
            if let Err(e) = std::fs::write(path, &out) {
                eprintln!("error: cannot write `{name}`: {e}");
                failed.push(name);
                continue;
            }
        }
        changed.push(name);
    }
    match args.format {
        Format::Human if args.diff => {
            for diff in &diffs {
                print!("{diff}");
            }
        }
        Format::Human => {
            for name in &changed {
                if args.check {
                    println!("would reformat {name}");
                } else {
                    println!("reformatted {name}");
                }
            }
        }
        Format::Json => {
            let mut out = json!({
                "check": args.check,
                "files": files.len(),
                "changed": changed,
                "failed": failed,
            });
            if args.diff {
                // One diff a changed file, in the order of `changed`.
                out["diffs"] = json!(diffs);
            }
            println!("{out}");
        }
    }
    if !failed.is_empty() || (args.check && !changed.is_empty()) {
        exit::FAILED
    } else {
        exit::OK
    }
}
