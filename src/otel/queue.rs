//! The span queue between a governed request and the OTLP exporter: a
//! bounded channel that a finished span is offered to and never waits on
//! (past the bound the span is dropped and counted), drained by a thread of
//! its own that sends batches to the exporter. The SDK's own batch
//! processor drops the same way but keeps its count to itself; here the
//! count is a metric and a log line (docs/fleet.md).

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use opentelemetry::Context;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;

/// What happened to the spans offered to the queue.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Dropped because the queue was full (the exporter is slow or down).
    pub(crate) dropped: AtomicU64,
    /// Sent to the exporter, which refused them or could not be reached.
    pub(crate) failed: AtomicU64,
    /// Sent to the exporter and accepted.
    pub(crate) exported: AtomicU64,
    /// The last export failed and the next waits out its backoff: spans
    /// made meanwhile would be lost, so the recorder does not make them
    /// (it counts them as failed).
    pub(crate) backing_off: AtomicBool,
}

impl Stats {
    /// Whether the endpoint is down and waited out (see `backing_off`).
    pub(crate) fn down(&self) -> bool {
        self.backing_off.load(Ordering::Relaxed)
    }
}

/// The first wait after a failed export; it doubles with each failure in
/// a row, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between two exports to an endpoint that is down.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The wait after `failing` failed exports in a row (at least one).
fn backoff(failing: u32) -> Duration {
    FIRST_BACKOFF
        .saturating_mul(1 << failing.saturating_sub(1).min(5))
        .min(MAX_BACKOFF)
}

/// The batching knobs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// The most spans waiting.
    pub(crate) queue: usize,
    /// The most spans in one export.
    pub(crate) batch: usize,
    /// How long a batch waits to fill up.
    pub(crate) delay: Duration,
}

/// A span processor with a bounded queue and a counted drop.
#[derive(Debug)]
pub(crate) struct BoundedProcessor<E: SpanExporter + 'static> {
    sender: Mutex<Option<SyncSender<SpanData>>>,
    exporter: Arc<Mutex<E>>,
    stats: Arc<Stats>,
    /// Told when the worker has sent its last batch.
    finished: Mutex<Option<Receiver<()>>>,
}

impl<E: SpanExporter + 'static> BoundedProcessor<E> {
    /// Starts the worker thread.
    pub(crate) fn start(exporter: E, bounds: Bounds, stats: Arc<Stats>) -> std::io::Result<Self> {
        let (sender, receiver) = sync_channel(bounds.queue.max(1));
        let (done_tx, done_rx) = sync_channel(1);
        let exporter = Arc::new(Mutex::new(exporter));
        let worker = Worker {
            receiver,
            exporter: exporter.clone(),
            stats: stats.clone(),
            bounds,
        };
        std::thread::Builder::new()
            .name("mcppol-otlp".into())
            .spawn(move || {
                worker.run();
                let _ = done_tx.send(());
            })?;
        Ok(BoundedProcessor {
            sender: Mutex::new(Some(sender)),
            exporter,
            stats,
            finished: Mutex::new(Some(done_rx)),
        })
    }
}

impl<E: SpanExporter + 'static> SpanProcessor for BoundedProcessor<E> {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        let sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(sender) = sender.as_ref() else {
            return;
        };
        match sender.try_send(span) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                dropped(&self.stats, 1);
            }
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        // Closing the channel ends the worker once it has sent what is queued.
        drop(
            self.sender
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let finished = self
            .finished
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match finished.map(|rx| rx.recv_timeout(timeout)) {
            None | Some(Ok(())) | Some(Err(RecvTimeoutError::Disconnected)) => Ok(()),
            Some(Err(RecvTimeoutError::Timeout)) => Err(OTelSdkError::Timeout(timeout)),
        }
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.exporter
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .set_resource(resource);
    }
}

/// Counts `n` spans dropped, and says so at the 1st, 10th, 100th, ...
pub(crate) fn dropped(stats: &Stats, n: u64) {
    let before = stats.dropped.fetch_add(n, Ordering::Relaxed);
    if (before + 1..=before + n).any(is_power_of_ten) {
        tracing::warn!(target: "mcppol::otel", dropped = before + n, "the OTLP span queue is full (the exporter is slow or down): spans are dropped, decisions are not affected");
    }
}

fn is_power_of_ten(mut n: u64) -> bool {
    while n >= 10 && n.is_multiple_of(10) {
        n /= 10;
    }
    n == 1
}

struct Worker<E> {
    receiver: Receiver<SpanData>,
    exporter: Arc<Mutex<E>>,
    stats: Arc<Stats>,
    bounds: Bounds,
}

impl<E: SpanExporter> Worker<E> {
    /// Waits out the backoff after a failed export: what arrives
    /// meanwhile is lost (counted as failed). `false` when the queue
    /// closed (the process ends).
    fn back_off(&self, wait: Duration) -> bool {
        self.stats.backing_off.store(true, Ordering::Relaxed);
        let until = Instant::now() + wait;
        let open = loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break true;
            }
            match self.receiver.recv_timeout(left) {
                Ok(_) => {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                }
                Err(RecvTimeoutError::Timeout) => break true,
                Err(RecvTimeoutError::Disconnected) => break false,
            }
        };
        self.stats.backing_off.store(false, Ordering::Relaxed);
        open
    }

    fn run(self) {
        let mut failures = 0u64;
        // Failed exports in a row: each waits longer before the next, so
        // an endpoint that is down costs one connection attempt per
        // backoff (up to 30 s), not one per batch.
        let mut failing = 0u32;
        // Until every sender is gone and the queue is empty.
        while let Ok(first) = self.receiver.recv() {
            let mut batch = vec![first];
            let deadline = Instant::now() + self.bounds.delay;
            while batch.len() < self.bounds.batch.max(1) {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.receiver.recv_timeout(left) {
                    Ok(span) => batch.push(span),
                    Err(_) => break,
                }
            }
            let n = batch.len() as u64;
            let result = {
                let exporter = self.exporter.lock().unwrap_or_else(PoisonError::into_inner);
                block_on(exporter.export(batch))
            };
            match result {
                Ok(()) => {
                    self.stats.exported.fetch_add(n, Ordering::Relaxed);
                    failing = 0;
                }
                Err(e) => {
                    self.stats.failed.fetch_add(n, Ordering::Relaxed);
                    failures += 1;
                    failing = failing.saturating_add(1);
                    if is_power_of_ten(failures) {
                        tracing::warn!(target: "mcppol::otel", error = %e, failures, "an OTLP export failed: its spans are lost, decisions are not affected");
                    }
                    if !self.back_off(backoff(failing)) {
                        break;
                    }
                }
            }
        }
        let _ = self
            .exporter
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .shutdown();
    }
}

/// Runs a future to its end on this thread. The exporter's future does
/// its work on the blocking HTTP client (which must not run inside a tokio
/// runtime), so a thread-parking waker is all it needs.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{Tracer as _, TracerProvider as _};
    use opentelemetry_sdk::trace::SdkTracerProvider;

    /// An exporter that takes `hold` per batch and counts what it got.
    #[derive(Debug, Clone)]
    struct Slow {
        hold: Duration,
        got: Arc<AtomicU64>,
    }

    impl SpanExporter for Slow {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            std::thread::sleep(self.hold);
            self.got.fetch_add(batch.len() as u64, Ordering::Relaxed);
            Ok(())
        }
    }

    #[test]
    fn past_the_bound_spans_are_dropped_and_counted_without_waiting() {
        let got = Arc::new(AtomicU64::new(0));
        let stats = Arc::new(Stats::default());
        let bounds = Bounds {
            queue: 8,
            batch: 4,
            delay: Duration::from_millis(1),
        };
        let exporter = Slow {
            hold: Duration::from_millis(300),
            got: got.clone(),
        };
        let processor = BoundedProcessor::start(exporter, bounds, stats.clone()).unwrap();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .build();
        let tracer = provider.tracer("test");
        let started = Instant::now();
        for _ in 0..1_000 {
            tracer.in_span("x", |_| {});
        }
        // A slow exporter costs the spans, not the caller.
        assert!(
            started.elapsed() < Duration::from_millis(250),
            "{:?}",
            started.elapsed()
        );
        provider.shutdown().unwrap();
        let (dropped, exported) = (
            stats.dropped.load(Ordering::Relaxed),
            stats.exported.load(Ordering::Relaxed),
        );
        assert!(dropped >= 1_000 - 8 - 4 - 4, "dropped {dropped}");
        assert_eq!(dropped + exported, 1_000);
        assert_eq!(got.load(Ordering::Relaxed), exported);
    }

    /// An exporter that always fails, counting its attempts.
    #[derive(Debug, Clone)]
    struct Down {
        attempts: Arc<AtomicU64>,
    }

    impl SpanExporter for Down {
        async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
            self.attempts.fetch_add(1, Ordering::Relaxed);
            Err(OTelSdkError::InternalFailure("connection refused".into()))
        }
    }

    #[test]
    fn an_endpoint_that_is_down_is_tried_once_per_backoff() {
        let attempts = Arc::new(AtomicU64::new(0));
        let stats = Arc::new(Stats::default());
        let bounds = Bounds {
            queue: 64,
            batch: 4,
            delay: Duration::from_millis(1),
        };
        let exporter = Down {
            attempts: attempts.clone(),
        };
        let processor = BoundedProcessor::start(exporter, bounds, stats.clone()).unwrap();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .build();
        let tracer = provider.tracer("test");
        tracer.in_span("first", |_| {});
        let started = Instant::now();
        while !stats.down() && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(stats.down(), "the failed export started no backoff");
        // Spans made during the backoff wait with it; none is sent.
        for _ in 0..40 {
            tracer.in_span("x", |_| {});
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(attempts.load(Ordering::Relaxed), 1);
        // The process ending ends the backoff at once.
        let stopping = Instant::now();
        provider.shutdown().unwrap();
        assert!(stopping.elapsed() < Duration::from_millis(500));
        assert_eq!(stats.failed.load(Ordering::Relaxed), 41);
        assert!(!stats.down());
    }

    #[test]
    fn backoff_doubles_up_to_thirty_seconds() {
        let waits: Vec<u64> = (1..=8).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
    }

    #[test]
    fn powers_of_ten() {
        let hits: Vec<u64> = (1..=1_000).filter(|&n| is_power_of_ten(n)).collect();
        assert_eq!(hits, [1, 10, 100, 1_000]);
    }
}
