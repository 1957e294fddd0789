//! The linter: configuration compiled into a prefilter, and the per-file check.

use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;
use std::path::Path;

use crate::config::{self, Config, TableSpec};
use crate::diagnostic::{Diagnostic, Range as TextRange};
use crate::exclude::Exclude;
use crate::prefilter::{self, Words};
use crate::rules::{self, Finding, Rule};
use crate::source::{self, LineIndex, rust};
use crate::sql::{self, lexer};
use crate::suppress::{self, Parsed, Suppression};

/// The result of checking one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileReport {
    /// The findings, sorted, suppressions applied.
    pub diagnostics: Vec<Diagnostic>,
    /// Writes and grants found and examined (parsed or not).
    pub statements_checked: usize,
    /// Of those that write a fenced table or could not be parsed: how each was analysed.
    pub coverage: Coverage,
    /// Whether the file got past the prefilter (it mentions a fenced table, `GRANT` or
    /// the suppression marker, in any case) and was parsed. `false` for a file that cost
    /// one search, and for excluded and undecodable files.
    pub analysed: bool,
}

/// How far the parser got with the statements that matter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Writes and grants fully parsed.
    pub parsed: usize,
    /// Writes and grants that could not be parsed; those that mention a fenced table
    /// were reported as `unanalysed-write`.
    pub unparsed: usize,
    /// Of the unparsed, those that mention a fenced table.
    pub unanalysed_fenced: usize,
}

/// What pass 1 learned about one file's text ([`Linter::scan_text`]) that pass 2
/// ([`Linter::check_scanned`]) reuses, so each file is searched once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// The fenced tables its `CREATE TABLE` statements declare.
    pub tables: Vec<TableSpec>,
    /// Whether the text mentions a word the scanning linter's prefilter looks for (a
    /// fenced table, `GRANT`, the suppression marker), in any case.
    pub mentions: bool,
    /// Whether the text holds, in any case, the keyword of a statement the rules examine
    /// (`UPDATE`, `DELETE`, `MERGE`, `INSERT`, `REPLACE`, `GRANT`, `TRUNCATE`) or the
    /// suppression marker. A text without one has nothing to report whatever is fenced.
    pub statements: bool,
}

/// A compiled configuration: fenced tables and the prefilter that lets files mentioning
/// none of them through at the cost of one search.
#[derive(Debug, Clone)]
pub struct Linter {
    tables: Vec<TableSpec>,
    /// Indices into `tables` by lower-cased table name, in order: a name is looked up
    /// once, not compared with every fenced table.
    by_name: NameMap,
    /// Table names, the suppression marker and `GRANT`, case-insensitive.
    prefilter: Words,
    /// Generation column names, to find `CREATE TABLE` candidates for discovery.
    discovery: Words,
    /// The keywords of the statements the rules examine, and the suppression marker: a
    /// file that names a fenced table but holds none of them has nothing to report.
    statements: Words,
    /// The prefilter of the linter this one was derived from by `with_discovered`: what
    /// a [`Scan`] made by any linter of the chain has searched for.
    scanned: Words,
    /// The prefilter's words that `scanned` lacks: the names of discovered tables (and
    /// `GRANT` when only discovery found fenced tables).
    unscanned: Words,
    /// The configuration's `exclude` globs.
    exclude: Exclude,
}

impl Linter {
    /// Compiles a configuration.
    pub fn new(config: &Config) -> Linter {
        let mut linter = Self::from_tables(config.tables.clone());
        linter.exclude = Exclude::new(config.base_dir.as_deref(), &config.exclude);
        linter
    }

    fn from_tables(tables: Vec<TableSpec>) -> Linter {
        let mut patterns: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
        patterns.push(suppress::MARKER);
        // Schema- and database-wide grants cover fenced tables without naming them.
        if !tables.is_empty() {
            patterns.push("GRANT");
        }
        let prefilter = Words::new(patterns);
        let mut generation_names: Vec<&str> =
            tables.iter().map(|t| t.generation.as_str()).collect();
        generation_names.push(config::DEFAULT_GENERATION);
        generation_names.push("generation");
        let discovery = Words::new(generation_names);
        let mut by_name = NameMap::default();
        for (i, table) in tables.iter().enumerate() {
            by_name
                .entry(table.name.to_lowercase())
                .or_default()
                .push(i);
        }
        let statements = Words::new([
            "UPDATE",
            "DELETE",
            "MERGE",
            "INSERT",
            "REPLACE",
            "GRANT",
            "TRUNCATE",
            suppress::MARKER,
        ]);
        Linter {
            exclude: Exclude::default(),
            statements,
            by_name,
            tables,
            scanned: prefilter.clone(),
            unscanned: Words::new(Vec::<String>::new()),
            prefilter,
            discovery,
        }
    }

    /// The first fenced table a reference (`schema.name` or `name`) denotes.
    fn table(&self, schema: Option<&str>, name: &str) -> Option<&TableSpec> {
        let mut buffer = [0u8; 64];
        let indices = if !name.is_ascii() {
            self.by_name.get(&name.to_lowercase())
        } else if !name.bytes().any(|b| b.is_ascii_uppercase()) {
            self.by_name.get(name)
        } else if let Some(lower) = buffer.get_mut(..name.len()) {
            // Lower-cased on the stack: names are short, and looked up for every write.
            lower.copy_from_slice(name.as_bytes());
            lower.make_ascii_lowercase();
            self.by_name.get(std::str::from_utf8(lower).ok()?)
        } else {
            self.by_name.get(&name.to_ascii_lowercase())
        }?;
        indices
            .iter()
            .map(|&i| &self.tables[i])
            .find(|t| t.matches(schema, name))
    }

    /// The fenced tables: configured, then discovered.
    pub fn tables(&self) -> &[TableSpec] {
        &self.tables
    }

    /// Pass 1 over every file: the tables declared by `CREATE TABLE` that carry a
    /// generation, an owner and an expiry column (with the configured names or the
    /// article's). The key is the primary-key column, or the first column.
    pub fn discover_tables(&self, path: &Path, bytes: &[u8]) -> Vec<TableSpec> {
        if self.is_excluded(path) {
            return Vec::new();
        }
        match source::decode(bytes) {
            Ok(text) => self.discover_included(path, &text),
            Err(_) => Vec::new(),
        }
    }

    /// [`Linter::discover_tables`] over text already decoded with [`source::decode`], for
    /// callers that keep the text for both passes.
    pub fn discover_tables_in_text(&self, path: &Path, text: &str) -> Vec<TableSpec> {
        if self.is_excluded(path) {
            return Vec::new();
        }
        self.discover_included(path, text)
    }

    /// Pass 1 over decoded text, searching it once for both passes: the tables it
    /// declares (as [`Linter::discover_tables`]) and whether it mentions anything the
    /// prefilter looks for. Does not consult the `exclude` globs: the caller has decided
    /// with [`Linter::is_excluded`].
    pub fn scan_text(&self, path: &Path, text: &str) -> Scan {
        let [declares, mentions, statements] =
            prefilter::search([&self.discovery, &self.prefilter, &self.statements], text);
        Scan {
            tables: if declares {
                self.discover_matched(path, text)
            } else {
                Vec::new()
            },
            mentions,
            statements,
        }
    }

    /// [`Linter::scan_text`] and then [`Linter::check_scanned`] with this linter, in one:
    /// the same scan and report, with a SQL text lexed once for both passes. Does not
    /// consult the `exclude` globs: the caller has decided with [`Linter::is_excluded`].
    pub fn scan_and_check(&self, path: &Path, text: &str) -> (Scan, FileReport) {
        let [declares, mentions, statements] =
            prefilter::search([&self.discovery, &self.prefilter, &self.statements], text);
        let check =
            !self.prefilter.is_empty() && statements && (mentions || self.unscanned.is_match(text));
        let (tables, report) = if declares && check && !is_rust(path) {
            let mut reused = ReusedLexed::take();
            lexer::lex_reusing(text, &mut reused.0);
            let tables = self.discover_in_tokens(text, &reused.0.tokens);
            (tables, self.check_statements(path, text, Some(&reused.0)))
        } else {
            let tables = if declares {
                self.discover_matched(path, text)
            } else {
                Vec::new()
            };
            let report = if check {
                self.check_statements(path, text, None)
            } else {
                FileReport::default()
            };
            (tables, report)
        };
        let scan = Scan {
            tables,
            mentions,
            statements,
        };
        (scan, report)
    }

    /// The discovery in a file the configuration does not exclude.
    fn discover_included(&self, path: &Path, text: &str) -> Vec<TableSpec> {
        if !self.discovery.is_match(text) {
            return Vec::new();
        }
        self.discover_matched(path, text)
    }

    /// The discovery in a text that mentions a generation column.
    fn discover_matched(&self, path: &Path, text: &str) -> Vec<TableSpec> {
        let mut out = Vec::new();
        if is_rust(path) {
            let scanned = rust::scan(text);
            for literal in &scanned.literals {
                if self.discovery.is_match(&text[literal.contents.clone()]) {
                    let (value, _) = rust::literal_value(text, literal);
                    out.extend(self.discover_in_sql(&value));
                }
            }
        } else {
            out.extend(self.discover_in_sql(text));
        }
        out
    }

    fn discover_in_sql(&self, text: &str) -> Vec<TableSpec> {
        self.discover_in_tokens(text, &lexer::lex(text).tokens)
    }

    fn discover_in_tokens(&self, text: &str, tokens: &[lexer::Token]) -> Vec<TableSpec> {
        let mut out = Vec::new();
        let mut column_sets: Vec<(&str, &str, &str)> = self
            .tables
            .iter()
            .map(|t| (t.generation.as_str(), t.owner.as_str(), t.expiry.as_str()))
            .collect();
        column_sets.push((
            config::DEFAULT_GENERATION,
            config::DEFAULT_OWNER,
            config::DEFAULT_EXPIRY,
        ));
        column_sets.push(("generation", "lease_owner", "lease_until"));
        let mut epoch_columns: Vec<&str> = self
            .tables
            .iter()
            .filter_map(|t| t.epoch.as_deref())
            .collect();
        epoch_columns.extend([config::DEFAULT_EPOCH, "lease_epoch"]);
        for i in 0..tokens.len() {
            if !(sql::parse::is_word(text, &tokens[i], "CREATE")) {
                continue;
            }
            let mut j = i + 1;
            while tokens.get(j).is_some_and(|t| {
                [
                    "TEMP",
                    "TEMPORARY",
                    "UNLOGGED",
                    "OR",
                    "REPLACE",
                    "GLOBAL",
                    "LOCAL",
                ]
                .iter()
                .any(|w| sql::parse::is_word(text, t, w))
            }) {
                j += 1;
            }
            if !tokens
                .get(j)
                .is_some_and(|t| sql::parse::is_word(text, t, "TABLE"))
            {
                continue;
            }
            j += 1;
            if tokens
                .get(j)
                .is_some_and(|t| sql::parse::is_word(text, t, "IF"))
            {
                j += 3;
            }
            let name_start = j;
            while tokens.get(j).is_some_and(|t| {
                !matches!(
                    t.kind,
                    lexer::TokenKind::LParen | lexer::TokenKind::Semicolon
                )
            }) {
                j += 1;
            }
            if !tokens
                .get(j)
                .is_some_and(|t| t.kind == lexer::TokenKind::LParen)
                || j == name_start
            {
                continue;
            }
            let name_text = &text[tokens[name_start].range().start..tokens[j - 1].range().end];
            let (schema, name) = config::split_qualified(name_text);
            // Column definitions at depth 1: the first name after `(` or `,`.
            let mut columns = Vec::new();
            let mut primary = None;
            let mut depth = 0usize;
            let mut expect_column = true;
            let mut last_column: Option<String> = None;
            let mut k = j;
            while let Some(t) = tokens.get(k) {
                match t.kind {
                    lexer::TokenKind::LParen => {
                        depth += 1;
                        if depth == 1 {
                            expect_column = true;
                        }
                    }
                    lexer::TokenKind::RParen => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    lexer::TokenKind::Comma if depth == 1 => expect_column = true,
                    lexer::TokenKind::Word | lexer::TokenKind::QuotedIdent if depth == 1 => {
                        let word = lexer::ident_text(text, t);
                        if expect_column {
                            expect_column = false;
                            let constraint = t.kind == lexer::TokenKind::Word
                                && [
                                    "CONSTRAINT",
                                    "PRIMARY",
                                    "UNIQUE",
                                    "FOREIGN",
                                    "CHECK",
                                    "INDEX",
                                    "KEY",
                                    "EXCLUDE",
                                    "PERIOD",
                                ]
                                .iter()
                                .any(|w| word.eq_ignore_ascii_case(w));
                            if constraint {
                                last_column = None;
                                if word.eq_ignore_ascii_case("PRIMARY") && primary.is_none() {
                                    // `PRIMARY KEY [CLUSTERED] (col, ...)`: the first column.
                                    let mut m = k + 1;
                                    while tokens.get(m).is_some_and(|t| {
                                        t.kind != lexer::TokenKind::LParen
                                            && t.kind != lexer::TokenKind::Comma
                                    }) {
                                        m += 1;
                                    }
                                    if let Some(col) = tokens.get(m + 1).filter(|_| {
                                        tokens
                                            .get(m)
                                            .is_some_and(|t| t.kind == lexer::TokenKind::LParen)
                                    }) {
                                        primary = Some(lexer::ident_text(text, col).to_owned());
                                    }
                                }
                            } else {
                                columns.push(word.to_owned());
                                last_column = Some(word.to_owned());
                            }
                        } else if word.eq_ignore_ascii_case("PRIMARY")
                            && primary.is_none()
                            && let Some(col) = &last_column
                            && tokens
                                .get(k + 1)
                                .is_some_and(|n| sql::parse::is_word(text, n, "KEY"))
                            && !tokens
                                .get(k + 2)
                                .is_some_and(|n| n.kind == lexer::TokenKind::LParen)
                        {
                            primary = Some(col.clone());
                        }
                    }
                    _ => {}
                }
                k += 1;
            }
            let has = |c: &str| columns.iter().any(|x| x.eq_ignore_ascii_case(c));
            if let Some((generation, owner, expiry)) = column_sets
                .iter()
                .find(|(g, o, e)| has(g) && has(o) && has(e))
            {
                let Some(key) = primary.or_else(|| columns.first().cloned()) else {
                    continue;
                };
                // A table created before the recovery epoch has no epoch column, and its
                // writes cannot check one.
                let epoch = epoch_columns
                    .iter()
                    .find(|e| has(e))
                    .map(|e| (*e).to_owned());
                out.push(TableSpec {
                    generation: (*generation).to_owned(),
                    owner: (*owner).to_owned(),
                    expiry: (*expiry).to_owned(),
                    epoch,
                    ..TableSpec::named(schema, name, key)
                });
            }
        }
        out
    }

    /// Adds discovered tables to the configured ones. A configured entry for the same
    /// table wins (its column names are authoritative).
    pub fn with_discovered(self, tables: Vec<TableSpec>) -> Linter {
        let mut discovered = tables;
        discovered.sort();
        discovered.dedup();
        let mut added = Vec::new();
        for table in discovered {
            let known = |t: &TableSpec| {
                t.name.eq_ignore_ascii_case(&table.name)
                    && match (&t.schema, &table.schema) {
                        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                        _ => true,
                    }
            };
            if !(self.tables.iter().any(known) || added.iter().any(known)) {
                added.push(table);
            }
        }
        if added.is_empty() {
            // The same tables: the same linter.
            return self;
        }
        let mut all = self.tables;
        all.extend(added);
        let derived = Self::from_tables(all);
        Linter {
            exclude: self.exclude,
            unscanned: derived.prefilter.without(&self.scanned),
            scanned: self.scanned,
            ..derived
        }
    }

    /// Whether the configuration's `exclude` globs cover `path` (absolute, or relative to
    /// the current directory).
    pub fn is_excluded(&self, path: &Path) -> bool {
        self.exclude.matches(path)
    }

    /// Whether the walk should check a path: `.sql` and `.rs` files.
    pub fn is_candidate(path: &Path) -> bool {
        path.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("sql") || e.eq_ignore_ascii_case("rs"))
    }

    /// Pass 2: checks one file's bytes. Decodes them (UTF-8, UTF-8 with BOM, UTF-16 LE/BE
    /// with BOM), reads `.rs` files as Rust (SQL in string literals) and anything else as
    /// SQL, skips files that mention no fenced table and no suppression, then finds and
    /// parses the statements, runs the rules and applies suppressions.
    ///
    /// A path matched by the configuration's `exclude` globs gets an empty report.
    pub fn check_file(&self, path: &Path, bytes: &[u8]) -> FileReport {
        if self.is_excluded(path) {
            return FileReport::default();
        }
        match source::decode(bytes) {
            Ok(text) => self.check_included(path, &text),
            Err(reason) => FileReport {
                diagnostics: vec![Diagnostic::unreadable(path, reason)],
                ..FileReport::default()
            },
        }
    }

    /// [`Linter::check_file`] over text already decoded with [`source::decode`], for
    /// callers that keep the text for both passes.
    pub fn check_text(&self, path: &Path, text: &str) -> FileReport {
        if self.is_excluded(path) {
            return FileReport::default();
        }
        self.check_included(path, text)
    }

    /// Pass 2 over a text that pass 1 scanned ([`Linter::scan_text`], by this linter or
    /// the one it was derived from with [`Linter::with_discovered`]): the same report as
    /// [`Linter::check_text`], but a file whose scan mentioned nothing is only searched
    /// again for the words discovery added. Does not consult the `exclude` globs: the
    /// caller has decided with [`Linter::is_excluded`].
    pub fn check_scanned(&self, path: &Path, text: &str, scan: &Scan) -> FileReport {
        if self.prefilter.is_empty()
            || !scan.statements
            || !(scan.mentions || self.unscanned.is_match(text))
        {
            return FileReport::default();
        }
        self.check_statements(path, text, None)
    }

    /// The check of a file the configuration does not exclude.
    fn check_included(&self, path: &Path, text: &str) -> FileReport {
        let prefilter = &self.prefilter;
        if prefilter.is_empty() || !prefilter.is_match(text) {
            return FileReport::default();
        }
        self.check_matched(path, text)
    }

    /// The check of a text that got past the prefilter.
    fn check_matched(&self, path: &Path, text: &str) -> FileReport {
        // A short table name (`t`) is in nearly every file; lexing is worth it only
        // where a statement the rules examine, or a suppression, can be.
        if !self.statements.is_match(text) {
            return FileReport::default();
        }
        self.check_statements(path, text, None)
    }

    /// The check of a text that got past the prefilter and holds a statement keyword or
    /// the suppression marker; `lexed`: its tokens, when a SQL text is already lexed.
    fn check_statements(
        &self,
        path: &Path,
        text: &str,
        lexed: Option<&lexer::Lexed>,
    ) -> FileReport {
        let prefilter = &self.prefilter;
        let mut report = FileReport {
            analysed: true,
            ..FileReport::default()
        };
        // Built on first use: most files with statements have no finding and no suppression.
        let index = std::cell::OnceCell::new();
        let index = || index.get_or_init(|| LineIndex::new(text));
        let mut findings: Vec<(Range<usize>, Vec<usize>, Finding)> = Vec::new();
        let mut suppressions: Vec<(Suppression, Option<u32>)> = Vec::new();
        let mut malformed: Vec<(Range<usize>, String)> = Vec::new();
        let mut collect =
            |parsed: Option<Parsed>, suppressions: &mut Vec<(Suppression, Option<u32>)>| {
                match parsed {
                    Some(Parsed::Suppression(s)) => suppressions.push((s, None)),
                    Some(Parsed::Malformed(range, why)) => malformed.push((range, why)),
                    None => {}
                }
            };
        // Each finding's anchors: the file offsets whose preceding line may hold its suppression.
        if is_rust(path) {
            let scanned = rust::scan(text);
            for comment in &scanned.comments {
                let body = &text[comment.range.clone()];
                if body.contains(suppress::MARKER) {
                    collect(
                        suppress::parse_comment(
                            body,
                            comment.range.clone(),
                            index().line(comment.range.start),
                        ),
                        &mut suppressions,
                    );
                }
            }
            for unit in rust_units(&scanned) {
                let pieces = &scanned.literals[unit];
                let literal = &pieces[0];
                if literal.skipped || is_message(text, literal.range.start) {
                    continue;
                }
                let (value, offsets) = match pieces {
                    [one] if !prefilter.is_match(&text[one.contents.clone()]) => continue,
                    [one] => rust::literal_value(text, one),
                    // A `concat!`, whose joined value is the statement.
                    _ => match rust::joined_value(text, pieces) {
                        (value, _) if !prefilter.is_match(&value) => continue,
                        joined => joined,
                    },
                };
                // Suppressions are comments of the file (`//` in Rust, `--` in SQL); a
                // comment inside the string is part of the SQL text, often a fixture's.
                let (found, checked, coverage) = self.check_literal(&value, true);
                report.statements_checked += checked;
                add_coverage(&mut report.coverage, coverage);
                for finding in found {
                    let start = offsets[finding.range.start.min(offsets.len() - 1)];
                    let end = offsets[finding.range.end.min(offsets.len() - 1)];
                    findings.push((start..end, vec![start, literal.statement_start], finding));
                }
            }
        } else {
            let mut reused = None;
            let lexed = match lexed {
                Some(lexed) => lexed,
                None => {
                    let reused = reused.insert(ReusedLexed::take());
                    lexer::lex_reusing(text, &mut reused.0);
                    &reused.0
                }
            };
            for comment in lexed.comments.iter().filter(|c| c.line) {
                let body = &text[comment.range.clone()];
                if body.contains(suppress::MARKER) {
                    collect(
                        suppress::parse_comment(
                            body,
                            comment.range.clone(),
                            index().line(comment.range.start),
                        ),
                        &mut suppressions,
                    );
                }
            }
            let (found, checked, coverage) = self.check_lexed(text, lexed, false);
            report.statements_checked += checked;
            add_coverage(&mut report.coverage, coverage);
            for finding in found {
                let start = finding.range.start;
                findings.push((finding.range.clone(), vec![start], finding));
            }
            // Dynamic SQL: executed string literals that mention a fenced table
            // (`EXEC sp_executesql N'UPDATE ...'`), to any depth.
            self.check_dynamic(text, lexed, None, 0, &mut report, &mut findings);
        }

        let mut diagnostics = Vec::new();
        for (range, anchors, finding) in findings {
            let anchor_lines: Vec<u32> = anchors.iter().map(|a| index().line(*a)).collect();
            let suppressed = suppressions.iter_mut().find(|(s, _)| {
                s.rules.contains(&finding.rule)
                    && anchor_lines.iter().any(|line| s.line + 1 == *line)
            });
            if let Some((_, used)) = suppressed {
                *used = Some(anchor_lines[0]);
                continue;
            }
            diagnostics.push(Diagnostic {
                path: path.to_path_buf(),
                range: text_range(text, index(), range),
                rule: finding.rule,
                table: finding.table,
                message: finding.message,
                help: finding.help,
            });
        }
        for (suppression, used) in &suppressions {
            let range = text_range(text, index(), suppression.range.clone());
            let names: Vec<&str> = suppression.rules.iter().map(|r| r.name()).collect();
            if suppression.reason.is_none() {
                diagnostics.push(Diagnostic {
                    path: path.to_path_buf(),
                    range,
                    rule: Rule::SuppressionWithoutReason,
                    table: None,
                    message: format!("suppression of {} gives no reason", names.join(", ")),
                    help: Some("say why after the parenthesis: `allow(RULE) reason`".to_owned()),
                });
            }
            if used.is_none() {
                diagnostics.push(Diagnostic {
                    path: path.to_path_buf(),
                    range,
                    rule: Rule::UnusedSuppression,
                    table: None,
                    message: format!("suppression of {} suppresses nothing on the next line", names.join(", ")),
                    help: Some("remove the comment, or move it to the line before the statement's first keyword".to_owned()),
                });
            }
        }
        for (range, why) in malformed {
            diagnostics.push(Diagnostic {
                path: path.to_path_buf(),
                range: text_range(text, index(), range),
                rule: Rule::MalformedSuppression,
                table: None,
                message: format!("malformed suppression: {why}"),
                help: Some("write `fenced-lint: allow(RULE) reason`".to_owned()),
            });
        }
        // One file's findings share their path: it is left out of the comparison, which
        // would otherwise compare it component by component every time.
        diagnostics.sort_by(|a, b| {
            (a.range, a.rule, &a.table, &a.message, &a.help)
                .cmp(&(b.range, b.rule, &b.table, &b.message, &b.help))
        });
        diagnostics.dedup();
        report.diagnostics = diagnostics;
        report
    }

    /// Checks the executed string literals among `tokens` (of `text`) as SQL, and the
    /// string literals executed inside those, down to [`MAX_DYNAMIC_DEPTH`] levels.
    /// `offsets` maps byte offsets of `text` to offsets of the file (`None`: `text` is
    /// the file).
    fn check_dynamic(
        &self,
        text: &str,
        lexed: &lexer::Lexed,
        offsets: Option<&[usize]>,
        depth: usize,
        report: &mut FileReport,
        findings: &mut Vec<(Range<usize>, Vec<usize>, Finding)>,
    ) {
        if depth >= MAX_DYNAMIC_DEPTH {
            return;
        }
        let in_file = |offset: usize| match offsets {
            Some(map) => map[offset.min(map.len() - 1)],
            None => offset,
        };
        let tokens = &lexed.tokens;
        let executed = sql::executed_strings_lexed(text, lexed, |token| {
            self.prefilter.is_match(&text[token.range()])
        });
        for position in executed {
            let token = &tokens[position];
            let (value, inner) = lexer::string_value(text, token);
            let inner_lexed = lexer::lex(&value);
            let (found, checked, coverage) = self.check_lexed(&value, &inner_lexed, true);
            report.statements_checked += checked;
            add_coverage(&mut report.coverage, coverage);
            let concatenated = [position.checked_sub(1), Some(position + 1)]
                .into_iter()
                .flatten()
                .filter_map(|i| tokens.get(i))
                .any(|t| matches!(&text[t.range()], "+" | "||"));
            let mut seen = Vec::new();
            // Offsets of the value in the file.
            let map: Vec<usize> = inner.iter().map(|&o| in_file(o)).collect();
            for mut finding in found {
                if concatenated {
                    // Part of a statement assembled at run time: what the rules see
                    // is not what runs.
                    if seen.contains(&finding.range) {
                        continue;
                    }
                    seen.push(finding.range.clone());
                    finding.rule = Rule::UnanalysedWrite;
                    finding.message = format!(
                        "dynamic SQL assembled by concatenation writes fenced table `{}` and cannot be analysed",
                        finding.table.as_deref().unwrap_or("?")
                    );
                    finding.help = Some(
                        "write the statement whole, with parameters, so its fence can be checked"
                            .to_owned(),
                    );
                }
                let start = map[finding.range.start.min(map.len() - 1)];
                let end = map[finding.range.end.min(map.len() - 1)];
                findings.push((
                    start..end,
                    vec![start, in_file(token.range().start)],
                    finding,
                ));
            }
            self.check_dynamic(
                &value,
                &inner_lexed,
                Some(&map),
                depth + 1,
                report,
                findings,
            );
        }
    }

    /// Checks the SQL in a Rust string literal. `prose_possible`: the text may be a
    /// message rather than SQL, so an unparseable "statement" whose keyword sits mid-sentence
    /// is not reported as `unanalysed-write`.
    fn check_literal(&self, text: &str, prose_possible: bool) -> (Vec<Finding>, usize, Coverage) {
        self.check_lexed(text, &lexer::lex(text), prose_possible)
    }

    /// Runs the statement rules over one SQL text (no suppressions, no file): the findings
    /// with byte ranges into `sql`, in order. For tools that hold SQL in hand, such as the
    /// `#[fenced_write]` macro checking the statement it is given.
    pub fn check_sql(&self, sql: &str) -> Vec<SqlFinding> {
        let (findings, _, _) = self.check_lexed(sql, &lexer::lex(sql), false);
        findings
            .into_iter()
            .map(|f| SqlFinding {
                rule: f.rule,
                range: f.range,
                table: f.table,
                message: f.message,
                help: f.help,
            })
            .collect()
    }

    fn check_lexed(
        &self,
        text: &str,
        lexed: &lexer::Lexed,
        prose_possible: bool,
    ) -> (Vec<Finding>, usize, Coverage) {
        // Only the writes of fenced tables are analysed, and of an INSERT's values only
        // the generation's.
        // The parser asks about an INSERT's target before the rules do: the answer is
        // kept for them, by the target's place in the text.
        let asked: std::cell::Cell<Option<(usize, Option<&TableSpec>)>> =
            std::cell::Cell::new(None);
        let wanted = |t: &sql::TableName| {
            let table = self.table(t.schema.as_deref(), &t.name);
            asked.set(Some((t.range.start, table)));
            table.map(|table| table.generation.as_str())
        };
        let mut findings = Vec::new();
        let mut coverage = Coverage::default();
        let mut checked = 0;
        let mut prose = 0;
        for statement in sql::analyse_lexed(text, lexed, &wanted) {
            checked += 1;
            if prose_possible && !statement.at_statement_start {
                // "cannot update ReportPublication row": a message, not SQL.
                prose += 1;
                continue;
            }
            match &statement.result {
                Ok(parsed) => {
                    coverage.parsed += 1;
                    let target = parsed.target.as_ref().and_then(|t| match asked.take() {
                        Some((start, table)) if start == t.range.start => table,
                        _ => self.table(t.schema.as_deref(), &t.name),
                    });
                    let alternative = || {
                        parsed.alternatives.iter().find_map(|t| {
                            self.table(t.schema.as_deref(), &t.name)
                                .map(|table| (t, table))
                        })
                    };
                    match (target, alternative()) {
                        (None, Some((written, table))) => {
                            let as_written = another_reading(parsed, written);
                            findings.extend(rules::check_statement(
                                &as_written,
                                Some(table),
                                &self.tables,
                            ));
                        }
                        _ => findings.extend(rules::check_statement(parsed, target, &self.tables)),
                    }
                }
                Err((error, range, mentioned)) => {
                    coverage.unparsed += 1;
                    let table = mentioned
                        .iter()
                        .find_map(|m| self.table(m.schema.as_deref(), &m.name));
                    if let Some(table) = table {
                        coverage.unanalysed_fenced += 1;
                        findings.push(Finding {
                            rule: Rule::UnanalysedWrite,
                            range: range.clone(),
                            table: Some(table.display_name()),
                            message: format!("this statement mentions fenced table `{}` but could not be analysed: {error}", table.display_name()),
                            help: Some("rewrite it as a plain UPDATE ... SET ... WHERE, or suppress with a reason if it is fenced".to_owned()),
                        });
                    }
                }
            }
        }
        (findings, checked - prose, coverage)
    }
}

/// `statement` as the database that writes `written` reads it: where SQL Server's
/// alias, derived table or common table expression made another table the target,
/// PostgreSQL and SQLite write the table named after `UPDATE` or `DELETE`. Then a
/// qualified column may be the `FROM` entry's, not the target's, and only the
/// statement's own `WHERE` restricts the target's rows: the rules see no qualified
/// name as the target's, and no other condition.
fn another_reading(statement: &sql::Statement, written: &sql::TableName) -> sql::Statement {
    let mut reading = statement.clone();
    reading.target = Some(written.clone());
    reading.target_names = Vec::new();
    for arm in &mut reading.updates {
        arm.conditions
            .truncate(usize::from(arm.where_range.is_some()));
    }
    reading
}

/// Fenced tables by lower-cased name.
type NameMap = std::collections::HashMap<String, Vec<usize>, BuildHasherDefault<Fnv1a>>;

/// FNV-1a, for [`NameMap`]: every table named in a write is looked up, names are short,
/// and the keys are the configuration's, so SipHash's protection against chosen keys
/// buys nothing for its cost.
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

thread_local! {
    /// The token buffers of the last file lexed by the thread, kept for the next one.
    static LEXED: std::cell::Cell<Option<lexer::Lexed>> = const { std::cell::Cell::new(None) };
}

/// Token buffers borrowed from the thread for one file, given back when dropped: files
/// are lexed into memory already allocated rather than into fresh pages.
struct ReusedLexed(lexer::Lexed);

impl ReusedLexed {
    /// Buffers of this many tokens or more are freed after use, not kept.
    const KEEP_BELOW: usize = 1 << 20;

    fn take() -> ReusedLexed {
        ReusedLexed(LEXED.take().unwrap_or_default())
    }
}

impl Drop for ReusedLexed {
    fn drop(&mut self) {
        if self.0.tokens.capacity() < Self::KEEP_BELOW {
            LEXED.set(Some(std::mem::take(&mut self.0)));
        }
    }
}

/// How many levels of dynamic SQL inside dynamic SQL are checked.
const MAX_DYNAMIC_DEPTH: usize = 8;

/// A finding of [`Linter::check_sql`]: like a [`Diagnostic`], with a byte range into
/// the SQL text instead of a file position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlFinding {
    /// The rule.
    pub rule: Rule,
    /// Byte range of the statement in the SQL text.
    pub range: Range<usize>,
    /// The fenced table, when there is one.
    pub table: Option<String>,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub help: Option<String>,
}

/// What to check in a Rust file, as index ranges of its literals: each `concat!` group
/// whole, every other literal alone.
fn rust_units(scanned: &rust::Scanned) -> Vec<Range<usize>> {
    let mut units = Vec::with_capacity(scanned.literals.len());
    let mut groups = scanned.concatenated.iter().peekable();
    let mut i = 0;
    while i < scanned.literals.len() {
        match groups.peek() {
            Some(group) if group.start == i => {
                units.push((*group).clone());
                i = group.end;
                groups.next();
            }
            _ => {
                units.push(i..i + 1);
                i += 1;
            }
        }
    }
    units
}

/// Macros and methods whose first argument is a message for people, never SQL.
const MESSAGE_CALLS: &[&str] = &[
    "info",
    "warn",
    "error",
    "debug",
    "trace",
    "println",
    "eprintln",
    "print",
    "eprint",
    "panic",
    "unreachable",
    "todo",
    "unimplemented",
    "bail",
    "anyhow",
    "expect",
    "context",
];

/// Whether the Rust literal starting at `start` is the first argument of a logging or
/// printing macro or of `expect`/`context` (`info!("Delete instance blocks ...")`).
fn is_message(text: &str, start: usize) -> bool {
    let before = text[..start].trim_end();
    let Some(before) = before.strip_suffix('(') else {
        return false;
    };
    let before = before.trim_end();
    let before = before.strip_suffix('!').unwrap_or(before).trim_end();
    let name_start = before
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    MESSAGE_CALLS.contains(&&before[name_start..])
}

fn add_coverage(total: &mut Coverage, more: Coverage) {
    total.parsed += more.parsed;
    total.unparsed += more.unparsed;
    total.unanalysed_fenced += more.unanalysed_fenced;
}

fn is_rust(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("rs"))
}

/// From the first character of `range` to its last character (inclusive).
fn text_range(text: &str, index: &LineIndex, range: Range<usize>) -> TextRange {
    let start = floor_boundary(text, range.start);
    let last = if range.end > range.start {
        floor_boundary(text, range.end - 1)
    } else {
        start
    };
    TextRange {
        start: index.position(text, start),
        end: index.position(text, last.max(start)),
    }
}

fn floor_boundary(text: &str, mut offset: usize) -> usize {
    offset = offset.min(text.len());
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The documentation of a rule: What it does / Why is this bad? / Example / Use instead.
pub fn explain(rule: Rule) -> &'static str {
    rule.documentation()
}
