#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Every `console` example in the README and `docs/` is run here against the
//! real binary, and what it prints must be what the page shows, so the docs
//! cannot drift from the tool.
//!
//! A block reads like a terminal: `$ COMMAND` lines, each followed by what it
//! prints (stdout and stderr together, as a terminal shows them). A line that
//! is exactly `...` stands for any number of lines. Commands run through
//! `sh` in a scratch folder (one a page) holding copies of `policies/`,
//! `docs/examples/` and `tests/fixtures/`, with the freshly built `mcppol`
//! first on the PATH, so a page's relative paths are the ones a reader types
//! at the top of the checkout. An `mcppol` block whose first line is
//! `# NAME.mcppol` (or `.mcppoltest`) and nothing more is written to NAME
//! (that caption line left out) before the examples after it run: the
//! policy a page shows is the one its example checks. A ```` ```json NAME.json ````
//! block is written to NAME.json the same way (an event a page pipes in).

use std::path::{Path, PathBuf};
use std::process::Command;

/// One `$ COMMAND` of a page, with what it must print.
struct Example {
    page: String,
    line: usize,
    command: String,
    expected: Vec<String>,
}

/// What a page holds for this test, in page order.
enum Step {
    /// A file the page shows (`# NAME` on an `mcppol` block's first line).
    File {
        name: String,
        text: String,
    },
    Run(Example),
}

/// The name an `mcppol` block's first line gives it, if any.
fn file_name(first_line: &str) -> Option<String> {
    let name = first_line.strip_prefix("# ")?.trim_end();
    let ok = !name.contains(char::is_whitespace)
        && !name.starts_with('/')
        && !name.contains("..")
        && (name.ends_with(".mcppol") || name.ends_with(".mcppoltest"));
    ok.then(|| name.to_string())
}

/// The name a ```` ```json NAME.json ```` fence gives its block, if any.
fn json_file_name(name: &str) -> Option<String> {
    let name = name.trim();
    let ok = !name.contains(char::is_whitespace)
        && !name.contains('/')
        && !name.contains("..")
        && name.ends_with(".json");
    ok.then(|| name.to_string())
}

/// The files and `console` examples of one Markdown page.
fn steps(page: &Path) -> Vec<Step> {
    let text = std::fs::read_to_string(page).unwrap();
    let name = page
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(page)
        .display()
        .to_string();
    let mut out: Vec<Step> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_end();
        i += 1;
        if fence == "```mcppol" {
            let body: Vec<&str> = lines[i..]
                .iter()
                .take_while(|l| l.trim_end() != "```")
                .copied()
                .collect();
            i += body.len() + 1;
            if let Some(file) = body.first().and_then(|l| file_name(l)) {
                let text = body[1..].iter().map(|l| format!("{l}\n")).collect();
                out.push(Step::File { name: file, text });
            }
            continue;
        }
        // A ```` ```json NAME.json ```` block is a file the page asks the
        // reader to save (an event to pipe in by hand), written like the
        // `# NAME.mcppol` blocks above.
        if let Some(file) = fence.strip_prefix("```json ").and_then(json_file_name) {
            let body: Vec<&str> = lines[i..]
                .iter()
                .take_while(|l| l.trim_end() != "```")
                .copied()
                .collect();
            i += body.len() + 1;
            let text = body.iter().map(|l| format!("{l}\n")).collect();
            out.push(Step::File { name: file, text });
            continue;
        }
        if fence != "```console" {
            continue;
        }
        let mut in_block_examples = 0;
        while i < lines.len() && lines[i].trim_end() != "```" {
            let line = lines[i];
            if let Some(command) = line.strip_prefix("$ ") {
                in_block_examples += 1;
                out.push(Step::Run(Example {
                    page: name.clone(),
                    line: i + 1,
                    command: command.to_string(),
                    expected: Vec::new(),
                }));
            } else if let (true, Some(Step::Run(example))) = (in_block_examples > 0, out.last_mut())
            {
                example.expected.push(line.trim_end().to_string());
            } else {
                panic!("{name}:{}: a console block must start with `$ `", i + 1);
            }
            i += 1;
        }
        assert!(i < lines.len(), "{name}: a console block is not closed");
        i += 1;
    }
    out
}

/// Whether `got` is `want`, where a `...` line of `want` stands for any
/// number of lines.
fn matches(want: &[String], got: &[String]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=got.len()).any(|skip| matches(rest, &got[skip..]))
        }
        Some((first, rest)) => got
            .split_first()
            .is_some_and(|(g, grest)| g == first && matches(rest, grest)),
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Pages whose console examples are run: the README and every page of docs/.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

#[test]
fn console_examples_print_what_the_docs_show() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin_dir = Path::new(crate::common::MCPPOL).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let mut failures = Vec::new();
    let mut ran = 0;
    for page in pages(root) {
        let scratch = tempfile::tempdir().unwrap();
        for dir in ["policies", "docs/examples", "tests/fixtures"] {
            copy_tree(&root.join(dir), &scratch.path().join(dir));
        }
        for step in steps(&page) {
            let example = match step {
                Step::File { name, text } => {
                    let path = scratch.path().join(name);
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(path, text).unwrap();
                    continue;
                }
                Step::Run(example) => example,
            };
            let output = Command::new("sh")
                .arg("-c")
                .arg(format!("{} 2>&1", example.command))
                .current_dir(scratch.path())
                .env("PATH", &path)
                .env("NO_COLOR", "1")
                .env_remove("CLICOLOR_FORCE")
                .output()
                .unwrap();
            ran += 1;
            let text = String::from_utf8_lossy(&output.stdout);
            let mut got: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
            let mut want = example.expected.clone();
            while got.last().is_some_and(|l| l.is_empty()) {
                got.pop();
            }
            while want.last().is_some_and(|l| l.is_empty()) {
                want.pop();
            }
            if !matches(&want, &got) {
                failures.push(format!(
                    "{}:{}: `{}` printed:\n{}\n--- but the page shows:\n{}\n",
                    example.page,
                    example.line,
                    example.command,
                    got.join("\n"),
                    want.join("\n")
                ));
            }
        }
    }
    assert!(ran >= 10, "only {ran} console examples were found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_wildcard_line_stands_for_any_number_of_lines() {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert!(matches(&v(&["a", "...", "d"]), &v(&["a", "b", "c", "d"])));
    assert!(matches(&v(&["a", "...", "d"]), &v(&["a", "d"])));
    assert!(!matches(&v(&["a", "...", "d"]), &v(&["a", "b"])));
    assert!(!matches(&v(&["a", "b"]), &v(&["a", "b", "c"])));
}

/// The README names only what a host can use, and what it can depend on:
/// the store's module is private (its types are at the crate root), and
/// the crate is not on a registry, so no `version = ` line for it.
#[test]
fn the_readme_names_only_public_paths_and_no_registry_version() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(readme.contains("not on\ncrates.io yet") || readme.contains("not on crates.io yet"));
    for line in readme.lines() {
        assert!(
            !line.contains("`mcppol::store`"),
            "README names the private module: {line}"
        );
        let dependency = line.trim_start().starts_with("mcppol = ");
        assert!(
            !(dependency && line.contains("version")),
            "README shows a registry version while the crate is not published: {line}"
        );
    }
}
