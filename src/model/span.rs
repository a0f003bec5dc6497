//! Where a thing is written: a byte range of a policy file's text.
//!
//! Every layer carries spans (the AST, the compiled rules, decisions and
//! explanations), so the type lives here, below them all.

/// A byte range in the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// The first byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The bytes from `start` up to (not including) `end`.
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }
    /// How many bytes it covers.
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }
    /// Whether it covers no byte.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The smallest span that covers both.
    pub fn join(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}
