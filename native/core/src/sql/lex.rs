//! The lexical layer shared by everything that edits SQL text: where code is, and where it is not.
//!
//! Parameter substitution (capture) and key substitution (replay) both change SQL text in place,
//! and both must never touch what lies inside a string literal, a quoted identifier, a comment or
//! a dollar-quoted body. These helpers find those spans; [`literals`] lists the constants in code.

/// True when the byte before `i` continues an identifier or number (`a$1`, `x1$tag$`), in which
/// case `$` is part of that word and starts nothing.
pub(crate) fn ident_char_before(b: &[u8], i: usize) -> bool {
    i > 0
        && (b[i - 1].is_ascii_alphanumeric()
            || b[i - 1] == b'_'
            || b[i - 1] == b'$'
            || b[i - 1] >= 0x80)
}

/// Index just past the closing quote (a doubled quote is an escaped quote).
pub(crate) fn skip_quoted(b: &[u8], mut i: usize, quote: u8, backslash_escapes: bool) -> usize {
    while i < b.len() {
        if backslash_escapes && b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == quote {
            if b.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    b.len()
}

/// Block comments nest in PostgreSQL.
pub(crate) fn skip_block_comment(b: &[u8], mut i: usize) -> usize {
    let mut depth = 1;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

/// For a `$` at `start` that opens a dollar quote (`$$` or `$tag$`), the index of its closing `$`.
pub(crate) fn dollar_tag_end(b: &[u8], start: usize) -> Option<usize> {
    let mut j = start + 1;
    if b.get(j).is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    while j < b.len() {
        let c = b[j];
        if c == b'$' {
            return Some(j);
        }
        if !(c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80) {
            return None;
        }
        j += 1;
    }
    None
}

pub(crate) fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// True when `text` holds `needle` (lowercase ASCII) in any case. Runs on every captured
/// statement: candidates are found by their first byte with memchr.
pub(crate) fn contains_ignore_case(text: &str, needle: &[u8]) -> bool {
    let (b, first) = (text.as_bytes(), needle[0]);
    let mut from = 0;
    while let Some(p) = memchr::memchr2(first, first.to_ascii_uppercase(), &b[from..]) {
        let at = from + p;
        if b.len() - at < needle.len() {
            return false;
        }
        if b[at..at + needle.len()].eq_ignore_ascii_case(needle) {
            return true;
        }
        from = at + 1;
    }
    false
}

/// What kind of constant a [`Literal`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LiteralKind {
    /// Digits only (`42`), not part of a decimal (`4.2`), an exponent (`1e5`) or a word (`t1`).
    Integer,
    /// A standard `'…'` string (no `E`, `U&`, `B` or `X` prefix).
    String,
}

/// A constant in code: its byte span in the text and its value (a string's content, quotes
/// removed and doubled quotes undone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Literal<'a> {
    pub kind: LiteralKind,
    pub start: usize,
    pub end: usize,
    pub value: std::borrow::Cow<'a, str>,
}

/// What a span that is not code is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NonCode {
    /// A `'…'` string with no prefix (`E`, `U&`, `B`, `X`): its content is its value.
    StandardString,
    /// Any other string, a quoted identifier, a comment or a dollar-quoted body.
    Other,
}

/// When a span that is not code starts at `i`, its kind and the index just past it. `$n`
/// parameters are code (the callers decide what they are); `$tag$` opens a dollar quote.
pub(crate) fn non_code_at(b: &[u8], i: usize) -> Option<(NonCode, usize)> {
    match b[i] {
        b'\'' => {
            // E'...' allows backslash escapes; a standard string only doubled quotes.
            let escapes = i > 0 && matches!(b[i - 1], b'e' | b'E') && !ident_char_before(b, i - 1);
            let kind = if ident_char_before(b, i) {
                NonCode::Other
            } else {
                NonCode::StandardString
            };
            Some((kind, skip_quoted(b, i + 1, b'\'', escapes)))
        }
        b'"' => Some((NonCode::Other, skip_quoted(b, i + 1, b'"', false))),
        b'-' if b.get(i + 1) == Some(&b'-') => Some((
            NonCode::Other,
            b[i..]
                .iter()
                .position(|&x| x == b'\n')
                .map_or(b.len(), |p| i + p + 1),
        )),
        b'/' if b.get(i + 1) == Some(&b'*') => Some((NonCode::Other, skip_block_comment(b, i + 2))),
        b'$' if !ident_char_before(b, i) => dollar_tag_end(b, i).map(|end| {
            let tag = &b[i..=end];
            (
                NonCode::Other,
                find(b, end + 1, tag).map_or(b.len(), |p| p + tag.len()),
            )
        }),
        _ => None,
    }
}

/// Every integer and standard string constant in the code of `sql`, in order. Comments, quoted
/// identifiers, dollar-quoted bodies, `$n` parameters and prefixed strings are passed over, and so
/// are constants whose value is not what their text shows:
///
/// - an integer after a minus sign (`-1` is the constant -1, `x - 1` arithmetic), a decimal, or
///   the exponent of one (`2.5e-5`, `1E+3`);
/// - a string continued by another after whitespace holding a newline (`'ref '\n'120001'` is
///   the one value `ref 120001`): neither part;
/// - with `standard_conforming_strings` off a backslash escapes a quote in a standard string
///   too (`'customer\'s ref 120001'` is one string). The setting is not in the text: when a
///   string holds a backslash, only the literals both readings agree on are listed.
pub fn literals(sql: &str) -> Vec<Literal<'_>> {
    let (plain, backslash) = scan(sql, false);
    if !backslash {
        return plain;
    }
    let (escaped, _) = scan(sql, true);
    // Both lists are in text order.
    let mut j = 0;
    plain
        .into_iter()
        .filter(|l| {
            while j < escaped.len() && escaped[j].start < l.start {
                j += 1;
            }
            escaped.get(j) == Some(l)
        })
        .collect()
}

/// The literals of `sql` with every quoted string read with backslash escapes
/// (`all_backslash`) or only `E'…'` ones; and whether a string read without them holds a
/// backslash (when not, both readings are the same).
fn scan(sql: &str, all_backslash: bool) -> (Vec<Literal<'_>>, bool) {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut backslash = false;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\'' {
            let escapes = all_backslash
                || (i > 0 && matches!(b[i - 1], b'e' | b'E') && !ident_char_before(b, i - 1));
            let standard = !ident_char_before(b, i);
            let mut end = skip_quoted(b, i + 1, b'\'', escapes);
            backslash |= !escapes && b[i + 1..end].contains(&b'\\');
            // A closed standard string only (an unterminated one runs to the end of the text).
            let closed = end >= i + 2 && b[end - 1] == b'\'';
            let mut continued = false;
            while let Some(next) = continuation(b, end) {
                continued = true;
                let part_end = skip_quoted(b, next + 1, b'\'', escapes);
                backslash |= !escapes && b[next + 1..part_end].contains(&b'\\');
                end = part_end;
            }
            if standard && closed && !continued {
                let inner = &sql[i + 1..end - 1];
                let value = if inner.contains('\'') {
                    std::borrow::Cow::Owned(inner.replace("''", "'"))
                } else {
                    std::borrow::Cow::Borrowed(inner)
                };
                out.push(Literal {
                    kind: LiteralKind::String,
                    start: i,
                    end,
                    value,
                });
            }
            i = end;
            continue;
        }
        if let Some((_, end)) = non_code_at(b, i) {
            i = end;
            continue;
        }
        let c = b[i];
        match c {
            b'$' if !ident_char_before(b, i) => {
                // `$n`: a parameter, not a literal.
                i += 1 + b[i + 1..].iter().take_while(|x| x.is_ascii_digit()).count();
            }
            b'0'..=b'9' => {
                let start = i;
                let glued = ident_char_before(b, i) || (i > 0 && b[i - 1] == b'.');
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let continues = b.get(i).is_some_and(|&x| {
                    x == b'.' || x == b'_' || x.is_ascii_alphabetic() || x >= 0x80
                });
                if !glued && !continues {
                    if !after_minus(b, start) {
                        out.push(Literal {
                            kind: LiteralKind::Integer,
                            start,
                            end: i,
                            value: std::borrow::Cow::Borrowed(&sql[start..i]),
                        });
                    }
                } else {
                    // The rest of a decimal, exponent or word is not a literal of ours.
                    let word = |i: &mut usize| {
                        while *i < b.len()
                            && (b[*i].is_ascii_alphanumeric() || b[*i] == b'.' || b[*i] == b'_')
                        {
                            *i += 1;
                        }
                    };
                    word(&mut i);
                    // A signed exponent (`2.5e-5`, `1E+3`): its digits are the number's too.
                    let number = b[start..i - 1]
                        .iter()
                        .all(|&x| x.is_ascii_digit() || x == b'.' || x == b'_');
                    if number
                        && matches!(b[i - 1], b'e' | b'E')
                        && matches!(b.get(i), Some(b'+' | b'-'))
                        && b.get(i + 1).is_some_and(u8::is_ascii_digit)
                    {
                        i += 1;
                        word(&mut i);
                    }
                }
            }
            _ if ident_char_before(b, i + 1) => {
                // A whole word, so that digits inside it (`t1`, `a2b`) are not numbers.
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'_'
                        || b[i] == b'$'
                        || b[i] >= 0x80)
                {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    (out, backslash)
}

/// True when the code before `i` ends with a minus sign (whitespace between): the number there
/// is negative, or an operand of a subtraction, never a key as it stands.
fn after_minus(b: &[u8], i: usize) -> bool {
    b[..i]
        .iter()
        .rev()
        .find(|x| !x.is_ascii_whitespace())
        .is_some_and(|&x| x == b'-')
}

/// When a string that ends at `end` (just past its closing quote) is continued by another,
/// the index of that one's opening quote. PostgreSQL joins two string constants separated by
/// whitespace that holds at least one newline (`--` comments count as whitespace there).
fn continuation(b: &[u8], end: usize) -> Option<usize> {
    if end < 2 || b[end - 1] != b'\'' {
        return None;
    }
    let mut j = end;
    let mut newline = false;
    while j < b.len() {
        match b[j] {
            b'\n' | b'\r' => {
                newline = true;
                j += 1;
            }
            b' ' | b'\t' | 0x0c | 0x0b => j += 1,
            b'-' if b.get(j + 1) == Some(&b'-') => {
                let p = b[j..].iter().position(|&x| x == b'\n')?;
                newline = true;
                j += p + 1;
            }
            b'\'' if newline => return Some(j),
            _ => return None,
        }
    }
    None
}

/// Texts that end inside a construct: every walker over SQL must survive them.
#[cfg(test)]
pub(crate) const UNTERMINATED: &[&str] = &[
    "'abc",
    "\"abc",
    "/* abc",
    "$$ abc",
    "$a$ abc $a",
    "E'\\",
    "$",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_ignore_case_finds_a_needle_anywhere() {
        assert!(contains_ignore_case("select * from PG_class", b"pg_"));
        assert!(contains_ignore_case("Password", b"password"));
        assert!(!contains_ignore_case("passwor", b"password"));
        assert!(!contains_ignore_case("", b"pg_"));
    }

    fn values(sql: &str) -> Vec<(LiteralKind, String)> {
        literals(sql)
            .into_iter()
            .map(|l| (l.kind, l.value.into_owned()))
            .collect()
    }

    #[test]
    fn finds_integers_and_strings_in_code_only() {
        use LiteralKind::*;
        let sql = "SELECT 12, 'a''b', t1.c2, 3.5, 1e6, $1, $q$ 77 $q$, \"9\", E'88', x'99' -- 5\n /* 6 */ FROM t WHERE id=120001";
        assert_eq!(
            values(sql),
            vec![
                (Integer, "12".into()),
                (String, "a'b".into()),
                (Integer, "120001".into())
            ]
        );
    }

    #[test]
    fn spans_point_at_the_literal() {
        let sql = "UPDATE t SET n = 7 WHERE k = '2f1c'";
        let l = literals(sql);
        assert_eq!(&sql[l[0].start..l[0].end], "7");
        assert_eq!(&sql[l[1].start..l[1].end], "'2f1c'");
    }

    #[test]
    fn an_exponent_is_not_an_integer_literal() {
        let sql =
            "UPDATE products SET weight = 2.5e-5, ratio = 1E+3, x = .5e+7 WHERE category_id = 5";
        assert_eq!(values(sql), vec![(LiteralKind::Integer, "5".into())]);
        // Subtraction after a word ending in `e` is not an exponent.
        let sql = "SELECT a FROM t WHERE code = 'x' AND size-1 > 0 AND node_e - 4 < 9";
        assert_eq!(
            values(sql),
            vec![
                (LiteralKind::String, "x".into()),
                (LiteralKind::Integer, "0".into()),
                (LiteralKind::Integer, "9".into())
            ]
        );
    }

    #[test]
    fn a_number_after_a_minus_sign_is_not_a_literal() {
        let sql = "INSERT INTO refunds (id, amount, n) VALUES (-1, 9.90, - 2) RETURNING id";
        assert!(values(sql).is_empty(), "{:?}", values(sql));
        let sql = "SELECT * FROM t WHERE a = 3 -- note\n AND b = 4";
        assert_eq!(
            values(sql),
            vec![
                (LiteralKind::Integer, "3".into()),
                (LiteralKind::Integer, "4".into())
            ]
        );
    }

    #[test]
    fn adjacent_string_constants_are_one_value_and_not_literals() {
        let sql = "UPDATE orders SET note = 'ref '\n'120001', b = 'x' \t\r\n  -- c\n '7' WHERE id = 120001";
        assert_eq!(values(sql), vec![(LiteralKind::Integer, "120001".into())]);
        // Without a newline they are two constants (a syntax error, but no join).
        let sql = "SELECT 'a' , '120001'";
        assert_eq!(values(sql).len(), 2);
        let sql = "SELECT E'a\\\\'\n'120001' , 5";
        assert_eq!(values(sql), vec![(LiteralKind::Integer, "5".into())]);
    }

    #[test]
    fn a_backslash_in_a_standard_string_keeps_only_what_both_readings_agree_on() {
        // With standard_conforming_strings off the note is `customer's ref 120001, call back`;
        // on, it ends at the backslash, `120001` follows in code and `', 78)` is a string.
        let sql = "INSERT INTO notes (order_id, body, n) VALUES (77, 'customer\\'s ref 120001, call back', 78)";
        let got: Vec<String> = values(sql).into_iter().map(|(_, v)| v).collect();
        assert_eq!(got, vec!["77"]);
        let sql = "INSERT INTO notes (body, order_id) VALUES ('c:\\', 77)";
        let got: Vec<String> = values(sql).into_iter().map(|(_, v)| v).collect();
        assert!(got.is_empty(), "{got:?}");
        // A backslash that escapes nothing in either reading keeps the string.
        let sql = "SELECT 1 WHERE p = 'a\\b' AND id = 5";
        let got: Vec<String> = values(sql).into_iter().map(|(_, v)| v).collect();
        assert_eq!(got, vec!["1", "a\\b", "5"]);
        // E'…' strings read their escapes either way.
        let sql = "SELECT 1 WHERE p = E'it\\'s' AND id = 5";
        let got: Vec<String> = values(sql).into_iter().map(|(_, v)| v).collect();
        assert_eq!(got, vec!["1", "5"]);
    }

    #[test]
    fn unterminated_constructs_do_not_panic() {
        for sql in UNTERMINATED.iter().chain(&[
            "12.", "x1", "1e-", "'a'\n", "'a'\n'", "'a\\", "- 1", "'a' --",
        ]) {
            let _ = literals(sql);
        }
    }
}
