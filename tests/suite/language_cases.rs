//! The project's own decision cases for `let` and the shell command tests,
//! in the form of the shared conformance cases (one JSON object a line:
//! `id`, `policy`, `argv` after `mcppol eval --policy FILE`, and the fields
//! the output must `expect`), run here against the real binary.
//! `tests/conformance/language.jsonl` runs under
//! `../shared/conformance/run.py` as well.

use serde_json::Value;

const CASES: &str = "tests/conformance/language.jsonl";

#[test]
fn the_language_cases_decide_as_they_expect() {
    let text = std::fs::read_to_string(CASES).unwrap_or_else(|e| panic!("{CASES}: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    let mut count = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        let id = case["id"].as_str().unwrap_or("?");
        let policy = dir.path().join(format!("{id}.mcppol"));
        std::fs::write(&policy, case["policy"].as_str().unwrap()).unwrap();
        let argv: Vec<&str> = case["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let out = crate::common::mcppol()
            .arg("eval")
            .arg("--policy")
            .arg(&policy)
            .args(&argv)
            .output()
            .unwrap();
        let got: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{id}: not JSON: {}", String::from_utf8_lossy(&out.stderr)));
        for (key, want) in case["expect"].as_object().unwrap() {
            if &got[key] != want {
                failed.push(format!("{id}: {key}: want {want}, got {}", got[key]));
            }
        }
        count += 1;
    }
    assert!(count >= 20, "only {count} cases in {CASES}");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
