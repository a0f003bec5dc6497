//! The 100-rule policy the hook and `serve` benchmarks decide against
//! (benches/claude_hook.rs, benches/serve-load/; benches/hooks/time_hooks.py
//! writes the same one).

/// A policy of `n` rules in the shape of policies/claude-code.mcppol:
/// shell regexes, `$CWD` paths, taint, MCP servers.
pub fn policy(n: usize) -> String {
    let mut out = String::from("policy bench {\n  default ask\n  allow_new_tools on\n");
    let mut i = 0;
    while i < n {
        let rule = match i % 5 {
            0 => format!(
                "  deny shell_{i}: \"claude/Bash\" when args.command matches /\\bcmd{i}\\s+-[a-z]*f/\n"
            ),
            1 => format!(
                "  deny edit_{i}: \"claude/Write\", \"claude/Edit\" when args.file_path escapes \"$CWD/area{i}\" and args.file_path matches /area{i}/\n"
            ),
            2 => format!("  deny send_{i}: \"server{i}/send_*\" when tainted(ignore: [\"docs\"])\n"),
            3 => format!("  ask write_{i}: \"server{i}/create_*\", \"server{i}/update_*\"\n"),
            _ => format!("  allow read_{i}: \"server{i}/get_*\", \"server{i}/list_*\"\n"),
        };
        out.push_str(&rule);
        i += 1;
    }
    out.push_str(
        "  allow edits: \"claude/Edit\", \"claude/Write\" when args.file_path inside \"$CWD\"\n",
    );
    out.push_str(
        "  allow shell: \"claude/Bash\" when args.command matches /^(ls|cargo test)( |$)/\n",
    );
    out.push_str("}\n");
    out
}
