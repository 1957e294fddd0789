//! The fuzz target's crash check on stable (see `lint/fuzz/README.md`): thousands of
//! deterministic random and mutated inputs go through `Linter::discover_tables` and
//! `Linter::check_file` as `.sql` and `.rs` files; any panic fails the test.
//!
//! Seeds name the table `{T}`, replaced at run time, so that this file itself holds no
//! write to a fenced table when the repository lints itself.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use fenced_lint::Linter;
use fenced_lint::config::Config;

const CONFIG: &str = r#"
[[table]]
name = "dbo.ReportPublication"

[[table]]
name = "Jobs"
key = "Id"
"#;

const SEEDS: &[&str] = &[
    "UPDATE dbo.{T}\nSET Generation = Generation + 1,\n    LeaseOwner = @owner,\n    LeaseUntilUtc = DATEADD(second, @leaseSeconds, SYSUTCDATETIME())\nOUTPUT inserted.Generation\nWHERE ReportId = @reportId\n  AND (LeaseUntilUtc IS NULL OR LeaseUntilUtc <= SYSUTCDATETIME());\n",
    "UPDATE dbo.{T}\nSET Payload = @payload, PublishedGeneration = @generation\nWHERE ReportId = @reportId AND Generation = @generation AND LeaseOwner = @owner\n  AND LeaseUntilUtc > SYSUTCDATETIME() AND PublishedGeneration < @generation;\nGO\n",
    "UPDATE {T} SET LeaseOwner = NULL, LeaseUntilUtc = NULL WHERE ReportId = $1 AND Generation = $2 AND LeaseOwner = $3 RETURNING Generation;",
    "CREATE TABLE {T} (Id int PRIMARY KEY, Generation bigint NOT NULL, LeaseOwner uuid, LeaseUntilUtc timestamptz);",
    "CREATE PROCEDURE dbo.Renew @id int, @g bigint AS\nBEGIN\n  SET NOCOUNT ON\n  UPDATE TOP (1) r SET LeaseUntilUtc = DATEADD(second, 30, SYSUTCDATETIME()) FROM dbo.{T} r WHERE r.ReportId = @id AND r.Generation = @g\n  IF @@ROWCOUNT = 0 BEGIN TRY DELETE dbo.{T} WHERE ReportId = @id END TRY BEGIN CATCH THROW; END CATCH\nEND\nGO\n",
    "MERGE dbo.{T} AS t USING (SELECT @id AS Id) s ON t.ReportId = s.Id WHEN MATCHED THEN UPDATE SET Payload = @p WHEN NOT MATCHED THEN INSERT (ReportId) VALUES (s.Id) OPTION (RECOMPILE);",
    "INSERT INTO {T} (Id, Generation) VALUES ($1, 0) ON CONFLICT (Id) DO UPDATE SET Generation = EXCLUDED.Generation;",
    "-- fenced-lint: allow(fenced-row-delete) retention job\nDELETE FROM {T} WHERE Id = :id;\n-- fenced-lint: allow(unfenced-write)\nGRANT UPDATE ON {T} TO app;\n:setvar X 1\nUPDATE <table_name, sysname, t> SET a = 1\n",
    "const Q: &str = \"UPDATE {T} SET Payload = $1 WHERE Id = $2\";\nfn f(c: &Client) { c.execute(r#\"UPDATE {T}\n SET Generation = 7 WHERE Id = $1\"#, &[]); sqlx::query!(\"DELETE FROM {T}\"); }\n/// UPDATE {T} SET a = 1\n// fenced-lint: allow(unfenced-write) fixture\nlet s = r##\"MERGE {T} USING x ON 1=1\"##;\n",
    "#[fenced_write]\nasync fn publish(&self, lease: &Lease) { self.q(\"UPDATE {T} SET p = 1\").await }\nlet b = b\"UPDATE {T}\"; let c = c\"x\"; let e = \"\\u{1F600}\\\n UPDATE {T}\";",
];

/// Tokens a mutation may splice in: keywords, quotes, comment and string delimiters,
/// byte order marks and invalid UTF-8.
const TOKENS: &[&[u8]] = &[
    b"UPDATE ",
    b" SET ",
    b" WHERE ",
    b" AND ",
    b" OR ",
    b" NOT ",
    b"(",
    b")",
    b"'",
    b"\"",
    b"[",
    b"]",
    b"`",
    b"--",
    b"/*",
    b"*/",
    b"//",
    b";",
    b"\nGO\n",
    b"$$",
    b"$1",
    b"@p",
    b"r#\"",
    b"\"#",
    b"\\",
    b"{T}",
    b"\xEF\xBB\xBF",
    b"\xFF\xFE",
    b"\xFE\xFF",
    b"\xC3\x28",
    b"\0",
    b"\r\n",
    b"N'",
    b"E'",
    b"BEGIN ",
    b"END",
    b"CASE ",
    b"MERGE ",
    b"DELETE ",
    b"fenced-lint: allow(",
    b"SYSUTCDATETIME()",
    b"clock_timestamp()",
];

/// xorshift64*: small, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn seed(rng: &mut Rng) -> Vec<u8> {
    let table = [
        "ReportPublication",
        "Jobs",
        "[dbo].[Jobs]",
        "\"Jobs\"",
        "Other",
    ][rng.below(5)];
    SEEDS[rng.below(SEEDS.len())]
        .replace("{T}", table)
        .into_bytes()
}

fn mutate(rng: &mut Rng, mut bytes: Vec<u8>) -> Vec<u8> {
    for _ in 0..=rng.below(8) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(7) {
            0 if !bytes.is_empty() => {
                let i = rng.below(bytes.len());
                bytes[i] ^= 1 << rng.below(8);
            }
            1 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                bytes.splice(at..at, token.iter().copied());
            }
            2 => bytes.truncate(at),
            3 if at < bytes.len() => {
                let end = (at + rng.below(32)).min(bytes.len());
                bytes.drain(at..end);
            }
            4 => {
                let other = seed(rng);
                let from = rng.below(other.len());
                bytes.splice(at..at, other[from..].iter().copied());
            }
            5 if !bytes.is_empty() => {
                let i = rng.below(bytes.len());
                bytes[i] = rng.next() as u8;
            }
            _ => {
                let copy = bytes[at..].to_vec();
                bytes.extend_from_slice(&copy);
            }
        }
    }
    bytes
}

fn random(rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(512);
    (0..len).map(|_| rng.next() as u8).collect()
}

fn utf16(bytes: &[u8], big_endian: bool) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = if big_endian {
        vec![0xFE, 0xFF]
    } else {
        vec![0xFF, 0xFE]
    };
    for unit in text.encode_utf16() {
        let pair = if big_endian {
            unit.to_be_bytes()
        } else {
            unit.to_le_bytes()
        };
        out.extend_from_slice(&pair);
    }
    out
}

/// Runs `analyse` on one input for both file kinds; `Err` names the input that panicked.
fn check(input: &[u8], analyse: &dyn Fn(&Path, &[u8]) -> usize) -> Result<usize, String> {
    let mut statements = 0;
    for name in ["fuzz.sql", "fuzz.rs"] {
        let path = Path::new(name);
        match catch_unwind(AssertUnwindSafe(|| analyse(path, input))) {
            Ok(n) => statements += n,
            Err(_) => {
                return Err(format!(
                    "panic on {name}: {:?}",
                    String::from_utf8_lossy(input)
                ));
            }
        }
    }
    Ok(statements)
}

/// The deterministic inputs: random bytes, seeds, UTF-16 encodings of mutated seeds, and
/// mutated seeds.
fn inputs(count: usize) -> impl Iterator<Item = Vec<u8>> {
    let mut rng = Rng(0x5EED_F00D_CAFE_D00D);
    (0..count).map(move |round| match round % 6 {
        0 => random(&mut rng),
        1 => seed(&mut rng),
        2 => {
            let s = seed(&mut rng);
            utf16(&mutate(&mut rng, s), round % 12 == 2)
        }
        _ => {
            let s = seed(&mut rng);
            mutate(&mut rng, s)
        }
    })
}

/// Runs every input through `analyse`: the statements analysed, and the panics.
fn campaign(count: usize, analyse: &dyn Fn(&Path, &[u8]) -> usize) -> (usize, Vec<String>) {
    let mut statements = 0;
    let mut failures = Vec::new();
    for input in inputs(count) {
        match check(&input, analyse) {
            Ok(n) => statements += n,
            Err(failure) => failures.push(failure),
        }
    }
    (statements, failures)
}

#[test]
fn no_input_makes_the_analysis_panic() {
    let config = Config::from_toml(CONFIG).unwrap();
    // The fuzz target's body.
    let analyse = |path: &Path, input: &[u8]| {
        let linter = Linter::new(&config);
        let tables = linter.discover_tables(path, input);
        let report = linter
            .clone()
            .with_discovered(tables.clone())
            .check_file(path, input);
        // The walk's path (decode once, one search for both passes) agrees.
        if let Ok(text) = fenced_lint::source::decode(input) {
            let scan = linter.scan_text(path, &text);
            assert_eq!(scan.tables, tables);
            assert_eq!(
                linter.scan_and_check(path, &text),
                (scan.clone(), linter.check_scanned(path, &text, &scan))
            );
            let walked = linter
                .clone()
                .with_discovered(scan.tables.clone())
                .check_scanned(path, &text, &scan);
            assert_eq!(walked, report);
        }
        report.statements_checked
    };
    let (statements, failures) = campaign(2000, &analyse);
    assert!(
        failures.is_empty(),
        "{} panics, first: {}",
        failures.len(),
        failures[0]
    );
    // The inputs reached the parser, not only the cheap "no fenced table" exit.
    assert!(
        statements > 1000,
        "only {statements} statements were analysed"
    );
}

#[test]
fn the_crash_check_catches_a_scanner_that_panics() {
    // Negative control: a scanner with a bug on one kind of input (an unterminated
    // bracketed identifier) is caught by the same inputs and reported, not swallowed.
    let buggy = |_: &Path, input: &[u8]| {
        let text = String::from_utf8_lossy(input);
        if text.matches('[').count() > text.matches(']').count() {
            panic!("simulated scanner bug: unterminated [identifier");
        }
        1
    };
    let (_, failures) = campaign(300, &buggy);
    assert!(!failures.is_empty(), "the simulated bug was never reached");
}
