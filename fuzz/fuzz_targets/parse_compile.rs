//! The parser, compiler and checker on arbitrary text: a diagnostic or a
//! policy set, never a panic, and every diagnostic renders.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcppol::{check_text, LintOptions, LoadOptions, PolicySet};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match PolicySet::from_text("fuzz.mcppol", text) {
        Ok(set) => {
            for policy in set.iter() {
                for r in mcppol_fuzz::spread() {
                    r.with(|req| {
                        let d = policy.decide(req);
                        mcppol_fuzz::check_decision(req, &d);
                    });
                }
            }
        }
        Err(e) => {
            assert!(!e.diagnostics.is_empty(), "a load error with no diagnostic");
            let _ = e.render(false);
            let _ = e.to_string();
        }
    }
    let diagnostics = check_text(
        "fuzz.mcppol",
        text,
        &LoadOptions::default(),
        &LintOptions::default(),
    );
    let _ = mcppol::render_all(&diagnostics, false);
});
