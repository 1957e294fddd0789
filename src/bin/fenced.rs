//! `fenced`: prints the DDL of the fenced tables an application declares in its
//! `fenced.toml`, for its migration files.
//!
//! ```text
//! fenced schema --dialect postgres|sqlite|mssql [--declarations FILE]
//! ```
//!
//! Installed with `cargo install fenced --features cli`. Without that feature the
//! package has no binary to install, which is what pre-commit's build of this
//! repository's hook needs (`.pre-commit-hooks.yaml`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use fenced::{Declarations, Dialect};

const USAGE: &str = "\
usage: fenced schema --dialect <postgres|sqlite|mssql> [--declarations <FILE>]

Prints, for a migration file, the DDL of every table declared in FILE (default: the
nearest fenced.toml, or fenced-lint.toml, in the current directory or a parent): each
fenced table, its epoch table and first epoch row, and its operations table. Every
statement creates only what is absent.";

/// What the command line asks for.
struct Schema {
    dialect: Dialect,
    declarations: Option<PathBuf>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Schema>, String> {
    match args.next().as_deref() {
        Some("schema") => {}
        Some("-h" | "--help" | "help") => return Ok(None),
        Some(other) => return Err(format!("unknown command `{other}`")),
        None => return Err("missing the command".to_owned()),
    }
    let mut dialect = None;
    let mut declarations = None;
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
            None => (arg, None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("`{flag}` needs a value"))
        };
        match flag.as_str() {
            "--dialect" => {
                let name = value()?;
                dialect = Some(match name.as_str() {
                    "postgres" | "postgresql" => Dialect::Postgres,
                    "sqlite" => Dialect::Sqlite,
                    "mssql" | "sqlserver" => Dialect::Mssql,
                    _ => {
                        return Err(format!(
                            "unknown dialect `{name}`: write postgres, sqlite or mssql"
                        ));
                    }
                });
            }
            "--declarations" => declarations = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let dialect = dialect.ok_or("missing `--dialect postgres|sqlite|mssql`")?;
    Ok(Some(Schema {
        dialect,
        declarations,
    }))
}

fn run(schema: &Schema) -> Result<String, String> {
    let declarations = match &schema.declarations {
        Some(path) => Declarations::load(path).map_err(|e| e.to_string())?,
        None => {
            let cwd = std::env::current_dir()
                .map_err(|e| format!("cannot read the current directory: {e}"))?;
            Declarations::discover(&cwd)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| {
                    format!(
                        "no fenced.toml in {} or a parent of it: name one with --declarations",
                        cwd.display()
                    )
                })?
        }
    };
    let file = declarations
        .path()
        .map_or_else(String::new, |p| p.display().to_string());
    if declarations.names().next().is_none() {
        return Err(format!("{file} declares no table ([[table]])"));
    }
    declarations
        .schema(schema.dialect)
        .map_err(|e| format!("in {file}: {e}"))
}

fn main() -> ExitCode {
    let schema = match parse(std::env::args().skip(1)) {
        Ok(Some(schema)) => schema,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("error: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&schema) {
        Ok(ddl) => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`fenced schema ... | head`) is not an error.
            let _ = out.write_all(ddl.as_bytes());
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
