//! `mcppol fingerprint TOOL.json`: the fingerprint of one tool definition.

use clap::Args;

use super::{exit, inputs::json_arg};

#[derive(Args, Debug)]
pub struct FingerprintArgs {
    /// A `tools/list` entry as JSON; `-` reads standard input.
    #[arg(value_name = "TOOL.json")]
    tool: String,
}

pub fn run(args: FingerprintArgs) -> u8 {
    let arg = if args.tool == "-" {
        "@-".to_string()
    } else {
        format!("@{}", args.tool)
    };
    let tool = match json_arg("fingerprint", &arg) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::FAILED;
        }
    };
    match crate::fingerprint::fingerprint(&tool) {
        Ok(fp) => {
            println!("{fp}");
            exit::OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("  help: pass one entry of the `tools` array of a `tools/list` result");
            exit::FAILED
        }
    }
}
