//! Shell command lines as data: a command line read by a real POSIX/bash
//! parser (`brush-parser`) into its simple commands and the files its
//! redirections write, for the `runs only`, `runs` and `writes inside`
//! tests.
//!
//! Whatever the reader cannot see through is [`Opaque`]: text the parser
//! cannot read, a command whose name is not a plain word, a command that
//! runs text as commands (`eval`, `sh -c`), a construct whose words may
//! run commands the parser keeps as text. The tests fail on it, so a rule's
//! polarity decides, as for every failed predicate.

mod pattern;
mod words;

use std::panic::{catch_unwind, AssertUnwindSafe};

use brush_parser::ast::{
    Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, Pipeline, RedirectList, SimpleCommand as AstCommand,
};
use brush_parser::ParserOptions;

pub use pattern::CommandPattern;
pub use words::Word;

/// The longest command line read, in bytes.
pub const MAX_LINE_BYTES: usize = 16 * 1024;
/// The most simple commands one line may hold.
pub const MAX_COMMANDS: usize = 256;
/// How deep substitutions and compound commands may nest.
pub const MAX_DEPTH: usize = 16;

/// Why a command line cannot be seen through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opaque {
    /// What was met, for `explain`.
    pub what: &'static str,
}

impl Opaque {
    fn new(what: &'static str) -> Self {
        Opaque { what }
    }
}

impl std::fmt::Display for Opaque {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.what)
    }
}

/// One simple command: its words (the first names the command) and
/// whether it sets variables for itself (`FOO=1 cmd`) or for the shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The words after quote removal; the first is the command's name.
    pub words: Vec<Word>,
    /// Whether variable assignments stand before it.
    pub assigns: bool,
}

/// A command line read into what it runs and writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandLine {
    /// Every simple command, wherever it stands.
    pub commands: Vec<SimpleCommand>,
    /// The target of every redirection that writes a file.
    pub writes: Vec<Word>,
    /// Whether some command changes the shell's folder (`cd`, `pushd`,
    /// `popd`), after which a relative target is not where it reads.
    pub changes_folder: bool,
}

/// Commands that run text, or a file, as shell commands.
const RUNS_TEXT: &[&str] = &["eval", "exec", "source", ".", "alias"];
/// Shells: opaque when given `-c` text or reading commands from their input.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "mksh"];
/// Commands that change the shell's folder.
const CHANGES_FOLDER: &[&str] = &["cd", "pushd", "popd"];

/// Reads a command line; `Err` when any part of it cannot be seen through.
pub fn read(line: &str) -> Result<CommandLine, Opaque> {
    if line.len() > MAX_LINE_BYTES {
        return Err(Opaque::new("a command line over 16 KiB"));
    }
    let mut reader = Reader::default();
    reader.program(line, 0)?;
    Ok(reader.line)
}

/// The reader's state while it walks a line.
#[derive(Default)]
pub(crate) struct Reader {
    line: CommandLine,
}

impl Reader {
    /// Parses `text` as a program and reads it.
    fn program(&mut self, text: &str, depth: usize) -> Result<(), Opaque> {
        if depth > MAX_DEPTH {
            return Err(Opaque::new("substitutions nested more than 16 deep"));
        }
        // The parser's own nesting is bounded by counting brackets first,
        // so that its recursion stays shallow.
        if bracket_depth(text) > 4 * MAX_DEPTH {
            return Err(Opaque::new("brackets nested too deep"));
        }
        let options = ParserOptions::default();
        // The parser is another crate's: a panic in it is a line it cannot
        // read, never a crash of the decision.
        let parsed = catch_unwind(AssertUnwindSafe(|| {
            brush_parser::Parser::new(text.as_bytes(), &options).parse_program()
        }));
        let program = match parsed {
            Ok(Ok(program)) => program,
            Ok(Err(_)) | Err(_) => return Err(Opaque::new("text the shell parser cannot read")),
        };
        for list in &program.complete_commands {
            self.list(list, depth)?;
        }
        Ok(())
    }

    /// A command substitution's text, read as a program one level down.
    fn nested(&mut self, text: &str, depth: usize) -> Result<(), Opaque> {
        self.program(text, depth + 1)
    }

    fn list(&mut self, list: &CompoundList, depth: usize) -> Result<(), Opaque> {
        for item in &list.0 {
            self.pipeline(&item.0.first, depth)?;
            for next in &item.0.additional {
                let (brush_parser::ast::AndOr::And(p) | brush_parser::ast::AndOr::Or(p)) = next;
                self.pipeline(p, depth)?;
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, pipeline: &Pipeline, depth: usize) -> Result<(), Opaque> {
        let piped = pipeline.seq.len() > 1;
        for (i, command) in pipeline.seq.iter().enumerate() {
            // A shell reading its commands from a pipe runs text unseen.
            self.command(command, depth, piped && i > 0)?;
        }
        Ok(())
    }

    fn command(&mut self, command: &Command, depth: usize, fed: bool) -> Result<(), Opaque> {
        if depth > MAX_DEPTH {
            return Err(Opaque::new("commands nested more than 16 deep"));
        }
        match command {
            Command::Simple(simple) => self.simple(simple, depth, fed),
            Command::Compound(compound, redirects) => {
                self.compound(compound, depth)?;
                self.redirects(redirects.as_ref(), depth)
            }
            Command::Function(function) => {
                // A function's body runs wherever its name is called: its
                // commands count as run.
                self.compound(&function.body.0, depth)?;
                self.redirects(function.body.1.as_ref(), depth)
            }
            Command::ExtendedTest(..) => Err(Opaque::new("`[[ ]]`, whose words may run commands")),
        }
    }

    fn compound(&mut self, compound: &CompoundCommand, depth: usize) -> Result<(), Opaque> {
        let depth = depth + 1;
        match compound {
            CompoundCommand::BraceGroup(group) => self.list(&group.list, depth),
            CompoundCommand::Subshell(subshell) => self.list(&subshell.list, depth),
            CompoundCommand::IfClause(clause) => {
                self.list(&clause.condition, depth)?;
                self.list(&clause.then, depth)?;
                for other in clause.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.list(condition, depth)?;
                    }
                    self.list(&other.body, depth)?;
                }
                Ok(())
            }
            CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => {
                self.list(&clause.0, depth)?;
                self.list(&clause.1.list, depth)
            }
            CompoundCommand::ForClause(clause) => {
                for value in clause.values.iter().flatten() {
                    self.word(&value.value, depth)?;
                }
                self.list(&clause.body.list, depth)
            }
            CompoundCommand::CaseClause(clause) => {
                self.word(&clause.value.value, depth)?;
                for case in &clause.cases {
                    for pattern in &case.patterns {
                        self.word(&pattern.value, depth)?;
                    }
                    if let Some(body) = &case.cmd {
                        self.list(body, depth)?;
                    }
                }
                Ok(())
            }
            CompoundCommand::Arithmetic(_) | CompoundCommand::ArithmeticForClause(_) => Err(
                Opaque::new("`(( ))` arithmetic, whose words may run commands"),
            ),
            CompoundCommand::Coprocess(_) => Err(Opaque::new("`coproc`")),
        }
    }

    fn simple(&mut self, simple: &AstCommand, depth: usize, fed: bool) -> Result<(), Opaque> {
        if self.line.commands.len() >= MAX_COMMANDS {
            return Err(Opaque::new("more than 256 simple commands"));
        }
        let mut parts = Parts::default();
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, depth, &mut parts)?;
        }
        if let Some(name) = &simple.word_or_name {
            parts.words.push(self.word(&name.value, depth)?);
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            self.item(item, depth, &mut parts)?;
        }
        let Parts {
            words,
            assigns,
            heredoc,
        } = parts;
        if let Some(first) = words.first() {
            let Some(name) = first.plain() else {
                return Err(Opaque::new(
                    "a command whose name is a variable, a substitution or a glob",
                ));
            };
            let base = name.rsplit('/').next().unwrap_or(name);
            if RUNS_TEXT.contains(&base) {
                return Err(Opaque::new("`eval`, `exec`, `source`, `.` or `alias`"));
            }
            if SHELLS.contains(&base) {
                // `bash script.sh` runs a file, as `./script.sh` does; `-c`
                // text, or commands fed in, are not seen.
                let script = words.get(1).and_then(Word::plain);
                let reads_text = match script {
                    Some(arg) => arg.starts_with('-') || arg.starts_with('+'),
                    None => true,
                };
                if reads_text || heredoc || fed {
                    return Err(Opaque::new("a shell given commands as text"));
                }
            }
            if CHANGES_FOLDER.contains(&base) {
                self.line.changes_folder = true;
            }
        }
        self.line.commands.push(SimpleCommand { words, assigns });
        Ok(())
    }

    /// One word, assignment, redirection or process substitution of a
    /// simple command.
    fn item(
        &mut self,
        item: &CommandPrefixOrSuffixItem,
        depth: usize,
        parts: &mut Parts,
    ) -> Result<(), Opaque> {
        match item {
            CommandPrefixOrSuffixItem::Word(word) => {
                parts.words.push(self.word(&word.value, depth)?);
            }
            CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
                parts.assigns = true;
                // The value's substitutions run.
                self.word(&word.value, depth)?;
            }
            CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
                parts.heredoc |= matches!(
                    redirect,
                    IoRedirect::HereDocument(..) | IoRedirect::HereString(..)
                );
                self.redirect(redirect, depth)?;
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                self.list(&subshell.list, depth + 1)?;
            }
        }
        Ok(())
    }

    fn redirects(&mut self, list: Option<&RedirectList>, depth: usize) -> Result<(), Opaque> {
        for redirect in list.iter().flat_map(|l| l.0.iter()) {
            self.redirect(redirect, depth)?;
        }
        Ok(())
    }

    fn redirect(&mut self, redirect: &IoRedirect, depth: usize) -> Result<(), Opaque> {
        match redirect {
            IoRedirect::File(_, kind, target) => {
                let writes = matches!(
                    kind,
                    IoFileRedirectKind::Write
                        | IoFileRedirectKind::Append
                        | IoFileRedirectKind::Clobber
                        | IoFileRedirectKind::ReadAndWrite
                        | IoFileRedirectKind::DuplicateOutput
                );
                match target {
                    IoFileRedirectTarget::Filename(word) => {
                        let word = self.word(&word.value, depth)?;
                        if writes {
                            self.line.writes.push(word);
                        }
                    }
                    IoFileRedirectTarget::Duplicate(word) => {
                        // `>&2` and `>&-` name descriptors; `>& file` a file.
                        let word = self.word(&word.value, depth)?;
                        let descriptor = word.plain().is_some_and(|w| {
                            w == "-" || w.trim_end_matches('-').bytes().all(|b| b.is_ascii_digit())
                        });
                        if writes && !descriptor {
                            self.line.writes.push(word);
                        }
                    }
                    IoFileRedirectTarget::Fd(_) => {}
                    IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                        self.list(&subshell.list, depth + 1)?;
                    }
                }
                Ok(())
            }
            IoRedirect::OutputAndError(word, _) => {
                let word = self.word(&word.value, depth)?;
                self.line.writes.push(word);
                Ok(())
            }
            IoRedirect::HereString(_, word) => self.word(&word.value, depth).map(drop),
            IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    let pieces = brush_parser::word::parse_heredoc(
                        &doc.doc.value,
                        &ParserOptions::default(),
                    )
                    .map_err(|_| Opaque::new("a here-document the parser cannot read"))?;
                    let mut text = String::new();
                    self.pieces(&doc.doc.value, &pieces, true, &mut text, depth)?;
                }
                Ok(())
            }
        }
    }
}

/// What a simple command is made of, gathered item by item.
#[derive(Default)]
struct Parts {
    words: Vec<Word>,
    assigns: bool,
    /// Whether a here-document or here-string feeds it.
    heredoc: bool,
}

/// The deepest nesting of brackets and quotes-that-open-commands in `text`.
fn bracket_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' | b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest + text.bytes().filter(|b| *b == b'`').count() / 2
}

#[cfg(test)]
mod tests;
