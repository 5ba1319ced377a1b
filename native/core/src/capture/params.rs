//! The bind parameter list PostgreSQL logs with an extended-protocol statement.
//!
//! Forms seen in logs:
//! - DETAIL `parameters: $1 = '42', $2 = NULL` (PostgreSQL up to 15 at least; 9.x–12 built it
//!   by hand, 13+ with `log_parameter_max_length`), and `Parameters: …` in newer servers (checked
//!   with 18); pg-retest's parser looked only for the capitalised form, so any case is accepted;
//! - CONTEXT `unnamed portal with parameters: $1 = '42'` or `portal "C_1" with parameters: …`
//!   (13+, on an ERROR, when `log_parameter_max_length_on_error` is not 0).
//!
//! Values are already SQL literals: quoted with `''` doubled inside, or `NULL`. When
//! `log_parameter_max_length` (or `…_on_error`) cut a value, PostgreSQL ends it with `...`
//! inside the quotes; such a value is not the one the application sent.

use std::collections::BTreeMap;

/// Parsed parameter values (`$n` → literal), and the numbers of the truncated ones.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Params {
    pub values: BTreeMap<u32, String>,
    pub truncated: Vec<u32>,
}

/// Finds and parses the parameter list in a DETAIL or CONTEXT text; `None` if there is none.
pub fn parse_params(text: &str) -> Option<Params> {
    // Either case of the first letter (`parameters:` up to 17, `Parameters:` in 18), and the
    // rest in any case, without copying the text.
    let at = text
        .as_bytes()
        .windows(12)
        .position(|w| w.eq_ignore_ascii_case(b"parameters: "))?;
    let list = &text[at + "parameters: ".len()..];
    let mut params = Params::default();
    let b = list.as_bytes();
    let mut i = 0;
    loop {
        if b.get(i) != Some(&b'$') {
            break;
        }
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let n: u32 = list[i + 1..i + 1 + digits].parse().ok()?;
        i += 1 + digits;
        if !list[i..].starts_with(" = ") {
            return None;
        }
        i += 3;
        let start = i;
        if list[i..].starts_with("NULL") {
            i += 4;
        } else if b.get(i) == Some(&b'\'') {
            i += 1;
            loop {
                match b.get(i) {
                    None => return None, // an unterminated literal: not a list we understand
                    Some(b'\'') if b.get(i + 1) == Some(&b'\'') => i += 2,
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(_) => i += 1,
                }
            }
        } else {
            return None;
        }
        let value = &list[start..i];
        if value.len() >= 5 && value.ends_with("...'") {
            params.truncated.push(n);
        }
        params.values.insert(n, value.to_string());
        if list[i..].starts_with(", $") {
            i += 2;
        } else {
            break;
        }
    }
    Some(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_detail_form() {
        let p = parse_params("parameters: $1 = '42', $2 = NULL, $3 = 'it''s, $4 = x', $10 = ''")
            .unwrap();
        assert_eq!(p.values[&1], "'42'");
        assert_eq!(p.values[&2], "NULL");
        assert_eq!(p.values[&3], "'it''s, $4 = x'");
        assert_eq!(p.values[&10], "''");
        assert_eq!(p.values.len(), 4);
        assert!(p.truncated.is_empty());
    }

    #[test]
    fn parses_context_form_and_any_case() {
        let p = parse_params("unnamed portal with parameters: $1 = 'a'").unwrap();
        assert_eq!(p.values[&1], "'a'");
        let p = parse_params("Parameters: $1 = 'b'").unwrap();
        assert_eq!(p.values[&1], "'b'");
    }

    #[test]
    fn flags_truncated_values() {
        let p = parse_params("parameters: $1 = 'qqqqqqqqqq...', $2 = '1'").unwrap();
        assert_eq!(p.truncated, vec![1]);
    }

    #[test]
    fn no_list_or_garbage() {
        assert_eq!(parse_params("something else"), None);
        assert_eq!(parse_params("parameters: $1 = 'unterminated"), None);
    }

    #[test]
    fn multi_line_values() {
        let p = parse_params("parameters: $1 = 'line1\nline2'").unwrap();
        assert_eq!(p.values[&1], "'line1\nline2'");
    }
}
