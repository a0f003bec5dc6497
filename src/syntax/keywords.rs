//! Every keyword of the language, in one table.
//!
//! Each group of words is an enum whose variants are mapped to their
//! spelling by name (`Setting::PinTools => "pin_tools"`), never by position
//! in a list. The parser's resume points, the AST builder, the compiler,
//! `fmt`, `explain`, the "did you mean" lists and the tests read the words
//! from here, and match on the enums without catch-all arms, so a new
//! keyword that some stage forgets to handle is a compile error there.
//!
//! The pest grammar (`grammar/mcppol.pest`) spells the same words as
//! literals; a test below checks that the two agree, word for word.

/// Declares a keyword enum: its variants, each with its spelling, and
/// `ALL`, `as_str`, `from_name` and `names`.
macro_rules! keywords {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        // The table is whole: some groups and functions are read only by
        // the tests that check it against the grammar and the editors.
        #[allow(dead_code)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        #[allow(dead_code)]
        impl $name {
            /// Every word of the group, in the order of the table.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The word as written in a policy.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The keyword spelt `word`, if any.
            pub fn from_name(word: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|k| k.as_str() == word)
            }

            /// The words of the group, for suggestions and messages.
            pub fn names() -> impl Iterator<Item = &'static str> + Clone {
                Self::ALL.iter().map(|k| k.as_str())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub use crate::model::Effect;

keywords! {
    /// Words that open a block.
    Block {
        Policy => "policy",
        Tools => "tools",
        /// `let NAME = VALUE`: a name for a value.
        Let => "let",
    }
}

keywords! {
    /// The settings of a policy.
    Setting {
        /// `default ask|deny`
        Default => "default",
        /// `scope tools[, resources][, prompts]`
        Scope => "scope",
        /// `trusted "id", ...` or `trusted all`
        Trusted => "trusted",
        /// `pin_tools on|off`
        PinTools => "pin_tools",
        /// `allow_new_tools on|off`
        AllowNewTools => "allow_new_tools",
        /// `resolve_links on|off`: symbolic links read before path tests
        ResolveLinks => "resolve_links",
        /// `roots "/srv/work", ...`: the folders a server may be given
        Roots => "roots",
    }
}

keywords! {
    /// The words of a budget rule (`limit sends: "*/send_*" 20 per hour`).
    Budget {
        /// Begins a budget rule.
        Limit => "limit",
        /// Before the window's unit, and before whom the budget is counted for.
        Per => "per",
    }
}

keywords! {
    /// The windows a budget counts over (`20 per hour`).
    LimitUnit {
        Second => "second",
        Minute => "minute",
        Hour => "hour",
        Day => "day",
    }
}

impl LimitUnit {
    /// The window's length in seconds.
    pub fn seconds(self) -> u64 {
        match self {
            LimitUnit::Second => 1,
            LimitUnit::Minute => 60,
            LimitUnit::Hour => 3600,
            LimitUnit::Day => 86_400,
        }
    }
}

keywords! {
    /// Whom a budget is counted for, after the window (`per principal`);
    /// without one, a budget is shared by every caller.
    LimitScope {
        Principal => "principal",
        Session => "session",
    }
}

keywords! {
    /// The values of `default`.
    DefaultValue {
        Ask => "ask",
        Deny => "deny",
    }
}

keywords! {
    /// The values of `pin_tools`, `allow_new_tools` and `resolve_links`.
    Switch {
        On => "on",
        Off => "off",
    }
}

keywords! {
    /// The values of `scope`.
    ScopeKind {
        Tools => "tools",
        Resources => "resources",
        Prompts => "prompts",
    }
}

keywords! {
    /// The bare word `trusted` takes instead of server ids.
    TrustedWord {
        All => "all",
    }
}

keywords! {
    /// `include` and `exclude` in the `tools {}` block.
    Visibility {
        Include => "include",
        Exclude => "exclude",
    }
}

keywords! {
    /// What a rule's targets name, when not tools.
    KindWord {
        Resource => "resource",
        Prompt => "prompt",
    }
}

keywords! {
    /// What introduces a rule's condition.
    Clause {
        When => "when",
        Unless => "unless",
    }
}

keywords! {
    /// The logical connectives.
    Logic {
        And => "and",
        Or => "or",
        Not => "not",
    }
}

keywords! {
    /// The tests written as a word between a selector and a value.
    TestWord {
        In => "in",
        Matches => "matches",
        Inside => "inside",
        Escapes => "escapes",
    }
}

impl TestWord {
    /// What the test takes after it, as a user would call it.
    pub fn takes(self) -> &'static str {
        match self {
            TestWord::In => "a list `[...]`",
            TestWord::Matches => "a regex `/.../`",
            TestWord::Inside | TestWord::Escapes => "one root path as a string",
        }
    }
}

keywords! {
    /// The words of the tests that read a command line as a shell does.
    ShellWord {
        /// `runs ["P", ...]`: some simple command matches a pattern.
        Runs => "runs",
        /// `runs only ["P", ...]`: every simple command matches one.
        Only => "only",
        /// `writes inside "ROOT"`: every file a redirection writes.
        Writes => "writes",
    }
}

keywords! {
    /// The predicates that begin with a word.
    Predicate {
        Tainted => "tainted",
        Exists => "exists",
    }
}

keywords! {
    /// The named arguments of `tainted(...)`.
    TaintedArg {
        /// `by: [...]`: only taint from these servers counts.
        By => "by",
        /// `ignore: [...]`: taint from these servers does not count.
        Ignore => "ignore",
    }
}

keywords! {
    /// Words people write where a condition starts, for `when` or
    /// `unless`: read so that the message can name the word meant.
    MistakenClause {
        If => "if",
        Where => "where",
        Except => "except",
    }
}

impl MistakenClause {
    /// The clause keyword this word stands for.
    pub fn meant(self) -> Clause {
        match self {
            MistakenClause::If | MistakenClause::Where => Clause::When,
            MistakenClause::Except => Clause::Unless,
        }
    }
}

keywords! {
    /// The roots of a selector: what a condition reads.
    Selector {
        Args => "args",
        Principal => "principal",
        Assigns => "assigns",
        Annotation => "annotation",
        Host => "host",
    }
}

keywords! {
    /// The JSON words.
    Literal {
        True => "true",
        False => "false",
        Null => "null",
    }
}

keywords! {
    /// `==`, `!=`, `<`, `<=`, `>`, `>=`.
    CompareOp {
        Eq => "==",
        Ne => "!=",
        Lt => "<",
        Le => "<=",
        Gt => ">",
        Ge => ">=",
    }
}

/// Whether `word` begins an item: an effect, `policy`, `tools` or a
/// setting. The parser resumes after an error at such a word.
pub fn begins_item(word: &str) -> bool {
    Effect::from_name(word).is_some()
        || word == Budget::Limit.as_str()
        || Block::from_name(word).is_some()
        || Setting::from_name(word).is_some()
}

/// Words other policy languages use for an effect (Cedar's `permit` and
/// `forbid`, a firewall's `block`, ...), with the effect each one means
/// here: a misspelling is found by edit distance, but these are not close
/// to their keyword in letters, only in meaning.
const EFFECT_SYNONYMS: &[(&str, Effect)] = &[
    ("permit", Effect::Allow),
    ("grant", Effect::Allow),
    ("accept", Effect::Allow),
    ("forbid", Effect::Deny),
    ("block", Effect::Deny),
    ("reject", Effect::Deny),
    ("refuse", Effect::Deny),
    ("disallow", Effect::Deny),
    ("confirm", Effect::Ask),
    ("prompt_user", Effect::Ask),
];

/// The effect another policy language's word for it (`permit`) stands
/// for, if `word` is one.
pub fn effect_synonym(word: &str) -> Option<Effect> {
    let lower = word.to_ascii_lowercase();
    EFFECT_SYNONYMS
        .iter()
        .find(|(synonym, _)| *synonym == lower)
        .map(|(_, effect)| *effect)
}

/// Every word of the language (operators aside), for the editor grammar's
/// test and the grammar agreement test.
#[cfg(test)]
pub(crate) fn all_words() -> Vec<&'static str> {
    let mut words: Vec<&'static str> = Effect::names()
        .chain(Budget::names())
        .chain(LimitUnit::names())
        .chain(LimitScope::names())
        .chain(Block::names())
        .chain(Setting::names())
        .chain(DefaultValue::names())
        .chain(Switch::names())
        .chain(ScopeKind::names())
        .chain(TrustedWord::names())
        .chain(Visibility::names())
        .chain(KindWord::names())
        .chain(Clause::names())
        .chain(MistakenClause::names())
        .chain(Logic::names())
        .chain(TestWord::names())
        .chain(ShellWord::names())
        .chain(Predicate::names())
        .chain(TaintedArg::names())
        .chain(Selector::names())
        .chain(Literal::names())
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words the pest grammar spells as literals.
    fn grammar_words() -> Vec<String> {
        let grammar = include_str!("../../grammar/mcppol.pest");
        let mut words = Vec::new();
        for line in grammar.lines() {
            let code = line.split("//").next().unwrap_or("");
            let mut rest = code;
            while let Some(start) = rest.find('"') {
                let after = &rest[start + 1..];
                let Some(end) = after.find('"') else { break };
                let word = &after[..end];
                // Words only: not `^"e"` (a number's exponent) nor operators.
                if word.len() > 1 && word.chars().all(|c| c.is_ascii_alphabetic() || c == '_') {
                    words.push(word.to_string());
                }
                rest = &after[end + 1..];
            }
        }
        words.sort();
        words.dedup();
        words
    }

    #[test]
    fn the_grammar_and_the_table_name_the_same_words() {
        let table = all_words();
        let grammar = grammar_words();
        // Setting values and the selector roots are read by the compiler,
        // not the grammar: they are any word there.
        let compiler_only: Vec<&str> = DefaultValue::names()
            .chain(Switch::names())
            .chain(ScopeKind::names())
            .chain(TrustedWord::names())
            .chain(Selector::names())
            .chain(TaintedArg::names())
            .chain(LimitUnit::names())
            .chain(LimitScope::names())
            .filter(|w| !grammar.iter().any(|g| g == w))
            .collect();
        for word in &table {
            assert!(
                grammar.iter().any(|g| g == word) || compiler_only.contains(word),
                "`{word}` is in the keyword table but not in the grammar"
            );
        }
        for word in &grammar {
            assert!(
                table.contains(&word.as_str()),
                "`{word}` is in the grammar but not in the keyword table"
            );
        }
    }

    #[test]
    fn words_map_by_name() {
        for s in Setting::ALL {
            assert_eq!(Setting::from_name(s.as_str()), Some(*s));
        }
        assert_eq!(Setting::from_name("pin_tools"), Some(Setting::PinTools));
        assert_eq!(Effect::from_name("allow"), Some(Effect::Allow));
        assert_eq!(Effect::from_name("Allow"), None);
        assert!(begins_item("trusted") && begins_item("tools") && !begins_item("when"));
        let mut indexes: Vec<usize> = Effect::ALL.iter().map(|e| e.index()).collect();
        indexes.dedup();
        assert_eq!(indexes, [0, 1, 2]);
    }
}
