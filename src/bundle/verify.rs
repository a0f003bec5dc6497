//! Reading a bundle: its shape and bounds, the signature, every digest,
//! then the policies, in that order; the first failure refuses it.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::sync::Arc;

use ed25519_dalek::{Signature, VerifyingKey};

use super::check::check_files;
use super::{
    key_id, path_problem, revision_problem, sha256, unhex, BundleError, Envelope, Manifest, Step,
    FORMAT, MAX_BUNDLE_BYTES, MAX_FILES, MAX_FILE_BYTES, MAX_MANIFEST_BYTES,
};
use crate::Policy;

/// A bundle that passed every step.
pub(crate) struct Verified {
    pub(crate) manifest: Manifest,
    /// `sha256:` of the whole bundle file.
    pub(crate) digest: String,
    /// Every policy, compiled, with the path of its file (what `--bundle`
    /// swaps into the store).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) policies: BTreeMap<String, (Arc<Policy>, String)>,
}

impl std::fmt::Debug for Verified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verified")
            .field("revision", &self.manifest.revision)
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

fn format_error(message: impl Into<String>) -> BundleError {
    BundleError::new(Step::Format, message)
}

/// The envelope, within its bounds.
fn envelope(bytes: &[u8]) -> Result<Envelope, BundleError> {
    if bytes.len() as u64 > MAX_BUNDLE_BYTES {
        return Err(format_error(format!(
            "the bundle has {} bytes, over the {MAX_BUNDLE_BYTES}-byte limit",
            bytes.len()
        )));
    }
    let envelope: Envelope = serde_json::from_slice(bytes).map_err(|e| {
        let what = if e.is_eof() {
            "the bundle is truncated (cut short: a download that stopped?)"
        } else {
            "the bundle is not an mcppol bundle"
        };
        format_error(format!("{what}: {e}"))
            .help("build bundles with `mcppol bundle build`, and fetch the whole file")
    })?;
    if envelope.mcppol_bundle != FORMAT {
        return Err(format_error(format!(
            "the bundle is format {}; this mcppol reads format {FORMAT}",
            envelope.mcppol_bundle
        )));
    }
    if envelope.manifest.len() > MAX_MANIFEST_BYTES {
        return Err(format_error(format!(
            "the manifest is over the {MAX_MANIFEST_BYTES}-byte limit"
        )));
    }
    if envelope.files.len() > MAX_FILES {
        return Err(format_error(format!(
            "the bundle holds {} files, over the limit of {MAX_FILES}",
            envelope.files.len()
        )));
    }
    Ok(envelope)
}

/// The manifest's fields, within their bounds (called once the signature
/// is good, or by `inspect`, which says it did not check it).
fn manifest(envelope: &Envelope) -> Result<Manifest, BundleError> {
    let manifest: Manifest = serde_json::from_str(&envelope.manifest)
        .map_err(|e| format_error(format!("the manifest does not read: {e}")))?;
    if manifest.mcppol_bundle != FORMAT {
        return Err(format_error(format!(
            "the manifest is format {}; this mcppol reads format {FORMAT}",
            manifest.mcppol_bundle
        )));
    }
    if let Some(problem) = revision_problem(&manifest.revision) {
        return Err(format_error(format!("the manifest's revision: {problem}")));
    }
    if manifest.files.len() > MAX_FILES {
        return Err(format_error(format!(
            "the manifest lists {} files, over the limit of {MAX_FILES}",
            manifest.files.len()
        )));
    }
    let mut seen = BTreeSet::new();
    for file in &manifest.files {
        if let Some(problem) = path_problem(&file.path) {
            return Err(format_error(format!(
                "the manifest lists `{}`: {problem}",
                file.path.escape_debug()
            )));
        }
        if !seen.insert(file.path.to_lowercase()) {
            return Err(format_error(format!(
                "the manifest lists `{}` twice (paths are compared without case)",
                file.path
            )));
        }
    }
    Ok(manifest)
}

/// Every file: the manifest's paths in its order, each with the size and
/// SHA-256 the manifest gives.
fn digests(envelope: &Envelope, manifest: &Manifest) -> Result<(), BundleError> {
    let listed: BTreeSet<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    for (i, file) in envelope.files.iter().enumerate() {
        let Some(entry) = manifest.files.get(i) else {
            return Err(BundleError::new(
                Step::Digest,
                format!(
                    "file `{}` is not in the signed manifest",
                    file.path.escape_debug()
                ),
            ));
        };
        if entry.path != file.path {
            let message = if listed.contains(file.path.as_str()) {
                format!(
                    "file `{}` is out of the manifest's order, or there twice",
                    file.path
                )
            } else {
                format!(
                    "file `{}` is not in the signed manifest",
                    file.path.escape_debug()
                )
            };
            return Err(BundleError::new(Step::Digest, message));
        }
        if file.text.len() > MAX_FILE_BYTES {
            return Err(format_error(format!(
                "file `{}` is over the {MAX_FILE_BYTES}-byte limit",
                file.path
            )));
        }
        let digest = sha256(file.text.as_bytes());
        if digest != entry.sha256 || file.text.len() as u64 != entry.bytes {
            return Err(BundleError::new(
                Step::Digest,
                format!(
                    "file `{}` is not the file that was signed: its digest is {digest} ({} bytes), the manifest's {} ({} bytes)",
                    file.path,
                    file.text.len(),
                    entry.sha256,
                    entry.bytes
                ),
            )
            .help("the file was changed after the bundle was built: build and sign it again"));
        }
    }
    if let Some(missing) = manifest.files.get(envelope.files.len()) {
        return Err(BundleError::new(
            Step::Digest,
            format!("file `{}` of the manifest is missing", missing.path),
        ));
    }
    Ok(())
}

/// Verifies a bundle with `key`: the signature first, then every digest,
/// then that the policies check.
pub(crate) fn verify(bytes: &[u8], key: &VerifyingKey) -> Result<Verified, BundleError> {
    let envelope = envelope(bytes)?;
    let signature = unhex(&envelope.signature)
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
        .map(|b| Signature::from_bytes(&b))
        .ok_or_else(|| {
            BundleError::new(
                Step::Signature,
                "the signature is not 128 hex digits (an Ed25519 signature)",
            )
        })?;
    if key
        .verify_strict(envelope.manifest.as_bytes(), &signature)
        .is_err()
    {
        // Unverified, so only a hint: the key the manifest claims.
        let claimed = serde_json::from_str::<Manifest>(&envelope.manifest)
            .map(|m| m.key)
            .unwrap_or_default();
        let given = key_id(key);
        let mut error = BundleError::new(
            Step::Signature,
            format!("the signature does not verify with key {given}: the manifest was changed, or signed by another key"),
        );
        if !claimed.is_empty() && claimed != given {
            error = error.help(format!(
                "the manifest says it was signed by key {claimed}: give that key's public half"
            ));
        }
        return Err(error);
    }
    let manifest = manifest(&envelope)?;
    digests(&envelope, &manifest)?;
    let checked = check_files(&envelope.files)?;
    let names: Vec<&String> = checked.policies.keys().collect();
    if names
        .iter()
        .map(|s| s.as_str())
        .ne(manifest.policies.iter().map(String::as_str))
    {
        return Err(BundleError::new(
            Step::Policy,
            format!(
                "the files define the policies {:?}, the manifest lists {:?}",
                names, manifest.policies
            ),
        ));
    }
    Ok(Verified {
        manifest,
        digest: sha256(bytes),
        policies: checked.policies,
    })
}

/// What `inspect` shows: the manifest and the digest, read without a key
/// (the signature is not checked; the file digests are).
pub(crate) fn inspect(bytes: &[u8]) -> Result<(Manifest, String, String), BundleError> {
    let envelope = envelope(bytes)?;
    let manifest = manifest(&envelope)?;
    digests(&envelope, &manifest)?;
    Ok((manifest, sha256(bytes), envelope.signature))
}
