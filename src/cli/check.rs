//! `mcppol check PATH...`: parse, compile and lint files and folders.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::{color, exit, usage_error};
use crate::diagnostics::{render_all, Diagnostic, Severity, SourceFile};
use crate::lint::{self, LintOptions, Listing};
use crate::{syntax, HostPredicates, LoadOptions};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Human,
    Json,
    /// One SARIF 2.1.0 log on stdout, for code-scanning UIs.
    Sarif,
}

#[derive(Args, Debug, Clone)]
pub struct CheckArgs {
    /// Policy files, and folders to search for `*.mcppol` files.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// `human` (diagnostics drawn on stderr) or `json` (one object a line on
    /// stdout).
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// The host predicates the embedding program registers (comma-separated);
    /// with it, `host.NAME` must name one of them.
    #[arg(long = "host-predicates", value_name = "NAMES", value_delimiter = ',')]
    host_predicates: Option<Vec<String>>,
    /// Keep running: check again every time a policy file under the paths
    /// is saved.
    #[arg(long)]
    watch: bool,
    /// Fail (exit status 1) on warnings too.
    #[arg(long = "deny-warnings")]
    deny_warnings: bool,
    /// A `tools/list` result to check rules against: `ID=FILE` for one
    /// server's listing, or FILE holding a map of server id to listing (or a
    /// listing, with `--server`). May repeat.
    #[arg(long = "tools", value_name = "[ID=]FILE")]
    tools: Vec<String>,
    /// The server id of `--tools` files that hold one listing and no `ID=`.
    #[arg(long = "server", value_name = "ID", requires = "tools")]
    server: Option<String>,
}

/// Every `*.mcppol` file under the paths, in a stable order.
pub fn collect_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    super::files::under(paths, "mcppol")
}

/// All diagnostics of one file: syntax, compile and, on a file without
/// errors, lints (which may use the tool listings of `lint_options`).
pub fn check_file_with(
    path: &Path,
    options: &LoadOptions,
    lint_options: &LintOptions,
) -> Vec<Diagnostic> {
    let origin = path.display().to_string();
    let text = match crate::read_policy_file(path) {
        Ok(t) => t,
        Err(message) => {
            let source = SourceFile::new(origin, String::new());
            return vec![Diagnostic::error(
                &source,
                crate::diagnostics::codes::IO_READ,
                syntax::Span::default(),
                message,
            )];
        }
    };
    lint::check_text(&origin, &text, options, lint_options)
}

/// The listings of `--tools`, read and merged.
fn listing(specs: &[String], server: Option<&str>) -> Result<Option<Listing>, String> {
    if specs.is_empty() {
        return Ok(None);
    }
    let mut listing = Listing::default();
    for spec in specs {
        listing
            .add_spec(spec, server)
            .map_err(|e| format!("--tools {spec}: {e}"))?;
    }
    Ok(Some(listing))
}

pub fn run(args: CheckArgs) -> u8 {
    if args.watch {
        let once = CheckArgs {
            watch: false,
            ..args.clone()
        };
        return super::watch::run(&args.paths, || run(once.clone()));
    }
    let files = match collect_files(&args.paths) {
        Ok(f) => f,
        Err(e) => return usage_error(&e, None),
    };
    let host = args.host_predicates.map(|names| {
        let mut registry = HostPredicates::new();
        for name in names {
            registry.register(name, |_| Err("declared for checking only".to_string()));
        }
        registry
    });
    let options = LoadOptions { host };
    let lint_options = match listing(&args.tools, args.server.as_deref()) {
        Ok(tools) => LintOptions { tools },
        Err(e) => return usage_error(&e, None),
    };
    let (mut errors, mut warnings) = (0usize, 0usize);
    let mut all = Vec::new();
    for file in &files {
        let diagnostics = check_file_with(file, &options, &lint_options);
        errors += diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        warnings += diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .count();
        match args.format {
            Format::Human => eprint!("{}", render_all(&diagnostics, color())),
            Format::Json => {
                for d in &diagnostics {
                    println!("{}", d.to_json());
                }
            }
            Format::Sarif => all.extend(diagnostics),
        }
    }
    // The folder as the store (and so `proxy`) loads it: one loader, one
    // answer. What only the whole folder shows (a policy name defined in
    // two files, or one file reached twice through a link) is reported
    // here; a folder the store refuses for a reason no file's own check
    // found is refused here too.
    let store = crate::store::load_diagnostics(&args.paths, &options);
    let mut whole: Vec<Diagnostic> = store
        .iter()
        .filter(|d| {
            use crate::diagnostics::codes::{STORE_DUPLICATE_POLICY, STORE_NO_POLICY};
            [STORE_DUPLICATE_POLICY, STORE_NO_POLICY].contains(&d.code)
        })
        .cloned()
        .collect();
    if errors == 0 && whole.is_empty() {
        whole = store;
    }
    errors += whole
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    match args.format {
        Format::Human => eprint!("{}", render_all(&whole, color())),
        Format::Json => {
            for d in &whole {
                println!("{}", d.to_json());
            }
        }
        Format::Sarif => all.extend(whole),
    }
    if let Format::Sarif = args.format {
        println!("{}", lint::sarif::log(&all));
    }
    if let Format::Human = args.format {
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        let denied = if args.deny_warnings && warnings > 0 {
            " (denied by --deny-warnings)"
        } else {
            ""
        };
        eprintln!(
            "checked {}: {}, {}{denied}",
            plural(files.len(), "file"),
            plural(errors, "error"),
            plural(warnings, "warning")
        );
    }
    if errors > 0 || (args.deny_warnings && warnings > 0) {
        exit::FAILED
    } else {
        exit::OK
    }
}
