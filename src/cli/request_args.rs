//! The request flags that `eval` and `explain` share, and turning them into
//! a request and a loaded policy.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{ArgGroup, Args};

use super::inputs::{json_arg, json_object_arg};
use super::{color, usage_error};
use crate::eval::owned::{
    fixed_host_predicates, parse_host_value, HostValue, OwnedRequest, RequestSpec,
};
use crate::fingerprint::Lock;
use crate::{LoadOptions, Policy, PolicySet, TargetKind};

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("target").args(["tool", "resource", "prompt"])))]
pub struct RequestArgs {
    /// The policy file.
    #[arg(long, value_name = "FILE")]
    pub policy: PathBuf,
    /// Which policy of the file (needed when it holds several).
    #[arg(long, value_name = "POLICY")]
    pub name: Option<String>,
    /// A tool call: SERVER/TOOL (split at the first `/`).
    #[arg(long, value_name = "SERVER/NAME")]
    pub tool: Option<String>,
    /// A resource read: SERVER/URI.
    #[arg(long, value_name = "SERVER/URI")]
    pub resource: Option<String>,
    /// A prompt get: SERVER/NAME.
    #[arg(long, value_name = "SERVER/NAME")]
    pub prompt: Option<String>,
    /// The call's arguments, a JSON object (or @FILE).
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// The tool's MCP annotations object (or @FILE). Overrides the
    /// annotations of --tool-def.
    #[arg(long, value_name = "JSON")]
    pub annotations: Option<String>,
    /// The tool's whole `tools/list` entry (JSON or @FILE): its annotations
    /// and current fingerprint.
    #[arg(long = "tool-def", value_name = "JSON")]
    pub tool_def: Option<String>,
    /// A server whose output is already in the model's context (repeat).
    #[arg(long, value_name = "SERVER")]
    pub taint: Vec<String>,
    /// The host could not tell what is in the model's context: every
    /// `tainted` test fails closed.
    #[arg(long = "taint-unknown")]
    pub taint_unknown: bool,
    /// The folder the agent works in: what `$CWD` path roots stand for and
    /// what a relative path is placed against. Without it, a test on a
    /// `$CWD` root or on a relative path fails closed.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// The tool acts on this machine (as behind a hook or a stdio server):
    /// path tests read its symbolic links first, unless the policy sets
    /// `resolve_links off`.
    #[arg(long = "local-tool")]
    pub local_tool: bool,
    /// Who the call is made for.
    #[arg(long, value_name = "P")]
    pub principal: Option<String>,
    /// Host data for `assigns.KEY`, a JSON object (or @FILE).
    #[arg(long, value_name = "JSON")]
    pub assigns: Option<String>,
    /// The caller has no approver: nothing can be asked.
    #[arg(long = "no-approver")]
    pub no_approver: bool,
    /// Approved fingerprints: {"version": 1, "tools": {"server/tool": "sha256:..."}}.
    /// Needs --tool-def, the current definition they are compared with.
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// The host trusts this server's annotations.
    #[arg(long = "trust-server")]
    pub trust_server: bool,
    /// The value of a host predicate: NAME=true, NAME=false or NAME=error
    /// (repeat). Unset host predicates fail closed.
    #[arg(long = "host", value_name = "NAME=VALUE")]
    pub host: Vec<String>,
}

/// Reads and checks a lock file.
pub fn read_lock(flag: &str, path: &std::path::Path) -> Result<Lock, String> {
    let text = crate::io::read_text(path, crate::io::MAX_JSON_BYTES, "lock file")
        .map_err(|e| format!("{flag}: {e}"))?;
    Lock::parse(&text).map_err(|e| format!("{flag} `{}`: {e}", path.display()))
}

impl RequestArgs {
    /// The request the flags describe.
    pub fn request(&self) -> Result<OwnedRequest, String> {
        let (kind, target) = match (&self.tool, &self.resource, &self.prompt) {
            (Some(t), _, _) => (TargetKind::Tool, t),
            (_, Some(r), _) => (TargetKind::Resource, r),
            (_, _, Some(p)) => (TargetKind::Prompt, p),
            _ => return Err("name a request: --tool, --resource or --prompt".into()),
        };
        // The target is checked first, as `eval` always has.
        let flag = format!("--{}", kind.as_str());
        crate::eval::owned::split_target(&flag, target)?;
        let spec = RequestSpec {
            kind: Some(kind),
            target: target.clone(),
            args: self
                .args
                .as_deref()
                .map(|a| json_object_arg("--args", a))
                .transpose()?,
            tool_def: self
                .tool_def
                .as_deref()
                .map(|t| json_arg("--tool-def", t))
                .transpose()?,
            annotations: self
                .annotations
                .as_deref()
                .map(|a| json_object_arg("--annotations", a))
                .transpose()?,
            assigns: self
                .assigns
                .as_deref()
                .map(|a| json_object_arg("--assigns", a))
                .transpose()?,
            taint: self.taint.clone(),
            principal: self.principal.clone(),
            no_approver: self.no_approver,
            lock: self
                .lock
                .as_deref()
                .map(|p| read_lock("--lock", p))
                .transpose()?,
            trust_server: self.trust_server,
            cwd: self.cwd.clone(),
            taint_unknown: self.taint_unknown,
            local_tool: self.local_tool,
        };
        spec.build("--")
    }

    /// Loads the policy file with the flags' host predicates and picks the
    /// policy; on failure, the diagnostic is printed and the exit status
    /// returned.
    pub fn load(&self) -> Result<(PolicySet, Arc<Policy>), u8> {
        let mut values = Vec::new();
        for spec in &self.host {
            match parse_host_value(spec) {
                Ok(v) => values.push(v),
                Err(e) => return Err(usage_error(&format!("--{e}"), None)),
            }
        }
        self.load_with(&values)
    }

    /// Like [`RequestArgs::load`], with the host predicate values given.
    pub fn load_with(
        &self,
        values: &[(String, HostValue)],
    ) -> Result<(PolicySet, Arc<Policy>), u8> {
        let options = LoadOptions {
            host: fixed_host_predicates(values),
        };
        let set = match PolicySet::from_file(&self.policy, &options) {
            Ok(set) => set,
            Err(e) => {
                eprint!("{}", e.render(color()));
                return Err(super::exit::USAGE);
            }
        };
        let policy = match set.pick(self.name.as_deref()) {
            Ok(p) => Arc::clone(p),
            Err(e) => return Err(super::pick_error(&e)),
        };
        Ok((set, policy))
    }
}
