//! The one outcome of each governed request, recorded: the decision
//! event, the observer's record and the audit line are mappings of the
//! [`Outcome`] the request ended in, whatever decided it; an audit line
//! that cannot be written refuses the request (`audit_failed`). Also the
//! request's hook context and the telemetry of a call's end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::error::{CallError, ErrorKind, ErrorReason};
use super::types::{args_digest, CallOptions, HookCtx};
use super::{AuditRecord, DecisionRecord, Pipeline};
use crate::enforce::{By, Outcome, Settled};
use crate::store::BundleStamp;
use crate::{Decision, Policy, Source, TargetKind};

impl Pipeline {
    /// Records the outcome of a policy decision, an ask settled as
    /// `settled` says, and gives it back (for the refusal that carries
    /// it); an audit line that cannot be written is the error that refuses
    /// the request.
    pub(super) fn decided(
        &self,
        audited: &Audited,
        kind: TargetKind,
        name: Option<&str>,
        d: &Decision,
        settled: Settled,
        args: Option<&Value>,
    ) -> Result<Outcome, CallError> {
        // A resource's URI is request data: the event leaves it out.
        let event_name = if kind == TargetKind::Resource {
            None
        } else {
            name
        };
        emit_decision(&self.server, kind, event_name, d, settled);
        audited.store(true, Ordering::Relaxed);
        let outcome = Outcome::decided(self.server.clone(), kind, name, d.clone(), settled);
        self.record(outcome, args, audited.bundle())
    }

    /// The refusal `e` of a request before any policy decision, with its
    /// outcome (who refused it and why) recorded and carried; or
    /// `audit_failed` when its audit line could not be written.
    pub(super) fn refused(
        &self,
        kind: TargetKind,
        name: Option<&str>,
        e: CallError,
        hidden: bool,
        args: Option<&Value>,
        bundle: Option<&BundleStamp>,
    ) -> CallError {
        let (by, reason) = if e.kind == ErrorKind::NotFound {
            if hidden {
                (By::Stage(Source::Visibility), "hidden")
            } else {
                (By::Stage(Source::Request), "unknown_tool")
            }
        } else if e.hook_id.is_some() || e.kind == ErrorKind::Hook {
            (By::Hook, e.reason.as_str())
        } else {
            (By::Stage(Source::Request), e.reason.as_str())
        };
        let outcome = Outcome::refused(self.server.clone(), kind, name, by, reason)
            .with_hook(e.hook_id.as_deref());
        match self.record(outcome, args, bundle) {
            // A hidden tool fails exactly as an unknown one, to the host
            // too: its outcome stays in the audit, so its name cannot be
            // probed through the error.
            Ok(_) if e.kind == ErrorKind::NotFound => e,
            Ok(outcome) => e.with_outcome(outcome),
            Err(failed) => failed,
        }
    }

    /// The request's one record: the observer (for a policy decision) and
    /// the audit line, which names `bundle`, the bundle of the policy
    /// snapshot the request was decided with (taken with it, so a bundle
    /// swapped in meanwhile cannot be named). The arguments' digest is
    /// taken only when one of them reads it.
    pub(super) fn record(
        &self,
        mut outcome: Outcome,
        args: Option<&Value>,
        bundle: Option<&BundleStamp>,
    ) -> Result<Outcome, CallError> {
        if self.observer.is_none() && self.audit.is_none() {
            return Ok(outcome);
        }
        outcome.args_digest = args.map(args_digest);
        if let (Some(observer), Some(d)) = (&self.observer, &outcome.decision) {
            observer(&DecisionRecord {
                server: &self.server,
                kind: outcome.kind.as_str(),
                name: outcome.name.as_deref(),
                decision: d,
                approval: outcome.settled.as_str(),
                args_digest: outcome.args_digest.as_deref(),
            });
        }
        let Some(audit) = &self.audit else {
            return Ok(outcome);
        };
        // Running from a bundle: the line names its revision and digest.
        let record = AuditRecord::of(&outcome)
            .with_bundle(bundle.map(|b| (b.revision.as_str(), b.digest.as_str())));
        match audit(&record) {
            Ok(()) => Ok(outcome),
            Err(why) => {
                tracing::error!(target: "mcppol::pipeline", server = %self.server, why, "the audit line could not be written: the request is refused");
                Err(CallError::new(ErrorKind::Denied, ErrorReason::AuditFailed)
                    .with_outcome(outcome.audit_failed()))
            }
        }
    }

    pub(super) fn policy_snapshot(&self) -> Option<Arc<Policy>> {
        self.policy.snapshot()
    }

    /// The policy and the bundle it came from, from one snapshot: what a
    /// request is decided with and what its record names.
    pub(super) fn policy_snapshot_stamped(
        &self,
    ) -> (Option<Arc<Policy>>, Option<Arc<BundleStamp>>) {
        self.policy.snapshot_stamped()
    }

    pub(super) fn base_ctx(&self, opts: &CallOptions) -> HookCtx {
        HookCtx {
            server: self.server.clone(),
            hook_id: "".into(),
            principal: opts.principal.as_deref().map(Arc::from),
            assigns: opts.assigns.clone().map(Arc::new),
            taint: opts.taint.clone().into(),
        }
    }
}

fn emit_decision(
    server: &str,
    kind: TargetKind,
    name: Option<&str>,
    d: &Decision,
    settled: Settled,
) {
    // At `debug`: the audit file is the per-call record, and a line per
    // call on stderr costs the call its write (docs/performance.md).
    tracing::debug!(
        target: "mcppol::decision",
        server,
        kind = kind.as_str(),
        tool = name.unwrap_or(""),
        decision = d.decision.as_str(),
        source = d.source.as_str(),
        reason = d.reason.as_str(),
        rule_id = d.rule_id.as_deref().unwrap_or(""),
        approval = settled.as_str(),
        "decision"
    );
}

pub(super) fn emit_call<T>(
    server: &str,
    kind: TargetKind,
    name: Option<&str>,
    started: Instant,
    out: &Result<T, CallError>,
) {
    let latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let kind = kind.as_str();
    match out {
        Ok(_) => tracing::debug!(
            target: "mcppol::call",
            server, kind, tool = name.unwrap_or(""), status = "ok", latency_us, "governed call"
        ),
        Err(e) => tracing::debug!(
            target: "mcppol::call",
            server, kind, tool = name.unwrap_or(""), status = "error",
            error_kind = e.kind.as_str(), reason = e.reason.as_str(),
            hook_id = e.hook_id.as_deref().unwrap_or(""), latency_us, "governed call"
        ),
    }
}

/// Whether a request's outcome was recorded (its one audit line), and the
/// bundle of the policy snapshot it is decided with, which that line names.
pub(crate) struct Audited {
    done: AtomicBool,
    bundle: Option<Arc<BundleStamp>>,
}

impl Audited {
    pub(super) fn new(bundle: Option<Arc<BundleStamp>>) -> Self {
        Audited {
            done: AtomicBool::new(false),
            bundle,
        }
    }

    /// Whether the outcome was recorded.
    pub(super) fn load(&self, order: Ordering) -> bool {
        self.done.load(order)
    }

    /// Marks the outcome recorded.
    pub(super) fn store(&self, done: bool, order: Ordering) {
        self.done.store(done, order);
    }

    /// The bundle of the request's policy snapshot.
    pub(super) fn bundle(&self) -> Option<&BundleStamp> {
        self.bundle.as_deref()
    }
}

/// The hook context of one request, built the first time a hook or the
/// approver needs it (a call without hooks never builds it).
pub(crate) struct LazyCtx<'a> {
    pipeline: &'a Pipeline,
    opts: &'a CallOptions,
    cell: std::sync::OnceLock<HookCtx>,
    /// Whether the request's outcome was recorded (its one audit line),
    /// and the bundle that line names.
    pub(super) audited: Audited,
}

impl<'a> LazyCtx<'a> {
    pub(super) fn new(
        pipeline: &'a Pipeline,
        opts: &'a CallOptions,
        bundle: Option<Arc<BundleStamp>>,
    ) -> Self {
        LazyCtx {
            pipeline,
            opts,
            cell: std::sync::OnceLock::new(),
            audited: Audited::new(bundle),
        }
    }

    pub(super) fn get(&self) -> &HookCtx {
        self.cell.get_or_init(|| self.pipeline.base_ctx(self.opts))
    }
}

#[cfg(all(test, feature = "bundle", feature = "http"))]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;

    use crate::mcp::{text_result, FakeServer, MemoryTransport};
    use crate::pipeline::{
        Approval, ApprovalRequest, AuditRecord, CallOptions, Pipeline, PolicySource,
    };
    use crate::store::{BundleStamp, Store};
    use crate::{LoadOptions, PolicySet};

    fn install(store: &Store, revision: &str) {
        let set = PolicySet::from_text("t.mcppol", "policy t {\n  ask \"s/write\"\n}\n").unwrap();
        let policy = Arc::clone(set.get("t").unwrap());
        store.install_bundle(
            BundleStamp {
                revision: revision.into(),
                digest: format!("sha256:{revision}"),
            },
            vec![("t".into(), policy, "t.mcppol".into(), "sha256:00".into())],
        );
    }

    #[tokio::test]
    async fn the_audit_line_names_the_bundle_that_decided_not_one_swapped_in_meanwhile() {
        let store = Arc::new(Store::empty(LoadOptions::default()));
        install(&store, "r1");
        let fake = FakeServer::new().tool(json!({"name": "write"}), |_| Ok(text_result("done")));
        let lines: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
        let sink = lines.clone();
        let swapper = store.clone();
        let source = PolicySource::Store {
            store: store.clone(),
            name: "t".into(),
        };
        let p = Pipeline::builder("s", Arc::new(MemoryTransport::new(fake)), source)
            // A new revision arrives while the person is asked.
            .approver(move |_: ApprovalRequest| {
                install(&swapper, "r2");
                async { Ok(Approval::AllowOnce) }
            })
            .audit(Arc::new(move |r: &AuditRecord<'_>| {
                let revision = r.bundle.map(|(revision, _)| revision.to_string());
                sink.lock().unwrap().push(revision);
                Ok(())
            }))
            .build()
            .unwrap();
        let opts = CallOptions::default();
        p.call_tool("write", json!({}), &opts).await.unwrap();
        assert_eq!(*lines.lock().unwrap(), [Some("r1".to_string())]);
        // The next call is decided, and named, with r2.
        p.call_tool("write", json!({}), &opts).await.unwrap();
        assert_eq!(lines.lock().unwrap()[1].as_deref(), Some("r2"));
    }
}
