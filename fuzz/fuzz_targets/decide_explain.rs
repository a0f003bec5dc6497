//! Differential: `explain` gives exactly the decision `decide` gives, on
//! the bundled policies and on any policy the fuzzer writes, for any
//! request.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use mcppol::PolicySet;
use mcppol_fuzz::{bundled, FuzzRequest};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(which) = u8::arbitrary(&mut u) else {
        return;
    };
    let Ok(request) = FuzzRequest::arbitrary(&mut u) else {
        return;
    };
    // What is left is policy text; when it does not load, a bundled policy.
    let rest = u.take_rest();
    let own = std::str::from_utf8(rest)
        .ok()
        .and_then(|t| PolicySet::from_text("fuzz.mcppol", t).ok());
    let policies: Vec<_> = match &own {
        Some(set) => set.iter().cloned().collect(),
        None => {
            let b = bundled();
            vec![b[usize::from(which) % b.len()].clone()]
        }
    };
    for policy in &policies {
        request.with(|r| {
            let decided = policy.decide(r);
            let explained = policy.explain(r);
            assert_eq!(
                decided, explained.decision,
                "decide and explain disagree on {r:?}"
            );
            let _ = explained.render(policy);
            let _ = explained.to_json(policy);
        });
    }
});
