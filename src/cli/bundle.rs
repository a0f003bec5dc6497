//! `mcppol bundle`: build, verify and inspect signed policy bundles, and
//! make the Ed25519 key pair that signs them (the format: `crate::bundle`).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use clap::{Args, Subcommand};
use serde_json::json;

use super::{color, exit, usage_error, Format};
use crate::bundle::{self, BuildOptions, BundleError, Step};

#[derive(Args, Debug)]
pub struct BundleArgs {
    #[command(subcommand)]
    command: BundleCommand,
}

#[derive(Subcommand, Debug)]
enum BundleCommand {
    /// Check a folder's policies and sign them, with their lock files, into
    /// one bundle file.
    Build(BuildArgs),
    /// Check a bundle's signature, every file's digest, and its policies.
    Verify(VerifyArgs),
    /// Show a bundle's manifest: revision, build time, key, policies, files.
    Inspect(InspectArgs),
    /// Make an Ed25519 key pair: the private key (PKCS#8 PEM) that
    /// `build --key` signs with, and the public key `verify --pub` and
    /// `--bundle-pub` check with.
    Keygen(KeygenArgs),
}

#[derive(Args, Debug)]
struct BuildArgs {
    /// The folder of `*.mcppol` files (and `mcppol.lock`, `NAME.mcppol.lock`).
    #[arg(value_name = "POLICY_DIR")]
    dir: PathBuf,
    /// The bundle file to write (replaced whole, never half-written).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// The Ed25519 private key, PKCS#8 PEM.
    #[arg(long, value_name = "PEM")]
    key: PathBuf,
    /// The revision to record (a tag, a commit); without it, a digest of
    /// the files.
    #[arg(long, value_name = "REV")]
    revision: Option<String>,
}

#[derive(Args, Debug)]
struct VerifyArgs {
    /// The bundle file.
    #[arg(value_name = "BUNDLE")]
    bundle: PathBuf,
    /// The Ed25519 public key (PEM) the bundle must be signed with.
    #[arg(long = "pub", value_name = "PEM")]
    public: PathBuf,
    /// `human` (one line) or `json`.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

#[derive(Args, Debug)]
struct InspectArgs {
    /// The bundle file.
    #[arg(value_name = "BUNDLE")]
    bundle: PathBuf,
    /// `human` (a table) or `json` (the manifest, the digest).
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

#[derive(Args, Debug)]
struct KeygenArgs {
    /// Where the private key goes (never overwritten).
    #[arg(short = 'o', long = "output", value_name = "PEM")]
    output: PathBuf,
    /// Where the public key goes; default: the private key's path with
    /// `.pub` for its extension.
    #[arg(long = "pub", value_name = "PEM")]
    public: Option<PathBuf>,
}

pub fn run(args: BundleArgs) -> u8 {
    match args.command {
        BundleCommand::Build(a) => build(a),
        BundleCommand::Verify(a) => verify(a),
        BundleCommand::Inspect(a) => inspect(a),
        BundleCommand::Keygen(a) => keygen(a),
    }
}

/// Prints a bundle error, naming the bundle, with the status it gets: 2
/// when a file or key cannot be read (a usage error), 1 when the bundle or
/// the policies are refused.
fn refuse(file: &Path, e: &BundleError) -> u8 {
    let mut named = e.clone();
    // A file that cannot be read is named by the message already.
    if e.step != Step::Read {
        named.message = format!("`{}`: {}", file.display(), e.message);
    }
    eprint!("{}", named.render(color()));
    if e.step == Step::Read {
        exit::USAGE
    } else {
        exit::FAILED
    }
}

/// The build time: `SOURCE_DATE_EPOCH` when set (reproducible builds),
/// else now.
fn built_at() -> Result<SystemTime, String> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .map(|s| SystemTime::UNIX_EPOCH + Duration::from_secs(s))
            .map_err(|_| format!("SOURCE_DATE_EPOCH `{v}` is not a number of seconds")),
        Err(_) => Ok(SystemTime::now()),
    }
}

fn build(args: BuildArgs) -> u8 {
    let key = match bundle::read_signing_key(&args.key) {
        Ok(k) => k,
        Err(e) => return refuse(&args.key, &e),
    };
    let built_at = match built_at() {
        Ok(t) => t,
        Err(e) => return usage_error(&e, None),
    };
    let options = BuildOptions {
        revision: args.revision,
        built_at,
    };
    let built = match bundle::build(&args.dir, &key, &options) {
        Ok(b) => b,
        Err(e) => return refuse(&args.dir, &e),
    };
    eprint!("{}", crate::render_all(&built.warnings, color()));
    if let Err(e) = write_whole(&args.output, &built.bytes) {
        return usage_error(
            &format!("cannot write `{}`: {e}", args.output.display()),
            None,
        );
    }
    let m = &built.manifest;
    eprintln!(
        "built {}: revision {}, {} ({}), {} files, signed by {}",
        args.output.display(),
        m.revision,
        plural(m.policies.len(), "policy", "policies"),
        m.policies.join(", "),
        m.files.len(),
        m.key
    );
    exit::OK
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Writes a file through a temporary one beside it and a rename, so a
/// reader (a server polling the file) never sees half of it.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&temp, bytes)?;
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

fn read_bundle(path: &Path) -> Result<Vec<u8>, u8> {
    crate::io::read_bounded(path, bundle::MAX_BUNDLE_BYTES, "bundle")
        .map_err(|e| usage_error(&e, None))
}

fn verify(args: VerifyArgs) -> u8 {
    let key = match bundle::read_verifying_key(&args.public) {
        Ok(k) => k,
        Err(e) => return refuse(&args.public, &e),
    };
    let bytes = match read_bundle(&args.bundle) {
        Ok(b) => b,
        Err(status) => return status,
    };
    let verified = match bundle::verify(&bytes, &key) {
        Ok(v) => v,
        Err(e) => {
            if let Format::Json = args.format {
                println!(
                    "{}",
                    json!({"verified": false, "step": e.step.as_str(), "error": e.message})
                );
            }
            return refuse(&args.bundle, &e);
        }
    };
    let m = &verified.manifest;
    match args.format {
        Format::Human => println!(
            "{}: verified: revision {}, signed by {}, {} ({}), {} files",
            args.bundle.display(),
            m.revision,
            m.key,
            plural(m.policies.len(), "policy", "policies"),
            m.policies.join(", "),
            m.files.len()
        ),
        Format::Json => println!(
            "{}",
            json!({
                "verified": true,
                "revision": m.revision,
                "digest": verified.digest,
                "key": m.key,
                "policies": m.policies,
            })
        ),
    }
    exit::OK
}

fn inspect(args: InspectArgs) -> u8 {
    let bytes = match read_bundle(&args.bundle) {
        Ok(b) => b,
        Err(status) => return status,
    };
    let (m, digest, _) = match bundle::inspect(&bytes) {
        Ok(found) => found,
        Err(e) => return refuse(&args.bundle, &e),
    };
    match args.format {
        Format::Human => {
            println!("bundle     {}", args.bundle.display());
            println!("digest     {digest}");
            println!("revision   {}", m.revision);
            println!("built at   {}", m.built_at);
            println!(
                "signed by  {} (not verified: `mcppol bundle verify --pub KEY` checks it)",
                m.key
            );
            println!("policies   {}", m.policies.join(", "));
            println!("files      {}", m.files.len());
            for f in &m.files {
                println!("  {}  {:>8}  {}", f.sha256, f.bytes, f.path);
            }
        }
        Format::Json => println!(
            "{}",
            json!({
                "digest": digest,
                "revision": m.revision,
                "built_at": m.built_at,
                "key": m.key,
                "signature_checked": false,
                "policies": m.policies,
                "files": m.files.iter().map(|f| json!({"path": f.path, "sha256": f.sha256, "bytes": f.bytes})).collect::<Vec<_>>(),
            })
        ),
    }
    exit::OK
}

fn keygen(args: KeygenArgs) -> u8 {
    let public = args
        .public
        .clone()
        .unwrap_or_else(|| args.output.with_extension("pub"));
    if public == args.output {
        return usage_error(
            "the public key would overwrite the private key",
            Some("name the private key `NAME.pem`, or give --pub"),
        );
    }
    if public.exists() {
        return usage_error(
            &format!(
                "`{}` exists; keygen never overwrites a key",
                public.display()
            ),
            Some("remove it, or give --pub another path"),
        );
    }
    match bundle::write_keypair(&args.output, &public) {
        Ok(id) => {
            println!(
                "wrote {} (private: keep it secret) and {} (public): key {id}",
                args.output.display(),
                public.display()
            );
            exit::OK
        }
        Err(e) => refuse(&args.output, &e),
    }
}
