use super::*;
use crate::syntax::parse;

fn expanded(text: &str) -> (File, Vec<Diagnostic>) {
    let source = SourceFile::new("t.mcppol", text);
    let (file, diags) = parse(&source);
    assert!(diags.is_empty(), "{diags:?}");
    let (file, diags, _) = expand(&file, &source);
    (file, diags)
}

fn codes(text: &str) -> Vec<&'static str> {
    expanded(text).1.iter().map(|d| d.code).collect()
}

#[test]
fn names_are_replaced_by_their_values() {
    let (file, diags) = expanded(
        "let sandbox = \"/srv/sandbox\"\nlet readers = [\"fs/read\", \"fs/list\"]\n\
         policy p {\n  let admins = [\"dana\"]\n  roots sandbox\n  trusted fs\n  \
         allow readers when args.path inside sandbox and principal in admins\n}\n\
         policy q { allow \"x\" }\nlet fs = \"fs\"\n",
    );
    assert!(diags.is_empty(), "{diags:?}");
    let Item::Rule(rule) = &file.policies[0].items[3] else {
        panic!("not a rule")
    };
    let targets: Vec<String> = rule
        .targets
        .iter()
        .map(|t| match t {
            TargetAst::Pattern(p) => p.node.clone(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(targets, ["fs/read", "fs/list"]);
    let Some(ConditionClause {
        condition: Cond::And(parts, _),
        ..
    }) = &rule.condition
    else {
        panic!("not an and")
    };
    assert!(matches!(&parts[0], Cond::Path { root, .. } if root.node == "/srv/sandbox"));
    assert!(matches!(&parts[1], Cond::In { list, .. } if list.node == serde_json::json!(["dana"])));
    let Item::Setting(roots) = &file.policies[0].items[1] else {
        panic!("not a setting")
    };
    assert_eq!(
        roots.values[0].node,
        SettingValue::Str("/srv/sandbox".into())
    );
}

#[test]
fn unknown_duplicate_and_misplaced_names_are_errors() {
    assert_eq!(
        codes("let sandbox = \"/srv\"\npolicy p { deny \"x\" when args.p escapes sandbx }"),
        ["mcppol::compile::unknown_name"]
    );
    assert_eq!(
        codes("let a = \"x\"\nlet a = \"y\"\npolicy p { deny a }"),
        ["mcppol::compile::duplicate_name"]
    );
    assert_eq!(
        codes("let a = \"x\"\npolicy p { let a = \"y\"\n deny a }"),
        ["mcppol::compile::duplicate_name"]
    );
    assert_eq!(
        codes("let dirs = [\"/a\", \"/b\"]\npolicy p { deny \"x\" when args.p escapes dirs }"),
        ["mcppol::compile::list_for_string"]
    );
    // A policy's own names are not seen by another policy.
    assert_eq!(
        codes("policy p { let a = \"x\"\n deny a }\npolicy q { deny a }"),
        ["mcppol::compile::unknown_name"]
    );
}

#[test]
fn the_written_out_size_is_bounded() {
    let big = format!("[{}]", vec!["\"aaaaaaaaaaaaaaaa\""; 20_000].join(", "));
    let uses = vec!["big"; 40].join(", ");
    let text = format!("let big = {big}\npolicy p {{ deny \"x\" when tainted(ignore: big) and args.a in big\n deny {uses} }}\n");
    let source = SourceFile::new("t.mcppol", &text);
    let (file, _) = parse(&source);
    let (_, diags, _) = expand(&file, &source);
    assert!(
        diags
            .iter()
            .any(|d| d.code == "mcppol::compile::names_too_large"),
        "{diags:?}"
    );
}

/// `text` with every target, root and `in` list of strings given a name:
/// `let vN = VALUE` lines first, each value written once.
fn with_names(text: &str) -> String {
    let source = SourceFile::new("g.mcppol", text);
    let (file, diags) = parse(&source);
    assert!(diags.is_empty(), "{diags:?}");
    let mut spans: Vec<Span> = Vec::new();
    let mut visit = |c: &Cond, spans: &mut Vec<Span>| match c {
        Cond::Path { root, .. } => spans.push(root.span),
        Cond::In { list, .. }
            if list
                .node
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_string)) =>
        {
            spans.push(list.span)
        }
        _ => {}
    };
    fn walk(c: &Cond, spans: &mut Vec<Span>, visit: &mut dyn FnMut(&Cond, &mut Vec<Span>)) {
        match c {
            Cond::Or(parts, _) | Cond::And(parts, _) => {
                parts.iter().for_each(|p| walk(p, spans, visit))
            }
            Cond::Not(inner, _) => walk(inner, spans, visit),
            other => visit(other, spans),
        }
    }
    for policy in &file.policies {
        for item in &policy.items {
            if let Item::Rule(rule) = item {
                for t in &rule.targets {
                    if let TargetAst::Pattern(p) = t {
                        spans.push(p.span);
                    }
                }
                if let Some(clause) = &rule.condition {
                    walk(&clause.condition, &mut spans, &mut visit);
                }
            }
        }
    }
    spans.sort_by_key(|s| s.start);
    let mut names: Vec<String> = Vec::new();
    let mut out = String::new();
    let mut at = 0;
    for span in spans {
        let value = text[span.start..span.end].trim_end();
        let n = match names.iter().position(|v| v == value) {
            Some(n) => n,
            None => {
                names.push(value.to_string());
                names.len() - 1
            }
        };
        out.push_str(&text[at..span.start]);
        out.push_str(&format!("v{n}"));
        at = span.start + value.len();
    }
    out.push_str(&text[at..]);
    let lets: String = names
        .iter()
        .enumerate()
        .map(|(n, v)| format!("let v{n} = {v}\n"))
        .collect();
    format!("{lets}{out}")
}

#[test]
fn a_policy_with_names_decides_as_its_written_out_twin() {
    use crate::test_util::gen;
    for size in [8, 40, 120] {
        let spec = gen::policy(size);
        let text = spec.mcppol();
        let named = with_names(&text);
        assert!(named.contains("let v0 = "), "{named}");
        if size == 120 {
            // Names stand for targets, roots and lists alike.
            assert!(
                named.contains("inside v") || named.contains("escapes v"),
                "{named}"
            );
            assert!(named.contains(" in v"), "{named}");
        }
        let plain = crate::PolicySet::from_text("plain.mcppol", &text)
            .unwrap_or_else(|e| panic!("{}", e.render(false)));
        let lets = crate::PolicySet::from_text("named.mcppol", &named)
            .unwrap_or_else(|e| panic!("{}\n{named}", e.render(false)));
        let (Some(plain), Some(lets)) = (plain.get(&spec.name), lets.get(&spec.name)) else {
            panic!("no policy {}", spec.name)
        };
        for r in gen::candidates(&spec, 1500, size as u64) {
            let taint = r.taint_refs();
            let request = gen::mcppol_request(&r, &taint);
            let (mut a, mut b) = (plain.decide(&request), lets.decide(&request));
            a.line = None;
            b.line = None;
            assert_eq!(a.to_json(), b.to_json(), "{r:?}");
        }
    }
}
