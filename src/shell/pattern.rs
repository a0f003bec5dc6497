//! Command patterns: `"git diff *"`, compared word by word with a simple
//! command, as Claude Code's `Bash(git diff:*)`.

use super::Word;

/// The most words a pattern may have.
pub const MAX_PATTERN_WORDS: usize = 64;

/// One word of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PatternWord {
    /// `*` alone: any number of words, also none.
    Words,
    /// A word; `*` in it stands for any run of characters, `?` for one.
    Glob(String),
}

/// A pattern a simple command is compared with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPattern {
    words: Box<[PatternWord]>,
}

/// Why a string cannot be a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// No words at all.
    #[error("a pattern needs at least the command's name")]
    Empty,
    /// More than [`MAX_PATTERN_WORDS`].
    #[error("a pattern may have at most 64 words")]
    TooLong,
}

impl CommandPattern {
    /// Reads a pattern: words separated by spaces.
    pub fn parse(text: &str) -> Result<CommandPattern, PatternError> {
        let words: Vec<PatternWord> = text
            .split_ascii_whitespace()
            .map(|w| {
                if w == "*" {
                    PatternWord::Words
                } else {
                    PatternWord::Glob(w.to_string())
                }
            })
            .collect();
        if words.is_empty() {
            return Err(PatternError::Empty);
        }
        if words.len() > MAX_PATTERN_WORDS {
            return Err(PatternError::TooLong);
        }
        Ok(CommandPattern {
            words: words.into_boxed_slice(),
        })
    }

    /// Whether the command's words match: `Some(true)` whatever the unknown
    /// words turn out to be, `Some(false)` whatever they are, `None` when
    /// that depends on them. `loose` adds the readings that only narrow
    /// access when a match does: a command named by its path is also its
    /// last segment, and a one-letter short flag also matches a word of
    /// short flags that holds it.
    pub fn matches(&self, words: &[Word], loose: bool) -> Option<bool> {
        if self.align(words, loose, false) {
            Some(true)
        } else if self.align(words, loose, true) {
            None
        } else {
            Some(false)
        }
    }

    /// Whether the words line up with the pattern. An unknown word is
    /// taken up only by a `*` word, or, with `unknown_as_any`, stands for
    /// any number of words itself (one word, when it is known to be one).
    fn align(&self, words: &[Word], loose: bool, unknown_as_any: bool) -> bool {
        let (n, m) = (words.len(), self.words.len());
        let width = m + 1;
        let mut seen = vec![false; (n + 1) * width];
        let mut stack = vec![(0usize, 0usize)];
        while let Some((i, j)) = stack.pop() {
            let Some(slot) = seen.get_mut(i * width + j) else {
                continue;
            };
            if *slot {
                continue;
            }
            *slot = true;
            if i == n && j == m {
                return true;
            }
            let pattern = self.words.get(j);
            let word = words.get(i);
            if let Some(PatternWord::Words) = pattern {
                stack.push((i, j + 1));
                if i < n {
                    stack.push((i + 1, j));
                }
            }
            match (word, pattern) {
                (Some(Word::Unknown), _) if unknown_as_any => {
                    stack.push((i + 1, j));
                    if j < m {
                        stack.push((i, j + 1));
                    }
                }
                // One word, whatever its text: it may be any one pattern word.
                (Some(Word::OneUnknown), Some(PatternWord::Glob(_))) if unknown_as_any => {
                    stack.push((i + 1, j + 1));
                }
                (Some(Word::Plain(w)), Some(PatternWord::Glob(p)))
                    if word_matches(w, p, i == 0 && loose, loose) =>
                {
                    stack.push((i + 1, j + 1));
                }
                _ => {}
            }
        }
        false
    }
}

/// One word against one pattern word.
fn word_matches(word: &str, pattern: &str, by_last_segment: bool, flags: bool) -> bool {
    if glob(pattern.as_bytes(), word.as_bytes()) {
        return true;
    }
    if by_last_segment {
        if let Some((_, last)) = word.rsplit_once('/') {
            if glob(pattern.as_bytes(), last.as_bytes()) {
                return true;
            }
        }
    }
    if flags {
        if let [b'-', letter] = pattern.as_bytes() {
            if letter.is_ascii_alphanumeric() {
                if let Some(cluster) = word.strip_prefix('-') {
                    return !cluster.starts_with('-')
                        && !cluster.is_empty()
                        && cluster.bytes().all(|b| b.is_ascii_alphanumeric())
                        && cluster.as_bytes().contains(letter);
                }
            }
        }
    }
    false
}

/// `*` any run of bytes, `?` one character, anything else itself.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(b'?') => {
                p += 1;
                t += utf8_width(text[t]);
            }
            Some(c) if *c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    let next = st + utf8_width(text[st]);
                    star = Some((sp, next));
                    t = next;
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|c| *c == b'*')
}

/// The length of the UTF-8 sequence a leading byte starts.
fn utf8_width(lead: u8) -> usize {
    match lead {
        0xF0.. => 4,
        0xE0.. => 3,
        0xC0.. => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split(' ')
            .map(|w| {
                if w == "$X" {
                    Word::Unknown
                } else if w == "\"$X\"" {
                    Word::OneUnknown
                } else {
                    Word::Plain(w.to_string())
                }
            })
            .collect()
    }

    fn pattern(text: &str) -> CommandPattern {
        CommandPattern::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn words_line_up_one_by_one_and_a_star_word_takes_any_number() {
        let diff = pattern("git diff *");
        assert_eq!(diff.matches(&words("git diff"), false), Some(true));
        assert_eq!(
            diff.matches(&words("git diff --stat HEAD"), false),
            Some(true)
        );
        assert_eq!(diff.matches(&words("git status"), false), Some(false));
        assert_eq!(diff.matches(&words("git"), false), Some(false));
        let status = pattern("git status");
        assert_eq!(
            status.matches(&words("git status --short"), false),
            Some(false)
        );
        let rm = pattern("rm * -r *");
        assert_eq!(rm.matches(&words("rm -f -r x"), false), Some(true));
        assert_eq!(rm.matches(&words("rm x"), false), Some(false));
    }

    #[test]
    fn globs_work_within_a_word() {
        assert!(glob(b"--output*", b"--output=x"));
        assert!(glob(b"--ou?put", b"--output"));
        assert!(glob(b"a*b*c", b"aXbYbc"));
        assert!(!glob(b"a*b", b"aXc"));
        assert!(glob(b"?", "é".as_bytes()));
    }

    #[test]
    fn unknown_words_decide_only_where_their_value_cannot_matter() {
        let diff = pattern("git diff *");
        assert_eq!(diff.matches(&words("git diff $X"), false), Some(true));
        let output = pattern("git * --output*");
        assert_eq!(output.matches(&words("git diff $X"), true), None);
        assert_eq!(output.matches(&words("git diff --stat"), true), Some(false));
        assert_eq!(pattern("ls").matches(&words("ls $X"), false), None);
        // A quoted variable is one word: it cannot be both `push` and `main`.
        let push = pattern("git * push * main *");
        assert_eq!(push.matches(&words("git diff $X"), true), None);
        assert_eq!(push.matches(&words("git diff \"$X\""), true), Some(false));
        assert_eq!(output.matches(&words("git diff \"$X\""), true), None);
        assert_eq!(
            pattern("ls").matches(&words("ls \"$X\""), false),
            Some(false)
        );
    }

    #[test]
    fn loose_reading_adds_paths_and_flag_clusters() {
        let rm = pattern("rm * -r *");
        assert_eq!(rm.matches(&words("rm -rf /"), false), Some(false));
        assert_eq!(rm.matches(&words("rm -rf /"), true), Some(true));
        assert_eq!(rm.matches(&words("rm -fr /"), true), Some(true));
        assert_eq!(rm.matches(&words("rm --force /"), true), Some(false));
        assert_eq!(rm.matches(&words("/bin/rm -r /"), true), Some(true));
        assert_eq!(rm.matches(&words("/bin/rm -r /"), false), Some(false));
        let branch = pattern("git branch -a");
        assert_eq!(
            branch.matches(&words("git branch -aD x"), false),
            Some(false)
        );
    }

    #[test]
    fn empty_and_oversized_patterns_are_refused() {
        assert_eq!(CommandPattern::parse("  "), Err(PatternError::Empty));
        let long = vec!["x"; 65].join(" ");
        assert_eq!(CommandPattern::parse(&long), Err(PatternError::TooLong));
    }
}
