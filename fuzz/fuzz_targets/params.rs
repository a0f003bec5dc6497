//! The `tools/call` params reader (`ToolCallParams::from_json`), the one
//! hand-written JSON reader on the wire, on arbitrary bytes:
//! - no panic, no hang;
//! - its one pass and `serde_json` alone read the same: both accept with
//!   the same name and arguments text, or both refuse with the same error;
//! - accepted arguments are an object `serde_json` builds, and
//!   `arguments()` is that object;
//! - every top-level key of that object read from the text (as conditions
//!   read it) is the value the object holds (the last one of a key written
//!   twice), and keys not in it read as absent;
//! - a fixed policy whose conditions read arguments (a path `inside`, a
//!   number compared, a regex, nested and list selectors) decides and
//!   explains the request built from the bytes exactly as the one with the
//!   arguments built.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcppol::fuzzing::params::{get, read, read_with_serde};
use mcppol::{PolicySet, Request, ToolCallParams};
use serde_json::Value;

/// Conditions reading arguments every way the evaluator can.
const POLICY: &str = r#"
policy p {
  default ask
  deny  d_esc: "s/*" when args.path escapes "/srv"
  deny  d_ref: "s/*" when args.ref matches /^refs\//
  deny  d_deep: "s/t" when args.a.b[1] == 2
  ask   k_num: "s/*" when args.n > 3 or args["odd key"] == true
  ask   k_list: "s/*" when args.items.name in ["x", "y"]
  allow a_in: "s/*" when args.path inside "/srv" and not exists args.mode
  allow a_eq: "s/t" when args.tags == ["a", "b"] and args.obj == {"k": 1}
  allow a_all: "s/*" when args.files.path inside "/srv/x"
}
"#;

fn policy() -> &'static PolicySet {
    static SET: OnceLock<PolicySet> = OnceLock::new();
    SET.get_or_init(|| match PolicySet::from_text("params.mcppol", POLICY) {
        Ok(set) => set,
        // A build whose fixed policy does not load is broken, not a finding.
        Err(e) => panic!("the fixed policy does not load: {}", e.render(false)),
    })
}

/// Keys looked up that an object may well not hold.
const PROBES: &[&str] = &[
    "path", "n", "ref", "a", "mode", "items", "name", "arguments", "", "p\\u0061th", "é", "\u{fffd}",
];

fuzz_target!(|data: &[u8]| {
    let fast = read(data);
    let slow = read_with_serde(data);
    assert_eq!(fast, slow, "the one pass and serde_json read differently");
    let Ok(params) = ToolCallParams::from_json(data) else {
        return;
    };
    let built = params.arguments().cloned();
    match (params.arguments_json(), &built) {
        (None, None) => {}
        (Some(text), Some(Value::Object(_))) => {
            let again = serde_json::from_str::<Value>(text).ok();
            assert_eq!(again.as_ref(), built.as_ref(), "arguments {text}");
        }
        (text, built) => panic!("arguments {text:?} built as {built:?}"),
    }
    let object = match &built {
        Some(Value::Object(object)) => Some(object),
        _ => None,
    };
    if let Some(object) = object {
        for (key, value) in object {
            assert_eq!(
                get(&params, key),
                Ok(Some(value.clone())),
                "key {key:?} read from the text"
            );
        }
    }
    for key in PROBES {
        let held = object.and_then(|o| o.get(*key)).cloned();
        assert_eq!(get(&params, key), Ok(held), "key {key:?} read from the text");
    }
    let p = match policy().pick(None) {
        Ok(p) => p,
        Err(e) => panic!("the fixed policy set has no policy to pick: {e:?}"),
    };
    let wire = params.request("s").with_principal("p");
    let mut whole = Request::tool("s", params.name()).with_principal("p");
    if let Some(args) = &built {
        whole = whole.with_args(args);
    }
    assert_eq!(p.decide(&wire), p.decide(&whole), "decided differently");
    assert_eq!(
        format!("{:?}", p.explain(&wire)),
        format!("{:?}", p.explain(&whole)),
        "explained differently"
    );
});
