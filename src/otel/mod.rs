//! Decision logs and metrics as OpenTelemetry (`--otlp-endpoint`, the
//! `OTEL_EXPORTER_OTLP_*` variables; docs/fleet.md): one span per governed
//! request, shaped as the semantic conventions for MCP, with a child
//! `apply_guardrail` span shaped as the GenAI security guardrail
//! conventions, and the decisions and latency as metrics, exported over
//! OTLP/HTTP with protobuf.
//!
//! One exporter per process ([`install`]); a front door runs each governed
//! request inside [`traced`] and reports its outcome with [`note`] where it
//! writes the audit line: the span is the mapping of the same record, so
//! it carries nothing the audit line does not (never arguments, never
//! results). The exporter never holds a decision up: a finished span is
//! offered to a bounded queue and dropped, counted, when it is full
//! (`queue.rs`).

mod queue;
mod span;

use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

use span::Pending;
pub(crate) use span::{decided, governed, note, session_digest, traced, RequestMeta};

use crate::store::Store;

/// The most spans waiting for the exporter; past it they are dropped.
pub(crate) const MAX_QUEUED_SPANS: usize = 8192;
/// The most request records waiting for the recorder; past it they are
/// dropped (two spans each).
const MAX_QUEUED_RECORDS: usize = 4096;
/// How often the recorder wakes to make the spans of the records handed
/// over meanwhile. A request never wakes it: the hand-over is a push onto
/// a queue nobody is blocked on, so it costs no system call and no thread
/// switch on the request's path.
const RECORD_TICK: Duration = Duration::from_millis(100);
/// The most spans in one export request.
const MAX_BATCH: usize = 512;
/// How long a batch waits to fill up.
const BATCH_DELAY: Duration = Duration::from_secs(1);
/// How long one export may take (an endpoint that does not answer).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the process waits, when it ends, for queued spans to leave.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest endpoint URL taken.
const MAX_ENDPOINT_BYTES: usize = 2048;

/// The process's exporter, once [`install`]ed.
static EXPORTER: OnceLock<Exporter> = OnceLock::new();

struct Exporter {
    /// To the recorder thread, which makes the spans and counts the
    /// metrics (closed when the process ends).
    records: Mutex<Option<SyncSender<Pending>>>,
    /// Dropped to wake the recorder for its last round.
    stop: Mutex<Option<SyncSender<()>>>,
    /// Told when the recorder has made its last spans.
    recorded: Mutex<Option<Receiver<()>>>,
    tracer: SdkTracer,
    traces: SdkTracerProvider,
    meters: SdkMeterProvider,
    decisions: Counter<u64>,
    duration: Histogram<f64>,
    stats: Arc<queue::Stats>,
    policy: PolicyDigest,
}

/// The digest of the policy in force, read again when the store's
/// generation moves.
struct PolicyDigest {
    store: Arc<Store>,
    name: String,
    cached: Mutex<(u64, Arc<str>)>,
}

impl PolicyDigest {
    fn get(&self) -> Arc<str> {
        let generation = self.store.generation();
        let mut cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        if cached.0 != generation || cached.1.is_empty() {
            let digest = self
                .store
                .status()
                .policies
                .iter()
                .find(|p| p.name == self.name)
                .map(|p| p.digest.clone())
                .unwrap_or_default();
            *cached = (generation, digest.into());
        }
        cached.1.clone()
    }
}

/// Keeps the exporter running; dropping it sends what is queued (waiting
/// at most a few seconds) and stops it.
#[must_use = "the exporter stops when the guard is dropped"]
pub(crate) struct Guard(());

impl Exporter {
    /// Gives a request's record to the recorder thread, never waiting:
    /// when its queue is full the record is dropped and counted.
    fn hand_over(&self, record: Pending) {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(records) = records.as_ref() else {
            return;
        };
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = records.try_send(record)
        {
            // A record is a request's two spans.
            queue::dropped(&self.stats, 2);
        }
    }
}

/// Makes the spans and counts the metrics of the records handed over, a
/// round every [`RECORD_TICK`], until the process ends. It sleeps on
/// `stop`, never on `records`: a request's hand-over finds no one to wake.
fn record_all(records: Receiver<Pending>, stop: Receiver<()>) {
    loop {
        let last = !matches!(
            stop.recv_timeout(RECORD_TICK),
            Err(RecvTimeoutError::Timeout)
        );
        let exporter = EXPORTER.get();
        while let Ok(record) = records.try_recv() {
            if let Some(exporter) = exporter {
                record.record(exporter);
            }
        }
        if last {
            return;
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(e) = EXPORTER.get() {
            // The recorder first (its spans go to the span queue), then
            // the span queue.
            drop(
                e.records
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take(),
            );
            drop(e.stop.lock().unwrap_or_else(PoisonError::into_inner).take());
            let recorded = e
                .recorded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(Err(RecvTimeoutError::Timeout)) =
                recorded.map(|r| r.recv_timeout(SHUTDOWN_TIMEOUT))
            {
                tracing::warn!(target: "mcppol::otel", "the OTLP recorder did not finish in time");
            }
            let _ = e.traces.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
            let _ = e.meters.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
            let s = &e.stats;
            tracing::info!(
                target: "mcppol::otel",
                exported = s.exported.load(Ordering::Relaxed),
                dropped = s.dropped.load(Ordering::Relaxed),
                failed = s.failed.load(Ordering::Relaxed),
                "OTLP spans"
            );
        }
    }
}

/// Where spans and metrics go: `--otlp-endpoint`, else the standard
/// variables; `None` when neither is set (nothing is exported).
fn endpoint_of(flag: Option<&str>) -> Result<Option<Endpoint>, String> {
    if let Ok(protocol) = std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL") {
        if !protocol.is_empty() && protocol != "http/protobuf" {
            return Err(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL `{protocol}`: mcppol exports OTLP over HTTP with protobuf only; unset it or set it to `http/protobuf`"
            ));
        }
    }
    if let Some(url) = flag {
        if url.len() > MAX_ENDPOINT_BYTES
            || !(url.starts_with("http://") || url.starts_with("https://"))
            || fluent_uri::Uri::parse(url).is_err()
        {
            return Err(format!(
                "--otlp-endpoint `{}` is not an http(s) URL: give the collector's OTLP/HTTP base URL, such as http://127.0.0.1:4318",
                url.chars().take(200).collect::<String>()
            ));
        }
        let base = url.trim_end_matches('/');
        return Ok(Some(Endpoint::Base(base.to_string())));
    }
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty());
    if set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return Ok(Some(Endpoint::FromEnvironment));
    }
    Ok(None)
}

enum Endpoint {
    /// `--otlp-endpoint`: `/v1/traces` and `/v1/metrics` below it.
    Base(String),
    /// The exporter reads `OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]ENDPOINT`.
    FromEnvironment,
}

/// Starts the process's exporter when `--otlp-endpoint` or the standard
/// variables ask for one, for the policy `name` of `store`: `Ok(None)` when
/// nothing is asked; an error naming what is wrong otherwise.
pub(crate) fn install(
    flag: Option<&str>,
    store: &Arc<Store>,
    name: &str,
) -> Result<Option<Guard>, String> {
    let Some(endpoint) = endpoint_of(flag)? else {
        return Ok(None);
    };
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "mcppol".to_string());
    let resource = Resource::builder()
        .with_service_name(service)
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    let url = |path: &str| match &endpoint {
        Endpoint::Base(base) => Some(format!("{base}{path}")),
        Endpoint::FromEnvironment => None,
    };
    let mut spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_timeout(EXPORT_TIMEOUT);
    if let Some(url) = url("/v1/traces") {
        spans = spans.with_endpoint(url);
    }
    let spans = spans
        .build()
        .map_err(|e| format!("the OTLP span exporter: {e}"))?;
    let mut metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_timeout(EXPORT_TIMEOUT)
        .with_temporality(Temporality::Cumulative);
    if let Some(url) = url("/v1/metrics") {
        metrics = metrics.with_endpoint(url);
    }
    let metrics = metrics
        .build()
        .map_err(|e| format!("the OTLP metric exporter: {e}"))?;
    let stats = Arc::new(queue::Stats::default());
    let bounds = queue::Bounds {
        queue: MAX_QUEUED_SPANS,
        batch: MAX_BATCH,
        delay: BATCH_DELAY,
    };
    let processor = queue::BoundedProcessor::start(spans, bounds, stats.clone())
        .map_err(|e| format!("cannot start the OTLP exporter's thread: {e}"))?;
    let traces = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource.clone())
        .build();
    let meters = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(metrics).build())
        .with_resource(resource)
        .build();
    let meter = meters.meter("mcppol");
    let decisions = meter
        .u64_counter("mcppol.decisions")
        .with_description("Governed requests by decision and reason")
        .with_unit("{request}")
        .build();
    let duration = meter
        .f64_histogram("mcp.server.operation.duration")
        .with_description(
            "The duration of a governed MCP request, from the host's request to the answer",
        )
        .with_unit("s")
        .with_boundaries(vec![
            0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0,
        ])
        .build();
    let dropped = stats.clone();
    let _spans_dropped = meter
        .u64_observable_counter("mcppol.otlp.spans.dropped")
        .with_description("Spans dropped because the export queue was full")
        .with_unit("{span}")
        .with_callback(move |o| o.observe(dropped.dropped.load(Ordering::Relaxed), &[]))
        .build();
    let failed = stats.clone();
    let _spans_failed = meter
        .u64_observable_counter("mcppol.otlp.spans.failed")
        .with_description("Spans lost because their export failed")
        .with_unit("{span}")
        .with_callback(move |o| o.observe(failed.failed.load(Ordering::Relaxed), &[]))
        .build();
    let (records, to_record) = sync_channel(MAX_QUEUED_RECORDS);
    let (stop, stopped) = sync_channel(1);
    let (done, recorded) = sync_channel(1);
    std::thread::Builder::new()
        .name("mcppol-otel".into())
        .spawn(move || {
            record_all(to_record, stopped);
            let _ = done.send(());
        })
        .map_err(|e| format!("cannot start the OTLP recorder's thread: {e}"))?;
    let exporter = Exporter {
        records: Mutex::new(Some(records)),
        stop: Mutex::new(Some(stop)),
        recorded: Mutex::new(Some(recorded)),
        tracer: traces.tracer("mcppol"),
        traces,
        meters,
        decisions,
        duration,
        stats,
        policy: PolicyDigest {
            store: store.clone(),
            name: name.to_string(),
            cached: Mutex::new((0, "".into())),
        },
    };
    if EXPORTER.set(exporter).is_err() {
        return Err("the OTLP exporter is already running".to_string());
    }
    tracing::info!(target: "mcppol::otel", "decision spans and metrics go to OTLP over HTTP");
    Ok(Some(Guard(())))
}

/// Whether an exporter runs.
pub(crate) fn active() -> bool {
    EXPORTER.get().is_some()
}
