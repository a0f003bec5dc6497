//! `mcppol claude-hook`: Claude Code's permission hook (see
//! `crate::claude` and docs/claude-code.md).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use super::{color, exit, usage_error};
use crate::claude::event::MAX_INPUT_BYTES;
use crate::claude::names::DEFAULT_BUILTIN_SERVER;
use crate::claude::settings::{command, settings, shell_quote, DEFAULT_POLICY};
use crate::claude::{load_policy, run_hook, HookConfig, HookOutput};

#[derive(Args, Debug)]
pub struct ClaudeHookArgs {
    /// The policy file.
    #[arg(long, value_name = "FILE", required_unless_present = "print_settings")]
    pub policy: Option<PathBuf>,
    /// Which policy of the file (needed when it holds several).
    #[arg(long, value_name = "POLICY")]
    pub name: Option<String>,
    /// The MCP server ids, comma-separated: they resolve `mcp__A__B__C`
    /// names whose server holds `__`.
    #[arg(long, value_name = "ID,...", value_delimiter = ',')]
    pub servers: Vec<String>,
    /// The server the built-in tools (Bash, Write, ...) belong to
    /// [default: claude].
    #[arg(long = "builtin-server", value_name = "ID")]
    pub builtin_server: Option<String>,
    /// Where the session taint files live [default: $XDG_STATE_HOME/mcppol
    /// or ~/.local/state/mcppol].
    #[arg(long = "state-dir", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Append one JSON line per PreToolUse decided to FILE; a call whose
    /// line cannot be written is denied (audit_failed).
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Print the settings.json block that installs the hook, and exit.
    #[arg(long = "print-settings")]
    pub print_settings: bool,
}

pub fn run(args: ClaudeHookArgs) -> u8 {
    if args.print_settings {
        return print_settings(&args);
    }
    let Some(policy) = args.policy.clone() else {
        // clap requires it; should that change, the call is still blocked.
        eprintln!("mcppol claude-hook: give --policy FILE");
        return exit::USAGE;
    };
    let config = HookConfig {
        policy,
        name: args.name,
        servers: args.servers,
        builtin_server: args
            .builtin_server
            .unwrap_or_else(|| DEFAULT_BUILTIN_SERVER.to_string()),
        state_dir: args.state_dir,
        audit: args.audit,
        home: crate::claude::place::home_from_env(),
        preloaded: None,
        budgets: None,
        bundle: None,
    };
    serve_stdio("mcppol claude-hook", |input| run_hook(&config, input))
}

/// Reads the hook input from stdin (bounded), hands it to `hook`, and
/// writes what it answers. `who` starts the messages of a failure.
pub(super) fn serve_stdio(who: &str, hook: impl FnOnce(&[u8]) -> HookOutput) -> u8 {
    let mut input = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut input);
    if let Err(e) = read {
        eprintln!("{who}: cannot read the hook input: {e}");
        return exit::USAGE;
    }
    let out = hook(&input);
    if let Some(text) = &out.stderr {
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
    if let Some(text) = &out.stdout {
        let mut stdout = std::io::stdout().lock();
        if stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            // The decision could not be handed over: block.
            eprintln!("{who}: cannot write the decision");
            return exit::USAGE;
        }
    }
    out.status
}

/// An absolute form of a path given on the command line, so that the
/// hook finds it whatever folder Claude Code runs it in.
fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|e| format!("cannot make `{}` absolute: {e}", path.display()))
}

fn print_settings(args: &ClaudeHookArgs) -> u8 {
    let words = match hook_words(args, Some(DEFAULT_POLICY)) {
        Ok(words) => words,
        Err(status) => return status,
    };
    let exe = match std::env::current_exe() {
        Ok(p) => p.to_string_lossy().into_owned(),
        Err(e) => return usage_error(&format!("cannot find mcppol's own path: {e}"), None),
    };
    let block = settings(&command(&exe, &words));
    match serde_json::to_string_pretty(&block) {
        Ok(text) => {
            println!("{text}");
            exit::OK
        }
        Err(e) => usage_error(&format!("cannot print the settings: {e}"), None),
    }
}

/// The hook's flags as shell words for its installed command line: the
/// policy (checked to load, made absolute; `default_policy` when none is
/// given, or a usage error when there is no default) and every other flag
/// given. `Err` is the exit status after the error is printed.
pub(super) fn hook_words(
    args: &ClaudeHookArgs,
    default_policy: Option<&str>,
) -> Result<Vec<String>, u8> {
    let mut words = Vec::new();
    match &args.policy {
        Some(p) => {
            // A policy that does not load would deny every call: refuse to
            // install it.
            let config = HookConfig {
                name: args.name.clone(),
                ..HookConfig::new(p)
            };
            if let Err(why) = load_policy(&config) {
                if let Err(e) = crate::PolicySet::from_file(p, &Default::default()) {
                    eprint!("{}", e.render(color()));
                }
                return Err(usage_error(
                    &why,
                    Some("fix the policy first: `mcppol check FILE`"),
                ));
            }
            let p = absolute(p).map_err(|e| usage_error(&e, None))?;
            words.push("--policy".to_string());
            words.push(shell_quote(&p.to_string_lossy()));
        }
        None => {
            let Some(default) = default_policy else {
                return Err(usage_error(
                    "give --policy FILE: the policy the installed hook enforces",
                    None,
                ));
            };
            words.push("--policy".to_string());
            words.push(default.to_string());
        }
    }
    if let Some(n) = &args.name {
        words.push("--name".into());
        words.push(shell_quote(n));
    }
    if !args.servers.is_empty() {
        words.push("--servers".into());
        words.push(shell_quote(&args.servers.join(",")));
    }
    if let Some(b) = &args.builtin_server {
        words.push("--builtin-server".into());
        words.push(shell_quote(b));
    }
    if let Some(d) = &args.state_dir {
        let d = absolute(d).map_err(|e| usage_error(&e, None))?;
        words.push("--state-dir".into());
        words.push(shell_quote(&d.to_string_lossy()));
    }
    if let Some(a) = &args.audit {
        let a = absolute(a).map_err(|e| usage_error(&e, None))?;
        words.push("--audit".into());
        words.push(shell_quote(&a.to_string_lossy()));
    }
    Ok(words)
}
