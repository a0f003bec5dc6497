//! Newline-delimited framing with a bound on the line length: a longer
//! line is a protocol error, never an unbounded buffer.

#[cfg(feature = "cli")]
use std::pin::Pin;
#[cfg(feature = "cli")]
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncBufRead, AsyncBufReadExt};
#[cfg(feature = "cli")]
use tokio::io::{AsyncRead, ReadBuf};

/// The default longest line: 16 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Why a line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The line was longer than the bound. It has been read past and
    /// dropped (up to its newline, or the end of the stream), so the next
    /// read starts at the next line.
    #[error("a line of more than {max} bytes")]
    TooLong {
        /// The bound the line went over.
        max: usize,
    },
    /// The stream failed.
    #[error("reading failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads newline-delimited lines of at most `max` bytes.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    max: usize,
    buf: Vec<u8>,
    /// Whether a line over the bound is read to its end (to go on with the
    /// next), or the error comes at the bound (the stream is given up).
    drain: bool,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// Reads lines from `inner`, none longer than `max` bytes.
    pub fn new(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            max,
            buf: Vec::new(),
            drain: true,
        }
    }

    /// A reader whose [`FrameError::TooLong`] comes as soon as a line goes
    /// over the bound, without reading the rest of it: for a stream that is
    /// given up at the first such line (a line that never ends would
    /// otherwise be read for ever).
    #[cfg(feature = "cli")]
    pub(crate) fn stop_at_bound(mut self) -> Self {
        self.drain = false;
        self
    }

    /// The next line without its `\n` (and a `\r` before it), `Ok(None)` at
    /// the end of the stream. Empty lines are skipped. A last line without a
    /// newline still counts.
    pub async fn next_line(&mut self) -> Result<Option<&[u8]>, FrameError> {
        loop {
            self.buf.clear();
            let mut too_long = false;
            let mut saw_newline = false;
            loop {
                let available = self.inner.fill_buf().await?;
                if available.is_empty() {
                    break;
                }
                let (chunk, used, done) = match available.iter().position(|&b| b == b'\n') {
                    Some(i) => (&available[..i], i + 1, true),
                    None => (available, available.len(), false),
                };
                if !too_long {
                    if self.buf.len() + chunk.len() > self.max {
                        too_long = true;
                        self.buf.clear();
                    } else {
                        self.buf.extend_from_slice(chunk);
                    }
                }
                self.inner.consume(used);
                if too_long && !self.drain {
                    return Err(FrameError::TooLong { max: self.max });
                }
                if done {
                    saw_newline = true;
                    break;
                }
            }
            if too_long {
                return Err(FrameError::TooLong { max: self.max });
            }
            if !saw_newline && self.buf.is_empty() {
                return Ok(None);
            }
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                if saw_newline {
                    continue;
                }
                return Ok(None);
            }
            return Ok(Some(&self.buf));
        }
    }
}

/// The room a [`GrowingBufReader`] starts with.
#[cfg(feature = "cli")]
const FIRST_ROOM: usize = 8 << 10;

/// A buffered reader whose buffer starts small and grows (doubling, up
/// to `max`) only when a read fills all the room it has: a stream of
/// small messages keeps 8 KiB, one that brings large ones is read
/// `max` bytes at a time. Tokio's `BufReader` writes zeros over its whole
/// buffer when it is made: 64 KiB resident for each side of a proxy
/// whose messages are a few hundred bytes.
#[cfg(feature = "cli")]
#[derive(Debug)]
pub(crate) struct GrowingBufReader<R> {
    inner: R,
    /// The room to read into (its length: the bytes zeroed once, when it
    /// grew).
    buf: Vec<u8>,
    /// What was read and not consumed: `buf[pos..filled]`.
    pos: usize,
    filled: usize,
    max: usize,
}

#[cfg(feature = "cli")]
impl<R: AsyncRead + Unpin> GrowingBufReader<R> {
    /// Reads `inner` through a buffer of at most `max` bytes.
    pub(crate) fn new(inner: R, max: usize) -> Self {
        GrowingBufReader {
            inner,
            buf: Vec::new(),
            pos: 0,
            filled: 0,
            max: max.max(1),
        }
    }
}

#[cfg(feature = "cli")]
impl<R: AsyncRead + Unpin> AsyncBufRead for GrowingBufReader<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.pos >= this.filled {
            // The last read took all the room there was (or there is none
            // yet): more may be waiting, so the room grows.
            if this.filled == this.buf.len() && this.buf.len() < this.max {
                let room = (this.buf.len() * 2).clamp(FIRST_ROOM.min(this.max), this.max);
                this.buf.resize(room, 0);
            }
            let mut read = ReadBuf::new(&mut this.buf);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            this.filled = read.filled().len();
            this.pos = 0;
        }
        Poll::Ready(Ok(&this.buf[this.pos..this.filled]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.pos = (this.pos + amt).min(this.filled);
    }
}

#[cfg(feature = "cli")]
impl<R: AsyncRead + Unpin> AsyncRead for GrowingBufReader<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = {
            let available = ready!(self.as_mut().poll_fill_buf(cx))?;
            let n = available.len().min(out.remaining());
            out.put_slice(&available[..n]);
            n
        };
        self.consume(n);
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn lines(input: &'static [u8], max: usize) -> Vec<Result<String, String>> {
        let mut r = LineReader::new(BufReader::with_capacity(4, input), max);
        let mut out = Vec::new();
        loop {
            match r.next_line().await {
                Ok(Some(l)) => out.push(Ok(String::from_utf8_lossy(l).into_owned())),
                Ok(None) => break,
                Err(e) => out.push(Err(e.to_string())),
            }
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_across_reads() {
        assert_eq!(
            lines(b"{\"a\":1}\r\n\n  \n{\"b\":22}\nlast", 64).await,
            vec![
                Ok("{\"a\":1}".to_string()),
                Ok("{\"b\":22}".to_string()),
                Ok("last".to_string())
            ]
        );
    }

    #[tokio::test]
    async fn a_long_line_is_an_error_and_reading_goes_on() {
        assert_eq!(
            lines(b"short\n0123456789abcdef\nok\n", 8).await,
            vec![
                Ok("short".to_string()),
                Err("a line of more than 8 bytes".to_string()),
                Ok("ok".to_string())
            ]
        );
        // Exactly at the bound is fine.
        assert_eq!(lines(b"12345678\n", 8).await, vec![Ok("12345678".into())]);
    }

    #[tokio::test]
    async fn stopping_at_the_bound_reads_no_further_than_the_bound() {
        // A line that never ends: the error comes once the bound is passed,
        // having read at most the bound and one buffer more.
        let endless = tokio::io::repeat(b'x');
        let mut r = LineReader::new(BufReader::with_capacity(16, endless), 64).stop_at_bound();
        let out = tokio::time::timeout(std::time::Duration::from_secs(5), r.next_line()).await;
        assert!(
            matches!(out, Ok(Err(FrameError::TooLong { max: 64 }))),
            "{out:?}"
        );
        // Lines within the bound read as before.
        let mut r =
            LineReader::new(BufReader::with_capacity(4, &b"ok\nfine\n"[..]), 64).stop_at_bound();
        assert_eq!(r.next_line().await.unwrap(), Some(&b"ok"[..]));
        assert_eq!(r.next_line().await.unwrap(), Some(&b"fine"[..]));
        assert_eq!(r.next_line().await.unwrap(), None);
    }

    #[cfg(feature = "cli")]
    #[tokio::test]
    async fn a_growing_buffer_reads_every_line_and_grows_only_for_large_ones() {
        use tokio::io::AsyncWriteExt;
        let (mut tx, rx) = tokio::io::duplex(1 << 20);
        let big = "y".repeat(100_000);
        let input = format!("small\n{big}\nafter\n");
        tx.write_all(input.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        drop(tx);
        let mut r = LineReader::new(GrowingBufReader::new(rx, 64 << 10), 1 << 20);
        assert_eq!(r.next_line().await.unwrap(), Some(&b"small"[..]));
        // The first read took all the room there was: it grows, to the bound.
        assert_eq!(r.next_line().await.unwrap(), Some(big.as_bytes()));
        assert_eq!(r.inner.buf.len(), 64 << 10);
        assert_eq!(r.next_line().await.unwrap(), Some(&b"after"[..]));
        assert_eq!(r.next_line().await.unwrap(), None);

        // Small messages, each read alone: the room stays where it began.
        let (mut tx, rx) = tokio::io::duplex(1 << 16);
        let mut r = LineReader::new(GrowingBufReader::new(rx, 64 << 10), 1 << 20);
        for i in 0..100 {
            let line = format!("{{\"id\":{i}}}\n");
            tx.write_all(line.as_bytes())
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let got = r.next_line().await.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(got, Some(line.trim_end().as_bytes()));
        }
        assert_eq!(r.inner.buf.len(), FIRST_ROOM);
    }
}
