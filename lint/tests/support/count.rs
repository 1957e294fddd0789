//! An independent count of the writes in a tree of SQL and Rust files, for the
//! real-corpus check and the corpus benchmark: a deliberately simple scanner that shares
//! no code with the lint. It counts `UPDATE`, `DELETE`, `MERGE` with an update or delete
//! arm, and `INSERT ... ON CONFLICT DO UPDATE` of permanent tables.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A write the counter found: its file, 1-based line and target table.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Write {
    pub(crate) path: String,
    pub(crate) line: usize,
    pub(crate) table: String,
}

/// What the counter found in a tree.
#[derive(Debug, Default)]
pub(crate) struct Survey {
    /// Candidate files (`.sql`, `.rs`, not hidden).
    pub(crate) files: usize,
    /// Writes to tables the configuration can name.
    pub(crate) writes: Vec<Write>,
    /// Writes to tables it cannot (`{placeholder}`, `very, odd: table!`).
    pub(crate) dropped: Vec<Write>,
    /// Every table written, and every table named in the FROM of a write, lowercase.
    pub(crate) tables: BTreeSet<String>,
    /// The decoded text of each file, by path relative to the tree.
    pub(crate) texts: BTreeMap<String, String>,
}

/// Counts the writes under `corpus`.
pub(crate) fn survey(corpus: &Path) -> Survey {
    let mut survey = Survey::default();
    let mut writes = Vec::new();
    let mut related = BTreeSet::new();
    for path in files(corpus) {
        survey.files += 1;
        let bytes = std::fs::read(&path).unwrap();
        let Some(text) = decode(&bytes) else { continue };
        let rel = path
            .strip_prefix(corpus)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let found = if rel.ends_with(".rs") {
            count_rust(&text)
        } else {
            count_sql(&text)
        };
        for (line, table, joined) in found {
            related.extend(joined.into_iter().map(|t| t.to_lowercase()));
            writes.push(Write {
                path: rel.clone(),
                line,
                table,
            });
        }
        survey.texts.insert(rel, text);
    }
    // A table whose name the configuration cannot hold (`very, odd: table!`) cannot be
    // declared fenced: its writes are not expected.
    let (kept, dropped): (Vec<Write>, Vec<Write>) =
        writes.into_iter().partition(|w| configurable(&w.table));
    related.retain(|t: &String| configurable(t));
    survey.tables = kept.iter().map(|w| w.table.to_lowercase()).collect();
    survey.tables.extend(related);
    survey.writes = kept;
    survey.dropped = dropped;
    survey
}

/// A configuration declaring `tables` fenced (with a key column no table has).
pub(crate) fn config(tables: &BTreeSet<String>) -> String {
    let mut config = String::new();
    for table in tables {
        writeln!(
            config,
            "[[table]]\nname = \"{}\"\nkey = \"fence_key\"\n",
            table.replace('\\', "\\\\").replace('"', "\\\"")
        )
        .unwrap();
    }
    config
}

/// Whether a name can be a configured table name: word characters, `$`, `#` and inner
/// spaces, as the configuration accepts.
pub(crate) fn configurable(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= 128
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '$' | '#' | ' '))
        && !name.starts_with([' ', '#', '@'])
        && !name.ends_with(' ')
}

/// The `.sql` and `.rs` files under `dir`, skipping hidden entries as the lint's walk does.
pub(crate) fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file()
                && path
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("sql") || e == "rs")
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// UTF-8 (with or without BOM) or UTF-16 with a BOM.
pub(crate) fn decode(bytes: &[u8]) -> Option<String> {
    match bytes {
        [0xEF, 0xBB, 0xBF, rest @ ..] => String::from_utf8(rest.to_vec()).ok(),
        [0xFF, 0xFE, rest @ ..] => String::from_utf16(
            &rest
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect::<Vec<_>>(),
        )
        .ok(),
        [0xFE, 0xFF, rest @ ..] => String::from_utf16(
            &rest
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]))
                .collect::<Vec<_>>(),
        )
        .ok(),
        _ => String::from_utf8(bytes.to_vec()).ok(),
    }
}

/// A write the counter found: its line, the table, and the tables its FROM names.
pub(crate) type Found = (usize, String, Vec<String>);

/// The counter's view of a text: words, names and punctuation with their line; strings
/// kept as one piece with their contents.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Word(String),
    Name(String),
    Str(String, usize),
    Punct(char),
}

/// Writes in a SQL text, each as (line, table). Comments are skipped; `COPY ... FROM
/// stdin` data is skipped to its `\.` line; string contents and dollar-quoted bodies are
/// counted as SQL when they are executed (after `EXEC`/`EXECUTE`/`sp_executesql`, or
/// assigned to a variable, or a `$$` body), and not when they are a message
/// (`PRINT`, `RAISERROR`, `RAISE`) or a value (anything else).
pub(crate) fn count_sql(text: &str) -> Vec<Found> {
    let pieces = pieces(text);
    let mut out = Vec::new();
    count_pieces(&pieces, &mut out, 0);
    out
}

/// Variables executed: `EXEC (@v)`, `EXEC @v`, `sp_executesql [@stmt =] @v`, `EXECUTE v`.
fn executed_variables(pieces: &[(Piece, usize)]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for i in 0..pieces.len() {
        let is_exec = match &pieces[i].0 {
            Piece::Word(w) => {
                ["EXEC", "EXECUTE", "SP_EXECUTESQL"].contains(&w.to_uppercase().as_str())
            }
            Piece::Name(n) => n.eq_ignore_ascii_case("sp_executesql"),
            _ => false,
        };
        if !is_exec {
            continue;
        }
        let mut k = i + 1;
        while matches!(pieces.get(k).map(|p| &p.0), Some(Piece::Punct('('))) {
            k += 1;
        }
        if matches!(pieces.get(k + 1).map(|p| &p.0), Some(Piece::Punct('='))) {
            k += 2;
        }
        if let Some(Piece::Name(n) | Piece::Word(n)) = pieces.get(k).map(|p| &p.0) {
            out.insert(n.to_lowercase());
        }
    }
    out
}

fn count_pieces(pieces: &[(Piece, usize)], out: &mut Vec<Found>, depth: usize) {
    let executed_vars = executed_variables(pieces);
    let word = |i: usize| match pieces.get(i) {
        Some((Piece::Word(w), _)) => Some(w.to_uppercase()),
        _ => None,
    };
    for i in 0..pieces.len() {
        let (piece, line) = &pieces[i];
        match piece {
            Piece::Word(_) => {
                if let Some(table) = write_at(pieces, i, false).or_else(|| upsert_at(pieces, i)) {
                    out.push((*line, table, related_at(pieces, i)));
                }
            }
            Piece::Str(body, offset_line) if depth < 6 => {
                // What precedes the string, skipping `(`, `N` prefixes and `=`/`+`.
                let mut j = i;
                let mut assigned = false;
                while j > 0 {
                    j -= 1;
                    match &pieces[j].0 {
                        Piece::Punct('(' | ',' | '+' | '|') => {}
                        Piece::Punct('=' | ':') => assigned = true,
                        Piece::Name(n) if n.starts_with('@') && !assigned => {}
                        Piece::Name(_) if assigned => break,
                        Piece::Word(w) if w.eq_ignore_ascii_case("format") => {}
                        Piece::Word(_) if assigned => break,
                        Piece::Str(..) => {}
                        _ => break,
                    }
                }
                let before = word(j);
                let executed = if assigned {
                    // `SET @v = '...'`, `v := '...'`, `DECLARE @v nvarchar(max) = '...'`:
                    // executed if @v is.
                    let name = match &pieces[j].0 {
                        Piece::Name(n) | Piece::Word(n) => n.to_lowercase(),
                        _ => String::new(),
                    };
                    executed_vars.contains(&name)
                        || (j.saturating_sub(6)..j).any(|v| matches!(&pieces[v].0, Piece::Name(n) if n.starts_with('@') && executed_vars.contains(&n.to_lowercase())))
                } else {
                    matches!(
                        before.as_deref(),
                        Some("EXEC" | "EXECUTE" | "SP_EXECUTESQL" | "AS" | "DO")
                    ) || matches!(&pieces[j].0, Piece::Name(n) if n.eq_ignore_ascii_case("sp_executesql"))
                };
                if executed {
                    let inner = pieces_from(body, *offset_line);
                    count_pieces(&inner, out, depth + 1);
                }
            }
            _ => {}
        }
    }
}

/// The table written by the statement whose keyword is `pieces[i]`, if it is one.
fn write_at(pieces: &[(Piece, usize)], i: usize, rust: bool) -> Option<String> {
    let upper = |k: usize| match pieces.get(k) {
        Some((Piece::Word(w), _)) => Some(w.to_uppercase()),
        _ => None,
    };
    let keyword = upper(i)?;
    if !matches!(keyword.as_str(), "UPDATE" | "DELETE" | "MERGE") {
        return None;
    }
    // Not a statement: `ON DELETE`, `FOR UPDATE`, `AFTER UPDATE`, `GRANT UPDATE`,
    // `THEN DELETE` (a MERGE arm), `DO UPDATE` (an upsert arm), `INSTEAD OF`...
    let previous = i.checked_sub(1).and_then(upper);
    if matches!(
        previous.as_deref(),
        Some(
            "ON" | "FOR"
                | "AFTER"
                | "BEFORE"
                | "OF"
                | "GRANT"
                | "DENY"
                | "REVOKE"
                | "OR"
                | "NO"
                | "KEY"
                | "SHARE"
                | "DISABLE"
                | "ENABLE"
        )
    ) || matches!(
        i.checked_sub(1).map(|p| &pieces[p].0),
        Some(Piece::Punct(',' | '.'))
    ) {
        return None;
    }
    // `WHEN MATCHED THEN UPDATE SET` / `THEN DELETE` are MERGE arms; `IF ... THEN
    // UPDATE t SET` / `THEN DELETE FROM t` in PL/pgSQL are statements.
    if previous.as_deref() == Some("THEN")
        && (upper(i + 1).as_deref() == Some("SET")
            || (keyword == "DELETE" && upper(i + 1).as_deref() != Some("FROM")))
    {
        return None;
    }
    if previous.as_deref() == Some("DO") && keyword == "UPDATE" {
        // `INSERT INTO t ... ON CONFLICT ... DO UPDATE SET` updates `t` (counted at the
        // INSERT by `upsert_at`), not `CREATE RULE ... DO UPDATE t SET`.
        if upper(i + 1).as_deref() == Some("SET") {
            return None;
        }
    }
    let mut k = i + 1;
    // `TOP (n)`, `TOP n`, `ONLY`, `OR IGNORE`.
    if upper(k).as_deref() == Some("TOP") {
        k += 1;
        if matches!(pieces.get(k).map(|p| &p.0), Some(Piece::Punct('('))) {
            while k < pieces.len() && pieces[k].0 != Piece::Punct(')') {
                k += 1;
            }
        }
        k += 1;
    }
    if matches!(upper(k).as_deref(), Some("ONLY")) {
        k += 1;
    }
    if keyword == "MERGE" {
        // Only a MERGE with an update or delete arm changes existing rows.
        let arm = (i + 1..(i + 2000).min(pieces.len()))
            .take_while(|&a| !matches!(pieces[a].0, Piece::Punct(';')))
            .any(|a| {
                upper(a).as_deref() == Some("THEN")
                    && matches!(upper(a + 1).as_deref(), Some("UPDATE" | "DELETE"))
            });
        if !arm {
            return None;
        }
    }
    if keyword == "MERGE" && upper(i + 1).as_deref() == Some("JOIN") {
        return None;
    }
    if keyword == "UPDATE" && upper(k).as_deref() == Some("OR") {
        k += 2;
    }
    if (keyword == "DELETE" && upper(k).as_deref() == Some("FROM"))
        || (keyword == "MERGE" && upper(k).as_deref() == Some("INTO"))
    {
        k += 1;
    }
    if matches!(upper(k).as_deref(), Some("ONLY")) {
        k += 1;
    }
    if matches!(
        pieces.get(k).map(|p| &p.0),
        Some(Piece::Punct('{' | '<' | '$'))
    ) {
        // A placeholder filled at run time: a write the configuration cannot name.
        return Some("{placeholder}".to_owned());
    }
    if keyword == "DELETE" && rust && upper(k - 1).as_deref() != Some("FROM") {
        // PostgreSQL and SQLite need FROM; "failed to delete file" is prose.
        return None;
    }
    let (mut name, after) = dotted_name(pieces, k)?;
    // `WITH c AS (SELECT ... FROM t ...) UPDATE c`: the table written is `t`.
    if let Some(actual) = cte_table(pieces, i, &name) {
        name = actual;
    }
    // `UPDATE alias SET ... FROM t alias` (or `t AS alias`): the table written is `t`.
    let qualified = matches!(pieces.get(after - 2).map(|p| &p.0), Some(Piece::Punct('.')));
    if let Some(actual) = aliased(pieces, i, &name).filter(|_| !qualified) {
        name = actual;
    }
    if name.starts_with('#') || name.starts_with('@') {
        return None;
    }
    if name.starts_with('#') || name.starts_with('@') || name.starts_with('$') {
        return None;
    }
    if matches!(
        name.to_uppercase().as_str(),
        "STATISTICS" | "CASCADE" | "RESTRICT" | "SET" | "FROM" | "WHERE" | "ACTION" | "TO"
    ) {
        return None;
    }
    match keyword.as_str() {
        // `UPDATE t [AS] [alias] [WITH (hints)] SET`: SET within a few pieces.
        "UPDATE" => {
            let set = (after..(after + 12).min(pieces.len()))
                .find(|&k| upper(k).as_deref() == Some("SET"))?;
            // No statement keyword in between (`UPDATE STATISTICS t; SET ...`).
            let crosses = pieces[after..set].iter().any(|(p, _)| {
                matches!(p, Piece::Punct(';'))
                    || matches!(p, Piece::Word(w) if ["SELECT", "FROM", "WHERE", "BEGIN", "END", "GO"].iter().any(|k| w.eq_ignore_ascii_case(k)))
            });
            if crosses {
                return None;
            }
            Some(name)
        }
        _ => Some(name),
    }
}

/// For `INSERT` at `i` whose statement ends in `ON CONFLICT ... DO UPDATE SET`: the
/// table it updates.
fn upsert_at(pieces: &[(Piece, usize)], i: usize) -> Option<String> {
    let upper = |k: usize| match pieces.get(k) {
        Some((Piece::Word(w), _)) => Some(w.to_uppercase()),
        _ => None,
    };
    if upper(i).as_deref() != Some("INSERT") || upper(i + 1).as_deref() != Some("INTO") {
        return None;
    }
    let (name, _) = dotted_name(pieces, i + 2)?;
    let upsert = (i + 2..(i + 3000).min(pieces.len()))
        .take_while(|&a| {
            !matches!(pieces[a].0, Piece::Punct(';')) && upper(a).as_deref() != Some("INSERT")
        })
        .any(|a| {
            upper(a).as_deref() == Some("DO")
                && upper(a + 1).as_deref() == Some("UPDATE")
                && upper(a + 2).as_deref() == Some("SET")
        });
    upsert.then_some(name)
}

/// The table a CTE named `name`, defined before `i` (`WITH name AS (SELECT ... FROM t`),
/// selects from.
fn cte_table(pieces: &[(Piece, usize)], i: usize, name: &str) -> Option<String> {
    let is_word =
        |k: usize, w: &str| matches!(&pieces[k].0, Piece::Word(x) if x.eq_ignore_ascii_case(w));
    for k in (i.saturating_sub(2000)..i).rev() {
        let named =
            matches!(&pieces[k].0, Piece::Word(x) | Piece::Name(x) if x.eq_ignore_ascii_case(name));
        if named
            && k > 0
            && (is_word(k - 1, "WITH") || matches!(pieces[k - 1].0, Piece::Punct(',')))
            && pieces.get(k + 1).is_some_and(|_| is_word(k + 1, "AS"))
            && matches!(pieces.get(k + 2).map(|p| &p.0), Some(Piece::Punct('(')))
        {
            let from = (k + 3..i).find(|&f| is_word(f, "FROM"))?;
            return dotted_name(pieces, from + 1).map(|(t, _)| t);
        }
    }
    None
}

/// The table `alias` stands for in the `FROM` of the statement at `i` (`FROM t alias`,
/// `JOIN dbo.t AS alias`), if it is an alias there.
fn aliased(pieces: &[(Piece, usize)], i: usize, alias: &str) -> Option<String> {
    let is_word =
        |k: usize, w: &str| matches!(&pieces[k].0, Piece::Word(x) if x.eq_ignore_ascii_case(w));
    for k in i + 3..(i + 3000).min(pieces.len()) {
        match &pieces[k].0 {
            Piece::Punct(';') => break,
            Piece::Word(w) | Piece::Name(w) if w.eq_ignore_ascii_case(alias) => {
                let mut before = k - 1;
                if is_word(before, "AS") {
                    before -= 1;
                }
                let (Piece::Word(table) | Piece::Name(table)) = &pieces[before].0 else {
                    continue;
                };
                // Back over `schema.` parts to what introduces the table.
                let mut intro = before.checked_sub(1)?;
                while matches!(pieces[intro].0, Piece::Punct('.')) && intro >= 2 {
                    intro -= 2;
                }
                if is_word(intro, "FROM")
                    || is_word(intro, "JOIN")
                    || matches!(pieces[intro].0, Piece::Punct(','))
                {
                    return Some(table.clone());
                }
            }
            _ => {}
        }
    }
    None
}

/// Names after `FROM` or `JOIN` in the statement whose keyword is `pieces[i]`: in
/// `UPDATE alias SET ... FROM t alias` the table written is `t`, which the counter
/// cannot tell from a joined one, so both are declared fenced.
fn related_at(pieces: &[(Piece, usize)], i: usize) -> Vec<String> {
    let mut out = Vec::new();
    for k in i + 1..(i + 200).min(pieces.len()) {
        match &pieces[k].0 {
            Piece::Punct(';') => break,
            Piece::Word(w) if w.eq_ignore_ascii_case("FROM") || w.eq_ignore_ascii_case("JOIN") => {
                if let Some((name, _)) = dotted_name(pieces, k + 1) {
                    out.push(name);
                }
            }
            _ => {}
        }
    }
    out
}

/// A possibly dotted name at `k`: its last part, and the index after it.
fn dotted_name(pieces: &[(Piece, usize)], mut k: usize) -> Option<(String, usize)> {
    loop {
        let last = match pieces.get(k).map(|p| &p.0) {
            Some(Piece::Word(w) | Piece::Name(w)) => w.clone(),
            _ => return None,
        };
        k += 1;
        if matches!(pieces.get(k).map(|p| &p.0), Some(Piece::Punct('.'))) {
            k += 1;
            continue;
        }
        return Some((last, k));
    }
}

fn pieces(text: &str) -> Vec<(Piece, usize)> {
    pieces_from(text, 1)
}

/// Splits SQL into pieces, each with its 1-based line (counted from `first_line`).
fn pieces_from(text: &str, first_line: usize) -> Vec<(Piece, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = first_line;
    let mut i = 0;
    let mut line_start = true;
    let mut copy_pending = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
            line_start = true;
            if copy_pending {
                // COPY ... FROM stdin: data lines up to `\.`.
                copy_pending = false;
                while i < chars.len() {
                    let end = chars[i..]
                        .iter()
                        .position(|&c| c == '\n')
                        .map_or(chars.len(), |n| i + n);
                    let row: String = chars[i..end].iter().collect();
                    i = (end + 1).min(chars.len());
                    line += 1;
                    if row.trim_end() == "\\." {
                        break;
                    }
                }
            }
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if line_start && c == '\\' {
            // A psql meta-command line.
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        line_start = false;
        let next = chars.get(i + 1).copied();
        if c == '-' && next == Some('-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
            continue;
        }
        if c == '\'' {
            let start_line = line;
            let mut body = String::new();
            i += 1;
            while i < chars.len() {
                if chars[i] == '\'' {
                    if chars.get(i + 1) == Some(&'\'') {
                        body.push('\'');
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                if chars[i] == '\n' {
                    line += 1;
                }
                body.push(chars[i]);
                i += 1;
            }
            out.push((Piece::Str(body, start_line), start_line));
            continue;
        }
        if c == '$' {
            // `$tag$ ... $tag$`
            let tag_end = chars[i + 1..]
                .iter()
                .position(|c| !(c.is_alphanumeric() || *c == '_'))
                .map(|n| i + 1 + n);
            if let Some(te) = tag_end
                && chars[te] == '$'
                && !chars.get(i + 1).is_some_and(|c| c.is_ascii_digit())
            {
                let tag: String = chars[i..=te].iter().collect();
                let tag_chars: Vec<char> = tag.chars().collect();
                let body_start = te + 1;
                let close = (body_start..chars.len())
                    .find(|&k| chars[k..].starts_with(&tag_chars))
                    .unwrap_or(chars.len());
                let body: String = chars[body_start..close].iter().collect();
                let start_line = line;
                line += body.matches('\n').count();
                // A string like any other: code after AS or DO, or run by EXECUTE.
                out.push((Piece::Str(body, start_line), start_line));
                i = (close + tag_chars.len()).min(chars.len());
                continue;
            }
        }
        // `[name]` in T-SQL; `ARRAY['...']` or `a[1]` in PostgreSQL is not a name.
        let bracket_name = c == '['
            && chars
                .get(i + 1)
                .is_some_and(|n| *n != '\'' && !n.is_ascii_digit())
            && chars[i..]
                .iter()
                .take_while(|c| **c != '\n')
                .any(|c| *c == ']');
        if c == '"' || bracket_name || c == '`' {
            let close = match c {
                '[' => ']',
                other => other,
            };
            let start = i + 1;
            i += 1;
            while i < chars.len() && chars[i] != close && chars[i] != '\n' {
                i += 1;
            }
            let name: String = chars[start..i.min(chars.len())].iter().collect();
            if chars.get(i) == Some(&close) {
                i += 1;
            }
            out.push((Piece::Name(name), line));
            continue;
        }
        if c.is_alphanumeric() || c == '_' || c == '#' || c == '@' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '#' | '@' | '$'))
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if word.starts_with('@') || word.starts_with('#') {
                out.push((Piece::Name(word), line));
            } else if (word.eq_ignore_ascii_case("N") || word.eq_ignore_ascii_case("E"))
                && chars.get(i) == Some(&'\'')
            {
                // A string prefix.
            } else {
                if word.eq_ignore_ascii_case("stdin")
                    && out
                        .iter()
                        .rev()
                        .take(40)
                        .any(|(p, _)| matches!(p, Piece::Word(w) if w.eq_ignore_ascii_case("COPY")))
                    && matches!(out.last(), Some((Piece::Word(w), _)) if w.eq_ignore_ascii_case("FROM"))
                {
                    copy_pending = true;
                }
                out.push((Piece::Word(word), line));
            }
            continue;
        }
        out.push((Piece::Punct(c), line));
        i += 1;
    }
    out
}

/// Writes in the string literals of a Rust file: each literal's contents counted as SQL.
pub(crate) fn count_rust(text: &str) -> Vec<Found> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i += 2;
            }
            '\'' => {
                // A char literal or a lifetime: skip `'x'`, `'\n'`, or just the quote.
                if chars.get(i + 1) == Some(&'\\') {
                    i += 2;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if chars.get(i + 2) == Some(&'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            'r' if matches!(chars.get(i + 1), Some('"' | '#'))
                && !chars
                    .get(i.wrapping_sub(1))
                    .is_some_and(|p| p.is_alphanumeric() || *p == '_') =>
            {
                let mut k = i + 1;
                let mut hashes = 0;
                while chars.get(k) == Some(&'#') {
                    hashes += 1;
                    k += 1;
                }
                if chars.get(k) != Some(&'"') {
                    i += 1;
                    continue;
                }
                let start = k + 1;
                let closing: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let end = (start..chars.len())
                    .find(|&e| chars[e..].starts_with(&closing))
                    .unwrap_or(chars.len());
                let body: String = chars[start..end].iter().collect();
                count_literal(&body, line, &mut out);
                line += body.matches('\n').count();
                i = end + closing.len();
            }
            '"' => {
                let start_line = line;
                let mut body = String::new();
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        match chars.get(i + 1) {
                            // An escaped line feed is not a line of the file.
                            Some('n') => body.push(' '),
                            Some('\n') => {
                                // A line continuation: the next line's indentation goes.
                                line += 1;
                                i += 2;
                                while i < chars.len() && chars[i].is_whitespace() {
                                    if chars[i] == '\n' {
                                        line += 1;
                                    }
                                    i += 1;
                                }
                                body.push(' ');
                                continue;
                            }
                            Some(other) => body.push(*other),
                            None => {}
                        }
                        i += 2;
                        continue;
                    }
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    body.push(chars[i]);
                    i += 1;
                }
                i += 1;
                count_literal(&body, start_line, &mut out);
            }
            _ => i += 1,
        }
    }
    out
}

/// A Rust literal's writes, at the line of the keyword within the literal.
fn count_literal(body: &str, first_line: usize, out: &mut Vec<Found>) {
    let pieces = pieces_from(body, first_line);
    for i in 0..pieces.len() {
        if matches!(pieces[i].0, Piece::Word(_))
            && let Some(table) = write_at(&pieces, i, true).or_else(|| upsert_at(&pieces, i))
        {
            out.push((pieces[i].1, table, related_at(&pieces, i)));
        }
    }
}
