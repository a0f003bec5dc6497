//! What a host asks about: one tool call, resource read or prompt get,
//! with everything a policy may read of it. Every front door builds one and
//! the evaluator reads it; the host predicate type takes one.

use serde_json::Value;

use super::{Links, TargetKind, ToolApproval};

/// A request to decide. Borrowed from the host's own data: building one
/// allocates nothing.
///
/// ```
/// use mcppol::{Lock, PolicySet, Request, ToolApproval, Verdict};
/// use serde_json::json;
///
/// let set = PolicySet::from_text("p.mcppol", r#"
///     policy p {
///       deny  "mail/send" when tainted(ignore: ["wiki"])
///       allow "fs/read_file" when args.path inside "/srv"
///       allow "fs/list_*"
///     }
/// "#).map_err(|e| e.render(false))?;
/// let p = set.get("p").ok_or("no policy")?;
///
/// // Output from "web" is in the model's context: sending mail is denied.
/// let r = Request::tool("mail", "send").with_taint(&["wiki", "web"]);
/// assert_eq!(p.decide(&r).decision, Verdict::Deny);
///
/// // Approval state comes from the lock file and the tool's current definition.
/// let def = json!({"name": "list_tmp", "description": "List /tmp."});
/// let lock = Lock::parse(r#"{"version": 1, "tools": {}}"#)?;
/// let fp = mcppol::fingerprint(&def)?;
/// let state = lock.approval("fs", "list_tmp", Some(&fp));
/// assert_eq!(state, ToolApproval::New);
/// // A new tool is allowed only by an exact allow; the glob does not count.
/// let d = p.decide(&Request::tool("fs", "list_tmp").with_approval(state).without_approver());
/// assert_eq!((d.decision, d.reason.as_str()), (Verdict::Deny, "no_rule"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Request<'a> {
    /// Tool call, resource read or prompt get.
    pub kind: TargetKind,
    /// The server's id, chosen by the host (`github`, `fs`). It never holds
    /// `/`: a request whose server does is denied (`reason: bad_server`).
    pub server: &'a str,
    /// The tool or prompt name, or the resource URI (normalized before any
    /// rule sees it; one that cannot be is denied, `reason: bad_uri`).
    pub name: &'a str,
    /// The call's final arguments (a JSON object). `None` reads as `{}`.
    pub args: Option<&'a Value>,
    /// The tool's MCP `annotations` object (`readOnlyHint`, ...).
    pub annotations: Option<&'a Value>,
    /// Server ids whose output is already in the model's context.
    pub taint: &'a [&'a str],
    /// The host could not tell what is in the model's context (its record
    /// of the session's taint could not be read): every `tainted` test
    /// fails closed, whatever `taint` holds.
    pub taint_unknown: bool,
    /// The folder the agent works in, for `$CWD` path roots. Without it (or
    /// when it is not an absolute path), a test on a `$CWD` root fails
    /// closed.
    pub cwd: Option<&'a str>,
    /// How symbolic links are resolved in path tests where the tool acts:
    /// [`Links::ThisMachine`] for an agent host's hook or a stdio server
    /// this process started, [`Links::Host`] for a host's own resolver,
    /// [`Links::Off`] (the default) for a remote server. The policy's
    /// `resolve_links on|off` setting, where written, overrides it.
    pub links: Links<'a>,
    /// Who the call is made for.
    pub principal: Option<&'a str>,
    /// Host data for `assigns.KEY`.
    pub assigns: Option<&'a Value>,
    /// Whether a person can be asked. Resource reads and prompt gets never
    /// have an approver, whatever this says.
    pub has_approver: bool,
    /// The tool against its approved fingerprint.
    pub approval: ToolApproval,
    /// The host itself trusts this server's annotations.
    pub server_trusted: bool,
}

impl<'a> Request<'a> {
    /// A request of `kind` for `name` on `server`, with nothing else
    /// known: no arguments, no taint, an approver, an approved tool.
    pub fn new(kind: TargetKind, server: &'a str, name: &'a str) -> Self {
        Request {
            kind,
            server,
            name,
            args: None,
            annotations: None,
            taint: &[],
            taint_unknown: false,
            cwd: None,
            links: Links::Off,
            principal: None,
            assigns: None,
            has_approver: true,
            approval: ToolApproval::Approved,
            server_trusted: false,
        }
    }

    /// A call of `tool` on `server`.
    pub fn tool(server: &'a str, tool: &'a str) -> Self {
        Self::new(TargetKind::Tool, server, tool)
    }

    /// A read of `uri` on `server`.
    pub fn resource(server: &'a str, uri: &'a str) -> Self {
        Self::new(TargetKind::Resource, server, uri)
    }

    /// A get of prompt `name` on `server`.
    pub fn prompt(server: &'a str, name: &'a str) -> Self {
        Self::new(TargetKind::Prompt, server, name)
    }

    /// The call's arguments.
    pub fn with_args(mut self, args: &'a Value) -> Self {
        self.args = Some(args);
        self
    }

    /// The tool's MCP `annotations`.
    pub fn with_annotations(mut self, annotations: &'a Value) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// The servers whose output is already in the model's context.
    pub fn with_taint(mut self, taint: &'a [&'a str]) -> Self {
        self.taint = taint;
        self
    }

    /// Marks the taint as unknown: every `tainted` test fails closed.
    pub fn with_taint_unknown(mut self) -> Self {
        self.taint_unknown = true;
        self
    }

    /// The working folder: what `$CWD` roots stand for, and what a
    /// relative path is placed against (without one, it fails).
    pub fn with_cwd(mut self, cwd: &'a str) -> Self {
        self.cwd = Some(cwd);
        self
    }

    /// How symbolic links are resolved where the tool acts.
    pub fn with_links(mut self, links: Links<'a>) -> Self {
        self.links = links;
        self
    }

    /// Who the call is made for.
    pub fn with_principal(mut self, principal: &'a str) -> Self {
        self.principal = Some(principal);
        self
    }

    /// Host data for `assigns.KEY`.
    pub fn with_assigns(mut self, assigns: &'a Value) -> Self {
        self.assigns = Some(assigns);
        self
    }

    /// No person can be asked: what would be `ask` is `deny`.
    pub fn without_approver(mut self) -> Self {
        self.has_approver = false;
        self
    }

    /// The tool against its approved fingerprint (see [`crate::Lock::approval`]).
    pub fn with_approval(mut self, approval: ToolApproval) -> Self {
        self.approval = approval;
        self
    }

    /// Whether the host itself trusts this server's annotations.
    pub fn with_trusted_server(mut self, trusted: bool) -> Self {
        self.server_trusted = trusted;
        self
    }

    /// Whether a person can be asked about this request.
    pub fn approver_available(&self) -> bool {
        self.has_approver && self.kind == TargetKind::Tool
    }
}
