//! Prometheus metrics (`--metrics ADDR`, `GET /metrics`, the text format):
//!
//! - `mcppol_gateway_decisions_total{server,decision,reason}`: one per
//!   governed request, the audit line's decision and reason;
//! - `mcppol_gateway_request_seconds{server}`: the latency of each governed
//!   request through the gateway (policy, approval, the server's answer);
//! - `mcppol_gateway_upstream_errors_total{server}`: a server that failed
//!   to start, went down, or failed a request;
//! - `mcppol_gateway_policy_generation` and `mcppol_gateway_policy_info
//!   {policy,digest}`: which version of the policy is in force;
//! - with `--bundle`, `mcppol_gateway_bundle_info{revision,digest}` (the
//!   bundle in force, from the store's snapshot) and
//!   `mcppol_gateway_bundle_failures_total` (bundles refused or not
//!   fetched).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderValue};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::store::Store;

type Labels = Vec<(&'static str, String)>;

fn latency_histogram() -> Histogram {
    // 50 us to about 13 min, doubling.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 24))
}

/// The gateway's metrics, shared by every session.
pub(crate) struct Metrics {
    registry: Registry,
    decisions: Family<Labels, Counter>,
    latency: Family<Labels, Histogram, fn() -> Histogram>,
    upstream_errors: Family<Labels, Counter>,
    generation: Gauge,
    policy: Family<Labels, Gauge>,
    bundle: Family<Labels, Gauge>,
    bundle_failures: Counter,
    store: Arc<Store>,
    policy_name: String,
}

impl Metrics {
    pub(crate) fn new(store: Arc<Store>, policy_name: String) -> Metrics {
        let mut registry = Registry::with_prefix("mcppol_gateway");
        let decisions = Family::<Labels, Counter>::default();
        let latency =
            Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram);
        let upstream_errors = Family::<Labels, Counter>::default();
        let generation = Gauge::default();
        let policy = Family::<Labels, Gauge>::default();
        registry.register(
            "decisions",
            "Governed requests by server, decision and reason",
            decisions.clone(),
        );
        registry.register(
            "request_seconds",
            "Latency of a governed request through the gateway",
            latency.clone(),
        );
        registry.register(
            "upstream_errors",
            "Servers that failed to start, went down or failed a request",
            upstream_errors.clone(),
        );
        registry.register(
            "policy_generation",
            "The policy store's generation in force",
            generation.clone(),
        );
        registry.register(
            "policy_info",
            "The policy in force and the digest of its text",
            policy.clone(),
        );
        let bundle = Family::<Labels, Gauge>::default();
        let bundle_failures = Counter::default();
        registry.register(
            "bundle_info",
            "The signed bundle in force (--bundle): its revision and digest",
            bundle.clone(),
        );
        registry.register(
            "bundle_failures",
            "Bundles refused (bad signature, digest, policy, format, an older revision) or not fetched",
            bundle_failures.clone(),
        );
        Metrics {
            registry,
            bundle,
            bundle_failures,
            decisions,
            latency,
            upstream_errors,
            generation,
            policy,
            store,
            policy_name,
        }
    }

    /// One governed request's outcome.
    pub(crate) fn decision(&self, server: &str, decision: &str, reason: &str) {
        self.decisions
            .get_or_create(&vec![
                ("server", server.to_string()),
                ("decision", decision.to_string()),
                ("reason", reason.to_string()),
            ])
            .inc();
    }

    /// How long a governed request to `server` took.
    pub(crate) fn latency(&self, server: &str, took: Duration) {
        self.latency
            .get_or_create(&vec![("server", server.to_string())])
            .observe(took.as_secs_f64());
    }

    /// A server failed.
    pub(crate) fn upstream_error(&self, server: &str) {
        self.upstream_errors
            .get_or_create(&vec![("server", server.to_string())])
            .inc();
    }

    /// The text exposition, the policy's version read now.
    pub(crate) fn render(&self) -> String {
        self.generation
            .set(i64::try_from(self.store.generation()).unwrap_or(i64::MAX));
        self.policy.clear();
        let status = self.store.status();
        if let Some(p) = status.policies.iter().find(|p| p.name == self.policy_name) {
            self.policy
                .get_or_create(&vec![
                    ("policy", p.name.clone()),
                    ("digest", p.digest.clone()),
                ])
                .set(1);
        }
        self.bundle.clear();
        if let (_, Some(stamp)) = self.store.get_stamped(&self.policy_name) {
            self.bundle
                .get_or_create(&vec![
                    ("revision", stamp.revision.clone()),
                    ("digest", stamp.digest.clone()),
                ])
                .set(1);
        }
        // A counter only goes up: it is moved on to the store's count.
        let failures = self.store.bundle_failures();
        let shown = self.bundle_failures.get();
        if failures > shown {
            self.bundle_failures.inc_by(failures - shown);
        }
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Serves `GET /metrics` on `addr` until the process ends.
pub(crate) async fn serve(metrics: Arc<Metrics>, addr: SocketAddr) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr} for metrics: {e}"))?;
    let bound = listener.local_addr().unwrap_or(addr);
    tracing::info!(target: "mcppol::gateway", metrics_addr = %bound, "metrics at /metrics");
    let router = Router::new().route(
        "/metrics",
        get(move || {
            let metrics = metrics.clone();
            async move {
                let mut r = metrics.render().into_response();
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    ),
                );
                r
            }
        }),
    );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(target: "mcppol::gateway", error = %e, "the metrics listener failed");
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LoadOptions;

    #[test]
    fn decisions_latency_errors_and_the_policy_in_force_are_exposed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.mcppol");
        std::fs::write(&path, "policy p {\n  allow \"a/*\"\n}\n").unwrap();
        let store = Arc::new(Store::open([&path], LoadOptions::default()).unwrap());
        let m = Metrics::new(store, "p".into());
        m.decision("a", "allow", "allow_rule");
        m.decision("a", "allow", "allow_rule");
        m.decision("b", "deny", "deny_rule");
        m.latency("a", Duration::from_micros(120));
        m.upstream_error("b");
        let text = m.render();
        for line in [
            r#"mcppol_gateway_decisions_total{server="a",decision="allow",reason="allow_rule"} 2"#,
            r#"mcppol_gateway_decisions_total{server="b",decision="deny",reason="deny_rule"} 1"#,
            r#"mcppol_gateway_request_seconds_count{server="a"} 1"#,
            r#"mcppol_gateway_upstream_errors_total{server="b"} 1"#,
            "mcppol_gateway_policy_generation 1",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        assert!(
            text.contains(r#"mcppol_gateway_policy_info{policy="p",digest="sha256:"#),
            "{text}"
        );
        // Not running from a bundle: no bundle in force, no failure.
        assert!(!text.contains("mcppol_gateway_bundle_info{"), "{text}");
        assert!(
            text.contains("mcppol_gateway_bundle_failures_total 0"),
            "{text}"
        );
    }

    #[test]
    fn the_bundle_in_force_and_the_refused_ones_are_exposed() {
        let store = Arc::new(Store::empty(LoadOptions::default()));
        let set =
            crate::PolicySet::from_text("p.mcppol", "policy p {\n  allow \"a/*\"\n}\n").unwrap();
        let policy = Arc::clone(set.get("p").unwrap());
        let stamp = crate::BundleStamp {
            revision: "r7".into(),
            digest: "sha256:ab".into(),
        };
        store.install_bundle(
            stamp,
            vec![("p".into(), policy, "p.mcppol".into(), "sha256:cd".into())],
        );
        store.bundle_failed();
        store.bundle_failed();
        let m = Metrics::new(store.clone(), "p".into());
        let text = m.render();
        for line in [
            r#"mcppol_gateway_bundle_info{revision="r7",digest="sha256:ab"} 1"#,
            "mcppol_gateway_bundle_failures_total 2",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        store.bundle_failed();
        assert!(m
            .render()
            .contains("mcppol_gateway_bundle_failures_total 3"));
    }
}
