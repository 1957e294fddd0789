//! Not a tool: the binary that lets pre-commit build this repository's hook (see the
//! `[[bin]]` entry in `Cargo.toml` and `.pre-commit-hooks.yaml`). The hook's command is
//! `fenced-lint`, from the `fenced-lint` package.

fn main() -> std::process::ExitCode {
    eprintln!(
        "fenced-pre-commit exists only so that pre-commit can build the fenced-lint hook; \
         run fenced-lint (cargo install fenced-lint)"
    );
    std::process::ExitCode::from(2)
}
