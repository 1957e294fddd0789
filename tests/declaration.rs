//! One declaration of a fenced table (`fenced.toml`), read by `#[fenced_write]`,
//! `fenced::table!` and the schema, on a real SQLite file.
//!
//! Two modules hold the same repository method, word for word; each reads its own
//! declaration (`tests/declarations/`), the second with three protocol columns renamed.
//! Both run against the schema their declaration prints: a column renamed in the file
//! is nothing to change in the method. The control: a method compiled against one
//! declaration, run on the other's table, fails.

#![cfg(feature = "sqlite")]
#![allow(unreachable_pub)]

use std::time::Duration;

use fenced::{Declarations, Dialect, Executor, Lease, Outcome, Sqlite, Store};

mod declared {
    use fenced::{Lease, Outcome, Store, fenced_write};

    pub struct Jobs<B> {
        pub store: Store<B>,
    }

    impl<B: fenced::Backend> Jobs<B> {
        #[fenced_write(
            table = "jobs",
            declarations = "tests/declarations/jobs.toml",
            sql = "UPDATE jobs SET payload = @payload",
            store = self.store
        )]
        pub async fn save(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;
    }

    pub fn table() -> fenced::Result<fenced::FencedTable> {
        fenced::table!("jobs", declarations = "tests/declarations/jobs.toml")
    }

    pub const FILE: &str = "tests/declarations/jobs.toml";
}

mod renamed {
    use fenced::{Lease, Outcome, Store, fenced_write};

    pub struct Jobs<B> {
        pub store: Store<B>,
    }

    impl<B: fenced::Backend> Jobs<B> {
        #[fenced_write(
            table = "jobs",
            declarations = "tests/declarations/jobs_renamed.toml",
            sql = "UPDATE jobs SET payload = @payload",
            store = self.store
        )]
        pub async fn save(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;
    }

    pub fn table() -> fenced::Result<fenced::FencedTable> {
        fenced::table!(
            "jobs",
            declarations = "tests/declarations/jobs_renamed.toml"
        )
    }

    pub const FILE: &str = "tests/declarations/jobs_renamed.toml";
}

/// A SQLite file holding the schema `file` declares, and a store of its table.
async fn store(
    dir: &tempfile::TempDir,
    file: &str,
    table: fenced::Result<fenced::FencedTable>,
) -> Store<Sqlite> {
    let backend = Sqlite::open(dir.path().join("jobs.db"))
        .await
        .expect("open");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let schema = Declarations::load(&path)
        .expect("declaration")
        .schema(Dialect::Sqlite)
        .expect("schema");
    backend
        .execute_batch(&schema)
        .await
        .expect("the schema runs");
    Store::new(backend, table.expect("the declared table"))
}

/// A holds, is superseded by B, and writes: applied while it held, refused after.
async fn a_write_then_a_stale_one<F>(store: &Store<Sqlite>, save: impl Fn(Lease) -> F)
where
    F: Future<Output = fenced::Result<Outcome>>,
{
    let ttl = Duration::from_secs(30);
    store.provision("job-1").await.expect("provision");
    let a = store.try_acquire("job-1", ttl).await.unwrap().unwrap();
    let stale = a.clone();
    assert!(save(a.clone()).await.expect("A's write").is_applied());
    assert!(store.release(&a).await.expect("release").is_applied());
    let b = store.try_acquire("job-1", ttl).await.unwrap().unwrap();
    assert!(b.generation() > stale.generation());
    assert_eq!(
        save(stale).await.expect("A's stale write"),
        Outcome::Refused
    );
}

async fn payload(store: &Store<Sqlite>) -> Option<fenced::Value> {
    store
        .backend()
        .query_row("SELECT payload FROM jobs WHERE job_id = 'job-1'", &[])
        .await
        .expect("read")
        .and_then(|row| row.into_iter().next())
}

#[tokio::test]
async fn a_column_renamed_in_the_declaration_is_nothing_to_change_in_the_method() {
    for renamed_columns in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        if renamed_columns {
            let jobs = renamed::Jobs {
                store: store(&dir, renamed::FILE, renamed::table()).await,
            };
            a_write_then_a_stale_one(&jobs.store, |lease| {
                let jobs = &jobs;
                async move { jobs.save(&lease, "written").await }
            })
            .await;
            assert_eq!(payload(&jobs.store).await, Some("written".into()));
        } else {
            let jobs = declared::Jobs {
                store: store(&dir, declared::FILE, declared::table()).await,
            };
            a_write_then_a_stale_one(&jobs.store, |lease| {
                let jobs = &jobs;
                async move { jobs.save(&lease, "written").await }
            })
            .await;
            assert_eq!(payload(&jobs.store).await, Some("written".into()));
        }
    }
}

#[tokio::test]
async fn a_method_of_one_declaration_fails_on_the_other_declarations_table() {
    let dir = tempfile::tempdir().unwrap();
    // The store and schema of the renamed declaration; the method of the first.
    let jobs = declared::Jobs {
        store: store(&dir, renamed::FILE, renamed::table()).await,
    };
    jobs.store.provision("job-1").await.expect("provision");
    let lease = jobs
        .store
        .try_acquire("job-1", Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();
    let error = jobs
        .save(&lease, "written")
        .await
        .expect_err("the method's columns are not the table's");
    assert!(
        matches!(error, fenced::Error::Config(_) | fenced::Error::Sqlite(_)),
        "{error:?}"
    );
    assert_eq!(payload(&jobs.store).await, Some(fenced::Value::Null));
}

#[tokio::test]
async fn the_declared_table_is_the_one_the_file_describes() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(renamed::FILE);
    let read_at_run_time = Declarations::load(&path).unwrap().table("jobs").unwrap();
    let read_at_compile_time = renamed::table().unwrap();
    assert_eq!(read_at_compile_time, read_at_run_time);
    assert_eq!(read_at_compile_time.owner_column().as_str(), "holder");
    assert_ne!(declared::table().unwrap(), read_at_compile_time);
}

/// `fenced schema`, run as a user runs it.
#[cfg(feature = "cli")]
mod command {
    use std::process::{Command, Output};

    fn fenced(args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_fenced"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("run fenced")
    }

    #[tokio::test]
    async fn prints_the_schema_a_store_of_the_declared_table_runs_on() {
        let run = fenced(&[
            "schema",
            "--dialect",
            "sqlite",
            "--declarations",
            super::renamed::FILE,
        ]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let printed = String::from_utf8(run.stdout).unwrap();
        assert!(printed.contains("\"holder\""), "{printed}");
        let dir = tempfile::tempdir().unwrap();
        let backend = fenced::Sqlite::open(dir.path().join("jobs.db"))
            .await
            .unwrap();
        fenced::Executor::execute_batch(&backend, &printed)
            .await
            .expect("the printed DDL runs");
        let store = fenced::Store::new(backend, super::renamed::table().unwrap());
        super::a_write_then_a_stale_one(&store, |lease| {
            let jobs = super::renamed::Jobs {
                store: store.clone(),
            };
            async move { jobs.save(&lease, "written").await }
        })
        .await;
        // Each dialect's own text.
        let postgres = fenced(&[
            "schema",
            "--dialect=postgres",
            "--declarations",
            super::renamed::FILE,
        ]);
        assert!(String::from_utf8_lossy(&postgres.stdout).contains("timestamptz"));
        let mssql = fenced(&[
            "schema",
            "--dialect",
            "mssql",
            "--declarations",
            super::renamed::FILE,
        ]);
        assert!(String::from_utf8_lossy(&mssql.stdout).contains("[holder] uniqueidentifier"));
    }

    #[test]
    fn refuses_bad_input_with_a_message_and_exit_2() {
        for (args, says) in [
            (&["schema"][..], "missing `--dialect"),
            (
                &["schema", "--dialect", "oracle"],
                "unknown dialect `oracle`",
            ),
            (&["schema", "--dialect"], "`--dialect` needs a value"),
            (&["migrate"], "unknown command `migrate`"),
            (
                &[
                    "schema",
                    "--dialect",
                    "sqlite",
                    "--declarations",
                    "nowhere.toml",
                ],
                "nowhere.toml",
            ),
            (
                &[
                    "schema",
                    "--dialect",
                    "sqlite",
                    "--declarations",
                    "Cargo.toml",
                ],
                "invalid configuration",
            ),
        ] {
            let run = fenced(args);
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(stderr.contains(says), "{args:?}: {stderr}");
            assert!(run.stdout.is_empty(), "{args:?}");
        }
        let help = fenced(&["--help"]);
        assert!(help.status.success());
        assert!(String::from_utf8_lossy(&help.stdout).starts_with("usage: fenced schema"));
    }
}

/// The README's `fenced.toml` is a declaration the guard builds, and its comment's claim
/// (a column left out keeps the article's name) holds.
#[test]
fn the_readmes_declaration_builds() {
    let readme = include_str!("../README.md");
    let section = readme
        .split("## One declaration: `fenced.toml`")
        .nth(1)
        .expect("the README's declaration section");
    let toml = section
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("its toml block");
    let table = Declarations::from_toml(toml)
        .expect("the README's declaration")
        .table("jobs")
        .expect("builds");
    assert_eq!(table.owner_column().as_str(), "lease_owner");
    assert_eq!(table.generation_column().as_str(), "Generation");
    // The control: the same text, broken, is refused.
    assert!(
        Declarations::from_toml(&toml.replace("key_type = \"text\"", "key_type = \"int\""))
            .is_err()
    );
}
