//! A policy's regexes: compiled once per distinct source text and shared,
//! with the heap memory each one holds known, so that a file's regexes can
//! be kept within a budget.
//!
//! A policy whose text is known to load (a hook's checked-policy cache,
//! `crate::claude::checked`) may defer its condition regexes: each is
//! compiled the first time a request reaches it, under the same limits,
//! and one that then fails to compile makes its test unknown (`Failed`),
//! never a silent non-match.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use regex_automata::meta;

/// One compiled regex. Cloning shares it, search caches included (they
/// are pooled per thread), so a regex written on many rules costs once.
#[derive(Clone)]
pub struct CompiledRegex {
    engine: Engine,
    source: Arc<str>,
}

/// How a regex is matched.
#[derive(Clone)]
enum Engine {
    /// A plain literal, maybe anchored: a string test, no automaton built.
    Plain(Plain),
    Meta(Arc<meta::Regex>),
    /// Compiled on first use ([`CompiledRegex::deferred`]).
    Deferred(Arc<Deferred>),
}

/// A regex compiled the first time it is matched.
struct Deferred {
    size_limit: usize,
    /// The heap bytes the deferred regexes of one file hold together, and
    /// the most they may: the file's budget, as an eager load keeps it.
    budget: Arc<DeferredBudget>,
    /// The compiled regex, or `None` when it failed to compile or would
    /// cross the budget.
    compiled: OnceLock<Option<meta::Regex>>,
}

/// The budget the deferred regexes of one file share (see
/// [`CompiledRegex::deferred`]).
#[derive(Debug)]
pub struct DeferredBudget {
    used: AtomicUsize,
    limit: usize,
}

impl DeferredBudget {
    /// A budget of `limit` heap bytes for all of a file's regexes together.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(DeferredBudget {
            used: AtomicUsize::new(0),
            limit,
        })
    }

    /// Takes `bytes` from the budget; `false` when that would cross it.
    fn take(&self, bytes: usize) -> bool {
        let before = self.used.fetch_add(bytes, Ordering::Relaxed);
        before.saturating_add(bytes) <= self.limit
    }
}

/// A literal regex as a string test: `/^lit$/`, `/^lit/`, `/lit$/`, `/lit/`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Plain {
    Equal(Box<str>),
    Prefix(Box<str>),
    Suffix(Box<str>),
    Contains(Box<str>),
}

impl Plain {
    /// The test a regex is, if it is a literal: no metacharacter but a
    /// leading `^` and a trailing `$`, escapes only of ASCII punctuation
    /// (`\/`, `\.`; not `\<` or `\>`, which are word boundaries), and no
    /// flags (a flag is written in a group, which is refused).
    fn of(source: &str) -> Option<Plain> {
        let (start, rest) = match source.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, source),
        };
        let mut literal = String::with_capacity(rest.len());
        let mut end = false;
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some(e) if e.is_ascii_punctuation() && e != '<' && e != '>' => literal.push(e),
                    _ => return None,
                },
                '$' if chars.as_str().is_empty() => end = true,
                '.' | '+' | '*' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^' | '$' => {
                    return None
                }
                c => literal.push(c),
            }
        }
        let literal = literal.into_boxed_str();
        Some(match (start, end) {
            (true, true) => Plain::Equal(literal),
            (true, false) => Plain::Prefix(literal),
            (false, true) => Plain::Suffix(literal),
            (false, false) => Plain::Contains(literal),
        })
    }

    fn len(&self) -> usize {
        match self {
            Plain::Equal(l) | Plain::Prefix(l) | Plain::Suffix(l) | Plain::Contains(l) => l.len(),
        }
    }

    fn is_match(&self, text: &str) -> bool {
        match self {
            Plain::Equal(l) => super::glob::same(text.as_bytes(), l.as_bytes()),
            Plain::Prefix(l) => super::glob::starts_with(text, l),
            Plain::Suffix(l) => super::glob::ends_with(text, l),
            Plain::Contains(l) => text.contains(&**l),
        }
    }
}

impl fmt::Debug for CompiledRegex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}/", self.source)
    }
}

/// Why a regex could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegexError {
    /// It compiles to more than the limit (bytes).
    TooBig(usize),
    /// It is not a valid regex; the parser's message.
    Invalid(String),
}

impl CompiledRegex {
    /// Compiles `source` with the same syntax as the `regex` crate, its
    /// automata limited to `size_limit` bytes each.
    pub fn new(source: &str, size_limit: usize) -> Result<CompiledRegex, RegexError> {
        if let Some(plain) = Plain::of(source) {
            // Always a valid regex: literal characters, escapes the regex
            // syntax allows for any ASCII punctuation but `<` and `>`, and
            // the two anchors.
            return Ok(CompiledRegex {
                engine: Engine::Plain(plain),
                source: source.into(),
            });
        }
        Ok(CompiledRegex {
            engine: Engine::Meta(Arc::new(build(source, size_limit)?)),
            source: source.into(),
        })
    }

    /// `source` as a regex compiled the first time it is matched, with
    /// the same limits as [`CompiledRegex::new`] and its heap bytes taken
    /// from `budget` (shared by the file's deferred regexes). Only for a
    /// policy text known to compile: a deferred regex that then fails to
    /// compile, or would cross the budget, matches nothing through
    /// [`CompiledRegex::is_match`] and is unknown through
    /// [`CompiledRegex::check_match`], which conditions use so that it
    /// fails closed. A plain literal is a string test at once.
    pub fn deferred(source: &str, size_limit: usize, budget: &Arc<DeferredBudget>) -> Self {
        let engine = match Plain::of(source) {
            Some(plain) => Engine::Plain(plain),
            None => Engine::Deferred(Arc::new(Deferred {
                size_limit,
                budget: Arc::clone(budget),
                compiled: OnceLock::new(),
            })),
        };
        CompiledRegex {
            engine,
            source: source.into(),
        }
    }

    /// A deferred regex, compiled now if it is not yet; `None` when it
    /// cannot be.
    fn deferred_regex<'a>(&self, d: &'a Deferred) -> Option<&'a meta::Regex> {
        d.compiled
            .get_or_init(|| {
                let re = build(&self.source, d.size_limit).ok()?;
                d.budget.take(re.memory_usage()).then_some(re)
            })
            .as_ref()
    }

    /// The glob this regex is the same test as, for a literal anchored at
    /// one end or both (`/^lit/` is `lit*`, `/lit$/` is `*lit`, `/^lit$/`
    /// is `lit`); the index files such a regex as that glob.
    pub fn as_glob(&self) -> Option<super::glob::Glob> {
        use super::glob::Glob;
        match &self.engine {
            Engine::Plain(Plain::Equal(l)) => Some(Glob::Literal(Arc::from(&**l))),
            Engine::Plain(Plain::Prefix(l)) => Some(Glob::Prefix(Arc::from(&**l))),
            Engine::Plain(Plain::Suffix(l)) => Some(Glob::Suffix(Arc::from(&**l))),
            _ => None,
        }
    }

    /// Whether the regex matches `text`; `false` for a deferred regex
    /// that cannot be compiled (see [`CompiledRegex::check_match`]).
    pub fn is_match(&self, text: &str) -> bool {
        self.check_match(text).unwrap_or(false)
    }

    /// Whether the regex matches `text`, or `None` when it is a deferred
    /// regex that cannot be compiled (too big, or over the file's budget):
    /// a test on it is unknown.
    pub fn check_match(&self, text: &str) -> Option<bool> {
        match &self.engine {
            Engine::Plain(plain) => Some(plain.is_match(text)),
            Engine::Meta(re) => Some(re.is_match(text)),
            Engine::Deferred(d) => self.deferred_regex(d).map(|re| re.is_match(text)),
        }
    }

    /// The regex as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Heap bytes the compiled regex holds (not counting search caches).
    pub fn memory_usage(&self) -> usize {
        match &self.engine {
            Engine::Plain(plain) => plain.len(),
            Engine::Meta(re) => re.memory_usage(),
            Engine::Deferred(d) => d
                .compiled
                .get()
                .and_then(Option::as_ref)
                .map_or(0, meta::Regex::memory_usage),
        }
    }
}

/// Compiles `source` with the regex crate's syntax, its automata limited
/// to `size_limit` bytes each.
fn build(source: &str, size_limit: usize) -> Result<meta::Regex, RegexError> {
    // No full DFA: building one costs far more than the lazy DFA's
    // searches save on a policy's short inputs, and `dfa-build` is on
    // whenever another crate of the build (jsonschema's fancy-regex)
    // asks for it, which tripled the cost of loading a policy.
    let config = meta::Config::new()
        .dfa(false)
        .nfa_size_limit(Some(size_limit))
        .dfa_size_limit(Some(size_limit))
        .hybrid_cache_capacity(size_limit);
    meta::Regex::builder()
        .configure(config)
        .build(source)
        .map_err(|e| match (e.size_limit(), e.syntax_error()) {
            (Some(limit), _) => RegexError::TooBig(limit),
            (None, Some(syntax)) => RegexError::Invalid(syntax.to_string()),
            (None, None) => RegexError::Invalid(e.to_string()),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_like_the_regex_crate() {
        let re = CompiledRegex::new(r"(?i)^get_\w+$", 1 << 20).unwrap();
        assert!(re.is_match("GET_user"));
        assert!(!re.is_match("list"));
        assert_eq!(re.as_str(), r"(?i)^get_\w+$");
        assert!(re.memory_usage() > 0);
        assert!(matches!(re.engine, Engine::Meta(_)));
    }

    /// A literal regex tested as a string agrees with the regex engine.
    #[test]
    fn plain_literals_agree_with_the_engine() {
        let sources = [
            "^get_",
            "_repo$",
            "^exact$",
            "mid",
            "^refs\\/heads\\/release-",
            r"^a\.b$",
            "^",
            "$",
            "^$",
            "",
            "é$",
            "^Ab",
        ];
        let texts = [
            "get_user",
            "my_repo",
            "exact",
            "exactly",
            "amid",
            "refs/heads/release-1",
            "a.b",
            "axb",
            "",
            "café",
            "Abc",
            "abc",
            "\n",
        ];
        for source in sources {
            let re = CompiledRegex::new(source, 1 << 20).unwrap();
            assert!(matches!(re.engine, Engine::Plain(_)), "{source}");
            let engine = meta::Regex::new(source).unwrap();
            for text in texts {
                assert_eq!(
                    re.is_match(text),
                    engine.is_match(text),
                    "/{source}/ on {text:?}"
                );
            }
        }
        for source in [
            r"^a.b", "^a+", "(?i)^get", r"^\w", r"\<a", "a|b", "^a$b", "^a^", r"\ a",
        ] {
            let re = CompiledRegex::new(source, 1 << 20).unwrap();
            assert!(matches!(re.engine, Engine::Meta(_)), "{source}");
        }
    }

    proptest::proptest! {
        #[test]
        fn plain_agrees_with_the_engine_on_any_text(
            source in r"\^?[a-c/_.\\$]{0,5}\$?",
            text in "[a-c/_.$]{0,8}",
        ) {
            // A plain literal is always valid, and matches as the engine does.
            let engine = meta::Regex::new(&source);
            let ours = CompiledRegex::new(&source, 1 << 20);
            if matches!(ours.as_ref().map(|r| &r.engine), Ok(Engine::Plain(_))) {
                proptest::prop_assert!(engine.is_ok(), "/{}/", source);
            }
            if let (Ok(re), Ok(engine)) = (ours, engine) {
                proptest::prop_assert_eq!(re.is_match(&text), engine.is_match(&text), "/{}/", source);
            }
        }
    }

    #[test]
    fn a_deferred_regex_matches_as_a_compiled_one() {
        let budget = DeferredBudget::new(1 << 30);
        let re = CompiledRegex::deferred(r"\bcmd1\s+-[a-z]*f", 1 << 20, &budget);
        assert_eq!(
            re.memory_usage(),
            0,
            "nothing compiled before the first match"
        );
        assert_eq!(re.check_match("cmd1 -rf /"), Some(true));
        assert!(!re.is_match("cmd12 -rf /"));
        assert!(re.memory_usage() > 0);
        assert_eq!(re.as_str(), r"\bcmd1\s+-[a-z]*f");
        // A literal is a string test at once.
        let plain = CompiledRegex::deferred("^ls ", 1 << 20, &budget);
        assert!(matches!(plain.engine, Engine::Plain(_)));
    }

    #[test]
    fn a_deferred_regex_that_cannot_compile_is_unknown() {
        let budget = DeferredBudget::new(1 << 30);
        for source in [r"\w{1000}", "a("] {
            let re = CompiledRegex::deferred(source, 1 << 20, &budget);
            assert_eq!(re.check_match("a"), None, "{source}");
            assert!(!re.is_match("a"), "{source}");
        }
        // Past the file's budget: the regex that crosses it is unknown.
        let small = DeferredBudget::new(1);
        let re = CompiledRegex::deferred(r"\w+x", 1 << 20, &small);
        assert_eq!(re.check_match("abx"), None);
    }

    #[test]
    fn errors() {
        assert!(matches!(
            CompiledRegex::new(r"\w{1000}", 1 << 20),
            Err(RegexError::TooBig(_))
        ));
        match CompiledRegex::new("a(", 1 << 20) {
            Err(RegexError::Invalid(m)) => assert!(m.contains("unclosed group"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
