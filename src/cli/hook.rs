//! `mcppol hook HOST`: the permission hook of every agent host (see
//! `crate::hosts` and docs/hosts.md). `mcppol hook claude` is
//! `mcppol claude-hook`.

use clap::Args;

use super::claude_hook::{self, hook_words, serve_stdio, ClaudeHookArgs};
use super::{exit, usage_error};
use crate::claude::HookConfig;
use crate::hosts::{self, settings, Host};

#[derive(Args, Debug)]
#[command(mut_arg("builtin_server", |a| a.help(
    "The server the host's built-in tools belong to [default: the host's name]"
)))]
#[command(mut_arg("audit", |a| a.help(
    "Append one JSON line per pre-tool event decided to FILE; a call whose line cannot be written is denied (audit_failed)"
)))]
#[command(mut_arg("print_settings", |a| a.help(
    "Print the block that installs the hook in the host (its file on stderr), and exit"
)))]
pub struct HookArgs {
    /// The agent host whose hook events are read and answered: claude,
    /// codex, cursor, gemini, copilot, cline, goose or windsurf.
    #[arg(value_name = "HOST", value_parser = host_name)]
    pub host: Host,
    #[command(flatten)]
    pub hook: ClaudeHookArgs,
    /// With --print-settings: install the hook as a call to `mcppol serve`
    /// at URL (Claude Code's `http` handler) instead of a command.
    #[arg(long, value_name = "URL", requires = "print_settings")]
    pub serve: Option<String>,
}

fn host_name(name: &str) -> Result<Host, String> {
    Host::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Host::ALL.iter().map(|h| h.as_str()).collect();
        format!(
            "`{name}` is not a host mcppol hook knows ({})",
            known.join(", ")
        )
    })
}

pub fn run(args: HookArgs) -> u8 {
    if let Some(url) = &args.serve {
        return print_http_settings(args.host, url);
    }
    let Some(spec) = args.host.spec() else {
        // Claude Code's hook, byte for byte.
        return claude_hook::run(args.hook);
    };
    if args.hook.print_settings {
        return print_settings(args.host, &args.hook);
    }
    let who = format!("mcppol hook {}", args.host.as_str());
    let Some(policy) = args.hook.policy.clone() else {
        eprintln!("{who}: give --policy FILE");
        return exit::USAGE;
    };
    let hook = args.hook;
    let config = HookConfig {
        policy,
        name: hook.name,
        servers: hook.servers,
        builtin_server: hook
            .builtin_server
            .unwrap_or_else(|| args.host.as_str().to_string()),
        state_dir: hook.state_dir,
        audit: hook.audit,
        home: crate::claude::place::home_from_env(),
        preloaded: None,
        budgets: None,
        bundle: None,
    };
    serve_stdio(&who, |input| hosts::run(spec, &config, input))
}

fn print_settings(host: Host, args: &ClaudeHookArgs) -> u8 {
    let words = match hook_words(args, None) {
        Ok(words) => words,
        Err(status) => return status,
    };
    let exe = match std::env::current_exe() {
        Ok(p) => p.to_string_lossy().into_owned(),
        Err(e) => return usage_error(&format!("cannot find mcppol's own path: {e}"), None),
    };
    let install = settings::install(host, &settings::command(&exe, host, &words));
    eprintln!("# {}", install.file);
    print!("{}", install.text);
    exit::OK
}

/// `--print-settings --serve URL`: the `http` handler form, for the hosts
/// whose hooks can call a URL.
fn print_http_settings(host: Host, url: &str) -> u8 {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return usage_error(
            &format!(
                "--serve `{}`: not an http:// or https:// URL",
                url.escape_debug()
            ),
            None,
        );
    }
    let Some(install) = settings::http_install(host, url) else {
        return usage_error(
            &format!(
                "{}'s hooks run commands, not URLs: install `mcppol hook {}` (the command form)",
                host.as_str(),
                host.as_str()
            ),
            None,
        );
    };
    eprintln!("# {}", install.file);
    print!("{}", install.text);
    exit::OK
}
