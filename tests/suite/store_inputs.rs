//! The store reads only regular files, bounded: a policy file swapped for a
//! FIFO or a link to `/dev/zero` is refused at reload (the last good
//! version stays in force) instead of hanging or reading without end.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcppol::Store;
use mcppol::{LoadOptions, Request, Verdict};

#[cfg(unix)]
#[test]
fn a_policy_file_swapped_for_a_fifo_or_a_device_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.mcppol");
    std::fs::write(&file, "policy p { allow \"s/t\" }\n").unwrap();
    let store = Store::open([&file], LoadOptions::default()).unwrap();

    // A FIFO with no writer: opening it for reading would block.
    std::fs::remove_file(&file).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(&file)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(store.reload().failed, 1);
    let last = store.status().files[0].last_error.clone().unwrap();
    assert!(last.rendered.contains("is a FIFO"), "{}", last.rendered);

    // A link to an endless device.
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
    assert_eq!(store.reload().failed, 1);
    let last = store.status().files[0].last_error.clone().unwrap();
    assert!(last.rendered.contains("is a device"), "{}", last.rendered);

    let d = store.decide("p", &Request::tool("s", "t"));
    assert_eq!(d.decision, Verdict::Allow, "the last good version stays");
}

#[test]
fn a_policy_file_over_the_limit_is_refused_whatever_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.mcppol");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(9 * 1024 * 1024)
        .unwrap();
    let err = Store::open([&file], LoadOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("is more than 8388608 bytes"),
        "{err}"
    );
}
