//! The `harness` binary: see the library's documentation for the command line.

fn main() -> std::process::ExitCode {
    harness::cli_main(std::env::args_os())
}
