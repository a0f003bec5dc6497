//! Diagnostics: errors and warnings that point at the policy text.
//!
//! Every stage (parser, compiler, checker) reports [`Diagnostic`]s: a stable
//! code, a lower-case message, the span of the bad entry, a label and a help
//! line. They carry their [`SourceFile`], so they render with a snippet
//! anywhere (miette) and convert to the machine-readable form that
//! `mcppol check --format json` prints.

use std::fmt;
use std::sync::{Arc, OnceLock};

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents,
    SourceCode, SourceSpan, SpanContents,
};

use crate::syntax::Span;

// The store's codes are used only with the `store` feature.
#[cfg_attr(not(feature = "store"), allow(dead_code))]
pub mod codes;

/// The text of one policy file and the name it is reported under.
#[derive(Debug)]
pub struct SourceFile {
    /// The name diagnostics give it (usually the path).
    pub name: String,
    /// The whole text.
    pub text: String,
    /// Byte offsets where lines start, built on first use, so that placing
    /// many diagnostics in a large file does not rescan it each time.
    line_starts: OnceLock<Vec<usize>>,
    /// The text as snippets show it: hidden, bidi and control characters
    /// replaced by visible ones of the same length (`None` when there are
    /// none), so that a diagnostic about a `U+202E` is not itself reordered
    /// on screen.
    shown: OnceLock<Option<String>>,
}

impl SourceFile {
    /// A text and its name, shared.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Arc<Self> {
        Arc::new(SourceFile {
            name: name.into(),
            text: text.into(),
            line_starts: OnceLock::new(),
            shown: OnceLock::new(),
        })
    }

    /// The text of a span (empty if the span is not in the text).
    pub(crate) fn text_of(&self, span: crate::syntax::Span) -> &str {
        self.text.get(span.start..span.end).unwrap_or_default()
    }

    /// The 1-based line of a byte offset (what [`SourceFile::line_col`]
    /// gives first, without counting the column).
    pub fn line_of(&self, offset: usize) -> usize {
        self.line_starts().partition_point(|s| *s <= offset).max(1)
    }

    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| {
            std::iter::once(0)
                .chain(self.text.match_indices('\n').map(|(i, _)| i + 1))
                .collect()
        })
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(&self.text, offset.min(self.text.len()));
        let starts = self.line_starts();
        // The last line start at or before the offset.
        let line = starts.partition_point(|s| *s <= offset).max(1);
        let line_start = starts.get(line - 1).copied().unwrap_or(0);
        let column = self.text[line_start..offset].chars().count() + 1;
        (line, column)
    }

    /// The lines around a span (`before` lines above it, `after` below,
    /// one more each side): `(first line's 0-based number, its byte
    /// offset, the text)`. Rendering a snippet reads only these, so the
    /// many warnings of a large file do not each rescan it.
    fn window(
        &self,
        start: usize,
        end: usize,
        before: usize,
        after: usize,
    ) -> (usize, usize, &str) {
        let starts = self.line_starts();
        let line_of = |offset: usize| starts.partition_point(|s| *s <= offset).max(1) - 1;
        let first = line_of(start).saturating_sub(before + 1);
        let last = line_of(end).saturating_add(after + 2);
        let from = starts.get(first).copied().unwrap_or(0);
        let to = starts.get(last).copied().unwrap_or(self.text.len());
        (first, from, self.text.get(from..to).unwrap_or_default())
    }
}
fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

impl SourceCode for SourceFile {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let start = span.offset().min(self.text.len());
        let end = (span.offset() + span.len()).min(self.text.len());
        let (first_line, from, window) =
            self.window(start, end, context_lines_before, context_lines_after);
        // Hidden, bidi and control characters drawn visibly, at the same
        // byte length (so the window's offsets hold in it too).
        let shown = self
            .shown
            .get_or_init(|| crate::syntax::shown_text(&self.text))
            .as_deref()
            .and_then(|shown| shown.get(from..from + window.len()))
            .unwrap_or(window);
        let local = SourceSpan::new((start - from).into(), end - start);
        let inner = shown.read_span(&local, context_lines_before, context_lines_after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            SourceSpan::new((inner.span().offset() + from).into(), inner.span().len()),
            inner.line() + first_line,
            inner.column(),
            // miette counts the line ends read from the start of its input.
            inner.line_count() + first_line,
        )))
    }
}

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The file loads; the checker thinks it does not mean what it says.
    Warning,
    /// The file does not load.
    Error,
}

impl Severity {
    /// `warning` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One error or warning about a policy file.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// Stable, e.g. `mcppol::compile::unknown_setting`.
    pub code: &'static str,
    /// What is wrong, in one sentence.
    pub message: String,
    /// Where, in [`Diagnostic::source`].
    pub span: Span,
    /// The words under the snippet's underline.
    pub label: String,
    /// How to fix it.
    pub help: Option<String>,
    /// The file it is about.
    pub source: Arc<SourceFile>,
}

impl Diagnostic {
    pub(crate) fn error(
        source: &Arc<SourceFile>,
        code: &'static str,
        span: Span,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            span,
            label: String::new(),
            help: None,
            source: Arc::clone(source),
        }
    }

    pub(crate) fn warning(
        source: &Arc<SourceFile>,
        code: &'static str,
        span: Span,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(source, code, span, message)
        }
    }

    pub(crate) fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    pub(crate) fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// 1-based line and column where the span starts.
    pub fn line_col(&self) -> (usize, usize) {
        self.source.line_col(self.span.start)
    }

    /// The JSON object `mcppol check --format json` prints.
    pub fn to_json(&self) -> serde_json::Value {
        let (line, column) = self.line_col();
        let (end_line, end_column) = self.source.line_col(self.span.end);
        serde_json::json!({
            "file": self.source.name,
            "line": line,
            "column": column,
            "end_line": end_line,
            "end_column": end_column,
            "severity": self.severity.as_str(),
            "code": self.code,
            "message": self.message,
            "help": self.help,
        })
    }

    /// The diagnostic drawn with its snippet, as a terminal shows it.
    pub fn render(&self, color: bool) -> String {
        render_all(std::slice::from_ref(self), color)
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.severity {
            Severity::Warning => miette::Severity::Warning,
            Severity::Error => miette::Severity::Error,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display + 'a>)
    }

    // A file that could not be read (a folder, a FIFO) has no text: drawing
    // its snippet would only draw an empty box under the message, which
    // already names the file.
    fn source_code(&self) -> Option<&dyn SourceCode> {
        (!self.source.text.is_empty()).then_some(&*self.source as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.source.text.is_empty() {
            return None;
        }
        let label = if self.label.is_empty() {
            None
        } else {
            Some(self.label.clone())
        };
        let span = SourceSpan::new(self.span.start.into(), self.span.len());
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            label, span,
        ))))
    }
}

/// Draws diagnostics one after another, without colour unless asked.
pub fn render_all(diagnostics: &[Diagnostic], color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
    let mut out = String::new();
    for diagnostic in diagnostics {
        if handler.render_report(&mut out, diagnostic).is_err() {
            out.push_str(&format!("{}: {}\n", diagnostic.code, diagnostic.message));
        }
        out.push('\n');
    }
    out
}

/// The errors that stopped a file from loading: every one that was found.
///
/// `Debug` draws the diagnostics as `Display`'s long form does (file,
/// line, snippet, help), not the structure: a host whose `main` returns
/// this error (or a `Box<dyn Error>` holding it) prints something a person
/// can act on.
#[derive(Clone)]
#[non_exhaustive]
pub struct LoadError {
    /// Every error (and warning) found, in text order.
    pub diagnostics: Vec<Diagnostic>,
}

impl LoadError {
    pub(crate) fn new(diagnostics: Vec<Diagnostic>) -> Self {
        LoadError { diagnostics }
    }

    /// All diagnostics drawn with their snippets.
    pub fn render(&self, color: bool) -> String {
        render_all(&self.diagnostics, color)
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let errors = self
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        match self.diagnostics.first() {
            Some(first) => {
                let (line, column) = first.line_col();
                write!(
                    f,
                    "{}:{line}:{column}: {}",
                    first.source.name, first.message
                )?;
                if errors > 1 {
                    write!(f, " (and {} more errors)", errors - 1)?;
                }
                Ok(())
            }
            None => f.write_str("the policy did not load"),
        }
    }
}

impl fmt::Debug for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.diagnostics.is_empty() {
            return f.write_str("the policy did not load");
        }
        f.write_str("the policy did not load:\n\n")?;
        f.write_str(self.render(false).trim_end())
    }
}

impl std::error::Error for LoadError {}

impl miette::Diagnostic for LoadError {
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn miette::Diagnostic> + 'a>> {
        Some(Box::new(
            self.diagnostics
                .iter()
                .map(|d| d as &dyn miette::Diagnostic),
        ))
    }
}

/// The known word closest to `word`, if one is close enough to be a likely
/// misspelling.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    let limit = (word.chars().count() / 3).max(1);
    // A cut-short word (`match` for `matches`) counts as close too.
    let truncated = |k: &str| lower.len() >= 3 && k.starts_with(lower.as_str());
    known
        .into_iter()
        .map(|k| (strsim::damerau_levenshtein(&lower, k), k))
        .filter(|(d, k)| *d <= limit || truncated(k))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters() {
        let src = SourceFile::new("p.mcppol", "ab\ncé x");
        assert_eq!(src.line_col(0), (1, 1));
        assert_eq!(src.line_col(3), (2, 1));
        assert_eq!(src.line_col(6), (2, 3));
    }

    #[test]
    fn snippets_read_from_a_window_agree_with_the_whole_text() {
        let text = "policy p {\n  allow \"a\"\n\n  deny é \"b\"\r\n  ask \"c\"\r # x\n}\n";
        let src = SourceFile::new("p.mcppol", text);
        for start in (0..text.len()).filter(|i| text.is_char_boundary(*i)) {
            for end in (start..=text.len()).filter(|i| text.is_char_boundary(*i)) {
                for context in [0, 1, 2] {
                    let span = SourceSpan::new(start.into(), end - start);
                    // The whole text as snippets show it (hidden and
                    // control characters drawn visibly, same byte length).
                    let shown = crate::syntax::shown_text(text).unwrap_or_else(|| text.to_string());
                    let want = shown.as_str().read_span(&span, context, context).unwrap();
                    let got = src.read_span(&span, context, context).unwrap();
                    assert_eq!(got.data(), want.data(), "{start}..{end} ({context})");
                    assert_eq!(got.span(), want.span(), "{start}..{end}");
                    assert_eq!(got.line(), want.line(), "{start}..{end}");
                    assert_eq!(got.column(), want.column(), "{start}..{end}");
                    assert_eq!(
                        got.line_count(),
                        want.line_count(),
                        "{start}..{end} ({context}) {:?}",
                        want.data()
                    );
                }
            }
        }
    }

    #[test]
    fn suggestions_need_to_be_close() {
        let known = ["default", "scope", "trusted"];
        assert_eq!(did_you_mean("defualt", known), Some("default"));
        assert_eq!(did_you_mean("Scope", known), Some("scope"));
        assert_eq!(did_you_mean("banana", known), None);
        assert_eq!(did_you_mean("match", ["in", "matches"]), Some("matches"));
    }
}
