//! Ed25519 keys in PKCS#8 / SPKI PEM: what `openssl genpkey -algorithm
//! ed25519` writes, and what `mcppol bundle keygen` writes.

use std::path::Path;

use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use ed25519_dalek::pkcs8::{DecodePublicKey, EncodePublicKey};
use ed25519_dalek::{SigningKey, VerifyingKey};

use super::{BundleError, Step};

/// The most a key file may hold (a PEM Ed25519 key is about 120 bytes).
const MAX_KEY_BYTES: u64 = 64 * 1024;

fn read_key_text(path: &Path, what: &str) -> Result<String, BundleError> {
    crate::io::read_text(path, MAX_KEY_BYTES, what).map_err(|e| BundleError::new(Step::Read, e))
}

/// The signing key of a PKCS#8 PEM file (`-----BEGIN PRIVATE KEY-----`).
pub(crate) fn read_signing_key(path: &Path) -> Result<SigningKey, BundleError> {
    let text = read_key_text(path, "signing key")?;
    SigningKey::from_pkcs8_pem(&text).map_err(|e| {
        BundleError::new(
            Step::Read,
            format!(
                "`{}` is not an Ed25519 private key in PKCS#8 PEM: {e}",
                path.display()
            ),
        )
        .help("make one with `mcppol bundle keygen`, or `openssl genpkey -algorithm ed25519`")
    })
}

/// The public key of a PEM file (`-----BEGIN PUBLIC KEY-----`).
pub(crate) fn read_verifying_key(path: &Path) -> Result<VerifyingKey, BundleError> {
    let text = read_key_text(path, "public key")?;
    VerifyingKey::from_public_key_pem(&text).map_err(|e| {
        let help = if text.contains("PRIVATE KEY") {
            "this is a private key: give its public half (`mcppol bundle keygen` writes both; `openssl pkey -in KEY -pubout`)"
        } else {
            "give the `.pub` file `mcppol bundle keygen` wrote, or `openssl pkey -in KEY -pubout`"
        };
        BundleError::new(
            Step::Read,
            format!("`{}` is not an Ed25519 public key in PEM: {e}", path.display()),
        )
        .help(help)
    })
}

/// A short id of a public key: `ed25519:` and the first 16 hex digits of
/// the SHA-256 of its 32 bytes. The manifest names the key that signed it,
/// so a bundle checked with the wrong key says which one it wants.
pub(crate) fn key_id(key: &VerifyingKey) -> String {
    let digest = super::sha256(key.as_bytes());
    let hex = digest.trim_start_matches("sha256:");
    format!("ed25519:{}", hex.get(..16).unwrap_or(hex))
}

/// A new key pair: the private key (PKCS#8 PEM) written to `private`, with
/// mode 0600 on Unix, and the public key to `public`. Neither may exist.
pub(crate) fn write_keypair(private: &Path, public: &Path) -> Result<String, BundleError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|e| BundleError::new(Step::Read, format!("no randomness from the system: {e}")))?;
    let key = SigningKey::from_bytes(&seed);
    let cannot = |what: &str, e: &dyn std::fmt::Display| {
        BundleError::new(Step::Read, format!("cannot encode the {what} key: {e}"))
    };
    let private_pem = key
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|e| cannot("private", &e))?;
    let public_pem = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .map_err(|e| cannot("public", &e))?;
    write_new(private, private_pem.as_bytes(), 0o600)?;
    write_new(public, public_pem.as_bytes(), 0o644)?;
    Ok(key_id(&key.verifying_key()))
}

/// Writes a file that must not exist yet (never overwrites a key).
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), BundleError> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let cannot = |e: std::io::Error| {
        BundleError::new(
            Step::Read,
            format!("cannot write `{}`: {e}", path.display()),
        )
        .help("keygen never overwrites a key: remove the file or name another")
    };
    let mut file = options.open(path).map_err(cannot)?;
    file.write_all(bytes).map_err(cannot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_pair_reads_back_and_signs() {
        use ed25519_dalek::{Signer, Verifier};
        let dir = tempfile::tempdir().unwrap();
        let (private, public) = (dir.path().join("k.pem"), dir.path().join("k.pub"));
        let id = write_keypair(&private, &public).unwrap();
        let signing = read_signing_key(&private).unwrap();
        let verifying = read_verifying_key(&public).unwrap();
        assert_eq!(key_id(&verifying), id);
        let signature = signing.sign(b"manifest");
        assert!(verifying.verify(b"manifest", &signature).is_ok());
        // Never overwritten.
        assert!(write_keypair(&private, &dir.path().join("other.pub")).is_err());
        // A private key is not a public one, and says so.
        let err = read_verifying_key(&private).unwrap_err();
        assert!(err.help.unwrap().contains("private key"));
    }
}
