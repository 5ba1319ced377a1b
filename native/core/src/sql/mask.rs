//! The literal-free form of a statement libpg_query cannot parse.
//!
//! A fingerprint's `normalized` text is what reports and PR comments show of a statement, on the
//! promise that it holds no data: libpg_query's normalisation replaces every constant with `$n`.
//! A statement it cannot parse (it failed in production, it is newer syntax, it was written with
//! `standard_conforming_strings` off) used to be shown as captured, values and all. This masks it
//! by tokens instead: every string constant (plain, `E''`, `B''`, `X''`, `N''`, `U&''`, dollar
//! quoted) and every number becomes `$n`, and comments are dropped. Where a token's end is in
//! doubt, more is hidden, never less: a backslash escapes the next character in every string
//! (as with `standard_conforming_strings` off), and a quote never closed masks the rest.

use super::lex;

/// `text` with its constants replaced by `$1`, `$2`, … and its comments removed.
pub fn mask_literals(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut n = 0u32;
    let mut placeholder = |out: &mut String| {
        n += 1;
        out.push('$');
        out.push_str(&n.to_string());
    };
    let mut i = 0;
    // Where the text copied as is begins; the unmasked bytes are copied in runs, so multi-byte
    // characters in identifiers are never split.
    let mut copied = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let end = if c == b'-' && b.get(i + 1) == Some(&b'-') {
            Some((line_end(b, i), false))
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            Some((lex::skip_block_comment(b, i + 2), false))
        } else if c == b'\'' {
            Some((lex::skip_quoted(b, i + 1, b'\'', true), true))
        } else if let Some(prefix) = string_prefix(b, i) {
            Some((lex::skip_quoted(b, i + prefix + 1, b'\'', true), true))
        } else if c == b'$' && !lex::ident_char_before(b, i) {
            lex::dollar_tag_end(b, i).map(|tag_end| {
                let tag = &b[i..=tag_end];
                let end = lex::find(b, tag_end + 1, tag).map_or(b.len(), |p| p + tag.len());
                (end, true)
            })
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            (!lex::ident_char_before(b, i)).then(|| (number_end(b, i), true))
        } else {
            None
        };
        match end {
            Some((end, constant)) => {
                out.push_str(&text[copied..start]);
                if constant {
                    placeholder(&mut out);
                } else {
                    out.push(' ');
                }
                i = end;
                copied = end;
            }
            None if c == b'"' => i = lex::skip_quoted(b, i + 1, b'"', false),
            None if is_word(c) => {
                while i < b.len() && (is_word(b[i]) || b[i] == b'$') {
                    i += 1;
                }
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// The length of a string constant's prefix at `i` (`E'`, `B'`, `X'`, `N'`, `U&'`), not inside
/// a word.
fn string_prefix(b: &[u8], i: usize) -> Option<usize> {
    if lex::ident_char_before(b, i) {
        return None;
    }
    let c = b[i].to_ascii_lowercase();
    if b.get(i + 1) == Some(&b'\'') && matches!(c, b'e' | b'b' | b'x' | b'n') {
        return Some(1);
    }
    if c == b'u' && b.get(i + 1) == Some(&b'&') && b.get(i + 2) == Some(&b'\'') {
        return Some(2);
    }
    None
}

fn number_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' => i += 1,
            b'+' | b'-' if matches!(b[i - 1], b'e' | b'E') => i += 1,
            _ => break,
        }
    }
    i
}

fn line_end(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| i + p)
}

#[cfg(test)]
mod tests {
    use super::mask_literals;

    #[test]
    fn constants_of_every_kind_become_placeholders() {
        assert_eq!(
            mask_literals(
                "SELEC * FROM users WHERE email = 'ann@example.com' AND ssn = E'12\\'3' \
                 AND n > 1.5e-3 AND b = B'101' AND x = X'1F' AND t1.c = $1 AND y = U&'d\\0061t'"
            ),
            "SELEC * FROM users WHERE email = $1 AND ssn = $2 AND n > $3 AND b = $4 \
             AND x = $5 AND t1.c = $1 AND y = $6"
        );
        assert_eq!(
            mask_literals("SELECT $$secret$$, $tag$it's $$ here$tag$, \"Quoted 'id'\" FROM t2"),
            "SELECT $1, $2, \"Quoted 'id'\" FROM t2"
        );
    }

    #[test]
    fn comments_are_dropped_and_an_unclosed_quote_hides_the_rest() {
        assert_eq!(
            mask_literals("SELECT 1 -- card 4111\n/* ssn /* 123 */ x */ + 2"),
            "SELECT $1  \n  + $2"
        );
        assert_eq!(
            mask_literals("UPDATE t SET note = 'it\\'s secret, 999"),
            "UPDATE t SET note = $1"
        );
        assert_eq!(
            mask_literals("SELECT 'naïve', café FROM t"),
            "SELECT $1, café FROM t"
        );
    }
}
