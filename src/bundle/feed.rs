//! `--bundle URL --bundle-pub KEY [--bundle-poll SECS]`: a front door's
//! policies from a signed bundle, polled. Each new bundle is fetched (an
//! HTTP(S) GET with `If-None-Match`, or a `file://` read), verified
//! (signature, digests, policies: [`super::verify`]) and swapped into the
//! store at once; a bundle that fails any step changes nothing, and the
//! failure is logged and kept for the status until a good one loads.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use ed25519_dalek::VerifyingKey;
use serde_json::{json, Value};

use super::{sha256, verify, BundleError, Step, Verified, MAX_BUNDLE_BYTES};
use crate::store::{BundleStamp, Store};

/// The shortest `--bundle-poll` (a replica must not hammer the server).
pub(crate) const MIN_POLL: Duration = Duration::from_secs(1);
/// The longest a fetch may take, connecting and reading.
const FETCH_TIMEOUT: Duration = Duration::from_secs(60);
/// After failed fetches the wait doubles, up to this many polling intervals.
const MAX_BACKOFF_FACTOR: u32 = 8;

/// Where a bundle comes from.
#[derive(Debug, Clone)]
pub(crate) enum Location {
    File(PathBuf),
    Http(reqwest::Url),
}

impl Location {
    /// `file:///ABSOLUTE/PATH`, `http://...` or `https://...`.
    pub(crate) fn parse(text: &str) -> Result<Location, String> {
        if let Some(path) = text.strip_prefix("file://") {
            let path = PathBuf::from(path);
            if !path.is_absolute() {
                return Err(format!(
                    "--bundle `{text}`: a file URL takes an absolute path (`file:///srv/policy.bundle`)"
                ));
            }
            return Ok(Location::File(path));
        }
        match reqwest::Url::parse(text) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(Location::Http(url)),
            _ => Err(format!(
                "--bundle `{text}`: not an http(s) URL or a file:// path (`https://policies.example/policy.bundle`, `file:///srv/policy.bundle`)"
            )),
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(path) => write!(f, "file://{}", path.display()),
            Location::Http(url) => f.write_str(url.as_str()),
        }
    }
}

/// The bundle in force.
#[derive(Debug, Clone)]
struct Active {
    revision: String,
    digest: String,
    built_at: String,
    key: String,
    policies: Vec<String>,
    loaded_at: SystemTime,
}

/// A bundle that did not load.
#[derive(Debug, Clone)]
struct Failure {
    step: Step,
    message: String,
    digest: Option<String>,
    at: SystemTime,
}

#[derive(Debug, Default)]
struct FeedState {
    active: Option<Active>,
    /// The `ETag` of the last body read whole.
    etag: Option<String>,
    /// The digest of the last bundle read whole, good or bad: the same
    /// bytes again are not verified again.
    seen: Option<String>,
    last_error: Option<Failure>,
    checks: u64,
    failures: u64,
    failing: u32,
    last_check: Option<SystemTime>,
}

/// A bundle source, polled into a store.
pub(crate) struct BundleFeed {
    location: Location,
    key: VerifyingKey,
    interval: Duration,
    client: reqwest::Client,
    state: Mutex<FeedState>,
}

enum Fetched {
    Unchanged,
    Body {
        bytes: Vec<u8>,
        etag: Option<String>,
    },
}

fn time(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

impl BundleFeed {
    pub(crate) fn new(
        location: Location,
        key: VerifyingKey,
        interval: Duration,
    ) -> Result<BundleFeed, String> {
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("mcppol/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
        Ok(BundleFeed {
            location,
            key,
            interval: interval.max(MIN_POLL),
            client,
            state: Mutex::new(FeedState::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, FeedState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn fetch(&self, etag: Option<String>) -> Result<Fetched, BundleError> {
        let read_error = |message: String| BundleError::new(Step::Read, message);
        match &self.location {
            Location::File(path) => {
                let path = path.clone();
                let bytes = tokio::task::spawn_blocking(move || {
                    crate::io::read_bounded(&path, MAX_BUNDLE_BYTES, "bundle")
                })
                .await
                .map_err(|e| read_error(format!("the read stopped: {e}")))?
                .map_err(read_error)?;
                Ok(Fetched::Body { bytes, etag: None })
            }
            Location::Http(url) => {
                let mut request = self.client.get(url.clone());
                if let Some(etag) = etag {
                    request = request.header(reqwest::header::IF_NONE_MATCH, etag);
                }
                let mut response = request
                    .send()
                    .await
                    .map_err(|e| read_error(format!("cannot fetch {url}: {}", describe(&e))))?;
                let status = response.status();
                if status == reqwest::StatusCode::NOT_MODIFIED {
                    return Ok(Fetched::Unchanged);
                }
                if !status.is_success() {
                    return Err(read_error(format!("{url} answered {status}")));
                }
                let etag = response
                    .headers()
                    .get(reqwest::header::ETAG)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                if response
                    .content_length()
                    .is_some_and(|n| n > MAX_BUNDLE_BYTES)
                {
                    return Err(read_error(format!(
                        "{url} sends more than {MAX_BUNDLE_BYTES} bytes, the most a bundle may have"
                    )));
                }
                let mut bytes = Vec::new();
                while let Some(chunk) = response.chunk().await.map_err(|e| {
                    read_error(format!("the download of {url} broke: {}", describe(&e)))
                })? {
                    if (bytes.len() + chunk.len()) as u64 > MAX_BUNDLE_BYTES {
                        return Err(read_error(format!(
                            "{url} sends more than {MAX_BUNDLE_BYTES} bytes, the most a bundle may have"
                        )));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(Fetched::Body { bytes, etag })
            }
        }
    }

    /// Fetches the bundle and, when it is new, verifies it and swaps it in.
    /// `Ok(true)` when a new bundle is in force, `Ok(false)` when nothing
    /// changed; an error when the bundle did not load (the last good one
    /// stays, and the status shows why).
    pub(crate) async fn check(&self, store: &Store) -> Result<bool, BundleError> {
        let etag = {
            let mut state = self.state();
            state.checks += 1;
            state.last_check = Some(SystemTime::now());
            state.etag.clone()
        };
        let result = self.fetch_and_verify(etag).await;
        let mut state = self.state();
        match result {
            Ok(None) => {
                state.failing = 0;
                Ok(false)
            }
            Ok(Some(verified)) => {
                let stamp = BundleStamp {
                    revision: verified.manifest.revision.clone(),
                    digest: verified.digest.clone(),
                };
                let policies = verified
                    .policies
                    .iter()
                    .map(|(name, (policy, path))| {
                        let digest = verified
                            .manifest
                            .files
                            .iter()
                            .find(|f| &f.path == path)
                            .map(|f| f.sha256.clone())
                            .unwrap_or_default();
                        (name.clone(), Arc::clone(policy), path.clone(), digest)
                    })
                    .collect();
                let generation = store.install_bundle(stamp, policies);
                let m = &verified.manifest;
                tracing::info!(
                    target: "mcppol::bundle",
                    source = %self.location,
                    revision = %m.revision,
                    digest = %verified.digest,
                    generation,
                    "bundle loaded"
                );
                state.active = Some(Active {
                    revision: m.revision.clone(),
                    digest: verified.digest.clone(),
                    built_at: m.built_at.clone(),
                    key: m.key.clone(),
                    policies: m.policies.clone(),
                    loaded_at: SystemTime::now(),
                });
                state.last_error = None;
                state.failing = 0;
                Ok(true)
            }
            Err((e, digest)) => {
                state.failures += 1;
                store.bundle_failed();
                // Backoff spares a server that fails or cannot be reached;
                // a bundle that is refused is not fetched again anyway
                // (304, or the same digest), so the interval stays.
                if e.step == Step::Read {
                    state.failing = state.failing.saturating_add(1);
                } else {
                    state.failing = 0;
                }
                tracing::error!(
                    target: "mcppol::bundle",
                    source = %self.location,
                    step = e.step.as_str(),
                    digest = digest.as_deref().unwrap_or(""),
                    "bundle refused; the last good one stays in force: {e}"
                );
                state.last_error = Some(Failure {
                    step: e.step,
                    message: e.to_string(),
                    digest,
                    at: SystemTime::now(),
                });
                Err(e)
            }
        }
    }

    /// `Ok(None)`: nothing new. The error carries the digest of the bytes
    /// refused, when they were read whole.
    async fn fetch_and_verify(
        &self,
        etag: Option<String>,
    ) -> Result<Option<Verified>, (BundleError, Option<String>)> {
        let (bytes, etag) = match self.fetch(etag).await.map_err(|e| (e, None))? {
            Fetched::Unchanged => return Ok(None),
            Fetched::Body { bytes, etag } => (bytes, etag),
        };
        let digest = sha256(&bytes);
        {
            let mut state = self.state();
            if state.seen.as_deref() == Some(digest.as_str()) {
                state.etag = etag;
                return Ok(None);
            }
            // Read whole: good or bad, these bytes need not be read again.
            state.seen = Some(digest.clone());
            state.etag = etag;
        }
        let key = self.key;
        let verified = tokio::task::spawn_blocking(move || verify(&bytes, &key))
            .await
            .map_err(|e| {
                (
                    BundleError::new(Step::Read, format!("the verification stopped: {e}")),
                    Some(digest.clone()),
                )
            })?
            .map_err(|e| (e, Some(digest.clone())))?;
        let active = self.state().active.clone();
        match active.as_ref().map(|a| not_newer(&verified, a)) {
            Some(Err(e)) => Err((e, Some(digest))),
            // The very bundle in force (fetched again after its ETag changed).
            Some(Ok(false)) => Ok(None),
            None | Some(Ok(true)) => Ok(Some(verified)),
        }
    }

    /// How long to wait before the next check: the interval, doubled after
    /// each failed fetch in a row, up to [`MAX_BACKOFF_FACTOR`] times.
    pub(crate) fn next_wait(&self) -> Duration {
        let failing = self.state().failing.min(3);
        let factor = 2u32.pow(failing).min(MAX_BACKOFF_FACTOR);
        self.interval.saturating_mul(factor)
    }

    /// Checks for a new bundle forever, at the polling interval.
    pub(crate) async fn poll(&self, store: &Store) {
        loop {
            tokio::time::sleep(self.next_wait()).await;
            let _ = self.check(store).await;
        }
    }

    /// The feed's state for `/v1/status`.
    pub(crate) fn status_json(&self) -> Value {
        let state = self.state();
        json!({
            "source": self.location.to_string(),
            "poll_seconds": self.interval.as_secs(),
            "revision": state.active.as_ref().map(|a| a.revision.clone()),
            "digest": state.active.as_ref().map(|a| a.digest.clone()),
            "built_at": state.active.as_ref().map(|a| a.built_at.clone()),
            "key": state.active.as_ref().map(|a| a.key.clone()),
            "policies": state.active.as_ref().map(|a| a.policies.clone()),
            "loaded_at": state.active.as_ref().map(|a| time(a.loaded_at)),
            "checks": state.checks,
            "failures": state.failures,
            "last_check": state.last_check.map(time),
            "last_error": state.last_error.as_ref().map(|f| json!({
                "step": f.step.as_str(),
                "message": f.message,
                "digest": f.digest,
                "at": time(f.at),
            })),
        })
    }
}

/// Rollback protection: whether `candidate`, verified, may replace the
/// bundle in force. `Ok(false)` when it is that bundle; refused (step
/// `revision`) when it was built before it (its signed `built_at`), or
/// carries its revision with other content (a revision names one bundle).
/// Build times, not revision names, are compared: a revision may be a
/// commit id, which has no order.
fn not_newer(candidate: &Verified, active: &Active) -> Result<bool, BundleError> {
    let m = &candidate.manifest;
    if candidate.digest == active.digest {
        return Ok(false);
    }
    let refuse = |message: String| {
        BundleError::new(Step::Revision, message).help(
            "an older bundle is never swapped in: to go back, build the old policies again as a new revision",
        )
    };
    if m.revision == active.revision {
        return Err(refuse(format!(
            "revision `{}` is the one in force, with other content ({}, in force {}): a revision names one bundle",
            m.revision, candidate.digest, active.digest
        )));
    }
    let Ok(built) = humantime::parse_rfc3339(&m.built_at) else {
        return Err(refuse(format!(
            "revision `{}`: its build time `{}` is not an RFC 3339 time, so it cannot be told newer than the one in force",
            m.revision, m.built_at
        )));
    };
    // A bundle in force whose time cannot be read orders nothing.
    if let Ok(in_force) = humantime::parse_rfc3339(&active.built_at) {
        if built < in_force {
            return Err(refuse(format!(
                "revision `{}` was built at {}, before revision `{}` in force (built at {})",
                m.revision, m.built_at, active.revision, active.built_at
            )));
        }
    }
    Ok(true)
}

/// A reqwest error in words, with its causes.
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_is_a_file_url_or_an_http_url() {
        assert!(matches!(
            Location::parse("file:///srv/policy.bundle"),
            Ok(Location::File(p)) if p == std::path::Path::new("/srv/policy.bundle")
        ));
        assert!(matches!(
            Location::parse("https://policies.example/p.bundle"),
            Ok(Location::Http(_))
        ));
        for bad in [
            "file://relative/p.bundle",
            "ftp://x/p.bundle",
            "/srv/p.bundle",
            "",
        ] {
            assert!(Location::parse(bad).is_err(), "{bad}");
        }
    }

    fn verified(revision: &str, built_at: &str, digest: &str) -> Verified {
        Verified {
            manifest: super::super::Manifest {
                mcppol_bundle: 1,
                revision: revision.into(),
                built_at: built_at.into(),
                key: "ed25519:0".into(),
                policies: Vec::new(),
                files: Vec::new(),
            },
            digest: digest.into(),
            policies: Default::default(),
        }
    }

    #[test]
    fn an_older_build_or_a_revision_with_other_content_is_refused() {
        let active = Active {
            revision: "r7".into(),
            digest: "sha256:7".into(),
            built_at: "2026-12-02T10:00:00Z".into(),
            key: "ed25519:0".into(),
            policies: Vec::new(),
            loaded_at: SystemTime::now(),
        };
        let check = |rev: &str, at: &str, digest: &str| {
            not_newer(&verified(rev, at, digest), &active).map_err(|e| (e.step, e.message))
        };
        // Newer, or built in the same second: swapped in.
        assert!(matches!(
            check("r8", "2026-12-02T11:00:00Z", "sha256:8"),
            Ok(true)
        ));
        assert!(matches!(
            check("r8", "2026-12-02T10:00:00Z", "sha256:8"),
            Ok(true)
        ));
        // The bundle in force itself: nothing new.
        assert!(matches!(
            check("r7", "2026-12-02T10:00:00Z", "sha256:7"),
            Ok(false)
        ));
        // Built before the one in force, whatever its revision says.
        let (step, message) = check("r9", "2026-12-02T09:59:59Z", "sha256:9").unwrap_err();
        assert_eq!(step, Step::Revision);
        assert!(message.contains("before revision `r7`"), "{message}");
        // The revision in force with other content, even built later.
        let (step, message) = check("r7", "2026-12-02T12:00:00Z", "sha256:x").unwrap_err();
        assert_eq!(step, Step::Revision);
        assert!(message.contains("a revision names one bundle"), "{message}");
        // A build time that cannot be read is not newer.
        assert!(check("r8", "yesterday", "sha256:8").is_err());
    }

    #[test]
    fn failed_fetches_back_off_up_to_eight_intervals_and_refusals_do_not() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]).verifying_key();
        let feed = BundleFeed::new(
            Location::File("/nonexistent/mcppol/p.bundle".into()),
            key,
            Duration::from_secs(2),
        )
        .unwrap();
        let store = Store::empty(crate::LoadOptions::default());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut waits = Vec::new();
        for _ in 0..5 {
            let e = runtime.block_on(feed.check(&store)).unwrap_err();
            assert_eq!(e.step, Step::Read);
            waits.push(feed.next_wait().as_secs());
        }
        assert_eq!(waits, [4, 8, 16, 16, 16]);
        let status = feed.status_json();
        assert_eq!(status["failures"], 5);
        assert_eq!(status["revision"], Value::Null);
        assert_eq!(status["last_error"]["step"], "read");
        // A refused bundle (not a failed fetch) resets the backoff.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.bundle");
        std::fs::write(&path, "{}").unwrap();
        let feed = BundleFeed {
            location: Location::File(path),
            ..feed
        };
        let e = runtime.block_on(feed.check(&store)).unwrap_err();
        assert_eq!(e.step, Step::Format);
        assert_eq!(feed.next_wait(), Duration::from_secs(2));
        // The same bytes again: nothing new, no second failure.
        assert!(!runtime.block_on(feed.check(&store)).unwrap());
        assert_eq!(feed.status_json()["failures"], 6);
        assert_eq!(store.generation(), 0);
    }
}
