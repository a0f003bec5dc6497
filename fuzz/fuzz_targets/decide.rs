//! `decide` on arbitrary requests against the bundled policies: never a
//! panic, and the invariants of `check_decision` (no ask without an
//! approver, allow only from an allow rule, a bad server id denied).
//! Deciding twice gives the same decision.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcppol_fuzz::{bundled, check_decision, FuzzRequest};

fuzz_target!(|input: (u8, FuzzRequest)| {
    let (which, request) = input;
    let policies = bundled();
    let policy = &policies[usize::from(which) % policies.len()];
    request.with(|r| {
        let d = policy.decide(r);
        check_decision(r, &d);
        assert_eq!(d, policy.decide(r), "deciding twice differs");
        // Trust can only be granted by the policy or the host, and taking
        // the approver away never allows what was not allowed.
        let without = policy.decide(&r.without_approver());
        check_decision(&r.without_approver(), &without);
        if without.decision == mcppol::Verdict::Allow {
            assert_eq!(d.decision, mcppol::Verdict::Allow, "{r:?}");
        }
    });
});
