//! The TextMate grammar under `editors/`: it is JSON, its regexes compile
//! (with Rust's `regex`, whose syntax is the subset it keeps to), it
//! highlights every keyword of the pest grammar, and each construct of the
//! language gets its scope.

use regex::Regex;
use serde_json::Value;

fn grammar() -> Value {
    let text = include_str!("../../editors/mcppol.tmLanguage.json");
    serde_json::from_str(text).unwrap()
}

/// Every pattern that has a `match`: its regex and the scope names it gives
/// (its `name` and those of its captures).
fn patterns(value: &Value, out: &mut Vec<(Regex, Vec<String>)>, all: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for key in ["match", "begin", "end"] {
                if let Some(Value::String(re)) = map.get(key) {
                    all.push(re.clone());
                }
            }
            if let Some(Value::String(re)) = map.get("match") {
                let re = Regex::new(re).unwrap_or_else(|e| panic!("{re}: {e}"));
                let mut names = Vec::new();
                if let Some(Value::String(n)) = map.get("name") {
                    names.push(n.clone());
                }
                if let Some(Value::Object(caps)) = map.get("captures") {
                    for cap in caps.values() {
                        if let Some(Value::String(n)) = cap.get("name") {
                            names.push(n.clone());
                        }
                    }
                }
                out.push((re, names));
            }
            for v in map.values() {
                patterns(v, out, all);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| patterns(v, out, all)),
        _ => {}
    }
}

fn all_patterns() -> Vec<(Regex, Vec<String>)> {
    let mut out = Vec::new();
    let mut all = Vec::new();
    patterns(&grammar(), &mut out, &mut all);
    for re in &all {
        Regex::new(re).unwrap_or_else(|e| panic!("`{re}` does not compile: {e}"));
        assert!(!re.contains("(?<"), "`{re}`: look-behind is not portable");
    }
    out
}

#[test]
fn it_is_a_textmate_grammar() {
    let g = grammar();
    assert_eq!(g["scopeName"], "source.mcppol");
    assert_eq!(g["fileTypes"][0], "mcppol");
    let repo = g["repository"].as_object().unwrap();
    for include in g["patterns"].as_array().unwrap() {
        let name = include["include"].as_str().unwrap().trim_start_matches('#');
        assert!(repo.contains_key(name), "#{name} is not in the repository");
    }
    assert!(!all_patterns().is_empty());
}

/// Every word that the pest grammar spells out as a literal.
fn pest_keywords() -> Vec<String> {
    let text = std::fs::read_to_string("grammar/mcppol.pest").unwrap();
    let literal = Regex::new(r#""([A-Za-z][A-Za-z_]+)""#).unwrap();
    let mut words: Vec<String> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .flat_map(|l| {
            literal
                .captures_iter(l)
                .map(|c| c[1].to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    words.sort();
    words.dedup();
    words
}

#[test]
fn every_keyword_of_the_pest_grammar_is_highlighted() {
    let pats = all_patterns();
    let words = pest_keywords();
    for must in [
        "policy", "deny", "when", "tainted", "matches", "include", "resource", "null",
    ] {
        assert!(
            words.iter().any(|w| w == must),
            "{must} not read from the pest grammar"
        );
    }
    // The pest grammar's words and every word of the keyword table (the
    // setting values and selector roots are read by the compiler, so the
    // grammar does not spell them all).
    for word in words
        .iter()
        .map(String::as_str)
        .chain(super::keywords::all_words())
    {
        let covered = pats.iter().any(|(re, _)| {
            re.find_iter(word)
                .any(|m| m.start() == 0 && m.end() == word.len())
                || [format!("{word} x"), format!("{word}.x")]
                    .iter()
                    .any(|sample| {
                        re.captures(sample)
                            .is_some_and(|c| c.iter().flatten().any(|m| m.as_str() == word))
                    })
        });
        assert!(covered, "keyword `{word}` is not highlighted");
    }
}

#[test]
fn each_construct_gets_its_scope() {
    let pats = all_patterns();
    let cases = [
        ("# a comment", "comment.line"),
        ("policy github", "entity.name.type.policy"),
        ("deny no_force_push:", "entity.name.function.rule-id"),
        ("allow", "keyword.control.effect"),
        ("resource", "storage.type.target-kind"),
        ("pin_tools", "support.type.setting"),
        ("off", "constant.language.setting-value"),
        ("tools {", "keyword.declaration.tools"),
        ("exclude", "keyword.other.visibility"),
        ("~ /^push\\/x/", "string.regexp"),
        ("matches /@example\\.com$/", "string.regexp"),
        ("\\u0041", "constant.character.escape"),
        ("annotation.read_only", "support.constant.annotation"),
        ("host.within_budget", "entity.name.function.host-predicate"),
        ("args.files[0].path", "variable.other.property"),
        ("assigns.role", "variable.language.selector"),
        ("principal", "variable.language.principal"),
        ("-12.5e3", "constant.numeric"),
        ("null", "constant.language"),
        (">=", "keyword.operator.comparison"),
        ("*", "keyword.operator.wildcard"),
        ("unless", "keyword.control.conditional"),
        ("escapes", "keyword.operator.test"),
        ("ignore:", "variable.parameter.ignore"),
        (";", "punctuation.terminator"),
    ];
    for (sample, scope) in cases {
        let hit = pats.iter().any(|(re, names)| {
            re.find(sample).is_some_and(|m| m.start() == 0)
                && names.iter().any(|n| n.starts_with(scope))
        });
        assert!(hit, "`{sample}` does not get `{scope}`");
    }
    // Strings are a begin/end region with escapes inside.
    let g = grammar();
    assert_eq!(g["repository"]["string"]["begin"], "\"");
    assert_eq!(
        g["repository"]["string"]["name"],
        "string.quoted.double.mcppol"
    );
}
