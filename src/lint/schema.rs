//! `unknown_argument`, `argument_type`, `path_not_string` (with `--tools`):
//! argument selectors checked against the `inputSchema` of every listed tool
//! the rule's targets match.
//!
//! A schema is followed through `properties`, `items` (a key step that
//! meets an array applies to its elements, as the engine does) and
//! `additionalProperties`. What cannot be followed for sure (`anyOf`,
//! `$ref`, `patternProperties`, `additionalProperties: true`, a missing
//! schema) is unknown, and unknown is never reported. A key that an object
//! schema with `properties` does not declare counts as missing: the schema
//! forbids it outright with `additionalProperties: false`, and without that
//! keyword a server that documents its arguments does not take it either.
//! A selector is reported only when it is missing from every matched tool;
//! a type only when a tool declares a type the test contradicts.

use serde_json::Value;

use super::patterns::matches_tool;
use super::{each_rule_test, Ctx, ARGUMENT_TYPE, PATH_NOT_STRING, UNKNOWN_ARGUMENT};
use crate::diagnostics::did_you_mean;
use crate::syntax::{CompareOp, Cond, Effect, SelectorAst, Span, Step, TargetKind};

/// What a selector finds in one schema.
enum Found<'s> {
    /// The schema of the selected value.
    Schema(&'s Value),
    /// Certainly absent: why, and the keys declared where it went missing.
    Missing(String, Vec<String>),
    /// Nothing can be said.
    Unknown,
}

fn resolve<'s>(schema: &'s Value, steps: &[Step]) -> Found<'s> {
    let Some(obj) = schema.as_object() else {
        return Found::Unknown;
    };
    let opaque = ["anyOf", "oneOf", "allOf", "$ref", "not", "if"];
    if opaque.iter().any(|k| obj.contains_key(*k)) {
        return Found::Unknown;
    }
    let Some((step, rest)) = steps.split_first() else {
        return Found::Schema(schema);
    };
    let types = declared(schema);
    let is = |t: &str| types.as_ref().is_some_and(|ts| ts.contains(&t));
    let items = obj.get("items");
    match step {
        Step::Key(key) => {
            let array_only = types.as_ref().is_some_and(|ts| ts == &["array"])
                || (types.is_none() && items.is_some() && !obj.contains_key("properties"));
            if array_only {
                return match items {
                    Some(items @ Value::Object(_)) => resolve(items, steps),
                    _ => Found::Unknown,
                };
            }
            if types.is_some() && !is("object") {
                let ts = types.unwrap_or_default().join(" or ");
                return Found::Missing(
                    format!(
                        "the value it reaches is {}, which has no fields",
                        article(&ts)
                    ),
                    vec![],
                );
            }
            let properties = obj.get("properties").and_then(Value::as_object);
            if let Some(found) = properties.and_then(|p| p.get(key)) {
                return resolve(found, rest);
            }
            if obj.contains_key("patternProperties") {
                return Found::Unknown;
            }
            let known = || -> Vec<String> {
                properties.map_or_else(Vec::new, |p| p.keys().cloned().collect())
            };
            match obj.get("additionalProperties") {
                Some(Value::Bool(false)) => Found::Missing(
                    format!("the schema forbids `{key}` (`additionalProperties: false`)"),
                    known(),
                ),
                Some(more @ Value::Object(_)) => resolve(more, rest),
                Some(_) => Found::Unknown,
                None if properties.is_some() => {
                    Found::Missing(format!("the schema does not declare `{key}`"), known())
                }
                None => Found::Unknown,
            }
        }
        Step::Index(i) => {
            if types.is_some() && !is("array") {
                let ts = types.unwrap_or_default().join(" or ");
                return Found::Missing(
                    format!("the value it reaches is {}, not a list", article(&ts)),
                    vec![],
                );
            }
            match items {
                Some(items @ Value::Object(_)) => resolve(items, rest),
                Some(Value::Array(tuple)) => match tuple.get(*i) {
                    Some(s) => resolve(s, rest),
                    None => Found::Missing(format!("the list has {} items", tuple.len()), vec![]),
                },
                _ => Found::Unknown,
            }
        }
    }
}

fn article(ts: &str) -> String {
    let vowel = ts.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {ts}", if vowel { "an" } else { "a" })
}

/// The declared `type`(s) of a schema.
fn declared(schema: &Value) -> Option<Vec<&str>> {
    match schema.get("type")? {
        Value::String(t) => Some(vec![t.as_str()]),
        Value::Array(ts) => {
            let out: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
            (!out.is_empty()).then_some(out)
        }
        _ => None,
    }
}

/// The types a test sees: with `flatten`, a list gives its elements' types.
fn leaf_types(schema: &Value, flatten: bool) -> Option<Vec<&str>> {
    let types = declared(schema)?;
    if !flatten || !types.contains(&"array") {
        return Some(types);
    }
    let mut out: Vec<&str> = types.into_iter().filter(|t| *t != "array").collect();
    out.extend(schema.get("items").and_then(declared)?);
    Some(out)
}

/// The JSON Schema types a literal may be.
fn literal_types(value: &Value) -> &'static [&'static str] {
    match value {
        Value::Null => &["null"],
        Value::Bool(_) => &["boolean"],
        Value::Number(n) if n.is_i64() || n.is_u64() => &["number", "integer"],
        Value::Number(_) => &["number"],
        Value::String(_) => &["string"],
        Value::Array(_) => &["array"],
        Value::Object(_) => &["object"],
    }
}

/// What a test needs of the selected values.
struct Want {
    flatten: bool,
    ok: Vec<&'static str>,
    what: String,
    path: bool,
    /// A wrong type is a failure (`matches`, ordering), not just unequal.
    fails: bool,
}

fn want(cond: &Cond) -> Option<(&SelectorAst, Want)> {
    let string = vec!["string"];
    Some(match cond {
        Cond::Matches { selector, .. } => (
            selector,
            Want {
                flatten: true,
                ok: string,
                what: "`matches` tests strings".into(),
                path: false,
                fails: true,
            },
        ),
        Cond::Path {
            selector, inside, ..
        } => (
            selector,
            Want {
                flatten: true,
                ok: string,
                what: format!(
                    "`{}` tests string paths",
                    if *inside { "inside" } else { "escapes" }
                ),
                path: true,
                fails: false,
            },
        ),
        Cond::Compare {
            selector,
            op,
            value,
            ..
        } => {
            let ordering = !matches!(op.node, CompareOp::Eq | CompareOp::Ne);
            let ok: Vec<&'static str> = if ordering {
                vec!["number", "integer"]
            } else {
                literal_types(&value.node).to_vec()
            };
            let what = if ordering {
                format!("`{}` compares numbers", op.node.as_str())
            } else {
                format!(
                    "`{}` compares with {}",
                    op.node.as_str(),
                    article(literal_types(&value.node)[0])
                )
            };
            (
                selector,
                Want {
                    flatten: !value.node.is_array(),
                    ok,
                    what,
                    path: false,
                    fails: ordering,
                },
            )
        }
        Cond::In { selector, list, .. } => {
            let mut ok: Vec<&'static str> = Vec::new();
            for item in list.node.as_array().map(Vec::as_slice).unwrap_or_default() {
                for t in literal_types(item) {
                    if !ok.contains(t) {
                        ok.push(t);
                    }
                }
            }
            (
                selector,
                Want {
                    flatten: true,
                    ok,
                    what: "`in` compares with the list's values".into(),
                    path: false,
                    fails: false,
                },
            )
        }
        Cond::Exists { selector, .. } => (
            selector,
            Want {
                flatten: false,
                ok: vec![],
                what: String::new(),
                path: false,
                fails: false,
            },
        ),
        _ => return None,
    })
}

pub(super) fn check(cx: &mut Ctx<'_>) {
    let Some(listing) = cx.tools else {
        return;
    };
    let mut found = Vec::new();
    for rule in &cx.rules {
        if rule.ir.kind != TargetKind::Tool || rule.ast.condition.is_none() {
            continue;
        }
        let loose = rule.ir.effect.loose();
        let tools: Vec<(String, Option<&Value>)> = listing
            .tools()
            .filter(|(server, tool)| {
                rule.ir
                    .targets
                    .iter()
                    .any(|t| matches_tool(t, loose, server, &tool.name))
            })
            .map(|(server, tool)| {
                (
                    format!("{server}/{}", tool.name),
                    tool.input_schema.as_ref(),
                )
            })
            .collect();
        if tools.is_empty() {
            continue;
        }
        let effect = rule.ir.effect;
        each_rule_test(rule.ast, &mut |cond, _| {
            let Some((selector, want)) = want(cond) else {
                return;
            };
            if selector.root.node != "args" {
                return;
            }
            let steps: Vec<Step> = selector.steps.iter().map(|s| s.node.clone()).collect();
            let mut missing = Vec::new();
            let mut contradicted = Vec::new();
            let mut present = false;
            for (name, schema) in &tools {
                let Some(schema) = schema else {
                    present = true;
                    continue;
                };
                match resolve(schema, &steps) {
                    Found::Missing(why, known) => missing.push((name.clone(), why, known)),
                    Found::Unknown => present = true,
                    Found::Schema(leaf) => {
                        present = true;
                        if want.ok.is_empty() {
                            continue;
                        }
                        if let Some(types) = leaf_types(leaf, want.flatten) {
                            if !types.iter().any(|t| want.ok.contains(t)) {
                                let list = want.flatten
                                    && declared(leaf).is_some_and(|d| d.contains(&"array"));
                                let shown = if list {
                                    let plural: Vec<String> =
                                        types.iter().map(|t| format!("{t}s")).collect();
                                    format!("a list of {}", plural.join(" or "))
                                } else {
                                    article(&types.join(" or "))
                                };
                                contradicted.push((name.clone(), shown));
                            }
                        }
                    }
                }
            }
            if !present && !missing.is_empty() {
                found.push(Finding::Missing {
                    span: selector.span,
                    text: cx.text(selector.span).to_string(),
                    missing,
                    last_key: steps.iter().rev().find_map(|s| match s {
                        Step::Key(k) => Some(k.clone()),
                        Step::Index(_) => None,
                    }),
                });
            }
            if !contradicted.is_empty() {
                found.push(Finding::Type {
                    span: cond.span(),
                    text: cx.text(selector.span).to_string(),
                    what: want.what.clone(),
                    path: want.path,
                    fails: want.fails,
                    effect,
                    contradicted,
                });
            }
        });
    }
    for finding in found {
        emit(cx, finding);
    }
}

enum Finding {
    Missing {
        span: Span,
        text: String,
        missing: Vec<(String, String, Vec<String>)>,
        last_key: Option<String>,
    },
    Type {
        span: Span,
        text: String,
        what: String,
        path: bool,
        fails: bool,
        effect: Effect,
        contradicted: Vec<(String, String)>,
    },
}

fn tool_list(names: &[String]) -> String {
    let shown: Vec<String> = names.iter().take(3).map(|n| format!("`{n}`")).collect();
    let more = names.len().saturating_sub(3);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

fn emit(cx: &mut Ctx<'_>, finding: Finding) {
    match finding {
        Finding::Missing {
            span,
            text,
            missing,
            last_key,
        } => {
            let names: Vec<String> = missing.iter().map(|m| m.0.clone()).collect();
            let (first, why, known) = &missing[0];
            let suggestion = last_key
                .as_deref()
                .and_then(|k| did_you_mean(k, known.iter().map(String::as_str)));
            let declared = if known.is_empty() {
                String::new()
            } else {
                format!(
                    "; it declares {}",
                    known
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let help = match suggestion {
                Some(k) => format!("did you mean `{k}`? In `{first}`: {why}{declared}"),
                None => format!("in `{first}`: {why}{declared}. A test on a value that is never there never holds"),
            };
            let diagnostic = cx
                .warning(
                    &UNKNOWN_ARGUMENT,
                    span,
                    format!("`{text}` is not an argument of {}", tool_list(&names)),
                )
                .with_label("not in the inputSchema")
                .with_help(help);
            cx.emit(&UNKNOWN_ARGUMENT, diagnostic);
        }
        Finding::Type {
            span,
            text,
            what,
            path,
            fails,
            effect,
            contradicted,
        } => {
            let (first, types) = &contradicted[0];
            let names: Vec<String> = contradicted.iter().map(|c| c.0.clone()).collect();
            let lint = if path {
                &PATH_NOT_STRING
            } else {
                &ARGUMENT_TYPE
            };
            let outcome = if path {
                "a value that is not a string is never inside a root and always escapes it"
                    .to_string()
            } else if !fails {
                "values of another type are never equal, so the test never holds (and `!=` always does)".to_string()
            } else {
                match effect {
                    Effect::Allow => "in an allow rule a failed test never matches, so this rule cannot allow those tools".to_string(),
                    _ => format!(
                        "a value of the wrong type makes the test fail, and in a{} {} rule a failed test counts as a match: it holds on every call to those tools",
                        if effect == Effect::Ask { "n" } else { "" },
                        effect.as_str()
                    ),
                }
            };
            let diagnostic = cx
                .warning(
                    lint,
                    span,
                    format!("{what}, but `{first}` declares `{text}` as {types}"),
                )
                .with_label(if path { "not a string path" } else { "type contradicts the schema" })
                .with_help(format!(
                    "{outcome}; tools affected: {}. Test an argument of the right type, or narrow the rule's targets",
                    tool_list(&names)
                ));
            cx.emit(lint, diagnostic);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn find(schema: Value, path: &[&str]) -> &'static str {
        let steps: Vec<Step> = path
            .iter()
            .map(|p| match p.parse::<usize>() {
                Ok(i) => Step::Index(i),
                Err(_) => Step::Key(p.to_string()),
            })
            .collect();
        match resolve(&schema, &steps) {
            Found::Schema(_) => "found",
            Found::Missing(..) => "missing",
            Found::Unknown => "unknown",
        }
    }

    #[test]
    fn unknown_is_not_wrong() {
        let props = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        assert_eq!(find(props.clone(), &["path"]), "found");
        assert_eq!(find(props, &["pth"]), "missing");
        let closed = json!({"type": "object", "additionalProperties": false});
        assert_eq!(find(closed, &["x"]), "missing");
        let open = json!({"type": "object", "properties": {}, "additionalProperties": true});
        assert_eq!(find(open, &["x"]), "unknown");
        let typed = json!({"type": "object", "additionalProperties": {"type": "number"}});
        assert_eq!(find(typed, &["x"]), "found");
        assert_eq!(find(json!({"type": "object"}), &["x"]), "unknown");
        assert_eq!(find(json!(true), &["x"]), "unknown");
        assert_eq!(
            find(json!({"anyOf": [{"type": "object"}]}), &["x"]),
            "unknown"
        );
        let patterned =
            json!({"type": "object", "properties": {}, "patternProperties": {"^x": {}}});
        assert_eq!(find(patterned, &["x1"]), "unknown");
    }

    #[test]
    fn lists_are_looked_into() {
        let edits = json!({"type": "object", "properties": {"edits": {"type": "array",
            "items": {"type": "object", "properties": {"oldText": {"type": "string"}}}}}});
        assert_eq!(find(edits.clone(), &["edits", "oldText"]), "found");
        assert_eq!(find(edits.clone(), &["edits", "0", "oldText"]), "found");
        assert_eq!(find(edits.clone(), &["edits", "old_text"]), "missing");
        assert_eq!(find(json!({"type": "string"}), &["x"]), "missing");
        assert_eq!(find(json!({"type": "string"}), &["0"]), "missing");
        let paths = json!({"type": "array", "items": {"type": "string"}});
        assert_eq!(leaf_types(&paths, true), Some(vec!["string"]));
        assert_eq!(leaf_types(&paths, false), Some(vec!["array"]));
    }
}
