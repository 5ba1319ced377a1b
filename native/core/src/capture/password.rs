//! Statements that set a password or carry one, which a capture leaves out.
//!
//! PostgreSQL logs `ALTER ROLE app PASSWORD 'secret'` as it was sent, and a `.wkl` is meant to be
//! committed: kept, the password would be in the repository in clear text (a hash set by psql's
//! `\password`, `'SCRAM-SHA-256$…'` or `'md5…'`, is as good as the password for logging in over
//! md5, and an offline guess away otherwise). Such a statement also says nothing about the
//! application's performance, so it is dropped whole, not masked, and counted.
//!
//! What counts, judged on tokens (strings, quoted identifiers, dollar quotes and comments are
//! told apart from code, so `SET password_encryption`, `WHERE password = $1` or a column named
//! `password` do not):
//!
//! - `CREATE`/`ALTER` `ROLE`, `USER` or `GROUP` with the word `PASSWORD` anywhere in it: also a
//!   statement that failed on a typo, since PostgreSQL's `syntax error at or near "…"` may quote
//!   the password itself;
//! - any `CREATE`/`ALTER` with a `password` option given a value (`OPTIONS (password '…')` of a
//!   foreign server, wrapper or table; `PASSWORD NULL`);
//! - a string constant holding a libpq connection string with `password=`, or a `postgres://`
//!   URL with a password (`CREATE SUBSCRIPTION … CONNECTION`, `dblink_connect(…)`);
//! - any of these inside a string or dollar-quoted body (`DO $$ … CREATE ROLE … PASSWORD … $$`,
//!   a function that runs one with `EXECUTE`), a few levels deep.
//!
//! Doubt drops: a role that is itself named `password` is left out too.

use crate::sql::lex::{contains_ignore_case, dollar_tag_end, non_code_at};

/// How deep strings within strings are searched (a body holding an `EXECUTE '…'`).
const MAX_DEPTH: u8 = 3;

/// True when `sql` (one logged text, perhaps several statements) sets a password or carries one.
pub fn carries_password(sql: &str) -> bool {
    carries(sql, 0)
}

fn carries(sql: &str, depth: u8) -> bool {
    // Nearly every statement mentions neither: no tokenizing on the capture's hot path.
    if !may_carry_password(sql) {
        return false;
    }
    let toks = tokens(sql);
    toks.iter().enumerate().any(|(i, t)| match t {
        Token::Word(w) if is(w, "create") || is(w, "alter") => {
            let end = toks[i..]
                .iter()
                .position(|t| *t == Token::Symbol(b';'))
                .map_or(toks.len(), |p| i + p);
            let statement = &toks[i..end];
            sets_role_password(statement) || has_password_option(statement)
        }
        Token::Text(s) => {
            connection_string_with_password(s) || (depth < MAX_DEPTH && carries(s, depth + 1))
        }
        _ => false,
    })
}

fn may_carry_password(sql: &str) -> bool {
    contains_ignore_case(sql, b"password")
        || (memchr::memmem::find(sql.as_bytes(), b"://").is_some()
            && contains_ignore_case(sql, b"postgres"))
}

fn is(word: &str, what: &str) -> bool {
    word.eq_ignore_ascii_case(what)
}

/// `CREATE|ALTER ROLE|USER|GROUP …` (not `USER MAPPING`) with the word `PASSWORD` in it.
fn sets_role_password(statement: &[Token<'_>]) -> bool {
    let word = |i: usize| match statement.get(i) {
        Some(Token::Word(w)) => *w,
        _ => "",
    };
    let role = ["role", "user", "group"].iter().any(|o| is(word(1), o));
    role && !is(word(2), "mapping")
        && statement
            .iter()
            .any(|t| matches!(t, Token::Word(w) if is(w, "password")))
}

/// `password` (word or quoted option name) followed by a string or `NULL`.
fn has_password_option(statement: &[Token<'_>]) -> bool {
    statement.windows(2).any(|pair| {
        let named = match pair[0] {
            Token::Word(w) | Token::Quoted(w) => is(w, "password"),
            _ => false,
        };
        let value = match pair[1] {
            Token::Text(_) => true,
            Token::Word(w) => is(w, "null"),
            _ => false,
        };
        named && value
    })
}

/// A libpq `key=value` string with `password=`, or a `postgres[ql]://user:password@…` URL.
fn connection_string_with_password(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(p) = memchr::memchr2(b'p', b'P', &b[i..]) {
        let at = i + p;
        i = at + 1;
        let word_start = at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        if !word_start {
            continue;
        }
        let rest = &b[at..];
        if rest.len() >= 8 && rest[..8].eq_ignore_ascii_case(b"password") {
            let after = rest[8..].iter().position(|c| !c.is_ascii_whitespace());
            if after.is_some_and(|k| rest[8 + k] == b'=') {
                return true;
            }
        }
        for scheme in [&b"postgresql://"[..], b"postgres://"] {
            if rest.len() >= scheme.len() && rest[..scheme.len()].eq_ignore_ascii_case(scheme) {
                let authority = &rest[scheme.len()..];
                let stop = authority.iter().position(|c| {
                    matches!(c, b'@' | b'/' | b'?' | b'\'' | b'"') || c.is_ascii_whitespace()
                });
                if let Some(k) = stop {
                    if authority[k] == b'@' && authority[..k].contains(&b':') {
                        return true;
                    }
                }
            }
        }
    }
    false
}

/// A piece of SQL text, as far as this module needs to tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    /// A keyword, identifier or number.
    Word(&'a str),
    /// The content of a string constant (any prefix) or a dollar-quoted body, as written.
    Text(&'a str),
    /// The content of a quoted identifier.
    Quoted(&'a str),
    /// Any other character of code.
    Symbol(u8),
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

/// The tokens of `sql`; comments are dropped, and a string's prefix (`E`, `N`, `B`, `X`, `U&`)
/// is part of the string.
fn tokens(sql: &str) -> Vec<Token<'_>> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if let Some((_, end)) = non_code_at(b, i) {
            match c {
                b'\'' => {
                    drop_string_prefix(&mut out, b, i);
                    out.push(Token::Text(inner(sql, i + 1, end, "'")));
                }
                b'"' => out.push(Token::Quoted(inner(sql, i + 1, end, "\""))),
                b'$' => {
                    let tag = dollar_tag_end(b, i).map_or(&sql[i..=i], |t| &sql[i..=t]);
                    out.push(Token::Text(inner(sql, i + tag.len(), end, tag)));
                }
                _ => {} // a comment
            }
            i = end.max(i + 1);
            continue;
        }
        if is_word_byte(c) && c != b'$' {
            let start = i;
            while i < b.len() && is_word_byte(b[i]) {
                i += 1;
            }
            out.push(Token::Word(&sql[start..i]));
            continue;
        }
        out.push(Token::Symbol(c));
        i += 1;
    }
    out
}

/// `sql[start..end]` without its closing delimiter `close`, when it has one (an unclosed
/// string runs to the end of the text).
fn inner<'a>(sql: &'a str, start: usize, end: usize, close: &str) -> &'a str {
    let text = sql.get(start..end.min(sql.len())).unwrap_or("");
    text.strip_suffix(close).unwrap_or(text)
}

/// Removes a string prefix glued to the quote at `quote` (`E'…'`, `U&'…'`) from the tokens.
fn drop_string_prefix(out: &mut Vec<Token<'_>>, b: &[u8], quote: usize) {
    let glued = quote > 0 && (is_word_byte(b[quote - 1]) || b[quote - 1] == b'&');
    if !glued {
        return;
    }
    if out.last() == Some(&Token::Symbol(b'&')) {
        out.pop();
    }
    if matches!(out.last(), Some(Token::Word(w)) if w.len() == 1 || is(w, "u")) {
        out.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_statements_that_set_a_password() {
        for sql in [
            "ALTER ROLE app PASSWORD 'secret'",
            "alter user app with encrypted password 'secret' valid until 'infinity'",
            "CREATE ROLE app LOGIN PASSWORD 'secret'",
            "CREATE USER app WITH PASSWORD E'sec\\'ret'",
            "CREATE GROUP admins WITH PASSWORD 'secret'",
            "ALTER USER \"app\" PASSWORD 'SCRAM-SHA-256$4096:c2FsdA==$a2V5:c2VydmVy'",
            "ALTER ROLE app PASSWORD 'md5d1b5b6f4b1a4c8a3e0f7b9d5e2a1c3f4'",
            "ALTER ROLE app PASSWORD NULL",
            "ALTER ROLE app PASSWORD $pw$secret$pw$",
            "ALTER ROLE app PASSWORD U&'secr\\0065t'",
            "/* app */ ALTER ROLE app PASSWORD 'secret'",
            // A typo: PostgreSQL's syntax error may quote the unquoted password.
            "ALTER ROLE app WITH PASSWORD secret",
            "SELECT 1; ALTER ROLE app PASSWORD 'secret'",
        ] {
            assert!(carries_password(sql), "{sql}");
        }
    }

    #[test]
    fn options_and_connection_strings_with_a_password() {
        for sql in [
            "CREATE USER MAPPING FOR app SERVER remote OPTIONS (user 'app', password 'secret')",
            "ALTER USER MAPPING FOR app SERVER remote OPTIONS (SET password 'secret')",
            "ALTER SERVER remote OPTIONS (ADD \"password\" 'secret')",
            "CREATE SUBSCRIPTION s CONNECTION 'host=db dbname=app password=secret' PUBLICATION p",
            "SELECT dblink_connect('c', 'host=db user=app password = secret')",
            "SELECT * FROM dblink('postgresql://app:secret@db/app', 'select 1') AS t(x int)",
            "DO $$BEGIN CREATE ROLE app LOGIN PASSWORD 'secret'; END$$",
            "DO 'BEGIN ALTER ROLE app PASSWORD ''secret''; END'",
            "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN EXECUTE 'ALTER ROLE app PASSWORD ''secret'''; END $f$",
        ] {
            assert!(carries_password(sql), "{sql}");
        }
    }

    #[test]
    fn statements_that_only_mention_passwords_are_kept() {
        for sql in [
            "ALTER ROLE app VALID UNTIL 'infinity'",
            "ALTER ROLE app SET password_encryption = 'scram-sha-256'",
            "SET password_encryption = 'md5'",
            "SELECT id FROM users WHERE password = crypt($1, password)",
            "UPDATE users SET password = 'x' WHERE id = 1",
            "INSERT INTO users (name, password) VALUES ('ann', 'hash')",
            "CREATE TABLE users (id int, password text DEFAULT 'x')",
            "ALTER TABLE users ALTER COLUMN password SET DEFAULT 'x'",
            "ALTER USER MAPPING FOR app SERVER remote OPTIONS (DROP password)",
            "ALTER SERVER remote OPTIONS (DROP \"password\")",
            "SELECT 'postgres://db/app', 'https://user:token@example.com'",
            "SELECT * FROM dblink('postgres://app@db/app', 'select 1') AS t(x int)",
            "-- ALTER ROLE app PASSWORD 'x'\nSELECT 1",
            "SELECT \"ALTER ROLE a PASSWORD\" FROM t",
            "",
        ] {
            assert!(!carries_password(sql), "{sql}");
        }
    }

    #[test]
    fn an_unclosed_string_or_body_is_searched_to_the_end() {
        assert!(carries_password("DO $$ BEGIN ALTER ROLE app PASSWORD 'x"));
        assert!(carries_password("SELECT 'host=db password=x"));
        assert!(!carries_password("SELECT 'password"));
    }
}
