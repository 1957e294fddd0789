//! Finding and reading the files to lint, and the two passes over them.
//!
//! Directories are walked in parallel with the `ignore` crate, honouring `.gitignore`,
//! `.ignore` and the global git excludes, and skipping hidden files and directories.
//! `.gitignore` is honoured whether or not the tree is a git repository
//! (`require_git(false)`): a tree unpacked from an archive or copied into a container
//! lints the same as its checkout. Symbolic links to directories are not followed;
//! symbolic links to files are read like files, so a broken one is reported as
//! unreadable rather than skipped.
//!
//! Which files are linted: inside a directory, the candidates `Linter::is_candidate`
//! accepts (`.sql` and `.rs`) that the configuration's `exclude` globs do not cover; a
//! file named on the command line whatever its extension and even if `.gitignore` lists
//! it, as ripgrep does (the configuration's `exclude` still applies to it).
//!
//! Each file is read and decoded once. Pass 1 (discovering fenced tables from `CREATE
//! TABLE`) and pass 2 with the configured tables (checking statements) run on it in the
//! walker's thread right after the read, while the text is in the CPU's cache, and the
//! text is then dropped (unless a finding will show it). Pass 2's report stands unless
//! discovery adds tables to the configured ones; then pass 2 runs again after the walk,
//! with all tables, on the files that hold a statement keyword or the suppression
//! marker (the only ones it can report on). Without configured tables, where that is
//! the rule, their texts are kept for it; with configured tables, where it is rare,
//! they are read again.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc;

use fenced_lint::config::Config;
use fenced_lint::diagnostic::Diagnostic;
use fenced_lint::report::Run;
use fenced_lint::source::{MAX_FILE_SIZE, Undecodable, decode, decode_owned};
use fenced_lint::{FileReport, Linter, Scan};
use ignore::{WalkBuilder, WalkState};
use rayon::prelude::*;

/// One file found by the walk: its path as reported, and what `load` made of its bytes,
/// or why they could not be read.
#[derive(Debug)]
pub(crate) struct Input<T> {
    pub(crate) path: PathBuf,
    pub(crate) content: Result<T, String>,
}

/// A file as the lint keeps it between the passes.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The decoded text when it is kept (`None` otherwise), or why the bytes are not
    /// source text.
    pub(crate) text: Result<Option<String>, Undecodable>,
    /// Whether the configuration's `exclude` globs cover it (a file named on the command
    /// line is read whatever they say, and then not checked).
    pub(crate) excluded: bool,
    /// What pass 1 learned: the fenced tables its `CREATE TABLE` statements declare, and
    /// whether it mentions anything the prefilter looks for.
    pub(crate) scan: Scan,
    /// Pass 2 with the configured tables.
    pub(crate) report: FileReport,
}

/// Walks `roots` in parallel and reads the files named in `roots` and the files inside
/// them that `wanted` accepts (the lint passes [`Linter::is_candidate`]), sorted by path.
/// `load` runs on each file's bytes in the walker's thread right after the read, while
/// they are still in the CPU's cache (the lint decodes them and runs pass 1 there).
/// The bytes are read into a buffer the thread reuses for the next file (memory already
/// mapped, not fresh pages); `load` may take them with `std::mem::take` to keep them.
///
/// With `strip_dot`, a leading `./` is removed from reported paths (used when the lint
/// walks the current directory by default, so paths read as `src/a.sql`).
pub(crate) fn read_tree<T: Send>(
    roots: &[PathBuf],
    strip_dot: bool,
    wanted: impl Fn(&Path) -> bool + Sync,
    load: impl Fn(&Path, &mut Vec<u8>) -> T + Sync,
) -> Vec<Input<T>> {
    let Some((first, rest)) = roots.split_first() else {
        return Vec::new();
    };
    let mut builder = WalkBuilder::new(first);
    for root in rest {
        builder.add(root);
    }
    builder.require_git(false).follow_links(false);

    let (tx, rx) = mpsc::channel::<Input<T>>();
    let wanted = &wanted;
    let load = &load;
    builder.build_parallel().run(|| {
        let tx = tx.clone();
        Box::new(move |entry| {
            let input = match entry {
                Ok(entry) => {
                    let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                    // A link to a directory is not followed (no cycles), nor read as a file.
                    let linked_dir = entry.path_is_symlink() && entry.path().is_dir();
                    if is_dir || linked_dir || (entry.depth() > 0 && !wanted(entry.path())) {
                        return WalkState::Continue;
                    }
                    // A FIFO, socket or device is not source, and opening or reading one
                    // can block forever: skipped inside directories (as ripgrep does),
                    // reported when named.
                    // The walk's own file type (from the directory listing, no system
                    // call) settles it for a regular file; links and the rest are looked up.
                    let regular =
                        !entry.path_is_symlink() && entry.file_type().is_some_and(|t| t.is_file());
                    let special = if regular {
                        None
                    } else {
                        special_file(entry.path())
                    };
                    if special.is_some() && entry.depth() > 0 {
                        return WalkState::Continue;
                    }
                    let path = reported(entry.path(), strip_dot);
                    let content = match special {
                        Some(kind) => Err(format!("not a regular file ({kind}), not read")),
                        None => READ_BUFFER.with_borrow_mut(|buffer| {
                            let loaded =
                                read_into(entry.path(), buffer).map(|()| load(&path, buffer));
                            if buffer.capacity() > KEEP_READ_BUFFER_BELOW {
                                *buffer = Vec::new();
                            }
                            loaded
                        }),
                    };
                    Input { path, content }
                }
                Err(err) => Input {
                    path: reported(
                        &error_path(&err).unwrap_or_else(|| first.clone()),
                        strip_dot,
                    ),
                    content: Err(err.to_string()),
                },
            };
            match tx.send(input) {
                Ok(()) => WalkState::Continue,
                Err(_) => WalkState::Quit,
            }
        })
    });
    drop(tx);
    // The walk's order depends on thread timing; the passes must not.
    let mut inputs: Vec<Input<T>> = rx.into_iter().collect();
    inputs.sort_by_cached_key(|input| path_key(&input.path));
    // A file reached twice (`fenced-lint sql sql/a.sql`) is one file.
    inputs.dedup_by(|a, b| a.path == b.path);
    inputs
}

/// A key whose byte order is the order of `Path` (component by component) and which is
/// equal for equal paths: comparing paths by components is slow, and the walk sorts
/// thousands of them.
fn path_key(path: &Path) -> Vec<u8> {
    let mut key = Vec::with_capacity(path.as_os_str().len() + 8);
    for component in path.components() {
        // Tags in the order of `Component`'s variants; names end with a byte no file name
        // holds, so a name sorts before its extensions (`a` before `a.b`).
        let (tag, name) = match component {
            Component::Prefix(prefix) => (0, prefix.as_os_str()),
            Component::RootDir => (1, OsStr::new("")),
            Component::CurDir => (2, OsStr::new("")),
            Component::ParentDir => (3, OsStr::new("")),
            Component::Normal(name) => (4, name),
        };
        key.push(tag);
        key.extend_from_slice(name.as_encoded_bytes());
        key.push(0);
    }
    key
}

/// What a path is when it is neither a regular file nor a directory (after following
/// symbolic links), such as a named pipe; `None` for regular files, directories and paths
/// whose metadata cannot be read (reading them reports why).
fn special_file(path: &Path) -> Option<&'static str> {
    let file_type = std::fs::metadata(path).ok()?.file_type();
    if file_type.is_file() || file_type.is_dir() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("a named pipe");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
        if file_type.is_char_device() || file_type.is_block_device() {
            return Some("a device");
        }
    }
    Some("a special file")
}

thread_local! {
    /// The walker thread's read buffer, reused from file to file.
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A read buffer that grew past this many bytes (for an unusually large file) is freed
/// after use rather than kept for the thread's next file.
const KEEP_READ_BUFFER_BELOW: usize = 4 << 20;

/// Reads a whole file, refusing one too large to be source without reading all of it.
fn read(path: &Path) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    read_into(path, &mut bytes)?;
    Ok(bytes)
}

/// [`read`] into `bytes`, which is cleared first.
fn read_into(path: &Path, bytes: &mut Vec<u8>) -> Result<(), String> {
    bytes.clear();
    let file = File::open(path).map_err(|e| e.to_string())?;
    let limit = MAX_FILE_SIZE as u64;
    // No size hint from the file's metadata: that is a system call per file, and the
    // reused buffer is usually large enough already.
    file.take(limit + 1)
        .read_to_end(bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "larger than the {limit}-byte limit for source files"
        ));
    }
    Ok(())
}

fn reported(path: &Path, strip_dot: bool) -> PathBuf {
    match path.strip_prefix(".") {
        Ok(rest) if strip_dot && !rest.as_os_str().is_empty() => rest.to_path_buf(),
        _ => path.to_path_buf(),
    }
}

fn error_path(err: &ignore::Error) -> Option<PathBuf> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Loop { child, .. } => Some(child.clone()),
        ignore::Error::Partial(errs) => errs.iter().find_map(error_path),
        _ => None,
    }
}

/// Reads the tree and runs both passes: discovers fenced tables from every readable file
/// (during the walk), then checks every file against the configured and discovered
/// tables. Files that could not be read become one `unreadable-file` finding each.
///
/// With `sources`, the texts of the files with findings are kept in the run, for a
/// report that shows snippets.
pub(crate) fn lint_tree(config: &Config, roots: &[PathBuf], strip_dot: bool, sources: bool) -> Run {
    let linter = Linter::new(config);
    // Files the configuration excludes are not even read; a file named on the command
    // line is read, and then not checked if excluded.
    let wanted = |path: &Path| Linter::is_candidate(path) && !linter.is_excluded(path);
    // Without configured tables, the tables come from discovery, and pass 2 runs again.
    let rerun = linter.tables().is_empty();
    let keep = Keep { rerun, sources };
    let inputs = read_tree(roots, strip_dot, wanted, |path, bytes| {
        load(&linter, path, bytes, keep)
    });
    check(linter, inputs, sources)
}

/// Which texts [`load`] keeps after pass 1.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keep {
    /// Those pass 2 can report on, for it to run again after discovery.
    pub(crate) rerun: bool,
    /// Those with findings, for a report that shows snippets.
    pub(crate) sources: bool,
}

/// Decodes a file's bytes and runs pass 1 and pass 2 on the text. The text is kept as
/// `keep` says: when a finding will show it, or when pass 2 can report on it again.
pub(crate) fn load(linter: &Linter, path: &Path, bytes: &[u8], keep: Keep) -> Loaded {
    let excluded = linter.is_excluded(path);
    match decode(bytes) {
        Ok(text) if !excluded => {
            let (scan, report) = linter.scan_and_check(path, &text);
            let kept =
                keep.sources && !report.diagnostics.is_empty() || keep.rerun && scan.statements;
            Loaded {
                text: Ok(kept.then(|| text.into_owned())),
                excluded,
                scan,
                report,
            }
        }
        text => Loaded {
            text: text.map(|_| None),
            excluded,
            scan: Scan::default(),
            report: FileReport::default(),
        },
    }
}

/// The reports of pass 2: those made during the walk, or, when discovery found fenced
/// tables the configuration does not declare, pass 2 again with all tables.
fn check(linter: Linter, inputs: Vec<Input<Loaded>>, sources: bool) -> Run {
    let discovered = inputs
        .iter()
        .filter_map(|i| i.content.as_ref().ok())
        .flat_map(|loaded| loaded.scan.tables.iter().cloned())
        .collect();
    let configured = linter.tables().len();
    let linter = linter.with_discovered(discovered);
    let again = linter.tables().len() > configured;
    let files_scanned = inputs.len();

    let finish = |input: Input<Loaded>| {
        let (report, text) = match input.content {
            Ok(Loaded { excluded: true, .. }) => (FileReport::default(), None),
            Ok(Loaded {
                text: Ok(text),
                scan,
                report,
                ..
            }) => {
                let (report, text) = if !again {
                    (report, text)
                } else if let Some(text) = text {
                    (linter.check_scanned(&input.path, &text, &scan), Some(text))
                } else if scan.statements {
                    match read(&input.path).map(decode_owned) {
                        Ok(Ok(text)) => {
                            (linter.check_scanned(&input.path, &text, &scan), Some(text))
                        }
                        Ok(Err(reason)) => (unreadable(&input.path, reason), None),
                        Err(reason) => (unreadable(&input.path, reason), None),
                    }
                } else {
                    (FileReport::default(), None)
                };
                // Keep the text only where a snippet will be shown.
                let text = if sources && !report.diagnostics.is_empty() {
                    text
                } else {
                    None
                };
                (report, text)
            }
            Ok(Loaded {
                text: Err(reason), ..
            }) => (unreadable(&input.path, reason), None),
            Err(reason) => (unreadable(&input.path, reason), None),
        };
        (input.path, report, text)
    };
    // Only pass 2 run again is worth the thread pool; otherwise the reports are only
    // moved.
    let checked: Vec<(PathBuf, FileReport, Option<String>)> = if again {
        inputs.into_par_iter().map(finish).collect()
    } else {
        inputs.into_iter().map(finish).collect()
    };

    let mut diagnostics = Vec::new();
    let mut statements_checked = 0;
    let mut sources = std::collections::BTreeMap::new();
    for (path, report, text) in checked {
        statements_checked += report.statements_checked;
        diagnostics.extend(report.diagnostics);
        if let Some(text) = text {
            sources.insert(path, text);
        }
    }
    let mut run = Run::new(diagnostics);
    run.files_scanned = files_scanned;
    run.statements_checked = statements_checked;
    run.sources = sources;
    run
}

/// The report of a file that could not be read or decoded.
fn unreadable(path: &Path, reason: impl std::fmt::Display) -> FileReport {
    FileReport {
        diagnostics: vec![Diagnostic::unreadable(path, reason)],
        ..FileReport::default()
    }
}
