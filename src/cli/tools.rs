//! `mcppol tools`: connect to an MCP server (a command, a server of a
//! servers file, or a remote URL), list every page of its tools (and, on
//! request, its resources and prompts), and write the JSON that `check
//! --tools`, `table --tools` and `lock --tools` read (see
//! `docs/tools.md`). Exit status: 0 written, 1 a server could not be
//! reached or listed, 2 usage errors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::{Map, Value};

use super::{exit, usage_error};
use crate::mcp::{ConnectOptions, McpError, Transport};
use crate::servers::{ServerSpec, ServerTransport, Servers};

#[derive(Args, Debug)]
pub struct ToolsArgs {
    /// A servers file (the `mcpServers` object of Claude Desktop's or
    /// Claude Code's config); every server in it unless --server picks.
    #[arg(long, value_name = "FILE")]
    servers: Option<PathBuf>,
    /// The server of --servers to list (may repeat).
    #[arg(long, value_name = "NAME", requires = "servers")]
    server: Vec<String>,
    /// A remote server's streamable-HTTP endpoint.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// A header sent to --url with every request, `NAME: VALUE` (may
    /// repeat; `${VAR}` is not expanded here: the shell does that).
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "url")]
    headers: Vec<String>,
    /// The server id the listing is written under, as the policy names the
    /// server (with --servers, each server's name). Without it, a command's
    /// or a URL's listing names no server: give the id when reading it
    /// (`check --tools ID=FILE`).
    #[arg(long = "server-id", value_name = "ID", conflicts_with = "servers")]
    server_id: Option<String>,
    /// List the resources too.
    #[arg(long)]
    resources: bool,
    /// List the prompts too.
    #[arg(long)]
    prompts: bool,
    /// Write to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// How long the server has to start and answer each request.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// The server command and its arguments (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// What to list of each server.
#[derive(Debug, Clone, Copy)]
struct What {
    resources: bool,
    prompts: bool,
}

pub fn run(args: ToolsArgs) -> u8 {
    let specs = match specs(&args) {
        Ok(specs) => specs,
        Err((message, help)) => return usage_error(&message, help.as_deref()),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return usage_error(&format!("cannot start the runtime: {e}"), None),
    };
    let what = What {
        resources: args.resources,
        prompts: args.prompts,
    };
    let options = ConnectOptions {
        request_timeout: args.timeout,
        ..ConnectOptions::default()
    };
    let listed = runtime.block_on(async {
        let mut out = Vec::with_capacity(specs.len());
        for (id, spec) in &specs {
            let listing = list(spec, options.clone(), what, id.is_some()).await?;
            out.push((id.clone(), listing));
        }
        Ok::<_, Failure>(out)
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
    let listed = match listed {
        Ok(l) => l,
        Err(f) => {
            eprintln!("error: cannot list the tools of {}: {}", f.server, f.error);
            eprintln!("  help: {}", help_for(&f.error, f.remote));
            return exit::FAILED;
        }
    };
    let count: usize = listed
        .iter()
        .map(|(_, l)| l["tools"].as_array().map_or(0, Vec::len))
        .sum();
    let servers = listed.len();
    let value = match listed.as_slice() {
        [(None, listing)] => listing.clone(),
        _ => Value::Object(
            listed
                .into_iter()
                .map(|(id, listing)| (id.unwrap_or_default(), listing))
                .collect(),
        ),
    };
    let mut text = match serde_json::to_string_pretty(&value) {
        Ok(t) => t,
        Err(e) => return usage_error(&format!("cannot write the listing: {e}"), None),
    };
    text.push('\n');
    match &args.out {
        None => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            if stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .is_err()
            {
                return super::CLOSED_PIPE;
            }
        }
        Some(path) => {
            if let Err(e) = std::fs::write(path, text) {
                eprintln!("error: cannot write `{}`: {e}", path.display());
                return exit::FAILED;
            }
            let of = if servers == 1 {
                String::new()
            } else {
                format!(" of {servers} servers")
            };
            eprintln!("wrote {count} tool(s){of} to {}", path.display());
        }
    }
    exit::OK
}

type UsageError = (String, Option<String>);

/// The servers to list, each with the id its listing is written under.
fn specs(args: &ToolsArgs) -> Result<Vec<(Option<String>, ServerSpec)>, UsageError> {
    if let Some(id) = &args.server_id {
        if !crate::fingerprint::is_server_id(id) {
            return Err((
                format!("--server-id `{id}` is not a server id"),
                Some("a server id is a non-empty name without `/`".into()),
            ));
        }
    }
    let sources = usize::from(!args.command.is_empty())
        + usize::from(args.servers.is_some())
        + usize::from(args.url.is_some());
    if sources != 1 {
        return Err((
            "give one server: `-- COMMAND ARGS...`, `--servers FILE` or `--url URL`".into(),
            None,
        ));
    }
    let id = args.server_id.clone();
    if let Some(path) = &args.servers {
        let file = Servers::read(path).map_err(|e| (e, None))?;
        if args.server.is_empty() {
            if file.servers.is_empty() {
                return Err((format!("`{}` names no server", path.display()), None));
            }
            return Ok(file
                .servers
                .into_iter()
                .map(|s| (Some(s.id.clone()), s))
                .collect());
        }
        return args
            .server
            .iter()
            .map(|name| {
                let spec = file
                    .get(name)
                    .map_err(|e| (format!("--server: {e}"), None))?;
                Ok((Some(spec.id.clone()), spec.clone()))
            })
            .collect();
    }
    let transport = if let Some(url) = &args.url {
        if !cfg!(feature = "http") {
            return Err(("--url needs a build with the feature `http`".into(), None));
        }
        let mut headers = BTreeMap::new();
        for header in &args.headers {
            let Some((name, value)) = header.split_once(':') else {
                return Err((
                    format!(
                        "--header `{}` is not `NAME: VALUE`",
                        crate::escape::escape(header)
                    ),
                    Some("write it as --header 'Authorization: Bearer TOKEN'".into()),
                ));
            };
            headers.insert(name.trim().to_string(), value.trim().to_string());
        }
        ServerTransport::Http {
            url: url.clone(),
            headers,
        }
    } else {
        let (command, rest) = args
            .command
            .split_first()
            .ok_or(("no server command after `--`".to_string(), None))?;
        ServerTransport::Stdio {
            command: command.clone(),
            args: rest.to_vec(),
            env: BTreeMap::new(),
            cwd: None,
        }
    };
    // Without --server-id the spec's id names nothing: `list` names such a
    // server by its command or URL, and the listing is written bare.
    let spec = ServerSpec {
        id: id.clone().unwrap_or_else(|| "server".into()),
        transport,
    };
    Ok(vec![(id, spec)])
}

/// Why a server could not be listed: which server, and what failed.
struct Failure {
    server: String,
    remote: bool,
    error: McpError,
}

/// Connects, lists, and shuts the server down.
async fn list(
    spec: &ServerSpec,
    options: ConnectOptions,
    what: What,
    named: bool,
) -> Result<Value, Failure> {
    let (server, remote) = match &spec.transport {
        _ if named => (
            format!("server `{}`", spec.id),
            matches!(spec.transport, ServerTransport::Http { .. }),
        ),
        ServerTransport::Stdio { command, .. } => (format!("`{command}`"), false),
        ServerTransport::Http { url, .. } => (format!("`{url}`"), true),
    };
    let fail = |error| Failure {
        server: server.clone(),
        remote,
        error,
    };
    let connection = crate::mcp::connect::connect_unnamed(spec, options)
        .await
        .map_err(fail)?;
    let listing = listing(&connection, what).await;
    let _ = connection.shutdown(Duration::from_secs(2)).await;
    listing.map_err(fail)
}

/// A `tools/list` result with every page's tools, and the resources and
/// prompts when asked (each only when the server has the capability).
async fn listing(server: &impl Transport, what: What) -> Result<Value, McpError> {
    let mut out = Map::new();
    out.insert("tools".into(), Value::Array(server.list_all_tools().await?));
    let capabilities = &server.server().capabilities;
    if what.resources {
        let resources = if capabilities.get("resources").is_some() {
            server.list_all_resources().await?
        } else {
            Vec::new()
        };
        out.insert("resources".into(), Value::Array(resources));
    }
    if what.prompts {
        let prompts = if capabilities.get("prompts").is_some() {
            server.list_all_prompts().await?
        } else {
            Vec::new()
        };
        out.insert("prompts".into(), Value::Array(prompts));
    }
    Ok(Value::Object(out))
}

/// What to try, by the kind of failure.
fn help_for(e: &McpError, remote: bool) -> &'static str {
    match e {
        McpError::Timeout(_) => "the server did not answer in time: check that it starts on its own, or give it longer with --timeout",
        McpError::Rpc(_) => "the server refused the request; its message says why",
        McpError::Protocol(_) => "the server does not speak MCP as this client expects (protocol version 2025-06-18 or 2025-11-25)",
        McpError::Transport(_) if remote => "check the URL (the server's streamable-HTTP endpoint, often ending in /mcp) and its headers (a token?)",
        McpError::Transport(_) => "check the command: it must start an MCP server that speaks on its stdin and stdout",
    }
}
