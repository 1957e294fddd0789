//! `unreadable-file` (FL012). Raised by the linter and the walker; this file holds its
//! documentation.

pub(crate) const DOC: &str = "\
# unreadable-file (FL012)

## What it does
Flags a `.sql` or `.rs` file that could not be read, is not valid UTF-8 (with or
without a byte order mark) or UTF-16 with a byte order mark, contains binary data, or is
larger than 8 MiB.

## Why is this bad?
The lint cannot check what it cannot read, and a silent skip would pass it. Saying so
keeps the result honest.

## Example
A script saved as Windows-1252 with accented characters in comments.

## Use instead
Save the file as UTF-8, or as UTF-16 with a byte order mark (SQL Server Management
Studio's Unicode option), or exclude it from the check in `.gitignore`.
";
