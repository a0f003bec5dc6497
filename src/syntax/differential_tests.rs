//! The one parser (the pest grammar, `grammar/mcppol.pest`) has two ways
//! through a file: one pass over the whole text, which a well-formed file
//! takes, and the item-by-item driver that reports an error and goes on
//! with the next item. On every fixture, on the generated benchmark
//! policies, on token soup and on mutated valid policies the two agree:
//! what the driver reads without an error, the one pass reads the same way,
//! node for node and span for span, and the other way round (but for a
//! misspelt setting word, where the driver skips to the next line).

use crate::test_util::{gen, words};

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::keywords::Setting;
use super::{File, Item};
use crate::diagnostics::SourceFile;

/// The one pass: `None` unless the text is well formed, builds and holds no
/// hidden character (which the driver refuses before either way runs).
fn whole(text: &str) -> Option<File> {
    let source = SourceFile::new("t.mcppol", text);
    if !super::hidden::check(&source).is_empty() {
        return None;
    }
    super::parser::pest_whole_file(text)
}

/// The item-by-item driver alone: `None` if it reports an error.
fn items(text: &str) -> Option<File> {
    let source = SourceFile::new("t.mcppol", text);
    let (file, diagnostics) = super::parser::parse_items(&source);
    diagnostics.is_empty().then_some(file)
}

/// Whether brackets nest too deep: such a file is refused before the
/// grammar runs.
fn too_deep(text: &str) -> bool {
    super::scan::too_deep(text, super::parser::MAX_NESTING).is_some()
}

fn mcppol_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            mcppol_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "mcppol") {
            out.push(path);
        }
    }
}

fn fixtures() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    mcppol_files(&root.join("tests/fixtures"), &mut paths);
    mcppol_files(&root.join("policies"), &mut paths);
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            Some((p, text))
        })
        .collect()
}

/// Whether a file holds a setting with a name that is not a setting: the
/// driver skips the rest of such an entry's line (it is most likely a
/// misspelt keyword), so there the two ways may differ.
fn misspelt_word(file: &File) -> bool {
    file.policies.iter().flat_map(|p| &p.items).any(|item| {
        matches!(item, Item::Setting(s)
            if Setting::from_name(&s.name.node).is_none())
    })
}

/// The two ways agree on any text that reaches them (a file whose brackets
/// nest too deep is refused before).
fn same(text: &str) -> bool {
    if too_deep(text) {
        return true;
    }
    match (whole(text), items(text)) {
        (Some(w), Some(i)) => w == i || misspelt_word(&w),
        (None, None) => true,
        (Some(file), None) | (None, Some(file)) => misspelt_word(&file),
    }
}

#[test]
fn every_fixture_parses_the_same() {
    let files = fixtures();
    assert!(files.len() > 60, "{} fixtures", files.len());
    let mut accepted = 0;
    for (path, text) in &files {
        if too_deep(text) {
            continue;
        }
        assert!(same(text), "{}", path.display());
        accepted += usize::from(whole(text).is_some());
    }
    // Most fixtures are well formed (the error fixtures mostly are not).
    assert!(accepted > 40, "only {accepted} fixtures parse whole");
}

#[test]
fn the_generated_benchmark_policies_parse_the_same() {
    for size in gen::SIZES {
        let text = gen::policy(size).mcppol();
        let w = whole(&text);
        assert!(w.is_some(), "{size} rules: the one pass refused it");
        assert_eq!(w, items(&text), "{size} rules");
    }
}

#[test]
fn corner_cases_parse_the_same() {
    let cases = [
        "",
        "  # only a comment",
        "policy p {}",
        "policy p { } policy q { ; ; }",
        "policy p { deny * }",
        "policy p { deny * ; ask \"a\" , \"b\" ~ /x\\/y/ ; }",
        "policy p { deny id: resource \"r\" when x }",
        "policy p { deny resource \"r\" }",
        "policy p { deny resource: \"r\" }",
        "policy p { deny when: \"r\" }",
        "policy p { deny * when a # c\n and b # d\n or not not c # e\n }",
        "policy p { deny * when not not not tainted }",
        "policy p { deny * when (a or b) and (c) }",
        "policy p { deny * when ( ( a ) ) }",
        "policy p { deny * when tainted (x) }",
        "policy p { deny * when tainted ( ignore : [ \"a\" , \"b\" , ] ) }",
        "policy p { deny * when tainted(ignore: []) }",
        "policy p { deny * when exists args.x }",
        "policy p { deny * when exists == 1 }",
        "policy p { deny * when exists.x }",
        "policy p { deny * when args.a.b[0][\"k\"]-x == 1 }",
        "policy p { deny * when args.x == {\"a\": [1, 2.5, -0, 1e3, true, false, null], \"a\": {}} }",
        "policy p { deny * when args.x in [ ] }",
        "policy p { deny * when args.x in [1,] }",
        "policy p { deny * when args.x in 5 }",
        "policy p { deny * when args.x == 012 }",
        "policy p { deny * when args.x == -1.5E+3 }",
        "policy p { deny * when args.x == 1.e3 }",
        "policy p { deny * when args.x matches /a\\/b\\s/ }",
        "policy p { deny * when args.p inside \"/srv\" and args.q escapes \"/x\" }",
        "policy p { deny * when args.p insde \"/srv\" }",
        "policy p { deny * when args.p insde 5 }",
        "policy p { deny * when args.p insde [1, [2]] }",
        "policy p { deny * when args.p insde /r/ }",
        "policy p { deny * when args.p allow_new_tools \"x\" }",
        "policy p { deny * when args.p default \"x\" }",
        "policy p { deny * when args.p and \"x\" }",
        "policy p { deny * when a and default ask \"x\" }",
        "policy p { deny * when a and }",
        "policy p { deny * unless a }",
        "policy p { default ask; scope tools, resources trusted \"a\", b }",
        "policy p { allow_new_tools on }",
        "policy p { allowx on }",
        "policy p { tools { include \"a\", \"b\" exclude * ; ; } }",
        "policy p { tools { } ; }",
        "policy p { tools }",
        "policy p { deny \"\\u00e9\\n\" }",
        "policy p { deny \"\\ud800\" }",
        "policy p { deny * when args[\"\\ud800\"] }",
        "policy p { deny * when args.l[99999999999999999999999] }",
        "policy p { deny * when args.x == 1e999 }",
        "policy p { deny * when args.x foo \"\\ud800\" }",
        "policy p { deny \"é/ü\" ~ /é\\\\/ when args.x == \"ü\" }",
        "policy p { deny * when x == /a/ }",
        "policy p { deny * when x\r\n}",
        "policy p { deny \"a\" ~ /a\\\n/ }",
        "policy p { deny \"a\" ~ /a\\",
        "policy p { deny \"a\" \"b\" }",
        "policy p { deny * } }",
        "policy p { deny * }\n# trailing\n",
        "policy p { deny * asking }",
        "policy p { ask-x * }",
        "policy policy { deny * }",
        "policy p{deny*when(x)}",
        "policy p { deny * when args.x == \"\u{7f}\" }",
        "policy p { deny * when args.x == \"a\tb\" }",
        "policy p { deny * when x default\n1 }",
        "policy p { deny * when x default # c\n \"v\" }",
        "policy p { deny * when x default \"v\" }",
        "policy p { deny * when x and\n[1] }",
        "policy p { deny * when tainted(by: [\"a\", \"b\"]) }",
        "policy p { deny * when tainted(\"web\") }",
        "policy p { deny * when tainted(by: [\"a\"], ignore: []) }",
        "policy p { deny \"s\" ~ /x/i\n allow \"a\" }",
        "policy p { deny * when args.n > 1e\n allow \"a\" }",
        "policy p { deny * when args.n > 012 }",
        "policy p { allow \"a\" if args.x\n ask \"b\" }",
        "policy p { deny \"a\" when x unless y }",
        "policy p { roots \"/srv\", \"/tmp\" }",
        "policy p { deny \"a\u{202e}\" }",
        "policy p { # c\r deny \"x\" }",
    ];
    for text in cases {
        assert!(same(text), "{text:?}");
    }
    // The one pass takes the good ones.
    assert!(whole("policy p { deny * when args.p insde [1, [2]] }").is_some());
    assert!(whole("policy p { deny \"\\ud800\" }").is_none());
}

fn soup(tokens: &[usize], seps: &[usize]) -> String {
    const SEPS: &[&str] = &[" ", "", "\n", "  # c\n", "\t", ""];
    let mut text = String::new();
    for (i, t) in tokens.iter().enumerate() {
        text.push_str(words::WORDS[*t]);
        text.push_str(SEPS[seps.get(i).copied().unwrap_or(0) % SEPS.len()]);
    }
    text
}

/// Valid policies to mutate: the well-formed fixtures and a generated one.
fn seeds() -> Vec<String> {
    let mut seeds: Vec<String> = fixtures()
        .into_iter()
        .map(|(_, text)| text)
        .filter(|t| !too_deep(t) && whole(t).is_some() && t.len() < 20_000)
        .collect();
    seeds.push(gen::policy(10).mcppol());
    seeds.push(gen::policy(100).mcppol());
    seeds
}

fn boundary_at(text: &str, at: usize) -> usize {
    let mut at = at % (text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// One edit of a valid text: delete a range, insert a word, repeat a range,
/// or turn a space into other blanks.
fn mutate(text: &str, kind: usize, a: usize, b: usize, word: usize) -> String {
    let a = boundary_at(text, a);
    let b = boundary_at(text, a + b % 24);
    let (lo, hi) = (a.min(b), a.max(b));
    match kind % 4 {
        0 => format!("{}{}", &text[..lo], &text[hi..]),
        1 => format!(
            "{}{}{}",
            &text[..lo],
            words::WORDS[word % words::WORDS.len()],
            &text[lo..]
        ),
        2 => format!("{}{}", &text[..hi], &text[lo..]),
        _ => {
            let blanks = [" # x\n", "\n\n", "", "\t"][word % 4];
            match text[lo..].find(' ') {
                Some(i) => format!("{}{}{}", &text[..lo + i], blanks, &text[lo + i + 1..]),
                None => text.to_string(),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4_000, ..ProptestConfig::default() })]

    /// Token soup, bare and inside a policy.
    #[test]
    fn token_soup_parses_the_same(
        tokens in prop::collection::vec(0..words::WORDS.len(), 0..50),
        seps in prop::collection::vec(0..6usize, 0..50),
    ) {
        let text = soup(&tokens, &seps);
        prop_assert!(same(&text), "{:?}", text);
        let wrapped = format!("policy p {{ {text} }}");
        prop_assert!(same(&wrapped), "{:?}", wrapped);
        let rule = format!("policy p {{ deny * when {text} }}");
        prop_assert!(same(&rule), "{:?}", rule);
    }

    /// Valid policies with one to three edits.
    #[test]
    fn mutated_policies_parse_the_same(
        seed in any::<prop::sample::Index>(),
        edits in prop::collection::vec((0..4usize, any::<usize>(), any::<usize>(), any::<usize>()), 1..4),
    ) {
        thread_local! {
            static SEEDS: Vec<String> = seeds();
        }
        let mut text = SEEDS.with(|s| seed.get(s).clone());
        for (kind, a, b, word) in edits {
            text = mutate(&text, kind, a, b, word);
        }
        prop_assert!(same(&text), "{:?}", text);
    }
}

/// The properties above are not vacuous: a good share of their cases are
/// files the one pass accepts.
#[test]
fn the_random_cases_are_often_well_formed() {
    let seeds = seeds();
    let mut rng = gen::Rng::new(7);
    let (mut total, mut accepted) = (0, 0);
    for i in 0..2_000usize {
        let seed = &seeds[i % seeds.len()];
        let text = mutate(
            seed,
            rng.next_u64() as usize,
            rng.next_u64() as usize,
            rng.next_u64() as usize,
            rng.next_u64() as usize,
        );
        if too_deep(&text) {
            continue;
        }
        assert!(same(&text), "{text:?}");
        total += 1;
        accepted += usize::from(whole(&text).is_some());
    }
    assert!(accepted * 4 > total, "{accepted} of {total} accepted");
}

/// Random well-formed policies from the grammar, with random blanks and
/// comments between tokens: both ways accept them and agree.
struct Grow {
    rng: gen::Rng,
    out: String,
}

impl Grow {
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.rng.below(from.len())]
    }
    fn tok(&mut self, t: &str) {
        self.out.push_str(t);
        let sep = self.pick(&[" ", " ", "\n", "  # c\n ", "\t", " \r\n ", " #\n"]);
        self.out.push_str(sep);
    }
    fn string(&mut self) -> &'static str {
        self.pick(&[
            "\"a/b\"",
            "\"*\"",
            "\"gh*/get_?\"",
            "\"\\u00e9\\\"x\\\\\"",
            "\"é\"",
            "\"\"",
        ])
    }
    fn target(&mut self) {
        match self.rng.below(3) {
            0 => self.tok("*"),
            1 => {
                let s = self.string();
                self.tok(s);
            }
            _ => {
                let s = self.string();
                self.tok(s);
                self.tok("~");
                let r = self.pick(&["/^a\\/b/", "/x+/", "/\\d{2}é/"]);
                self.tok(r);
            }
        }
    }
    fn targets(&mut self) {
        self.target();
        for _ in 0..self.rng.below(3) {
            self.tok(",");
            self.target();
        }
    }
    fn literal(&mut self, depth: usize) {
        match self.rng.below(if depth > 2 { 4 } else { 6 }) {
            0 => {
                let s = self.string();
                self.tok(s);
            }
            1 => {
                let n = self.pick(&["0", "-1", "10000", "2.5", "-3.25e-2", "1E3"]);
                self.tok(n);
            }
            2 => {
                let w = self.pick(&["true", "false", "null"]);
                self.tok(w);
            }
            3 => self.tok("[]"),
            4 => {
                self.tok("[");
                let n = 1 + self.rng.below(3);
                for i in 0..n {
                    if i > 0 {
                        self.tok(",");
                    }
                    self.literal(depth + 1);
                }
                if self.rng.chance(30) {
                    self.tok(",");
                }
                self.tok("]");
            }
            _ => {
                self.tok("{");
                let n = self.rng.below(3);
                for i in 0..n {
                    if i > 0 {
                        self.tok(",");
                    }
                    let k = self.pick(&["\"k\"", "\"j\"", "\"k\""]);
                    self.tok(k);
                    self.tok(":");
                    self.literal(depth + 1);
                }
                self.tok("}");
            }
        }
    }
    fn selector(&mut self) -> String {
        let root = self.pick(&["args", "principal", "assigns", "annotation", "host", "x_1"]);
        let mut s = root.to_string();
        for _ in 0..self.rng.below(3) {
            let step = self.pick(&[".a", ".b-c", "[0]", "[12]", "[\"odd key\"]"]);
            s.push_str(step);
        }
        s
    }
    fn primary(&mut self, depth: usize) {
        match self.rng.below(if depth > 3 { 9 } else { 10 }) {
            0 => self.tok("tainted"),
            1 => {
                self.tok("tainted");
                self.tok("(");
                self.tok("ignore");
                self.tok(":");
                self.tok("[");
                for i in 0..self.rng.below(3) {
                    if i > 0 {
                        self.tok(",");
                    }
                    let s = self.string();
                    self.tok(s);
                }
                self.tok("]");
                self.tok(")");
            }
            2 => {
                self.tok("exists");
                let s = self.selector();
                self.tok(&s);
            }
            3 => {
                let s = self.selector();
                self.tok(&s);
            }
            4 => {
                let s = self.selector();
                self.tok(&s);
                let op = self.pick(&["==", "!=", "<", "<=", ">", ">="]);
                self.tok(op);
                self.literal(0);
            }
            5 => {
                let s = self.selector();
                self.tok(&s);
                self.tok("in");
                self.literal(0);
            }
            6 => {
                let s = self.selector();
                self.tok(&s);
                self.tok("matches");
                self.tok("/^refs\\/heads\\//");
            }
            7 => {
                let s = self.selector();
                self.tok(&s);
                let kw = self.pick(&["inside", "escapes"]);
                self.tok(kw);
                self.tok("\"/srv\"");
            }
            8 => {
                let s = self.selector();
                self.tok(&s);
                let w = self.pick(&["insde", "contains", "allow_new_tools"]);
                self.tok(w);
                let v = self.pick(&["\"x\"", "-5", "[1, [\"a\"]]", "/r/", "[]"]);
                self.tok(v);
            }
            _ => {
                self.tok("(");
                self.condition(depth + 1);
                self.tok(")");
            }
        }
    }
    fn condition(&mut self, depth: usize) {
        for i in 0..1 + self.rng.below(3) {
            if i > 0 {
                self.tok("or");
            }
            for j in 0..1 + self.rng.below(3) {
                if j > 0 {
                    self.tok("and");
                }
                for _ in 0..self.rng.below(4) {
                    self.tok("not");
                }
                self.primary(depth);
            }
        }
    }
    fn item(&mut self) {
        match self.rng.below(6) {
            0 => {
                let name = self.pick(&["default", "scope", "trusted", "pin_tools", "frobnicate"]);
                self.tok(name);
                for i in 0..1 + self.rng.below(3) {
                    if i > 0 {
                        self.tok(",");
                    }
                    let v = self.pick(&["ask", "tools", "\"gh\"", "on"]);
                    self.tok(v);
                }
            }
            1 => {
                self.tok("tools");
                self.tok("{");
                for _ in 0..self.rng.below(3) {
                    let k = self.pick(&["include", "exclude"]);
                    self.tok(k);
                    self.targets();
                    if self.rng.chance(50) {
                        self.tok(";");
                    }
                }
                self.tok("}");
            }
            _ => {
                let effect = self.pick(&["deny", "ask", "allow"]);
                self.tok(effect);
                if self.rng.chance(30) {
                    self.tok("r1");
                    self.tok(":");
                }
                if self.rng.chance(20) {
                    let k = self.pick(&["resource", "prompt"]);
                    self.tok(k);
                }
                self.targets();
                if self.rng.chance(70) {
                    let kw = self.pick(&["when", "unless"]);
                    self.tok(kw);
                    self.condition(0);
                    // A setting right after a bare selector would read as
                    // an unknown test: end the rule.
                    self.tok(";");
                }
            }
        }
        if self.rng.chance(30) {
            self.tok(";");
        }
    }
    fn file(seed: u64) -> String {
        let mut g = Grow {
            rng: gen::Rng::new(seed),
            out: String::new(),
        };
        if g.rng.chance(50) {
            g.tok("");
        }
        for _ in 0..1 + g.rng.below(2) {
            g.tok("policy");
            g.tok("p-1");
            g.tok("{");
            for _ in 0..g.rng.below(6) {
                g.item();
            }
            g.tok("}");
        }
        g.out
    }
}

#[test]
fn generated_well_formed_policies_parse_the_same() {
    for seed in 0..5_000u64 {
        let text = Grow::file(seed);
        assert!(whole(&text).is_some(), "refused, seed {seed}: {text:?}");
        assert!(same(&text), "{text:?}");
    }
}

/// The recovery still reports every bad item of a file and keeps the good
/// ones between them.
#[test]
fn every_bad_item_in_a_file_is_reported() {
    let mut text = String::from("policy p {\n");
    for i in 0..50 {
        text.push_str(&format!("  deny \"a{i}\" \"b\"\n  allow \"ok{i}\"\n"));
    }
    text.push_str("}\n");
    let source = SourceFile::new("t.mcppol", &text);
    let (file, diagnostics) = super::parse(&source);
    assert_eq!(diagnostics.len(), 50, "{diagnostics:?}");
    assert!(diagnostics
        .iter()
        .all(|d| d.code == "mcppol::parse::syntax"));
    assert_eq!(file.policies[0].items.len(), 50);
}
