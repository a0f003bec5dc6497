//! A policy's regexes: compiled once per distinct source text and shared,
//! with the heap memory each one holds known, so that a file's regexes can
//! be kept within a budget.

use std::fmt;
use std::sync::Arc;

use regex_automata::meta;

/// One compiled regex. Cloning shares it, search caches included (they
/// are pooled per thread), so a regex written on many rules costs once.
#[derive(Clone)]
pub struct CompiledRegex {
    re: Arc<meta::Regex>,
    source: Arc<str>,
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
        // No full DFA: building one costs far more than the lazy DFA's
        // searches save on a policy's short inputs, and `dfa-build` is on
        // whenever another crate of the build (jsonschema's fancy-regex)
        // asks for it, which tripled the cost of loading a policy.
        let config = meta::Config::new()
            .dfa(false)
            .nfa_size_limit(Some(size_limit))
            .dfa_size_limit(Some(size_limit))
            .hybrid_cache_capacity(size_limit);
        match meta::Regex::builder().configure(config).build(source) {
            Ok(re) => Ok(CompiledRegex {
                re: Arc::new(re),
                source: source.into(),
            }),
            Err(e) => Err(match (e.size_limit(), e.syntax_error()) {
                (Some(limit), _) => RegexError::TooBig(limit),
                (None, Some(syntax)) => RegexError::Invalid(syntax.to_string()),
                (None, None) => RegexError::Invalid(e.to_string()),
            }),
        }
    }

    pub fn is_match(&self, text: &str) -> bool {
        self.re.is_match(text)
    }

    /// The regex as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Heap bytes the compiled regex holds (not counting search caches).
    pub fn memory_usage(&self) -> usize {
        self.re.memory_usage()
    }
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
