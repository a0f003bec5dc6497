//! Bytes to decision: a request built by `ToolCallParams::from_json` (its
//! arguments kept as JSON text, read key by key) is decided, and explained,
//! exactly as the same call with its arguments built into a `Value`: over
//! random argument texts (keys written twice, escaped keys, nested lists)
//! against policies whose conditions read them every way, and over the
//! benchmarks' generated workloads.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcppol::test_util::gen;

use mcppol::{HostPredicates, LoadOptions, Policy, PolicySet, Request, ToolCallParams};
use proptest::prelude::*;
use serde_json::Value;

/// Conditions reading arguments in every way the evaluator can.
const POLICY: &str = r#"
policy p {
  default ask
  deny  d_ne: "s/t" when args.mode != "safe"
  deny  d_esc: "s/*" when args.path escapes "/srv"
  deny  d_deep: "s/t" when args.a.b[1] == 2
  deny  d_re: "s/t" when args.ref matches /^refs\/heads\/x/
  ask   k_num: "s/*" when args.n > 10 or args["odd key"] == true
  ask   k_list: "s/t" when args.items.name in ["x", "y"]
  allow a_in: "s/t" when args.path inside "/srv" and exists args.mode
  allow a_eq: "s/t" when args.tags == ["a", "b"] and args.obj == {"k": 1}
  allow a_host: "s/t" when host.arg_is_set
  allow a_all: "s/t" when args.files.path inside "/srv/x"
}
"#;

fn policy() -> PolicySet {
    let mut host = HostPredicates::new();
    host.register("arg_is_set", |r: &Request<'_>| {
        Ok(r.args
            .and_then(|a| a.get("flag"))
            .is_some_and(|f| f == &Value::Bool(true)))
    });
    let options = LoadOptions { host: Some(host) };
    PolicySet::from_text_with("p.mcppol", POLICY, &options)
        .unwrap_or_else(|e| panic!("{}", e.render(false)))
}

/// One argument value, as JSON text.
fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        Just("true".to_string()),
        Just("false".to_string()),
        prop::sample::select(vec![
            "2",
            "11",
            "10.5",
            "-1",
            "-0",
            "1e400",
            "1.1e1",
            "2E-400",
            "18446744073709551616",
            "0.30000000000000004441",
        ])
        .prop_map(String::from),
        // Past what an f64 holds, or just within it.
        prop::sample::select(vec![300usize, 308, 309, 400])
            .prop_map(|n| format!("1{}", "0".repeat(n))),
        prop::sample::select(vec![
            r#""safe""#,
            r#""x""#,
            r#""s\u0061fe""#,
            r#""/srv/a""#,
            r#""/srv/x/y""#,
            r#""/srv/../etc""#,
            r#""/etc/passwd""#,
            r#""refs/heads/x1""#,
            r#""a""#,
            r#""b""#,
            r#""k""#,
            // Surrogate pairs decode; a lone surrogate does not build.
            r#""\ud83d\ude00""#,
            r#""\ud800""#,
            r#""x\udc00""#,
            r#""\u002fsrv\u002fa""#,
            r#""tab\there é""#,
        ])
        .prop_map(String::from),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            (prop::collection::vec(inner.clone(), 0..3), ws())
                .prop_map(|(v, w)| format!("[{w}{}{w}]", v.join(&format!("{w},{w}")))),
            (prop::collection::vec((key(), inner), 0..3), ws()).prop_map(|(kv, w)| {
                let body: Vec<String> = kv.iter().map(|(k, v)| format!("{k}{w}:{w}{v}")).collect();
                format!("{{{w}{}{w}}}", body.join(","))
            }),
        ]
    })
}

/// JSON's whitespace.
fn ws() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "", " ", "\n", "\t ", "\r\n  "])
}

/// A key as JSON text: the keys the policy reads, some escaped.
fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        r#""mode""#,
        r#""path""#,
        r#""p\u0061th""#,
        r#""a""#,
        r#""b""#,
        r#""ref""#,
        r#""n""#,
        r#""odd key""#,
        r#""items""#,
        r#""name""#,
        r#""tags""#,
        r#""obj""#,
        r#""flag""#,
        r#""files""#,
        r#""other""#,
    ])
    .prop_map(String::from)
}

/// An arguments object as JSON text, keys possibly repeated, sometimes
/// nested deep (past the bound at times).
fn arguments() -> impl Strategy<Value = String> {
    (
        prop::collection::vec((key(), value(), ws()), 0..6),
        prop_oneof![8 => Just(0usize), 1 => 124usize..128],
    )
        .prop_map(|(kv, deep)| {
            let mut body: Vec<String> = kv
                .iter()
                .map(|(k, v, w)| format!("{w}{k}{w}:{w}{v}{w}"))
                .collect();
            if deep > 0 {
                body.push(format!(r#""a":{}2{}"#, "[".repeat(deep), "]".repeat(deep)));
            }
            format!("{{ {} }}", body.join(", "))
        })
}

/// The decision and the explanation of the call both ways.
fn both_ways(p: &Policy, server: &str, tool: &str, args: &str) -> Result<(), TestCaseError> {
    let bytes = format!(r#"{{"name":"{tool}","arguments":{args}}}"#);
    let read = ToolCallParams::from_json(bytes.as_bytes());
    // Arguments serde_json would not build in the params (a number out of
    // range, a lone surrogate, too deep) are refused when read, as they
    // were when the params were built whole.
    let Ok(Value::Object(mut whole)) = serde_json::from_str::<Value>(&bytes) else {
        prop_assert!(read.is_err(), "{}", args);
        return Ok(());
    };
    let built = whole.remove("arguments").unwrap();
    let params = read.unwrap();
    let wire = params.request(server).with_principal("p");
    let whole = Request::tool(server, tool)
        .with_args(&built)
        .with_principal("p");
    prop_assert_eq!(p.decide(&wire), p.decide(&whole), "{}", args);
    let (a, b) = (p.explain(&wire), p.explain(&whole));
    prop_assert_eq!(format!("{a:?}"), format!("{b:?}"), "{}", args);
    prop_assert_eq!(params.arguments(), Some(&built));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arguments_read_from_the_text_decide_as_built_ones(
        args in arguments(),
        tool in prop::sample::select(vec!["t", "u"]),
    ) {
        let set = policy();
        let p = set.pick(None).unwrap();
        both_ways(p, "s", tool, &args)?;
    }
}

#[test]
fn the_generated_workloads_decide_the_same_from_bytes() {
    for size in [10, 100, 1_000] {
        let work = gen::Workload::new(size).unwrap();
        let set = PolicySet::from_text("generated.mcppol", &work.text).unwrap();
        let policy = set.get(&work.spec.name).unwrap();
        for (_, r) in &work.requests {
            let taint = r.taint_refs();
            let bytes =
                serde_json::to_vec(&serde_json::json!({"name": r.tool, "arguments": r.args}))
                    .unwrap();
            let params = ToolCallParams::from_json(&bytes).unwrap();
            let wire = params
                .request(&r.server)
                .with_annotations(&r.annotations)
                .with_taint(&taint)
                .with_principal(&r.principal)
                .with_assigns(&r.assigns);
            let whole = gen::mcppol_request(r, &taint);
            assert_eq!(policy.decide(&wire), policy.decide(&whole), "{r:?}");
        }
    }
}

/// Bytes that are not UTF-8, inside a string of the arguments or of
/// another member, are refused as they were when the params were built.
#[test]
fn invalid_utf8_inside_strings_is_refused() {
    for (at, bad) in [
        (0, &b"\xff"[..]),
        (3, b"\xc3"),
        (1, b"\xed\xa0\x80"),
        (2, b"\xe9"),
    ] {
        for template in [
            &br#"{"name":"t","arguments":{"path":"/srv/a"}}"#[..],
            br#"{"name":"t","arguments":{"p":1},"_meta":{"k":"abcd"}}"#,
        ] {
            let quote = template.iter().rposition(|&b| b == b'"').unwrap();
            let start = template[..quote].iter().rposition(|&b| b == b'"').unwrap() + 1;
            let mut bytes = template[..start + at.min(quote - start)].to_vec();
            bytes.extend_from_slice(bad);
            bytes.extend_from_slice(&template[start + at.min(quote - start)..]);
            assert!(serde_json::from_slice::<Value>(&bytes).is_err());
            assert!(
                ToolCallParams::from_json(&bytes).is_err(),
                "{}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
}

#[test]
fn arguments_nest_as_deep_as_serde_json_builds_them() {
    // serde_json refuses more than 128 levels in all; the params object is
    // one of them.
    for levels in [120, 126, 127, 128, 129, 200] {
        let args = format!(r#"{{"a":{}1{}}}"#, "[".repeat(levels), "]".repeat(levels));
        let bytes = format!(r#"{{"name":"t","arguments":{args}}}"#);
        let built = serde_json::from_str::<Value>(&bytes).is_ok();
        let read = ToolCallParams::from_json(bytes.as_bytes()).is_ok();
        assert_eq!(read, built, "{levels} levels");
    }
}
