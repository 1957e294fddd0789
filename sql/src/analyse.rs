//! Finding and parsing every write and grant in a text: the statements the lint's rules
//! examine, each parsed or, when it cannot be, followed as far as the tables it names.

use crate::lex as lexer;
use crate::parse::{self, SqlError, Statement, StatementKind, TableName};

use std::ops::Range;

/// One write or grant found in a SQL text, parsed or not.
#[derive(Debug, Clone)]
pub struct Analysed {
    /// The kind its keyword announces.
    pub kind: StatementKind,
    /// Byte range of its first keyword.
    pub keyword: Range<usize>,
    /// The parsed statement, or why it could not be parsed together with the byte range
    /// the statement spans as far as it could be followed and the tables named there.
    pub result: Result<Statement, (SqlError, Range<usize>, Vec<TableName>)>,
    /// The first keyword begins the text, or follows anything but a word, or follows a
    /// keyword that opens or closes a block (`BEGIN`, `THEN`, `AS`...). Prose in a Rust
    /// string ("cannot update ReportPublication") fails this test; SQL almost never does.
    pub at_statement_start: bool,
}

const BLOCK_WORDS: &[&str] = &[
    "BEGIN",
    "THEN",
    "ELSE",
    "AS",
    "DO",
    "LOOP",
    "END",
    "TRY",
    "CATCH",
    "TRAN",
    "TRANSACTION",
];

fn at_statement_start(text: &str, tokens: &[lexer::Token], first: usize) -> bool {
    let Some(prev) = first.checked_sub(1).map(|p| &tokens[p]) else {
        return true;
    };
    prev.kind != lexer::TokenKind::Word
        || BLOCK_WORDS
            .iter()
            .any(|w| text[prev.range()].eq_ignore_ascii_case(w))
}

/// How far an unparseable statement is followed for the tables it names.
const MAX_UNPARSED_TOKENS: usize = 200;

/// Finds and parses every `UPDATE`, `DELETE`, `MERGE`, `INSERT`, `GRANT` and `TRUNCATE`
/// in `text`, in order.
pub fn analyse(text: &str) -> Vec<Analysed> {
    let lexed = lexer::lex(text);
    analyse_tokens(text, &lexed.tokens)
}

/// [`analyse`] over tokens already lexed.
pub fn analyse_tokens(text: &str, tokens: &[lexer::Token]) -> Vec<Analysed> {
    analyse_found(text, tokens, parse::find_statements(text, tokens), None).collect()
}

/// [`analyse`] over a text already lexed, using the statement keywords the lexer noted,
/// one statement at a time. An `INSERT` is parsed only as far as `wanted` says its
/// analysis needs (see [`parse::parse_found_for`]).
pub fn analyse_lexed<'a, 'w: 'a>(
    text: &'a str,
    lexed: &'a lexer::Lexed,
    wanted: &'a parse::Wanted<'w>,
) -> impl Iterator<Item = Analysed> + 'a {
    let tokens = &lexed.tokens;
    let keywords = lexed.marks.statement_words.iter().copied();
    let found = parse::find_statements_at(text, tokens, keywords);
    analyse_found(text, tokens, found, Some(wanted))
}

fn analyse_found<'a, 'w: 'a>(
    text: &'a str,
    tokens: &'a [lexer::Token],
    found: Vec<parse::Found>,
    wanted: Option<&'a parse::Wanted<'w>>,
) -> impl Iterator<Item = Analysed> + 'a {
    found.into_iter().map(move |found| {
        let keyword = tokens[found.first].range();
        let result = parse::parse_found_for(text, tokens, &found, wanted).map_err(|error| {
            // How far the statement reaches: up to `;`, `GO` or the next found keyword.
            let end = tokens[found.keyword..]
                .iter()
                .skip(1)
                .take(MAX_UNPARSED_TOKENS)
                .position(|t| {
                    matches!(
                        t.kind,
                        lexer::TokenKind::Semicolon | lexer::TokenKind::BatchSeparator
                    )
                })
                .map_or(tokens.len(), |p| found.keyword + 1 + p);
            let end = end
                .min(found.keyword + MAX_UNPARSED_TOKENS)
                .min(tokens.len());
            let slice = &tokens[found.first..end];
            let mut mentioned = parse::tables_in(text, slice);
            // The word after the keyword is the most likely target.
            mentioned.extend(
                slice
                    .iter()
                    .filter(|t| {
                        matches!(
                            t.kind,
                            lexer::TokenKind::Word
                                | lexer::TokenKind::QuotedIdent
                                | lexer::TokenKind::Placeholder
                        )
                    })
                    .map(|t| TableName {
                        schema: None,
                        name: lexer::ident_text(text, t).to_owned(),
                        range: t.range(),
                    }),
            );
            let range = keyword.start..slice.last().map_or(keyword.end, |t| t.range().end);
            (error, range, mentioned)
        });
        Analysed {
            kind: found.kind,
            keyword,
            result,
            at_statement_start: at_statement_start(text, tokens, found.first),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WHERE clause that is not understood to its end is an error, never a silently
    /// truncated condition: the part not understood could hold a fence predicate.
    #[test]
    fn truncated_conditions_are_errors() {
        for sql in [
            "UPDATE t SET a = 1 WHERE b = 1 c = 2 AND Generation = @g",
            "UPDATE t SET a = 1 WHERE b = 1 AND c = 2 = 3 AND Generation = @g",
            "UPDATE t SET a = 1 b = 2 WHERE Generation = @g",
        ] {
            let analysed = analyse(sql);
            assert!(analysed[0].result.is_err(), "{sql}");
        }
    }

    /// An `INSERT` of a target the caller does not want is parsed lean: as far as its
    /// target, the same target as the whole parse, an error only when there is no
    /// target. A target read through a CTE is parsed whole.
    #[test]
    fn lean_inserts_parse_as_far_as_their_target() {
        let nothing_wanted = |_: &TableName| None;
        for sql in [
            "INSERT INTO t (a, b) VALUES (1, 'x'), (@p, NULL)",
            "INSERT t VALUES (1, 2)",
            "INSERT INTO t VALUES (1 = 2)",
            "INSERT INTO t (a) VALUES (1",
            "INSERT INTO t (a) SELECT a FROM u WHERE b = 1",
            "INSERT INTO t (id) VALUES ($1) ON CONFLICT DO",
            "INSERT INTO",
            "INSERT INTO t DEFAULT VALUES",
            "REPLACE INTO t (a) VALUES (?1)",
            "WITH c AS (SELECT a FROM u) INSERT INTO c (a) VALUES (1)",
        ] {
            let lexed = lexer::lex(sql);
            let tokens = &lexed.tokens;
            for found in parse::find_statements(sql, tokens) {
                let whole = parse::parse_found(sql, tokens, &found);
                let lean = parse::parse_found_for(sql, tokens, &found, Some(&nothing_wanted));
                if found.first < found.keyword {
                    assert_eq!(whole, lean, "{sql}");
                    continue;
                }
                match (&whole, &lean) {
                    (Ok(whole), Ok(lean)) => {
                        assert_eq!(whole.target, lean.target, "{sql}");
                        assert_eq!(whole.deletes, lean.deletes, "{sql}");
                        assert!(
                            lean.inserts.is_empty() && lean.mentioned.is_empty(),
                            "{sql}"
                        );
                    }
                    (Err(_), Ok(lean)) => assert!(lean.target.is_some(), "{sql}"),
                    (Err(whole), Err(lean)) => {
                        assert_eq!(whole, lean, "{sql}");
                        assert!(whole.message.contains("expected the table"), "{sql}");
                    }
                    (Ok(_), Err(lean)) => panic!("{sql}: lean {lean:?}"),
                }
            }
        }
    }

    /// Of a wanted `INSERT`, the values are parsed only where they are examined: when
    /// the columns are not named, or name the generation column.
    #[test]
    fn insert_values_are_parsed_where_the_generation_can_be() {
        let generation = |_: &TableName| Some("Generation");
        let rows = |sql: &str| {
            let lexed = lexer::lex(sql);
            let found = &parse::find_statements(sql, &lexed.tokens)[0];
            let statement =
                parse::parse_found_for(sql, &lexed.tokens, found, Some(&generation)).unwrap();
            assert_eq!(statement.range, 0..sql.len(), "{sql}");
            let insert = &statement.inserts[0];
            let values: Vec<Vec<Option<i64>>> = insert
                .rows
                .iter()
                .flatten()
                .map(|row| row.iter().map(|v| v.integer).collect())
                .collect();
            values
        };
        assert_eq!(
            rows("INSERT INTO t (Id, generation) VALUES (1, 0), (2, 5)"),
            [[Some(1), Some(0)], [Some(2), Some(5)]]
        );
        assert_eq!(rows("INSERT INTO t VALUES (1, 7)"), [[Some(1), Some(7)]]);
        assert!(rows("INSERT INTO t (Id, Payload) VALUES (1, 7), (f(2), 'x')").is_empty());
        // Skipped values still end where the parsed ones do.
        assert!(
            rows("INSERT INTO t (Id) VALUES ((SELECT 1), 2) ON CONFLICT DO NOTHING").is_empty()
        );
    }

    /// Statements from real T-SQL, PostgreSQL and SQLite code: each must be found and parsed.
    macro_rules! reached {
        ($( $name:ident: $sql:expr; )*) => {
            $(
                #[test]
                fn $name() {
                    let analysed = analyse($sql);
                    assert!(!analysed.is_empty(), "not found: {}", $sql);
                    for a in &analysed {
                        assert!(a.result.is_ok(), "{:?} in {}", a.result.as_ref().err().map(|e| &e.0), $sql);
                    }
                }
            )*
        };
    }

    reached! {
        variable_and_column_assignment: "UPDATE dbo.Counter SET @next = Value = Value + 1 WHERE Name = @name";
        table_hints: "UPDATE t WITH (ROWLOCK, UPDLOCK) SET a = 1 WHERE id = @id";
        from_with_hints: "UPDATE dbo.T SET x = 1 FROM dbo.T WITH (NOLOCK) INNER JOIN dbo.U u ON u.Id = T.Id WHERE u.Flag = 1";
        xml_modify: "UPDATE dbo.Docs SET Body.modify('delete /a') WHERE Id = @id";
        write_method: "UPDATE dbo.Docs SET Body.WRITE(@chunk, NULL, 0) WHERE Id = @id";
        top_variable: "UPDATE TOP (@n) q SET Taken = 1 OUTPUT inserted.Id INTO @taken (Id) WHERE Taken = 0";
        default_value: "UPDATE t SET a = DEFAULT, b = (SELECT MAX(x) FROM u), c = CASE WHEN d > 1 THEN 2 ELSE 3 END WHERE id = 1";
        current_of: "UPDATE t SET a = 1 WHERE CURRENT OF cur";
        table_variable: "UPDATE @work SET done = 1 WHERE id = @id; DELETE FROM @work; DELETE @work WHERE done = 1";
        temp_table: "UPDATE #work SET done = 1; DELETE ##global WHERE x IS NOT NULL";
        delete_output: "DELETE FROM dbo.Queue OUTPUT deleted.Id, deleted.Payload WHERE Id = @id";
        insert_exec: "INSERT INTO @t EXEC dbo.GetThings @a = 1; INSERT dbo.T (a) SELECT a FROM dbo.U; INSERT INTO dbo.T DEFAULT VALUES";
        merge_full: "MERGE dbo.T AS t USING dbo.S AS s ON t.Id = s.Id WHEN MATCHED AND s.Deleted = 1 THEN DELETE WHEN MATCHED THEN UPDATE SET t.A = s.A WHEN NOT MATCHED BY TARGET THEN INSERT (Id, A) VALUES (s.Id, s.A) WHEN NOT MATCHED BY SOURCE THEN DELETE OUTPUT $action, inserted.Id;";
        option_clause: "UPDATE t SET a = 1 WHERE b = 2 OPTION (RECOMPILE, MAXDOP 1)";
        collate: "UPDATE t SET a = 1 WHERE name = @n COLLATE Latin1_General_CI_AS AND x LIKE N'%a%' ESCAPE '~'";
        between_in_exists: "UPDATE t SET a = 1 WHERE b BETWEEN 1 AND 2 AND c IN (1, 2) AND EXISTS (SELECT 1 FROM u WHERE u.id = t.id) AND NOT d IS NULL";
        if_else_without_semicolons: "IF @x = 1 UPDATE t SET a = 1 WHERE id = @id ELSE UPDATE t SET a = 2 WHERE id = @id";
        try_catch: "BEGIN TRY UPDATE t SET a = 1 WHERE id = 1 END TRY BEGIN CATCH UPDATE t SET a = 0 WHERE id = 1 END CATCH";
        pg_alias_from: "UPDATE t AS x SET a = y.a FROM y WHERE y.id = x.id RETURNING *";
        pg_only_and_row_assign: "UPDATE ONLY t SET (a, b) = (1, 2) WHERE id = $1";
        pg_casts: "UPDATE t SET a = $1::jsonb, b = $2::text[] WHERE id = $3::uuid AND c @> $4";
        pg_conflict_nothing: "INSERT INTO t (id) VALUES ($1) ON CONFLICT DO NOTHING";
        pg_conflict_constraint: "INSERT INTO t (id, a) VALUES ($1, $2) ON CONFLICT ON CONSTRAINT t_pkey DO UPDATE SET a = EXCLUDED.a";
        pg_cte_delete: "WITH gone AS (DELETE FROM t WHERE id = $1 RETURNING id) SELECT count(*) FROM gone";
        sqlite_or_ignore: "UPDATE OR IGNORE t SET a = ?1 WHERE id = ?2; INSERT OR IGNORE INTO t (id) VALUES (?1)";
        sqlite_limit: "UPDATE t SET a = 1 WHERE b = 2 ORDER BY c LIMIT 1; DELETE FROM t WHERE a = :a LIMIT 5";
        window_in_subquery: "UPDATE t SET rank = (SELECT ROW_NUMBER() OVER (PARTITION BY g ORDER BY v) FROM u WHERE u.id = t.id) WHERE id > 0";
        iif_and_cast: "UPDATE t SET a = IIF(b > 1, CAST(c AS int), TRY_CONVERT(int, d)) WHERE e = 1";
        date_functions: "UPDATE t SET a = DATEADD(minute, -5, GETUTCDATE()), b = EXTRACT(epoch FROM now()) WHERE c < DATEDIFF(second, d, SYSUTCDATETIME())";
        multi_join_delete: "DELETE a FROM dbo.A a LEFT OUTER JOIN dbo.B b ON b.Id = a.BId CROSS APPLY dbo.F(a.Id) f WHERE b.Id IS NULL";
        grant_variants: "GRANT UPDATE ON dbo.T TO r; GRANT SELECT ON SCHEMA::dbo TO r; GRANT USAGE ON SEQUENCE s TO r; GRANT EXECUTE ON FUNCTION f() TO r";
        truncate: "TRUNCATE TABLE dbo.T; TRUNCATE a, b RESTART IDENTITY";
        pg_json_operators: "UPDATE t SET data = data || $1, n = (data->>'n')::int WHERE data->'k' = $2 AND tags @> $3 AND id = $4";
        columns_named_like_statements: "UPDATE quotes SET close = $1, open = $2 WHERE close > 0 AND open < close AND id = $3 RETURNING close";
        tsql_statement_after_where: "UPDATE t SET a = 1 WHERE b = 2 PRINT 'done' WAITFOR DELAY '00:00:01' RAISERROR('x', 1, 1)";
    }
}
