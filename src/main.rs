//! The `mcppol` command line. It lives in the library behind the `cli`
//! feature; this only hands over the exit status.

fn main() -> std::process::ExitCode {
    mcppol::__cli_main()
}
