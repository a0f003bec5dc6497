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
