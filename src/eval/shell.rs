//! The tests that read a command line as a shell does (`runs only`,
//! `runs`, `writes inside`), in three-valued logic: a line the reader
//! cannot see through fails.

use super::condition::Tri;
use crate::paths::{self, Links};
use crate::shell::{self, CommandPattern};

/// Files a redirection may always write: they hold nothing.
const HARMLESS_TARGETS: [&str; 3] = ["/dev/null", "/dev/stdout", "/dev/stderr"];

/// `runs only` (`only`): every simple command matches a pattern; `runs`:
/// some does. `loose` where a match narrows access.
pub(super) fn runs(line: &str, patterns: &[CommandPattern], only: bool, loose: bool) -> Tri {
    let Ok(read) = shell::read(line) else {
        return Tri::Failed;
    };
    let mut result = if only { Tri::True } else { Tri::False };
    for command in &read.commands {
        // Assignments before a command (`PATH=/tmp ls`) change what it
        // runs: no pattern names them, so such a command never passes
        // `runs only`; `runs` looks at its words alone.
        let one = if only && command.assigns {
            Tri::False
        } else {
            matches_one(&command.words, patterns, loose)
        };
        result = match (only, one) {
            (true, Tri::False) => return Tri::False,
            (false, Tri::True) => return Tri::True,
            (_, Tri::Failed) => Tri::Failed,
            _ => result,
        };
    }
    result
}

/// Whether some pattern matches the words: true, false, or unknown.
fn matches_one(words: &[shell::Word], patterns: &[CommandPattern], loose: bool) -> Tri {
    let mut result = Tri::False;
    for pattern in patterns {
        match pattern.matches(words, loose) {
            Some(true) => return Tri::True,
            None => result = Tri::Failed,
            Some(false) => {}
        }
    }
    result
}

/// `writes inside ROOT`: every file a redirection writes is inside.
pub(super) fn writes_inside(line: &str, root: &str, cwd: Option<&str>, links: Links<'_>) -> Tri {
    let Ok(read) = shell::read(line) else {
        return Tri::Failed;
    };
    let mut result = Tri::True;
    for target in &read.writes {
        let Some(path) = target.plain() else {
            result = Tri::Failed;
            continue;
        };
        if HARMLESS_TARGETS.contains(&path) {
            continue;
        }
        if read.changes_folder && !path.starts_with('/') {
            // After a `cd`, a relative target is not where it reads.
            result = Tri::Failed;
            continue;
        }
        if !paths::inside(path, root, cwd, links) {
            return Tri::False;
        }
    }
    result
}

/// What the shell reader made of a command line, for `explain`.
pub(crate) fn summary(line: &str) -> String {
    match crate::shell::read(line) {
        Err(why) => format!("the line cannot be seen through ({why}): the test fails closed"),
        Ok(read) => {
            let commands: Vec<String> = read
                .commands
                .iter()
                .map(|c| {
                    let words: Vec<&str> = c
                        .words
                        .iter()
                        .map(|w| w.plain().unwrap_or("<unknown>"))
                        .collect();
                    format!("`{}`", words.join(" "))
                })
                .collect();
            let writes: Vec<&str> = read
                .writes
                .iter()
                .map(|w| w.plain().unwrap_or("<unknown>"))
                .collect();
            let mut out = format!("read as the commands [{}]", commands.join(", "));
            if !writes.is_empty() {
                out.push_str(&format!(", writing [{}]", writes.join(", ")));
            }
            out
        }
    }
}
