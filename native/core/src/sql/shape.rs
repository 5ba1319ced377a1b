//! A cheap shape key for statement texts: a hash of the text with literal values taken out.
//!
//! Fingerprinting with libpg_query parses the whole statement, and captured workloads are full of
//! texts that differ only in their constants (`… WHERE id = 17`, `… WHERE id = 42`). Texts with the
//! same shape key get the same fingerprint, so the parser runs once per shape instead of once per
//! text.
//!
//! The key must never merge texts that libpg_query would tell apart, so it is deliberately
//! conservative: it only applies to plain queries and DML (where every literal is a constant node,
//! which the fingerprint ignores), keeps quoted identifiers and `$n` parameters verbatim, folds
//! case and whitespace only between tokens, and gives up (`None`) on dollar quotes and anything
//! else it does not fully understand — those texts are simply fingerprinted one by one.

use std::hash::Hasher;

use crate::fnv::Fnv;

fn ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Statements whose literals are all constant nodes.
const PLAIN_KEYWORDS: &[&[u8]] = &[
    b"select", b"insert", b"update", b"delete", b"with", b"values", b"table",
];

/// The shape key of `sql`, or `None` when the text is not one the key can vouch for.
pub fn shape_key(sql: &str) -> Option<u64> {
    let s = sql.as_bytes();
    let mut h = Fnv::default();
    let mut i = 0usize;
    let mut first_word = true;
    // Separator state: emit one space between tokens so `a b` and `ab` differ.
    let mut pending_space = false;
    while i < s.len() {
        let b = s[i];
        if b.is_ascii_whitespace() {
            pending_space = true;
            i += 1;
            continue;
        }
        if b == b'-' && s.get(i + 1) == Some(&b'-') {
            while i < s.len() && s[i] != b'\n' {
                i += 1;
            }
            pending_space = true;
            continue;
        }
        if b == b'/' && s.get(i + 1) == Some(&b'*') {
            let mut depth = 1;
            i += 2;
            while i < s.len() && depth > 0 {
                if s[i] == b'/' && s.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if s[i] == b'*' && s.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                } else {
                    i += 1;
                }
            }
            if depth > 0 {
                return None;
            }
            pending_space = true;
            continue;
        }
        if pending_space && !first_word {
            h.write_u8(b' ');
        }
        pending_space = false;
        if ident_char(b) && !b.is_ascii_digit() && b != b'$' {
            let start = i;
            while i < s.len() && ident_char(s[i]) {
                i += 1;
            }
            let word = &s[start..i];
            if word.contains(&b'$') {
                // `$` inside identifiers is legal but rare; not worth reasoning about.
                return None;
            }
            if first_word {
                if !PLAIN_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word)) {
                    return None;
                }
                first_word = false;
            }
            // E'…' (escape string), B'…', X'…', U&'…' prefixes: the prefix stays in the key,
            // the string becomes a placeholder below. Folded byte by byte, which hashes as the
            // lowered word would, without a copy of it per word.
            for &c in word {
                h.write_u8(c.to_ascii_lowercase());
            }
            continue;
        }
        if first_word && b != b'(' {
            // Anything but a keyword (or a parenthesised query) first: not ours.
            return None;
        }
        match b {
            b'\'' => {
                // Escape strings (E'…') honour backslashes; standard strings only double quotes.
                let escape =
                    i > 0 && matches!(s[i - 1], b'e' | b'E') && (i < 2 || !ident_char(s[i - 2]));
                i += 1;
                loop {
                    match s.get(i) {
                        None => return None,
                        Some(b'\\') if escape => i += 2,
                        Some(b'\'') if s.get(i + 1) == Some(&b'\'') => i += 2,
                        Some(b'\'') => {
                            i += 1;
                            break;
                        }
                        Some(_) => i += 1,
                    }
                }
                h.write(b"?s");
            }
            b'"' => {
                let start = i;
                i += 1;
                loop {
                    match s.get(i) {
                        None => return None,
                        Some(b'"') if s.get(i + 1) == Some(&b'"') => i += 2,
                        Some(b'"') => {
                            i += 1;
                            break;
                        }
                        Some(_) => i += 1,
                    }
                }
                h.write(&s[start..i]);
            }
            b'$' => {
                if s.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    let start = i;
                    i += 1;
                    while i < s.len() && s[i].is_ascii_digit() {
                        i += 1;
                    }
                    h.write(&s[start..i]);
                } else {
                    // Dollar quoting: the body may be code, not a constant.
                    return None;
                }
            }
            b'0'..=b'9' => {
                i += 1;
                while i < s.len() {
                    let c = s[i];
                    let exponent_sign = (c == b'+' || c == b'-') && matches!(s[i - 1], b'e' | b'E');
                    if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || exponent_sign {
                        i += 1;
                    } else {
                        break;
                    }
                }
                h.write(b"?n");
            }
            b'.' if s.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i += 1;
                while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
                    i += 1;
                }
                h.write(b"?n");
            }
            _ => {
                h.write_u8(b);
                i += 1;
            }
        }
    }
    if first_word {
        return None;
    }
    Some(h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::fingerprint;

    fn same(a: &str, b: &str) {
        assert_eq!(shape_key(a), shape_key(b), "{a} | {b}");
        assert!(shape_key(a).is_some(), "{a}");
        // The promise the key makes: same key ⇒ same fingerprint.
        assert_eq!(fingerprint(a), fingerprint(b), "{a} | {b}");
    }

    fn differ(a: &str, b: &str) {
        assert_ne!(shape_key(a), shape_key(b), "{a} | {b}");
    }

    #[test]
    fn literals_do_not_change_the_key() {
        same(
            "SELECT * FROM t WHERE id = 1",
            "select *  from t where id = 42",
        );
        same(
            "SELECT * FROM t WHERE name = 'a''b' AND x > 1.5e-3",
            "SELECT * FROM t WHERE name = 'zz' AND x > 7",
        );
        same(
            "INSERT INTO t (a, b) VALUES (1, E'x\\'y')",
            "INSERT INTO t (a, b) VALUES (2, E'q')",
        );
        same(
            "UPDATE t SET v = v + 1 WHERE id = 9 -- note\n",
            "UPDATE t SET v = v + 2 WHERE id = 3",
        );
        same("/* app */ SELECT 1", "SELECT 2");
        same(
            "DELETE FROM t WHERE ts < '2026-01-01'::date",
            "DELETE FROM t WHERE ts < '1999-12-31'::date",
        );
        same(
            "WITH x AS (SELECT .5) SELECT * FROM x",
            "WITH x AS (SELECT 3.0) SELECT * FROM x",
        );
    }

    #[test]
    fn structure_changes_the_key() {
        differ(
            "SELECT * FROM t WHERE id = 1",
            "SELECT * FROM u WHERE id = 1",
        );
        differ("SELECT a b FROM t", "SELECT ab FROM t");
        differ("SELECT \"A\" FROM t", "SELECT \"a\" FROM t");
        differ(
            "SELECT * FROM t WHERE id = $1",
            "SELECT * FROM t WHERE id = $2",
        );
        differ("SELECT * FROM t1", "SELECT * FROM t2");
        differ("SELECT 1", "SELECT '1'");
    }

    #[test]
    fn texts_it_cannot_vouch_for_get_no_key() {
        for sql in [
            "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1 $$ LANGUAGE sql",
            "SELECT $$literal$$",
            "SET search_path = 'app'",
            "NOTIFY chan, 'payload'",
            "BEGIN",
            "SELECT 'unterminated",
            "SELECT /* unterminated",
            "",
            "   ",
        ] {
            assert_eq!(shape_key(sql), None, "{sql}");
        }
    }
}
