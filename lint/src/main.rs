//! `fenced-lint`: the command line of the lint.
//!
//! Parses the arguments, loads the configuration, walks and lints the paths, writes the
//! report and maps the outcome to the contract's exit codes: 0 when no finding is an
//! error, 1 when one is, 2 on a usage or configuration error. A closed standard output
//! (`fenced-lint | head`) is not an error.

mod cli;

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Parser;
use fenced_lint::config::Config;
use fenced_lint::report::{Format, Run};
use fenced_lint::rules::Rule;

use crate::cli::args::{Args, Command};
use crate::cli::walk;

/// Exit code for a usage or configuration error.
const USAGE: u8 = 2;

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        // Help and version exit 0, usage errors 2; clap prints either.
        Err(err) => err.exit(),
    };
    match run(args) {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("fenced-lint: error: {err:#}");
            ExitCode::from(USAGE)
        }
    }
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Command::Explain { rule }) = args.command {
        return explain(rule.as_deref());
    }

    let config = load_config(args.config.as_deref())?;
    let (roots, strip_dot) = if args.paths.is_empty() {
        (vec![PathBuf::from(".")], true)
    } else {
        (args.paths, false)
    };
    for root in &roots {
        // A broken symbolic link named on the command line is a file to report, not a
        // usage error; only a path that names nothing at all is.
        if root.symlink_metadata().is_err() {
            bail!("{}: no such file or directory", root.display());
        }
    }

    let format = Format::from(args.format);
    let run = walk::lint_tree(&config, &roots, strip_dot, format.shows_sources());

    match &args.output {
        Some(path) => {
            let file = File::create(path)
                .with_context(|| format!("cannot create output file {}", path.display()))?;
            let mut out = BufWriter::new(file);
            emit(format, false, &mut out, &run)
                .and_then(|()| out.flush())
                .with_context(|| format!("cannot write output file {}", path.display()))?;
        }
        None => {
            let stdout = io::stdout();
            let color = stdout.is_terminal() && !no_color();
            let mut out = BufWriter::new(stdout.lock());
            emit(format, color, &mut out, &run)?;
            out.flush()?;
        }
    }
    Ok(if run.has_errors() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn emit(format: Format, color: bool, out: &mut dyn Write, run: &Run) -> io::Result<()> {
    format.emitter(color).emit(out, run)
}

/// `--config FILE`, else `fenced.toml` (or `fenced-lint.toml`) from the current directory
/// upwards, else the empty configuration (fenced tables only from `CREATE TABLE`
/// discovery).
fn load_config(explicit: Option<&Path>) -> anyhow::Result<Config> {
    let path = match explicit {
        Some(path) => path.to_path_buf(),
        None => {
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            match Config::find(&cwd) {
                Some(found) => found,
                None => return Ok(Config::default()),
            }
        }
    };
    Config::load(&path).map_err(|err| {
        // Reading and parsing errors name the file already; a valid TOML file that says
        // something impossible does not.
        let names_file = err.to_string().contains(&*path.to_string_lossy());
        let err = anyhow::Error::new(err);
        if names_file {
            err
        } else {
            err.context(format!("in configuration file `{}`", path.display()))
        }
    })
}

/// `fenced-lint explain [RULE]`: one rule's documentation, or the list of rules.
fn explain(rule: Option<&str>) -> anyhow::Result<ExitCode> {
    let mut out = io::stdout().lock();
    match rule {
        None => {
            write_rule_list(&mut out)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(name) => match name.parse::<Rule>() {
            Ok(rule) => {
                writeln!(out, "{}", fenced_lint::explain(rule).trim_end())?;
                Ok(ExitCode::SUCCESS)
            }
            Err(err) => {
                let mut err_out = io::stderr().lock();
                writeln!(err_out, "fenced-lint: error: {err}\n\nrules:")?;
                write_rule_list(&mut err_out)?;
                Ok(ExitCode::from(USAGE))
            }
        },
    }
}

fn write_rule_list(out: &mut dyn Write) -> io::Result<()> {
    for rule in Rule::ALL {
        writeln!(
            out,
            "  {}  {:<28} {}",
            rule.code(),
            rule.name(),
            rule.summary()
        )?;
    }
    Ok(())
}

/// `NO_COLOR` set to anything but the empty string turns color off (no-color.org).
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
