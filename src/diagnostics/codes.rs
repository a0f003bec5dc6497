//! Every error code, in one place.
//!
//! A code is `mcppol::STAGE::NAME`: the stage that found the problem
//! (`io`, `parse`, `compile`, `store`) and what it is. The checker's
//! warnings have their own registry (`crate::lint`, codes
//! `mcppol::lint::NAME`). `docs/diagnostics.md` lists the same codes with
//! their meaning and fix; a test below checks that the two agree, and that
//! no code is written anywhere else in the source.

/// One error code: what it means and how to fix it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    /// `mcppol::STAGE::NAME`.
    pub code: &'static str,
    /// What the error means.
    pub meaning: &'static str,
    /// What to do about it.
    pub fix: &'static str,
}

impl Code {
    /// The stage segment: `io`, `parse`, `compile` or `store`.
    pub fn stage(&self) -> &'static str {
        self.code.split("::").nth(1).unwrap_or("")
    }
}

macro_rules! codes {
    ($($konst:ident = $code:literal { $meaning:literal, fix: $fix:literal })+) => {
        $(
            #[doc = $meaning]
            pub const $konst: &str = $code;
        )+

        /// Every error code, in the order of `docs/diagnostics.md`.
        pub const ALL: &[Code] = &[$(Code { code: $code, meaning: $meaning, fix: $fix }),+];
    };
}

codes! {
    IO_READ = "mcppol::io::read" {
        "a policy file could not be read",
        fix: "check the path and its permissions"
    }

    PARSE_SYNTAX = "mcppol::parse::syntax" {
        "the text does not follow the grammar at this place; a string left open is named as such, at the quote that opened it",
        fix: "write what the message expects; docs/language.md has the grammar"
    }
    PARSE_BAD_LET = "mcppol::parse::bad_let" {
        "a `let` names something other than a string or a list of strings",
        fix: "write `let NAME = \"text\"` or `let NAME = [\"a\", \"b\"]`"
    }
    PARSE_UNCLOSED = "mcppol::parse::unclosed" {
        "a `policy` or `tools` block is never closed",
        fix: "add a `}` after its last entry"
    }
    PARSE_TOO_DEEP = "mcppol::parse::too_deep" {
        "brackets nest more than 64 deep",
        fix: "flatten the condition: `and` and `or` take any number of terms"
    }
    PARSE_FILE_TOO_LARGE = "mcppol::parse::file_too_large" {
        "the file is larger than a policy file may be (8 MiB)",
        fix: "split the policies over several files"
    }
    PARSE_HIDDEN_CHARACTER = "mcppol::parse::hidden_character" {
        "an invisible, direction-changing or control character (`U+202E`, `U+200B`, ...) is in the text, strings and comments included: it can make a reviewer read something other than what decides",
        fix: "delete it (an editor's \"show invisibles\" finds it); in a string write it as a `\\uXXXX` escape"
    }
    PARSE_LINE_SEPARATOR = "mcppol::parse::line_separator" {
        "a lone carriage return, U+2028, U+2029, NEL, vertical tab or form feed outside a string: editors show a new line where the parser sees none",
        fix: "end lines with a line feed (LF or CR LF)"
    }
    PARSE_BAD_NUMBER = "mcppol::parse::bad_number" {
        "a number is not written as JSON writes numbers (`1e`, `012`, `1.e3`)",
        fix: "write it as in JSON: `12`, `-3`, `1.5`, `1e6`"
    }
    PARSE_REGEX_FLAGS = "mcppol::parse::regex_flags" {
        "letters after a regex's closing `/` (`/force/i`): flags are not written there",
        fix: "put the flags inside the regex: `/(?i)force/`"
    }
    PARSE_MISPLACED_CLAUSE = "mcppol::parse::misplaced_clause" {
        "a condition starts with `if`, `where` or `except`, or a rule has two of `when` and `unless`",
        fix: "write one `when` (or `unless`), and join conditions with `and`, `or`, `not`"
    }
    PARSE_BAD_TAINTED = "mcppol::parse::bad_tainted" {
        "`tainted(...)` has an argument it does not take (`tainted(\"web\")`)",
        fix: "write `tainted`, `tainted(by: [\"id\", ...])` or `tainted(ignore: [\"id\", ...])`"
    }

    COMPILE_DUPLICATE_POLICY = "mcppol::compile::duplicate_policy" {
        "two policies of one file have the same name",
        fix: "rename or merge one of them"
    }
    COMPILE_DUPLICATE_NAME = "mcppol::compile::duplicate_name" {
        "a `let` name is defined twice in a policy, or a policy's `let` reuses a name of its file",
        fix: "rename one of them"
    }
    COMPILE_UNKNOWN_NAME = "mcppol::compile::unknown_name" {
        "a word where a value goes names no `let` of the policy or its file",
        fix: "define it with `let NAME = ...`, or write the value in quotes (the message suggests the nearest name)"
    }
    COMPILE_LIST_FOR_STRING = "mcppol::compile::list_for_string" {
        "a `let` that names a list stands where one string goes (a root, `writes inside`)",
        fix: "name a string there, or write one test per value joined with `or`/`and`"
    }
    COMPILE_NAMES_TOO_LARGE = "mcppol::compile::names_too_large" {
        "a file has more than 1024 `let`s, or its names written out would exceed 8 MiB",
        fix: "use fewer or shorter names; split the policies over several files"
    }
    COMPILE_DUPLICATE_TOOLS_BLOCK = "mcppol::compile::duplicate_tools_block" {
        "a policy has a second `tools {}` block",
        fix: "merge the entries into one block"
    }
    COMPILE_DUPLICATE_RULE_ID = "mcppol::compile::duplicate_rule_id" {
        "two rules of a policy have the same id",
        fix: "give each rule its own id"
    }
    COMPILE_DUPLICATE_SETTING = "mcppol::compile::duplicate_setting" {
        "a setting is written twice in one policy",
        fix: "keep one"
    }
    COMPILE_UNKNOWN_SETTING = "mcppol::compile::unknown_setting" {
        "a word where an item begins is not a setting",
        fix: "use a setting of docs/language.md (the message suggests the nearest)"
    }
    COMPILE_UNKNOWN_KEYWORD = "mcppol::compile::unknown_keyword" {
        "a word where an item begins is a misspelt rule keyword (`alow`), or another policy language's word for one (`permit`, `forbid`)",
        fix: "write `deny`, `ask`, `allow` or `tools`"
    }
    COMPILE_BAD_SETTING_VALUE = "mcppol::compile::bad_setting_value" {
        "a setting has a value it does not take, or too many",
        fix: "write one of the values the message lists"
    }
    COMPILE_SCOPE_WITHOUT_TOOLS = "mcppol::compile::scope_without_tools" {
        "`scope` leaves out `tools`, which are always governed",
        fix: "write `scope tools, ...`"
    }
    COMPILE_BAD_ROOT = "mcppol::compile::bad_root" {
        "the root of an `inside` or `escapes` test is not an absolute path that canonicalizes",
        fix: "write an absolute path such as \"/srv/sandbox\""
    }
    COMPILE_BAD_ROOTS = "mcppol::compile::bad_roots" {
        "a `roots` entry is not an absolute path that canonicalizes",
        fix: "write absolute paths in quotes, such as \"/srv/work\""
    }
    COMPILE_KIND_OUT_OF_SCOPE = "mcppol::compile::kind_out_of_scope" {
        "a `resource` or `prompt` rule in a policy whose `scope` leaves that kind out, so it never applies",
        fix: "add the kind to `scope`, or remove the rule"
    }
    COMPILE_INVALID_REGEX = "mcppol::compile::invalid_regex" {
        "a regex does not compile",
        fix: "correct it (Rust `regex` syntax; flags go inside, `/(?i)x/`)"
    }
    COMPILE_REGEX_TOO_BIG = "mcppol::compile::regex_too_big" {
        "a regex compiles to more than the size limit",
        fix: "simplify it, or split it over several rules"
    }
    COMPILE_REGEX_BUDGET = "mcppol::compile::regex_budget" {
        "the file's distinct regexes compile to more than their shared budget together",
        fix: "use fewer distinct regexes, or smaller ones (`[a-z0-9_]` instead of `\\w`)"
    }
    COMPILE_TOO_MANY_RULES = "mcppol::compile::too_many_rules" {
        "the file holds more rules than a policy file may (100,000)",
        fix: "split the policies over several files, or join rules that share a target"
    }
    COMPILE_INEXACT_NUMBER = "mcppol::compile::inexact_number" {
        "an ordering test compares with a number beyond 64 bits, which cannot be held exactly",
        fix: "use a bound within 64 bits"
    }
    COMPILE_BAD_TEST = "mcppol::compile::bad_test" {
        "a test does not fit what it tests (an ordering on an annotation, `exists` on an annotation, a test on a host predicate, a value of the wrong form)",
        fix: "write the form the message gives"
    }
    COMPILE_UNKNOWN_TEST = "mcppol::compile::unknown_test" {
        "a word between a selector and a value is not a test",
        fix: "use `==`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `matches`, `inside` or `escapes`"
    }
    COMPILE_ORDERING_NEEDS_NUMBER = "mcppol::compile::ordering_needs_number" {
        "`<`, `<=`, `>` or `>=` with a value that is not a number",
        fix: "compare with a number, or use `==`, `in` or `matches` for strings"
    }
    COMPILE_IN_NEEDS_LIST = "mcppol::compile::in_needs_list" {
        "`in` with a value that is not a list",
        fix: "write the values in brackets, or use `==`"
    }
    COMPILE_BARE_SELECTOR = "mcppol::compile::bare_selector" {
        "a selector stands alone as a condition but is not an annotation or a host predicate",
        fix: "test it: `exists X`, `X == true`, `X in [...]`"
    }
    COMPILE_BAD_SELECTOR = "mcppol::compile::bad_selector" {
        "a selector has steps its root does not have (`principal.x`, `annotation` without a key)",
        fix: "write the form the message gives"
    }
    COMPILE_UNKNOWN_SELECTOR = "mcppol::compile::unknown_selector" {
        "a condition reads a name that is not `args`, `principal`, `assigns`, `annotation` or `host`",
        fix: "use one of those (the message suggests the nearest)"
    }
    COMPILE_UNKNOWN_ANNOTATION = "mcppol::compile::unknown_annotation" {
        "`annotation.X` names no MCP tool annotation",
        fix: "use `read_only`, `destructive`, `open_world` or `idempotent`"
    }
    COMPILE_UNKNOWN_HOST_PREDICATE = "mcppol::compile::unknown_host_predicate" {
        "`host.X` names a predicate the host did not register",
        fix: "use a registered name (the message lists them)"
    }
    COMPILE_BAD_LIMIT = "mcppol::compile::bad_limit" {
        "a `limit` has a count that is not a whole number up to 1,000,000,000, or a window or scope word it does not take",
        fix: "write `limit ID: \"server/tool\" 20 per hour`, with `per principal` or `per session` after it to count per caller"
    }

    STORE_NO_POLICY = "mcppol::store::no_policy" {
        "a watched policy file defines no policy (taken for a write in progress)",
        fix: "define at least one policy in the file"
    }
    STORE_DUPLICATE_POLICY = "mcppol::store::duplicate_policy" {
        "a policy name is already loaded from another file of the store",
        fix: "rename one of the two policies"
    }
    STORE_MISSING_POLICY = "mcppol::store::missing_policy" {
        "an update for a named policy does not define it",
        fix: "the text must hold `policy NAME { ... }`"
    }
    STORE_OTHER_POLICY = "mcppol::store::other_policy" {
        "an update for a named policy defines another policy too",
        fix: "update one policy at a time"
    }
}

/// The registry entry of `code`.
pub fn lookup(code: &str) -> Option<&'static Code> {
    ALL.iter().find(|c| c.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAGES: [&str; 4] = ["io", "parse", "compile", "store"];

    #[test]
    fn every_code_has_a_stage_and_a_name() {
        let mut seen = std::collections::HashSet::new();
        for c in ALL {
            let parts: Vec<&str> = c.code.split("::").collect();
            assert_eq!(parts.len(), 3, "{}", c.code);
            assert_eq!(parts[0], "mcppol", "{}", c.code);
            assert!(STAGES.contains(&c.stage()), "{}: unknown stage", c.code);
            assert!(
                parts[2]
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch == '_'),
                "{}",
                c.code
            );
            assert!(seen.insert(c.code), "{} twice", c.code);
            assert!(!c.meaning.is_empty() && !c.fix.is_empty(), "{}", c.code);
        }
    }

    /// Every `"mcppol::STAGE::NAME"` written in the source is a registered
    /// code, a lint's (`mcppol::lint::`) or a log target (two segments).
    #[test]
    fn the_source_uses_only_registered_codes() {
        fn rs_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    rs_files(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let mut files = Vec::new();
        rs_files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        assert!(files.len() > 20);
        for file in files
            .iter()
            .filter(|f| !f.ends_with("diagnostics/codes.rs"))
        {
            let text = std::fs::read_to_string(file).unwrap();
            for (i, _) in text.match_indices("\"mcppol::") {
                let literal: String = text[i + 1..].chars().take_while(|c| *c != '"').collect();
                let segments = literal.split("::").count();
                let ok = segments <= 2
                    || literal.starts_with("mcppol::lint::")
                    || lookup(&literal).is_some();
                assert!(ok, "{}: `{literal}` is not in the registry", file.display());
            }
        }
    }

    /// `docs/diagnostics.md` lists exactly the codes of the registry.
    #[test]
    fn the_docs_list_every_code() {
        let docs = include_str!("../../docs/diagnostics.md");
        let mut documented = Vec::new();
        for line in docs.lines().filter(|l| l.starts_with("| `mcppol::")) {
            let code = line
                .trim_start_matches("| `")
                .split('`')
                .next()
                .unwrap_or("");
            if !code.starts_with("mcppol::lint::") {
                documented.push(code.to_string());
            }
        }
        for c in ALL {
            assert!(
                documented.iter().any(|d| d == c.code),
                "{} is not in docs/diagnostics.md",
                c.code
            );
        }
        for d in &documented {
            assert!(
                lookup(d).is_some(),
                "docs/diagnostics.md lists {d}, which the registry does not"
            );
        }
    }
}
