//! Log lines written to stderr by a thread of their own, so that no line
//! (a `debug` line per call, a warning) makes a call wait for stderr: a
//! host that captures stderr into a file, or reads its pipe slowly, would
//! otherwise hold every call up for the length of a write.
//!
//! `tracing` formats each event into one buffer and writes it whole; the
//! [`Line`] writer gathers it and hands it, on drop, to a bounded queue
//! ([`QUEUE_LINES`] lines) without waiting. A line that finds the queue
//! full is dropped and counted, and the writer thread says how many were
//! dropped at its next write. [`Flush`] (kept by the command for its whole
//! run) writes what is queued before the process exits.
//!
//! The queue is std's list channel, which grows a block at a time, with
//! its bound kept by a count: a bounded (array) channel of 4,096 places
//! is made and written whole when it is created, 128 KiB of the proxy's
//! resident memory for a queue that is nearly always empty.

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::time::Duration;

/// The lines queued for the writer thread before new ones are dropped.
pub(super) const QUEUE_LINES: usize = 4096;

/// The longest a log line may be (a longer one is cut there): the queue's
/// bound in bytes is this times [`QUEUE_LINES`].
const MAX_LINE_BYTES: usize = 16 << 10;

/// The bytes the writer thread gathers into one write.
const BATCH_BYTES: usize = 256 << 10;

/// How long the end of a command waits for the queued lines to be written.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

enum Msg {
    Line(Vec<u8>),
    /// Answered once every line queued before it is written.
    Flush(SyncSender<()>),
}

/// Where log lines go: the queue of the writer thread.
#[derive(Clone)]
pub(super) struct Background {
    queue: Sender<Msg>,
    /// The lines in the queue, not yet taken by the writer thread (the
    /// queue's bound).
    queued: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
}

impl Background {
    /// Starts the thread writing to `out`; `None` when no thread can be
    /// started (the caller then writes to stderr itself).
    pub(super) fn start<W: Write + Send + 'static>(out: W) -> Option<(Background, Flush)> {
        let (queue, lines) = mpsc::channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let taken = queued.clone();
        let dropped = Arc::new(AtomicU64::new(0));
        let counted = dropped.clone();
        std::thread::Builder::new()
            .name("mcppol-log".into())
            .spawn(move || write_lines(out, &lines, &taken, &counted))
            .ok()?;
        let background = Background {
            queue,
            queued,
            dropped,
        };
        let flush = Flush(background.clone());
        Some((background, flush))
    }

    fn push(&self, line: Vec<u8>) {
        if self.queued.fetch_add(1, Ordering::AcqRel) >= QUEUE_LINES {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // An error: the thread is gone (it could not write), nothing to
        // write to.
        let _ = self.queue.send(Msg::Line(line));
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Background {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line {
            to: self,
            bytes: Vec::new(),
        }
    }
}

/// One log line being formatted; queued when dropped.
pub(super) struct Line<'a> {
    to: &'a Background,
    bytes: Vec<u8>,
}

impl Write for Line<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = MAX_LINE_BYTES.saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&buf[..buf.len().min(room)]);
        // All of it is taken, whatever was cut: `tracing` would otherwise
        // report a failed write.
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line<'_> {
    fn drop(&mut self) {
        if self.bytes.is_empty() {
            return;
        }
        if self.bytes.len() >= MAX_LINE_BYTES && self.bytes.last() != Some(&b'\n') {
            self.bytes.push(b'\n');
        }
        self.to.push(std::mem::take(&mut self.bytes));
    }
}

/// Writes the queued lines when dropped (at the end of the command), for
/// up to two seconds.
pub(super) struct Flush(Background);

impl Drop for Flush {
    fn drop(&mut self) {
        let (done, written) = mpsc::sync_channel(1);
        if self.0.queue.send(Msg::Flush(done)).is_err() {
            return;
        }
        let _ = written.recv_timeout(FLUSH_WAIT);
    }
}

/// The writer thread: every line queued when it wakes is written in one
/// write, followed by a line telling how many were dropped since the last.
fn write_lines<W: Write>(
    mut out: W,
    lines: &Receiver<Msg>,
    queued: &AtomicUsize,
    dropped: &AtomicU64,
) {
    let mut batch: Vec<u8> = Vec::new();
    let mut flushes: Vec<SyncSender<()>> = Vec::new();
    while let Ok(first) = lines.recv() {
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            match msg {
                Msg::Line(line) => {
                    queued.fetch_sub(1, Ordering::AcqRel);
                    batch.extend_from_slice(&line);
                }
                Msg::Flush(done) => flushes.push(done),
            }
            if batch.len() < BATCH_BYTES {
                next = lines.try_recv().ok();
            }
        }
        let lost = dropped.swap(0, Ordering::Relaxed);
        if lost > 0 {
            batch.extend_from_slice(
                format!("mcppol: {lost} log lines dropped: stderr was not read fast enough\n")
                    .as_bytes(),
            );
        }
        let written = out.write_all(&batch).and_then(|()| out.flush());
        batch.clear();
        if batch.capacity() > MAX_LINE_BYTES * 4 {
            batch = Vec::new();
        }
        for done in flushes.drain(..) {
            let _ = done.send(());
        }
        if written.is_err() {
            // stderr is closed: there is nowhere to write; lines queued
            // later are dropped by the closed queue.
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Instant;
    use tracing_subscriber::fmt::MakeWriter;

    /// A stderr that keeps what it is given.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<u8>>>);

    impl Write for Kept {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(|e| panic!("{e}"))
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Kept {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| panic!("{e}"))).into_owned()
        }
    }

    fn line(to: &Background, text: &str) {
        let mut w = to.make_writer();
        w.write_all(text.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn every_line_is_written_by_the_time_the_flush_is_dropped() {
        let kept = Kept::default();
        let (to, flush) = Background::start(kept.clone()).unwrap_or_else(|| panic!("no thread"));
        for i in 0..100 {
            line(&to, &format!("line {i}\n"));
        }
        drop(flush);
        let text = kept.text();
        let expected: String = (0..100).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text, expected);
    }

    #[test]
    fn a_full_queue_drops_lines_without_waiting_and_says_how_many() {
        // A stderr nobody reads: the writer thread blocks in its first
        // write until released.
        let (entered, in_write) = mpsc::channel::<()>();
        let (release, blocked) = mpsc::channel::<()>();
        struct Stuck(mpsc::Sender<()>, Receiver<()>, Kept);
        impl Write for Stuck {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                let _ = self.0.send(());
                let _ = self.1.recv();
                self.2.write(buf)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let kept = Kept::default();
        let (to, flush) = Background::start(Stuck(entered, blocked, kept.clone()))
            .unwrap_or_else(|| panic!("no thread"));
        line(&to, "first\n");
        in_write
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}"));
        let started = Instant::now();
        for i in 0..QUEUE_LINES + 10 {
            line(&to, &format!("{i}\n"));
        }
        // Nothing waited for the stuck stderr: the queue took what it
        // holds, the rest was counted.
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(to.dropped.load(Ordering::Relaxed), 10);
        drop(release);
        drop(flush);
        let text = kept.text();
        let queued: String = (0..QUEUE_LINES).map(|i| format!("{i}\n")).collect();
        assert_eq!(
            text,
            format!(
                "first\n{queued}mcppol: 10 log lines dropped: stderr was not read fast enough\n"
            )
        );
    }

    #[test]
    fn a_line_past_the_bound_is_cut() {
        let kept = Kept::default();
        let (to, flush) = Background::start(kept.clone()).unwrap_or_else(|| panic!("no thread"));
        line(&to, &"x".repeat(MAX_LINE_BYTES * 2));
        drop(flush);
        assert_eq!(kept.text().len(), MAX_LINE_BYTES + 1);
    }
}
