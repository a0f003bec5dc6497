//! Hooks: host code run on six events of a governed request, plus around
//! hooks that wrap the send.
//!
//! - Matchers: all, `server/tool` globs, a bare `tool` (any server), or a
//!   server glob with a regex on the name; they compare loosely, like deny
//!   rules (case folded, `-`, `.` and `_` equal).
//! - Order (the onion): global, then server, then tool hooks; within a
//!   level by priority (lower first), then in declaration order. After and
//!   failure hooks run in the reverse order.
//! - Each run is its own tokio task with its deadline (default 5 s). A
//!   hook that panics, errors, times out or returns outside its contract
//!   fails closed (see [`crate::pipeline`]).
//! - No hook can allow: the returns that say `allow` exist only so that
//!   adapters of foreign hooks can pass them on, and they fail closed.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use super::error::{CallError, HookFailure};
use super::types::{HookCtx, ToolCall, ToolResult};
use crate::mcp::BoxFuture;
use crate::policy::glob::Glob;
use crate::policy::names::fold;

/// The default deadline of one hook run.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// The event a hook runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Event {
    /// Before a tool call, ahead of validation and policy ([`Hook::before`]).
    BeforeCall,
    /// After a tool call returned a result, error results included
    /// ([`Hook::after`]).
    AfterCall,
    /// When a tool call ended in an error ([`Hook::failed`]).
    CallFailed,
    /// When tools are listed, on the tools the hook matches ([`Hook::listed`]).
    ToolsListed,
    /// Before a resource read ([`Hook::resource`]).
    ResourceRead,
    /// Before a prompt get ([`Hook::prompt`]).
    PromptGet,
    /// Around the send (not one of the six events: it wraps the request to
    /// the server, after policy and approval).
    AroundSend,
}

impl Event {
    /// The event's name in telemetry (`before_call`, `after_call`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Event::BeforeCall => "before_call",
            Event::AfterCall => "after_call",
            Event::CallFailed => "call_failed",
            Event::ToolsListed => "tools_listed",
            Event::ResourceRead => "resource_read",
            Event::PromptGet => "prompt_get",
            Event::AroundSend => "around_send",
        }
    }
}

/// What a hook could not do: an error it returned. Its text is never
/// logged (it may quote arguments or results). Any `Display` error
/// converts into one, so a hook can use `?`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookError(
    /// What went wrong, for the host's own debugging.
    pub String,
);

impl<E: std::fmt::Display> From<E> for HookError {
    fn from(e: E) -> Self {
        HookError(e.to_string())
    }
}

/// A before-hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Before {
    /// Go on with the call as it is.
    Continue,
    /// Go on with these arguments and meta (the same server, tool and
    /// call id, or it is a bad return).
    Rewrite(ToolCall),
    /// Fail the call (`denied`, `hook_denied`).
    Deny(String),
    /// Answer with this result: nothing is sent, policy does not run,
    /// after-hooks do.
    Halt(ToolResult),
    /// Go on (with these arguments and meta, when given: as for
    /// `Rewrite`), but if policy allows the call, ask about it instead:
    /// the approver settles it (without one, it is denied with
    /// `no_approver`). A deny or ask from policy stands as it is. How
    /// Claude-style command hooks say `ask` (`crate::pipeline::command_hooks`).
    Ask {
        /// Why the hook wants a person to decide (for the host; the
        /// pipeline neither logs nor acts on it).
        reason: String,
        /// The call with other arguments or meta, as for `Rewrite`.
        rewrite: Option<ToolCall>,
    },
    /// Not permitted (no hook can allow): fails the call as a bad return.
    /// Here so that an adapter of a foreign hook that answered "allow" can
    /// pass that on instead of deciding what it means.
    Allow,
}

/// An after-hook's answer.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum After {
    /// Keep the result as it is.
    Continue,
    /// Use this result instead (the next after-hook sees it).
    Replace(ToolResult),
}

/// A failure hook's answer.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Failed {
    /// Leave the error as it is (the next failure hook sees it).
    Continue,
    /// Turn the error into this result and end the chain.
    Recover(ToolResult),
}

/// A listing hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Listed {
    /// Keep the tools as given.
    Continue,
    /// These tools instead of the ones given: each must be one of them
    /// (same name), each at most once. Missing ones are dropped.
    Replace(Vec<Value>),
}

/// A resource hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// Go on with the read (policy still decides).
    Continue,
    /// Fail the read (`denied`, `hook_denied`), with a message for the
    /// caller.
    Deny(String),
    /// Not permitted: a bad return.
    Allow,
}

/// A prompt hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptGate {
    /// Go on with the prompt get as it is (policy still decides).
    Continue,
    /// Go on with these arguments.
    Rewrite(Option<Value>),
    /// Fail the get (`denied`, `hook_denied`), with a message for the
    /// caller.
    Deny(String),
    /// Not permitted: a bad return.
    Allow,
}

/// The rest of the send, handed to an around hook. [`Next::run`] runs the
/// next around hook or sends the call; it may be run again (a retry) or
/// not at all (an answer from a cache).
#[derive(Clone)]
pub struct Next {
    pub(crate) run:
        Arc<dyn Fn() -> BoxFuture<'static, Result<ToolResult, CallError>> + Send + Sync>,
}

impl std::fmt::Debug for Next {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Next")
    }
}

impl Next {
    /// Sends the approved call (through the inner around hooks).
    pub fn run(&self) -> BoxFuture<'static, Result<ToolResult, CallError>> {
        (self.run)()
    }
}

type Fut<T> = BoxFuture<'static, Result<T, HookError>>;

/// A hook's code, by event.
#[derive(Clone)]
pub(crate) enum HookFn {
    Before(Arc<dyn Fn(ToolCall, HookCtx) -> Fut<Before> + Send + Sync>),
    After(Arc<dyn Fn(ToolCall, ToolResult, HookCtx) -> Fut<After> + Send + Sync>),
    Failed(Arc<dyn Fn(ToolCall, CallError, HookCtx) -> Fut<Failed> + Send + Sync>),
    Listed(Arc<dyn Fn(Vec<Value>, HookCtx) -> Fut<Listed> + Send + Sync>),
    Resource(Arc<dyn Fn(String, HookCtx) -> Fut<Gate> + Send + Sync>),
    Prompt(Arc<dyn Fn(String, Option<Value>, HookCtx) -> Fut<PromptGate> + Send + Sync>),
    #[allow(clippy::type_complexity)]
    Around(
        Arc<
            dyn Fn(ToolCall, Next, HookCtx) -> BoxFuture<'static, Result<ToolResult, CallError>>
                + Send
                + Sync,
        >,
    ),
}

impl HookFn {
    fn event(&self) -> Event {
        match self {
            HookFn::Before(_) => Event::BeforeCall,
            HookFn::After(_) => Event::AfterCall,
            HookFn::Failed(_) => Event::CallFailed,
            HookFn::Listed(_) => Event::ToolsListed,
            HookFn::Resource(_) => Event::ResourceRead,
            HookFn::Prompt(_) => Event::PromptGet,
            HookFn::Around(_) => Event::AroundSend,
        }
    }
}

/// Whether a failing after- or failure hook fails the request or is
/// skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// The failure counts: an after-hook's result is withheld, a failure
    /// hook's original error stands.
    #[default]
    Fail,
    /// The hook is skipped as if it had answered `Continue` (only for
    /// after and failure hooks).
    Ignore,
}

/// The level of a matcher in the onion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    /// Every request (outermost).
    Global,
    /// Every tool of some servers.
    Server,
    /// Some tools (innermost).
    Tool,
}

/// Which requests a hook runs on. Build one with [`Matcher::pattern`],
/// [`Matcher::regex`] or [`Matcher::All`].
///
/// ```
/// use mcppol::pipeline::Matcher;
///
/// let m = Matcher::pattern("github/create_*");
/// assert!(m.matches("GitHub", "create-issue")); // compared loosely
/// assert!(!m.matches("github", "delete_repo"));
/// assert!(Matcher::pattern("read_file").matches("any-server", "read_file"));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Matcher {
    /// Every request.
    All,
    /// Segment globs, folded (made by [`Matcher::pattern`]).
    Target {
        /// The server glob.
        server: Glob,
        /// The tool (URI, prompt) glob.
        name: Glob,
    },
    /// A server glob (folded) and a regex on the name (tried on the raw
    /// and the folded name; made by [`Matcher::regex`]).
    Regex {
        /// The server glob.
        server: Glob,
        /// The regex on the name.
        name: Regex,
    },
}

impl Matcher {
    /// `*` (or `all`): every request; `server/tool`: globs split at the
    /// first `/`; a bare `tool`: that tool on any server. For resource
    /// hooks the second segment globs the URI, for prompt hooks the name.
    pub fn pattern(pattern: &str) -> Matcher {
        if pattern == "*" || pattern == "*/*" {
            return Matcher::All;
        }
        let (server, name) = match pattern.split_once('/') {
            Some((s, n)) => (s, n),
            None => ("*", pattern),
        };
        Matcher::Target {
            server: Glob::new(&fold(server)),
            name: Glob::new(&fold(name)),
        }
    }

    /// A server glob and a regex on the name (the regex compiles with a
    /// 1 MiB size limit).
    ///
    /// # Errors
    ///
    /// [`HookSpecError::BadRegex`] when the regex does not compile.
    pub fn regex(server: &str, name: &str) -> Result<Matcher, HookSpecError> {
        let re = regex::RegexBuilder::new(name)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| HookSpecError::BadRegex {
                pattern: name.to_string(),
                error: e.to_string(),
            })?;
        Ok(Matcher::Regex {
            server: Glob::new(&fold(server)),
            name: re,
        })
    }

    /// The matcher's level in the onion.
    pub(crate) fn level(&self) -> Level {
        match self {
            Matcher::All => Level::Global,
            Matcher::Target { server, name } => match (server, name) {
                (Glob::Any, Glob::Any) => Level::Global,
                (_, Glob::Any) => Level::Server,
                _ => Level::Tool,
            },
            Matcher::Regex { .. } => Level::Tool,
        }
    }

    /// Whether it matches `server` and `name` (compared loosely).
    pub fn matches(&self, server: &str, name: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Target { server: s, name: n } => {
                s.matches(&fold(server)) && n.matches(&fold(name))
            }
            Matcher::Regex {
                server: s,
                name: re,
            } => s.matches(&fold(server)) && (re.is_match(name) || re.is_match(&fold(name))),
        }
    }
}

/// One hook: an id, a matcher, its code and its options. Make one with
/// the constructor of its event ([`Hook::before`], [`Hook::after`],
/// [`Hook::failed`], [`Hook::listed`], [`Hook::resource`],
/// [`Hook::prompt`], [`Hook::around`]), set its options, and hand it to
/// [`PipelineBuilder::hook`](super::PipelineBuilder::hook).
///
/// ```
/// use std::time::Duration;
/// use mcppol::pipeline::{After, Before, Hook, Matcher, OnError, ToolResult};
///
/// // Refuses writes outside a folder before policy even runs.
/// let sandbox = Hook::before("sandbox", Matcher::pattern("fs/write_*"), |call, _ctx| async move {
///     let path = call.arguments["path"].as_str().unwrap_or_default();
///     Ok(if path.starts_with("/srv/work/") {
///         Before::Continue
///     } else {
///         Before::Deny(format!("{path} is outside /srv/work"))
///     })
/// })
/// .priority(-10)
/// .timeout(Duration::from_millis(200));
///
/// // Redacts a secret from every result; if it fails, the result is
/// // still shown (the default would withhold it).
/// let redact = Hook::after("redact", Matcher::All, |_call, result: ToolResult, _ctx| async move {
///     let text = result.joined_text();
///     Ok(if text.contains("sk-") {
///         After::Replace(ToolResult::text(text.replace("sk-", "[redacted]-")))
///     } else {
///         After::Continue
///     })
/// })
/// .on_error(OnError::Ignore);
/// # let _ = (sandbox, redact);
/// ```
#[derive(Clone)]
pub struct Hook {
    pub(crate) id: Arc<str>,
    pub(crate) matcher: Matcher,
    pub(crate) priority: i32,
    pub(crate) timeout: Option<Duration>,
    pub(crate) on_error: OnError,
    pub(crate) func: HookFn,
}

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hook")
            .field("id", &self.id)
            .field("event", &self.event())
            .field("matcher", &self.matcher)
            .field("priority", &self.priority)
            .field("timeout", &self.timeout)
            .field("on_error", &self.on_error)
            .finish()
    }
}

impl Hook {
    fn with(id: &str, matcher: Matcher, func: HookFn) -> Hook {
        Hook {
            id: id.into(),
            matcher,
            priority: 0,
            timeout: None,
            on_error: OnError::Fail,
            func,
        }
    }

    /// A before-call hook: `f(call, ctx)`.
    pub fn before<F, R>(id: &str, matcher: Matcher, f: F) -> Hook
    where
        F: Fn(ToolCall, HookCtx) -> R + Send + Sync + 'static,
        R: Future<Output = Result<Before, HookError>> + Send + 'static,
    {
        Hook::with(
            id,
            matcher,
            HookFn::Before(Arc::new(move |c, x| Box::pin(f(c, x)))),
        )
    }

    /// An after-call hook: `f(call, result, ctx)`; it also sees error
    /// results (`is_error`).
    pub fn after<F, R>(id: &str, matcher: Matcher, f: F) -> Hook
    where
        F: Fn(ToolCall, ToolResult, HookCtx) -> R + Send + Sync + 'static,
        R: Future<Output = Result<After, HookError>> + Send + 'static,
    {
        Hook::with(
            id,
            matcher,
            HookFn::After(Arc::new(move |c, r, x| Box::pin(f(c, r, x)))),
        )
    }

    /// A failure hook: `f(call, error, ctx)`, run instead of after-hooks
    /// when the call ends in an error.
    pub fn failed<F, R>(id: &str, matcher: Matcher, f: F) -> Hook
    where
        F: Fn(ToolCall, CallError, HookCtx) -> R + Send + Sync + 'static,
        R: Future<Output = Result<Failed, HookError>> + Send + 'static,
    {
        Hook::with(
            id,
            matcher,
            HookFn::Failed(Arc::new(move |c, e, x| Box::pin(f(c, e, x)))),
        )
    }

    /// A listing hook: `f(tools it matches, ctx)`.
    pub fn listed<F, R>(id: &str, matcher: Matcher, f: F) -> Hook
    where
        F: Fn(Vec<Value>, HookCtx) -> R + Send + Sync + 'static,
        R: Future<Output = Result<Listed, HookError>> + Send + 'static,
    {
        Hook::with(
            id,
            matcher,
            HookFn::Listed(Arc::new(move |t, x| Box::pin(f(t, x)))),
        )
    }

    /// A resource-read hook: `f(uri, ctx)`.
    pub fn resource<F, R>(id: &str, matcher: Matcher, f: F) -> Hook
    where
        F: Fn(String, HookCtx) -> R + Send + Sync + 'static,
        R: Future<Output = Result<Gate, HookError>> + Send + 'static,
    {
        Hook::with(
            id,
            matcher,
            HookFn::Resource(Arc::new(move |u, x| Box::pin(f(u, x)))),
        )
    }

    /// A prompt-get hook: `f(name, arguments, ctx)`.
    pub fn prompt<F, R>(id: &str, matcher: Matcher, f: F) -> Hook
    where
        F: Fn(String, Option<Value>, HookCtx) -> R + Send + Sync + 'static,
        R: Future<Output = Result<PromptGate, HookError>> + Send + 'static,
    {
        Hook::with(
            id,
            matcher,
            HookFn::Prompt(Arc::new(move |n, a, x| Box::pin(f(n, a, x)))),
        )
    }

    /// An around hook: `f(call, next, ctx)` wraps the send. `next.run()`
    /// sends the approved call (its arguments cannot change); its error is
    /// the hook's to return or recover from. Its deadline covers the send.
    pub fn around<F, R>(id: &str, matcher: Matcher, f: F) -> Hook
    where
        F: Fn(ToolCall, Next, HookCtx) -> R + Send + Sync + 'static,
        R: Future<Output = Result<ToolResult, CallError>> + Send + 'static,
    {
        Hook::with(
            id,
            matcher,
            HookFn::Around(Arc::new(move |c, n, x| Box::pin(f(c, n, x)))),
        )
    }

    /// Lower runs first within a level (default 0).
    pub fn priority(mut self, p: i32) -> Hook {
        self.priority = p;
        self
    }

    /// This hook's deadline (default 5 s; around hooks: the pipeline's
    /// request timeout).
    pub fn timeout(mut self, t: Duration) -> Hook {
        self.timeout = Some(t);
        self
    }

    /// For after and failure hooks: skip the hook when it fails.
    pub fn on_error(mut self, e: OnError) -> Hook {
        self.on_error = e;
        self
    }

    /// The hook's id (unique in a pipeline; in telemetry and errors).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The event it runs on.
    pub fn event(&self) -> Event {
        self.func.event()
    }
}

/// A hook list that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HookSpecError {
    /// Two hooks have this id.
    #[error("hook ids must be unique: `{0}` is used twice (rename one)")]
    DuplicateId(String),
    /// A hook's id is empty.
    #[error("a hook has an empty id (give every hook a name)")]
    EmptyId,
    /// This hook is not an after or failure hook, yet says
    /// [`OnError::Ignore`].
    #[error("hook `{0}`: on_error ignore is only for after and failure hooks (a before, listing, resource or prompt hook that fails always fails closed)")]
    IgnoreNotAllowed(String),
    /// This hook's timeout is zero.
    #[error("hook `{0}`: a zero timeout (give it at least 1 ms)")]
    ZeroTimeout(String),
    /// The pipeline's server id contains `/`.
    #[error("server id `{0}` contains `/` (a server id never does; pick another)")]
    BadServer(String),
    /// A [`Matcher::regex`] that does not compile.
    #[error("bad regex `{pattern}`: {error}")]
    BadRegex {
        /// The regex as given.
        pattern: String,
        /// Why it does not compile.
        error: String,
    },
}

/// Hooks by event, each list in run order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hooks {
    pub(crate) before: Vec<Arc<Hook>>,
    pub(crate) after: Vec<Arc<Hook>>,
    pub(crate) failed: Vec<Arc<Hook>>,
    pub(crate) listed: Vec<Arc<Hook>>,
    pub(crate) resource: Vec<Arc<Hook>>,
    pub(crate) prompt: Vec<Arc<Hook>>,
    pub(crate) around: Vec<Arc<Hook>>,
}

impl Hooks {
    /// Checks and orders hooks (in declaration order).
    pub(crate) fn new(hooks: Vec<Hook>) -> Result<Hooks, HookSpecError> {
        let mut seen = HashSet::new();
        for h in &hooks {
            if h.id.is_empty() {
                return Err(HookSpecError::EmptyId);
            }
            if !seen.insert(h.id.clone()) {
                return Err(HookSpecError::DuplicateId(h.id.to_string()));
            }
            if h.on_error == OnError::Ignore
                && !matches!(h.event(), Event::AfterCall | Event::CallFailed)
            {
                return Err(HookSpecError::IgnoreNotAllowed(h.id.to_string()));
            }
            if h.timeout == Some(Duration::ZERO) {
                return Err(HookSpecError::ZeroTimeout(h.id.to_string()));
            }
        }
        let mut ordered: Vec<(usize, Hook)> = hooks.into_iter().enumerate().collect();
        ordered.sort_by_key(|(i, h)| (h.matcher.level(), h.priority, *i));
        let mut out = Hooks::default();
        for (_, h) in ordered {
            let list = match h.event() {
                Event::BeforeCall => &mut out.before,
                Event::AfterCall => &mut out.after,
                Event::CallFailed => &mut out.failed,
                Event::ToolsListed => &mut out.listed,
                Event::ResourceRead => &mut out.resource,
                Event::PromptGet => &mut out.prompt,
                Event::AroundSend => &mut out.around,
            };
            list.push(Arc::new(h));
        }
        out.after.reverse();
        out.failed.reverse();
        Ok(out)
    }

    /// The ids of the hooks that run on `event` for `server`/`name`, in
    /// run order (what the onion tests check).
    #[cfg(test)]
    pub(crate) fn order(&self, event: Event, server: &str, name: &str) -> Vec<String> {
        let list = match event {
            Event::BeforeCall => &self.before,
            Event::AfterCall => &self.after,
            Event::CallFailed => &self.failed,
            Event::ToolsListed => &self.listed,
            Event::ResourceRead => &self.resource,
            Event::PromptGet => &self.prompt,
            Event::AroundSend => &self.around,
        };
        list.iter()
            .filter(|h| h.matcher.matches(server, name))
            .map(|h| h.id.to_string())
            .collect()
    }
}

/// How one hook run ended, for telemetry.
pub(crate) fn emit(hook: &Hook, status: &str) {
    // Per call, like the decision's line: at `debug`.
    tracing::debug!(
        target: "mcppol::hook",
        hook_id = %hook.id,
        event = hook.event().as_str(),
        status,
        "hook run"
    );
}

/// Runs one hook body in its own task under its deadline. What it raised
/// is dropped here, unlogged.
pub(crate) async fn run_task<T: Send + 'static>(
    hook: &Hook,
    default_timeout: Duration,
    fut: BoxFuture<'static, Result<T, HookError>>,
) -> Result<T, HookFailure> {
    let deadline = hook.timeout.unwrap_or(default_timeout);
    let task = tokio::spawn(fut);
    let abort = task.abort_handle();
    let outcome = match tokio::time::timeout(deadline, task).await {
        Err(_) => {
            abort.abort();
            Err(HookFailure::Timeout)
        }
        Ok(Err(_join)) => Err(HookFailure::Panic),
        Ok(Ok(Err(_raised))) => Err(HookFailure::Error),
        Ok(Ok(Ok(v))) => Ok(v),
    };
    if let Err(how) = &outcome {
        emit(hook, how.as_str());
    }
    outcome
}

/// Gives a failing after-hook's or failure hook's skip decision.
pub(crate) fn ignored(hook: &Hook) -> bool {
    hook.on_error == OnError::Ignore
}

pub(crate) fn ctx_for(base: &HookCtx, hook: &Hook) -> HookCtx {
    HookCtx {
        hook_id: hook.id.clone(),
        ..base.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noop(id: &str, m: &str) -> Hook {
        Hook::before(id, Matcher::pattern(m), |_, _| async {
            Ok(Before::Continue)
        })
    }

    #[test]
    fn levels_and_loose_matching() {
        assert_eq!(Matcher::pattern("*").level(), Level::Global);
        assert_eq!(Matcher::pattern("fs/*").level(), Level::Server);
        assert_eq!(Matcher::pattern("fs/read_*").level(), Level::Tool);
        assert_eq!(Matcher::pattern("read_file").level(), Level::Tool);
        let m = Matcher::pattern("fs/read_file");
        assert!(m.matches("FS", "Read-File"));
        assert!(!m.matches("fs", "read_files"));
        assert!(Matcher::pattern("read_file").matches("any", "READ.FILE"));
        let r = Matcher::regex("f*", "^read_").unwrap_or(Matcher::All);
        assert!(r.matches("fs", "Read-File"));
        assert!(!r.matches("git", "read_file"));
        assert!(Matcher::regex("*", "(").is_err());
    }

    #[test]
    fn onion_order_by_level_priority_declaration() {
        let hooks = Hooks::new(vec![
            noop("tool-a", "fs/read_file"),
            noop("server-late", "fs/*").priority(5),
            noop("global", "*"),
            noop("server-early", "fs/*").priority(-1),
            noop("tool-b", "fs/read_file"),
            Hook::after("after-global", Matcher::All, |_, _, _| async {
                Ok(After::Continue)
            }),
            Hook::after(
                "after-tool",
                Matcher::pattern("read_file"),
                |_, _, _| async { Ok(After::Continue) },
            ),
        ])
        .unwrap_or_default();
        assert_eq!(
            hooks.order(Event::BeforeCall, "fs", "read_file"),
            ["global", "server-early", "server-late", "tool-a", "tool-b"]
        );
        assert_eq!(
            hooks.order(Event::AfterCall, "fs", "read_file"),
            ["after-tool", "after-global"]
        );
        assert_eq!(hooks.order(Event::BeforeCall, "git", "x"), ["global"]);
    }

    #[test]
    fn bad_hook_lists() {
        assert_eq!(
            Hooks::new(vec![noop("a", "*"), noop("a", "x")]).err(),
            Some(HookSpecError::DuplicateId("a".into()))
        );
        assert_eq!(
            Hooks::new(vec![noop("a", "*").on_error(OnError::Ignore)]).err(),
            Some(HookSpecError::IgnoreNotAllowed("a".into()))
        );
        assert_eq!(
            Hooks::new(vec![noop("", "*")]).err(),
            Some(HookSpecError::EmptyId)
        );
        assert_eq!(
            Hooks::new(vec![noop("z", "*").timeout(Duration::ZERO)]).err(),
            Some(HookSpecError::ZeroTimeout("z".into()))
        );
    }
}
