//! Formatting keeps the meaning: the same compiled rules (spans left out)
//! and the same decisions, on the corpus and on random policies. A unit
//! test, since the compiled rules are not public.

use proptest::prelude::*;

use crate::test_util::fmt_check::{corpus, decisions, fmt};
use crate::PolicySet;

/// The compiled policies, spans left out: what a file means.
fn meaning(origin: &str, text: &str) -> String {
    let set = PolicySet::from_text(origin, text).unwrap_or_else(|e| panic!("{}", e.render(false)));
    crate::fuzzing::meaning(&set)
}

#[test]
fn formatting_keeps_the_compiled_rules_of_the_corpus() {
    let files = corpus();
    assert!(files.len() > 5, "{}", files.len());
    for (origin, text) in files {
        let once = fmt(&origin, &text);
        assert_eq!(
            meaning(&origin, &text),
            meaning(&origin, &once),
            "{origin} changed meaning"
        );
    }
}

// ------------------------------------------------------------- property

fn spaced(parts: Vec<(String, u8)>) -> String {
    let mut out = String::new();
    for (part, sep) in parts {
        out.push_str(&part);
        out.push_str(match sep % 6 {
            0 => " ",
            1 => "\n  ",
            2 => " ; ",
            3 => "  # note\n",
            4 => "\n\n\n",
            _ => "\t",
        });
    }
    out
}

fn rule() -> impl Strategy<Value = String> {
    let effect = prop::sample::select(vec!["deny", "ask", "allow", "deny id_a:", "allow id_b:"]);
    let kind = prop::sample::select(vec!["", " resource", " prompt"]);
    let targets = prop::sample::select(vec![
        "*",
        "\"a/x\"",
        "\"a/*\", \"b/y\"",
        "\"x\"",
        "\"s\" ~ /^r\\/e/",
        "\"a/x\" ,\"b/*\",\"c/?\"",
    ]);
    let cond = prop::sample::select(vec![
        "",
        " when args.n > 3",
        " when args.s matches /^ok#/",
        " when not (args.n>3 and tainted)",
        " when tainted(ignore: [\"w\"]) or principal == \"p\"",
        " when annotation.read_only and (args.p inside \"/r\" or args[\"k k\"][0] escapes \"/r\")",
        " unless args.s in [\"ok\",1 ,null]",
        " when not not exists args.z",
        " when (args.a == 1 and args.b == 2) and (args.c == {\"x\": [1]} or args.d != false)",
    ]);
    (effect, kind, targets, cond).prop_map(|(e, k, t, c)| format!("{e}{k} {t}{c}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    #[test]
    fn fmt_is_idempotent_and_keeps_meaning(
        rules in prop::collection::vec((rule(), any::<u8>()), 0..8),
        settings in any::<u8>(),
    ) {
        let mut body = Vec::new();
        body.push(("scope tools, resources, prompts".to_string(), settings));
        if settings % 3 == 0 {
            body.push(("tools { include \"a/*\" ; exclude \"*/x\" }".to_string(), settings / 3));
        }
        // Ids must stay unique: number them.
        let mut n = 0;
        for (r, sep) in rules {
            n += 1;
            body.push((r.replace("id_a:", &format!("id_a{n}:")).replace("id_b:", &format!("id_b{n}:")), sep));
        }
        let text = format!("# head\npolicy p {{ {}}}\n", spaced(body));
        prop_assume!(PolicySet::from_text("p.mcppol", &text).is_ok());
        let once = fmt("p.mcppol", &text);
        prop_assert_eq!(&fmt("p.mcppol", &once), &once);
        prop_assert_eq!(meaning("p.mcppol", &text), meaning("p.mcppol", &once));
        prop_assert_eq!(decisions("p.mcppol", &text), decisions("p.mcppol", &once));
    }
}
