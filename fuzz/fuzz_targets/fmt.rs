//! `fmt` on arbitrary text: formatting is idempotent, refuses a file with
//! syntax errors (and one whose skipped text only the compiler reports),
//! never refuses a file that loads, and never changes a decision.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcppol::{format, FmtError, PolicySet};
use mcppol_fuzz::decisions;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let once = match format("fuzz.mcppol", text) {
        Ok(once) => once,
        Err(FmtError::Syntax(d)) => {
            assert!(!d.is_empty());
            return;
        }
        // The formatter refuses text the parser skipped on purpose (the
        // tail of an entry that starts with an unknown word, which the
        // compiler reports): such a file never loads.
        Err(FmtError::Unsafe(why)) => {
            assert!(
                PolicySet::from_text("fuzz.mcppol", text).is_err(),
                "fmt refused a file that loads: {why}"
            );
            return;
        }
        Err(e) => panic!("fmt failed: {e:?}"),
    };
    match format("fuzz.mcppol", &once) {
        Ok(twice) => assert_eq!(once, twice, "fmt is not idempotent"),
        Err(e) => panic!("fmt refused its own output: {e:?}\n{once}"),
    }
    let before = PolicySet::from_text("fuzz.mcppol", text);
    let after = PolicySet::from_text("fuzz.mcppol", &once);
    match (before, after) {
        (Ok(b), Ok(a)) => assert_eq!(
            decisions(&b),
            decisions(&a),
            "fmt changed a decision:\n{once}"
        ),
        (Err(_), Err(_)) => {}
        (b, a) => panic!(
            "fmt changed whether the file loads: before {}, after {}\n{once}",
            b.is_ok(),
            a.is_ok()
        ),
    }
});
