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

/// The key's hash, fed token by token. Each token is one tag word (its kind, whether a space
/// came before it, and its length or, for punctuation, its byte) and, for identifiers and verbatim
/// tokens, its bytes eight to a word (case folded eight at a time). A token sequence therefore
/// feeds exactly one word sequence, and the multiply chain is one multiply per token and per
/// eight bytes of a word, where hashing the folded text with FNV took one per byte.
struct TokenHash(u64);

/// Token kinds, in the tag word's low nibble.
const IDENT: u64 = 1;
const VERBATIM: u64 = 2;
const PUNCT: u64 = 3;
const STRING: u64 = 4;
const NUMBER: u64 = 5;

impl TokenHash {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;

    fn mix(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(Self::K).rotate_left(29);
    }

    fn tag(&mut self, kind: u64, spaced: bool, payload: u64) {
        self.mix(kind | u64::from(spaced) << 4 | payload << 8);
    }

    /// A token whose value is its kind alone (a literal's placeholder) or its one byte.
    fn token(&mut self, kind: u64, spaced: bool, byte: u8) {
        self.tag(kind, spaced, u64::from(byte));
    }

    /// A token with its bytes: an unquoted word case folded, a quoted identifier or a
    /// parameter as written.
    fn bytes(&mut self, kind: u64, spaced: bool, bytes: &[u8]) {
        self.tag(kind, spaced, bytes.len() as u64);
        let fold = kind == IDENT;
        let word = |w: u64| if fold { fold_ascii(w) } else { w };
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.mix(word(u64::from_le_bytes(c.try_into().expect("chunks of 8"))));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            // Padded with zeros, which is unambiguous: the tag word gave the length.
            self.mix(word(short_word(rest)));
        }
    }

    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(Self::K);
        h ^ (h >> 32)
    }
}

/// Up to seven bytes as the low bytes of a word, in two overlapping loads instead of a copy
/// into a zeroed buffer (which stalls: the word is read back before the bytes' stores settle).
fn short_word(b: &[u8]) -> u64 {
    let n = b.len();
    debug_assert!(n < 8);
    if n >= 4 {
        let low = u64::from(u32::from_le_bytes(b[..4].try_into().expect("4 bytes")));
        let high = u64::from(u32::from_le_bytes(b[n - 4..].try_into().expect("4 bytes")));
        low | high << (8 * (n - 4))
    } else if n > 0 {
        u64::from(b[0])
            | u64::from(b[n / 2]) << (8 * (n / 2))
            | u64::from(b[n - 1]) << (8 * (n - 1))
    } else {
        0
    }
}

/// ASCII upper case to lower case in eight bytes at once, as `to_ascii_lowercase` does byte by
/// byte: bytes from 0x80 up (parts of UTF-8 sequences) are left alone. Per byte, with the top
/// bit cleared (so no carry crosses bytes), adding 0x3f sets it from `A` up and adding 0x25 from
/// one past `Z` up; the difference marks the capitals, and their top bit, moved down two, is
/// the 0x20 that lowers them.
fn fold_ascii(w: u64) -> u64 {
    const TOP: u64 = 0x8080_8080_8080_8080;
    let low = w & !TOP;
    let from_a = low + 0x3f3f_3f3f_3f3f_3f3f;
    let past_z = low + 0x2525_2525_2525_2525;
    let capitals = from_a & !past_z & !w & TOP;
    w | (capitals >> 2)
}

fn ident_char(b: u8) -> bool {
    WORD_BYTES[b as usize] != NOT_WORD
}

const NOT_WORD: u8 = 0;
const WORD: u8 = 1;
const DOLLAR: u8 = 2;

/// What each byte is inside an unquoted word: the scan of a word is a table look-up per byte
/// and notices a `$` on the way, where a chain of comparisons and a second pass took longer.
static WORD_BYTES: [u8; 256] = {
    let mut t = [NOT_WORD; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            t[b] = WORD;
        }
        b += 1;
    }
    t[b'$' as usize] = DOLLAR;
    t
};

/// Statements whose literals are all constant nodes.
const PLAIN_KEYWORDS: &[&[u8]] = &[
    b"select", b"insert", b"update", b"delete", b"with", b"values", b"table",
];

/// The shape key of `sql`, or `None` when the text is not one the key can vouch for.
pub fn shape_key(sql: &str) -> Option<u64> {
    let s = sql.as_bytes();
    let mut h = TokenHash(TokenHash::K);
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
            i = line_end(s, i);
            pending_space = true;
            continue;
        }
        if b == b'/' && s.get(i + 1) == Some(&b'*') {
            i = block_comment_end(s, i)?;
            pending_space = true;
            continue;
        }
        let spaced = pending_space && !first_word;
        pending_space = false;
        if ident_char(b) && !b.is_ascii_digit() && b != b'$' {
            let start = i;
            i = word_end(s, i)?;
            let word = &s[start..i];
            if first_word {
                if !PLAIN_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word)) {
                    return None;
                }
                first_word = false;
            }
            // E'…' (escape string), B'…', X'…', U&'…' prefixes: the prefix stays in the key,
            // the string becomes a placeholder below.
            h.bytes(IDENT, spaced, word);
            continue;
        }
        if first_word && b != b'(' {
            // Anything but a keyword (or a parenthesised query) first: not ours.
            return None;
        }
        match b {
            b'\'' => {
                i = string_end(s, i)?;
                h.token(STRING, spaced, 0);
            }
            b'"' => {
                let start = i;
                i = quoted_end(s, i)?;
                h.bytes(VERBATIM, spaced, &s[start..i]);
            }
            // `$1`; dollar quoting is refused: the body may be code, not a constant.
            b'$' if s.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let start = i;
                i = digits_end(s, i + 1);
                h.bytes(VERBATIM, spaced, &s[start..i]);
            }
            b'$' => return None,
            b'0'..=b'9' => {
                i = number_end(s, i);
                h.token(NUMBER, spaced, 0);
            }
            b'.' if s.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i = word_chars_end(s, i + 1);
                h.token(NUMBER, spaced, 0);
            }
            _ => {
                h.token(PUNCT, spaced, b);
                i += 1;
            }
        }
    }
    if first_word {
        return None;
    }
    Some(h.finish())
}

/// Past a `--` comment: at its newline (or the end).
#[inline]
fn line_end(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && s[i] != b'\n' {
        i += 1;
    }
    i
}

/// Past the `/* … */` comment at `i` (comments nest); `None` when it never closes.
#[inline]
fn block_comment_end(s: &[u8], mut i: usize) -> Option<usize> {
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
    (depth == 0).then_some(i)
}

/// Past the unquoted word at `i`; `None` when it holds a `$` (legal inside identifiers but
/// rare; not worth reasoning about).
#[inline]
fn word_end(s: &[u8], mut i: usize) -> Option<usize> {
    let mut dollar = false;
    while let Some(&c) = s.get(i) {
        let class = WORD_BYTES[c as usize];
        if class == NOT_WORD {
            break;
        }
        dollar |= class == DOLLAR;
        i += 1;
    }
    (!dollar).then_some(i)
}

/// Past the string constant whose quote is at `i`; `None` when it never closes. Escape strings
/// (`E'…'`) honour backslashes; standard strings only doubled quotes.
#[inline]
fn string_end(s: &[u8], mut i: usize) -> Option<usize> {
    let escape = i > 0 && matches!(s[i - 1], b'e' | b'E') && (i < 2 || !ident_char(s[i - 2]));
    i += 1;
    loop {
        match s.get(i) {
            None => return None,
            Some(b'\\') if escape => i += 2,
            Some(b'\'') if s.get(i + 1) == Some(&b'\'') => i += 2,
            Some(b'\'') => return Some(i + 1),
            Some(_) => i += 1,
        }
    }
}

/// Past the quoted identifier whose quote is at `i`; `None` when it never closes.
#[inline]
fn quoted_end(s: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match s.get(i) {
            None => return None,
            Some(b'"') if s.get(i + 1) == Some(&b'"') => i += 2,
            Some(b'"') => return Some(i + 1),
            Some(_) => i += 1,
        }
    }
}

#[inline]
fn digits_end(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && s[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// Past the number starting with the digit at `i`: the letters, digits, `_` and `.` that follow
/// it, and an exponent's sign (`1.5e-3`).
#[inline]
fn number_end(s: &[u8], mut i: usize) -> usize {
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
    i
}

#[inline]
fn word_chars_end(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
        i += 1;
    }
    i
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
        // A placeholder is not the text it is written as.
        differ("SELECT a ?n FROM t", "SELECT a 1 FROM t");
        differ("SELECT \"ab\" FROM t", "SELECT ab FROM t");
    }

    #[test]
    fn short_words_are_their_bytes_zero_padded() {
        let bytes = b"abcdefg";
        for n in 0..8 {
            let mut padded = [0u8; 8];
            padded[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(
                short_word(&bytes[..n]),
                u64::from_le_bytes(padded),
                "{n} bytes"
            );
        }
    }

    #[test]
    fn case_folds_in_any_position_of_a_long_word() {
        same(
            "SELECT Pgbench_Accounts_Extended_Name FROM T",
            "select pgbench_accounts_extended_name from t",
        );
        differ("SELECT \"Ab\" FROM t", "SELECT \"ab\" FROM t");
        let every_byte =
            (0..=255u8).map(|b| u64::from_le_bytes([b, 0x41, b, 0xda, b, 0x5a, 0x7f, b]));
        for w in [0u64, u64::MAX, 0x4041_5a5b_6061_7a7b, 0xc3c4_8041_5a00_7f20]
            .into_iter()
            .chain(every_byte)
        {
            let bytes = w.to_le_bytes();
            let lowered: Vec<u8> = bytes.iter().map(u8::to_ascii_lowercase).collect();
            assert_eq!(fold_ascii(w).to_le_bytes().to_vec(), lowered, "{w:#x}");
        }
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
