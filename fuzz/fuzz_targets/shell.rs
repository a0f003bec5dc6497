//! Shell command lines: any text is read into its simple commands or
//! refused, never a panic, within the reader's bounds; and a line over the
//! length bound is always refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcppol::fuzzing::read_command_line;

fuzz_target!(|line: String| {
    let read = read_command_line(&line);
    if line.len() > 16 * 1024 {
        assert!(read.is_err(), "a {}-byte line was read", line.len());
    }
    if let Ok((commands, _)) = read {
        assert!(commands <= 256, "{commands} commands");
    }
});
