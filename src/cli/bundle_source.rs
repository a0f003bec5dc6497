//! `--bundle URL --bundle-pub PEM [--bundle-poll SECS]` on the relaying
//! front doors (`proxy`, `gateway`): their policies from a signed bundle,
//! with the same rules as `serve --bundle` (no start without a good
//! bundle: exit 2; a refused bundle keeps the last good one and is logged).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::{color, exit, usage_error};
use crate::bundle::{self, BundleFeed, Location};
use crate::{LoadOptions, Store};

/// The bundle flags, flattened into a front door's arguments.
#[derive(Args, Debug, Clone)]
pub(super) struct BundleFlags {
    /// Instead of --policy: a signed bundle (`mcppol bundle build`), an
    /// http(s) URL or a `file:///` path, polled; each new revision is
    /// verified with --bundle-pub and swapped in whole.
    #[arg(
        long,
        value_name = "URL",
        requires = "bundle_pub",
        conflicts_with = "policy"
    )]
    pub(super) bundle: Option<String>,
    /// The Ed25519 public key (PEM) every bundle must be signed with.
    #[arg(long = "bundle-pub", value_name = "PEM", requires = "bundle")]
    pub(super) bundle_pub: Option<PathBuf>,
    /// How often the bundle is checked, in seconds (at least 1; after a
    /// failure the wait doubles, up to 8 times this).
    #[arg(
        long = "bundle-poll",
        value_name = "SECS",
        default_value_t = 30,
        requires = "bundle"
    )]
    pub(super) bundle_poll: u64,
}

/// The store of the first bundle at `url`, which must load, and the feed
/// that polls for the next ones (started with [`start_polling`]). Runs on
/// `runtime`, the one the front door then serves on (the feed's HTTP
/// client stays on it).
pub(super) fn open(
    runtime: &tokio::runtime::Runtime,
    url: &str,
    flags: &BundleFlags,
) -> Result<(Arc<Store>, Arc<BundleFeed>), u8> {
    let location = Location::parse(url).map_err(|e| usage_error(&e, None))?;
    let Some(key_path) = &flags.bundle_pub else {
        return Err(usage_error("--bundle needs --bundle-pub PEM", None));
    };
    let key = bundle::read_verifying_key(key_path).map_err(|e| {
        eprint!("{}", e.render(color()));
        exit::USAGE
    })?;
    let feed = BundleFeed::new(location, key, Duration::from_secs(flags.bundle_poll))
        .map_err(|e| usage_error(&e, None))?;
    let store = Store::empty(LoadOptions::default());
    if let Err(mut e) = runtime.block_on(feed.check(&store)) {
        e.message = format!(
            "--bundle {url}: no good bundle to start with: {}",
            e.message
        );
        eprint!("{}", e.render(color()));
        return Err(exit::USAGE);
    }
    Ok((Arc::new(store), Arc::new(feed)))
}

/// Polls the feed into the store, forever, on `runtime`.
pub(super) fn start_polling(
    runtime: &tokio::runtime::Runtime,
    feed: Arc<BundleFeed>,
    store: Arc<Store>,
) {
    runtime.spawn(async move { feed.poll(&store).await });
}

/// The policy `name` (or the only one) of a store loaded from a bundle;
/// the usage error's status otherwise.
pub(super) fn pick_name(store: &Store, url: &str, name: Option<&str>) -> Result<String, u8> {
    let names = store.names();
    match (name, names.as_slice()) {
        (Some(n), _) if names.iter().any(|k| k == n) => Ok(n.to_string()),
        (Some(n), _) => Err(usage_error(
            &format!("the bundle {url} holds no policy `{n}`"),
            Some(&format!("it holds: {}", names.join(", "))),
        )),
        (None, [only]) => Ok(only.clone()),
        (None, _) => Err(usage_error(
            &format!("the bundle {url} holds several policies"),
            Some(&format!("pick one with --name ({})", names.join(", "))),
        )),
    }
}

/// The bundle file of a `file://` URL: a file no governed call may write,
/// as a policy file is.
fn local_file(url: &str) -> Option<PathBuf> {
    url.strip_prefix("file://").map(PathBuf::from)
}

/// `protected`, with the bundle file of a `file://` `--bundle` added.
pub(super) fn protect_local(
    flags: &BundleFlags,
    mut protected: crate::protected::Protected,
) -> crate::protected::Protected {
    if let Some(file) = flags.bundle.as_deref().and_then(local_file) {
        protected.file(&file);
    }
    protected
}
