//! Differential, `fmt` against the parser: any file that parses formats
//! to a file that parses to the same policy (same settings, visibility,
//! rules and conditions, spans left out).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcppol::fuzzing::meaning;
use mcppol::{format, PolicySet};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(set) = PolicySet::from_text("fuzz.mcppol", text) else {
        return;
    };
    let once = match format("fuzz.mcppol", text) {
        Ok(once) => once,
        Err(e) => panic!("a file that loads does not format: {e:?}"),
    };
    match PolicySet::from_text("fuzz.mcppol", &once) {
        Ok(again) => assert_eq!(
            meaning(&set),
            meaning(&again),
            "fmt changed the policy:\n{once}"
        ),
        Err(e) => panic!(
            "the formatted file does not load: {}\n{once}",
            e.render(false)
        ),
    }
});
