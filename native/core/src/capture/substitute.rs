//! Putting logged bind parameters back into an extended-protocol statement.
//!
//! The log has the statement with `$n` placeholders and, in its DETAIL, the values. Replay sends
//! plain SQL, so every placeholder must become its value — but only where a placeholder can be:
//! never inside a string literal, a quoted identifier, a comment or a dollar-quoted body, and
//! `$10` is the tenth parameter, not the first followed by `0`. A small lexer finds the code
//! spans; everything else is copied as it is.

use std::collections::BTreeMap;

use crate::sql::lex::{ident_char_before, non_code_at};

/// Why a statement could not be completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubstituteError {
    /// `$n` appears in code but the log gives no value for it.
    Missing(u32),
}

/// Replaces `$n` placeholders in code by `values[n]` (already SQL literals: `'abc'`, `NULL`).
pub fn substitute(sql: &str, values: &BTreeMap<u32, String>) -> Result<String, SubstituteError> {
    let mut out =
        String::with_capacity(sql.len() + values.values().map(String::len).sum::<usize>());
    for_each_placeholder(sql, |piece| match piece {
        Piece::Text(t) => {
            out.push_str(t);
            Ok(())
        }
        Piece::Placeholder(n) => match values.get(&n) {
            Some(v) => {
                out.push_str(v);
                Ok(())
            }
            None => Err(SubstituteError::Missing(n)),
        },
    })?;
    Ok(out)
}

/// True when `sql` has at least one `$n` placeholder in code.
pub fn has_placeholders(sql: &str) -> bool {
    let mut found = false;
    let _ = for_each_placeholder(sql, |piece| {
        if matches!(piece, Piece::Placeholder(_)) {
            found = true;
        }
        Ok::<(), ()>(())
    });
    found
}

enum Piece<'a> {
    Text(&'a str),
    Placeholder(u32),
}

/// Walks `sql`, handing out verbatim text and placeholders in order.
fn for_each_placeholder<'a, E>(
    sql: &'a str,
    mut f: impl FnMut(Piece<'a>) -> Result<(), E>,
) -> Result<(), E> {
    let b = sql.as_bytes();
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if let Some((_, end)) = non_code_at(b, i) {
            i = end;
            continue;
        }
        if b[i] == b'$' && !ident_char_before(b, i) {
            let digits = b[i + 1..].iter().take_while(|x| x.is_ascii_digit()).count();
            if let Ok(n) = sql[i + 1..i + 1 + digits].parse::<u32>() {
                f(Piece::Text(&sql[copied..i]))?;
                f(Piece::Placeholder(n))?;
                copied = i + 1 + digits;
            }
            i += 1 + digits;
            continue;
        }
        i += 1;
    }
    f(Piece::Text(&sql[copied..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(u32, &str)]) -> BTreeMap<u32, String> {
        pairs.iter().map(|(n, v)| (*n, v.to_string())).collect()
    }

    #[test]
    fn replaces_placeholders_in_code_only() {
        let v = values(&[(1, "'a''b'"), (2, "NULL")]);
        let sql = "SELECT $1, '$1', \"$1\", E'\\'$1', $$ $1 $$, $f$ $2 $f$ -- $1\n/* $1 /* $2 */ $1 */ , $2";
        assert_eq!(
            substitute(sql, &v).unwrap(),
            "SELECT 'a''b', '$1', \"$1\", E'\\'$1', $$ $1 $$, $f$ $2 $f$ -- $1\n/* $1 /* $2 */ $1 */ , NULL"
        );
    }

    #[test]
    fn longest_number_wins() {
        let v: BTreeMap<u32, String> = (1..=11).map(|n| (n, format!("'v{n}'"))).collect();
        assert_eq!(substitute("$1+$10+$11", &v).unwrap(), "'v1'+'v10'+'v11'");
    }

    #[test]
    fn dollar_inside_identifiers_is_not_a_placeholder() {
        let v = values(&[(1, "'x'")]);
        assert_eq!(
            substitute("SELECT a$1 FROM t WHERE b=$1", &v).unwrap(),
            "SELECT a$1 FROM t WHERE b='x'"
        );
    }

    #[test]
    fn missing_value_is_an_error() {
        assert_eq!(
            substitute("SELECT $2", &values(&[(1, "'x'")])),
            Err(SubstituteError::Missing(2))
        );
        assert!(has_placeholders("SELECT $1"));
        assert!(!has_placeholders("SELECT '$1' -- $2"));
    }

    #[test]
    fn standard_strings_do_not_take_backslash_escapes() {
        // 'a\' is a complete string under standard_conforming_strings; the $1 after it is code.
        assert_eq!(
            substitute("SELECT 'a\\', $1", &values(&[(1, "'z'")])).unwrap(),
            "SELECT 'a\\', 'z'"
        );
    }

    #[test]
    fn unterminated_constructs_do_not_panic() {
        for sql in crate::sql::lex::UNTERMINATED {
            let _ = substitute(sql, &BTreeMap::new());
        }
    }
}
