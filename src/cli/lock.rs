//! `mcppol lock`: write the lock file of approved fingerprints from a
//! listing, or with `--check` say which tools changed, appeared or vanished
//! since it was written.

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::listing::read_listings;
use super::request_args::read_lock;
use super::{exit, usage_error, Format};
use crate::escape::escape;
use crate::fingerprint::{fingerprint, Lock};

#[derive(Args, Debug)]
pub struct LockArgs {
    /// A listing: `[ID=]FILE` holding a `tools/list` result, an array of
    /// tools, or a map of server id to either. May repeat (several
    /// servers' listings).
    #[arg(long, value_name = "[ID=]FILE", required = true)]
    tools: Vec<String>,
    /// The server id of a listing that names none.
    #[arg(long, value_name = "ID")]
    server: Option<String>,
    /// Compare the listing with the lock file given by --lock instead of
    /// writing one.
    #[arg(long, requires = "lock")]
    check: bool,
    /// The lock file to check against.
    #[arg(long, value_name = "FILE")]
    lock: Option<PathBuf>,
    /// For --check: `human` (one line a difference) or `json`.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

pub fn run(args: LockArgs) -> u8 {
    let listed = match read_listings(&args.tools, args.server.as_deref()) {
        Ok(l) => l,
        Err(e) => return usage_error(&e, None),
    };
    let mut current = Lock::new();
    for tool in &listed {
        match fingerprint(&tool.def) {
            Ok(fp) => {
                current
                    .tools
                    .insert(format!("{}/{}", tool.server, tool.name), fp);
            }
            Err(e) => {
                return usage_error(
                    &format!("--tools: tool `{}/{}`: {e}", tool.server, tool.name),
                    None,
                )
            }
        }
    }
    if !args.check {
        if args.lock.is_some() {
            return usage_error("--lock is only read with --check", None);
        }
        println!("{}", current.to_json_pretty());
        return exit::OK;
    }
    let Some(path) = &args.lock else {
        return usage_error("--check needs --lock FILE", None);
    };
    let approved = match read_lock("--lock", path) {
        Ok(l) => l,
        Err(e) => return usage_error(&e, None),
    };
    // Only servers that the listing covers can have vanished tools.
    let servers: BTreeSet<&str> = listed.iter().map(|t| t.server.as_str()).collect();
    let mut changed = Vec::new();
    let mut appeared = Vec::new();
    let mut vanished = Vec::new();
    let mut unchanged = 0usize;
    for (key, fp) in &current.tools {
        match approved.tools.get(key) {
            None => appeared.push(key.clone()),
            Some(old) if old != fp => changed.push(key.clone()),
            Some(_) => unchanged += 1,
        }
    }
    for key in approved.tools.keys() {
        let server = key.split_once('/').map_or(key.as_str(), |(s, _)| s);
        if servers.contains(server) && !current.tools.contains_key(key) {
            vanished.push(key.clone());
        }
    }
    match args.format {
        Format::Human => {
            for k in &changed {
                println!("changed   {}", escape(k));
            }
            for k in &appeared {
                println!("appeared  {}", escape(k));
            }
            for k in &vanished {
                println!("vanished  {}", escape(k));
            }
            println!(
                "{}: {} changed, {} appeared, {} vanished, {unchanged} unchanged",
                path.display(),
                changed.len(),
                appeared.len(),
                vanished.len()
            );
        }
        Format::Json => println!(
            "{}",
            json!({
                "changed": changed,
                "appeared": appeared,
                "vanished": vanished,
                "unchanged": unchanged,
            })
        ),
    }
    if changed.is_empty() && appeared.is_empty() && vanished.is_empty() {
        exit::OK
    } else {
        exit::FAILED
    }
}
