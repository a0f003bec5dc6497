//! The `mcppol` command line. Everything lives in `mcppol::cli`; this only
//! hands over the exit status.

fn main() -> std::process::ExitCode {
    mcppol::cli::main()
}
