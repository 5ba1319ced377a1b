//! Binary-format values (bind parameters, result columns) as the text PostgreSQL would print
//! for them, by type OID.
//!
//! The workload replays SQL text, so a parameter a driver sent in binary must become the literal
//! the server would have read in text form. Only types whose binary form is fixed and known are
//! decoded; any other gives `None`, and the caller counts the statement as not replayable rather
//! than guess.

use chrono::{Duration, NaiveDate, NaiveDateTime};

const BOOL: u32 = 16;
const BYTEA: u32 = 17;
const CHAR: u32 = 18;
const NAME: u32 = 19;
const INT8: u32 = 20;
const INT2: u32 = 21;
const INT4: u32 = 23;
const TEXT: u32 = 25;
const OID: u32 = 26;
const JSON: u32 = 114;
const FLOAT4: u32 = 700;
const FLOAT8: u32 = 701;
const UNKNOWN: u32 = 705;
const BPCHAR: u32 = 1042;
const VARCHAR: u32 = 1043;
const DATE: u32 = 1082;
const TIME: u32 = 1083;
const TIMESTAMP: u32 = 1114;
const TIMESTAMPTZ: u32 = 1184;
const INTERVAL: u32 = 1186;
const NUMERIC: u32 = 1700;
const UUID: u32 = 2950;
const JSONB: u32 = 3802;

/// The element type of an array type this module decodes.
fn element_of(array: u32) -> Option<u32> {
    Some(match array {
        1000 => BOOL,
        1001 => BYTEA,
        1002 => CHAR,
        1003 => NAME,
        1016 => INT8,
        1005 => INT2,
        1007 => INT4,
        1009 => TEXT,
        1028 => OID,
        199 => JSON,
        1021 => FLOAT4,
        1022 => FLOAT8,
        1014 => BPCHAR,
        1015 => VARCHAR,
        1182 => DATE,
        1183 => TIME,
        1115 => TIMESTAMP,
        1185 => TIMESTAMPTZ,
        1187 => INTERVAL,
        1231 => NUMERIC,
        2951 => UUID,
        3807 => JSONB,
        _ => return None,
    })
}

/// The text form of the binary value `v` of type `oid`, or `None` when the type is not one
/// this module knows or the bytes are not a valid value of it.
pub fn decode(oid: u32, v: &[u8]) -> Option<String> {
    if let Some(element) = element_of(oid) {
        return array(element, v);
    }
    scalar(oid, v)
}

fn scalar(oid: u32, v: &[u8]) -> Option<String> {
    Some(match oid {
        BOOL => match v {
            [0] => "f".into(),
            [1] => "t".into(),
            _ => return None,
        },
        INT2 => i16::from_be_bytes(v.try_into().ok()?).to_string(),
        INT4 => i32::from_be_bytes(v.try_into().ok()?).to_string(),
        INT8 => i64::from_be_bytes(v.try_into().ok()?).to_string(),
        OID => u32::from_be_bytes(v.try_into().ok()?).to_string(),
        FLOAT4 => float(f64::from(f32::from_be_bytes(v.try_into().ok()?)), true),
        FLOAT8 => float(f64::from_be_bytes(v.try_into().ok()?), false),
        TEXT | VARCHAR | BPCHAR | NAME | UNKNOWN | CHAR | JSON => {
            std::str::from_utf8(v).ok()?.to_string()
        }
        JSONB => match v.split_first() {
            Some((1, text)) => std::str::from_utf8(text).ok()?.to_string(),
            _ => return None,
        },
        BYTEA => {
            let mut s = String::with_capacity(2 + v.len() * 2);
            s.push_str("\\x");
            for b in v {
                s.push_str(&format!("{b:02x}"));
            }
            s
        }
        UUID => {
            let b: [u8; 16] = v.try_into().ok()?;
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            format!(
                "{}-{}-{}-{}-{}",
                &hex[0..8],
                &hex[8..12],
                &hex[12..16],
                &hex[16..20],
                &hex[20..32]
            )
        }
        DATE => date(i32::from_be_bytes(v.try_into().ok()?))?,
        TIME => {
            let us = i64::from_be_bytes(v.try_into().ok()?);
            if !(0..=86_400_000_000).contains(&us) {
                return None;
            }
            clock(us)
        }
        TIMESTAMP => timestamp(i64::from_be_bytes(v.try_into().ok()?))?,
        TIMESTAMPTZ => {
            let t = timestamp(i64::from_be_bytes(v.try_into().ok()?))?;
            if t.ends_with("infinity") {
                t
            } else if let Some(bc) = t.strip_suffix(" BC") {
                format!("{bc}+00 BC")
            } else {
                format!("{t}+00")
            }
        }
        INTERVAL => {
            if v.len() != 16 {
                return None;
            }
            let us = i64::from_be_bytes(v[0..8].try_into().ok()?);
            let days = i32::from_be_bytes(v[8..12].try_into().ok()?);
            let months = i32::from_be_bytes(v[12..16].try_into().ok()?);
            format!("{months} months {days} days {us} microseconds")
        }
        NUMERIC => numeric(v)?,
        _ => return None,
    })
}

/// Shortest text that reads back as the same value (what PostgreSQL 12+ prints too).
fn float(x: f64, single: bool) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if single {
        format!("{:?}", x as f32)
    } else {
        format!("{x:?}")
    }
}

fn epoch() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2000, 1, 1)
        .expect("a valid date")
        .and_hms_opt(0, 0, 0)
        .expect("a valid time")
}

/// `YYYY-MM-DD`, with ` BC` for years before 1 (PostgreSQL has no year 0).
fn ymd(d: NaiveDate) -> String {
    use chrono::Datelike;
    let y = d.year();
    if y <= 0 {
        format!("{:04}-{:02}-{:02} BC", 1 - y, d.month(), d.day())
    } else {
        format!("{y:04}-{:02}-{:02}", d.month(), d.day())
    }
}

fn date(days: i32) -> Option<String> {
    match days {
        i32::MAX => Some("infinity".into()),
        i32::MIN => Some("-infinity".into()),
        _ => Some(ymd(epoch()
            .date()
            .checked_add_signed(Duration::days(i64::from(days)))?)),
    }
}

/// `HH:MM:SS.ffffff` for microseconds since midnight.
fn clock(us: i64) -> String {
    let (s, frac) = (us / 1_000_000, us % 1_000_000);
    format!(
        "{:02}:{:02}:{:02}.{frac:06}",
        s / 3600,
        (s / 60) % 60,
        s % 60
    )
}

fn timestamp(us: i64) -> Option<String> {
    match us {
        i64::MAX => Some("infinity".into()),
        i64::MIN => Some("-infinity".into()),
        _ => {
            let t = epoch().checked_add_signed(Duration::microseconds(us))?;
            let day_us = (t - t.date().and_hms_opt(0, 0, 0)?).num_microseconds()?;
            let d = ymd(t.date());
            Some(match d.strip_suffix(" BC") {
                Some(d) => format!("{d} {} BC", clock(day_us)),
                None => format!("{d} {}", clock(day_us)),
            })
        }
    }
}

fn numeric(v: &[u8]) -> Option<String> {
    let word =
        |i: usize| -> Option<u16> { Some(u16::from_be_bytes(v.get(i..i + 2)?.try_into().ok()?)) };
    let ndigits = word(0)? as usize;
    let weight = word(2)? as i16 as i32;
    let sign = word(4)?;
    let dscale = word(6)? as usize;
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        0x0000 | 0x4000 => {}
        _ => return None,
    }
    if v.len() != 8 + 2 * ndigits {
        return None;
    }
    let digits: Vec<u16> = (0..ndigits)
        .map(|i| word(8 + 2 * i))
        .collect::<Option<_>>()?;
    if digits.iter().any(|d| *d > 9999) {
        return None;
    }
    let digit = |i: i32| -> u16 {
        if i < 0 || i as usize >= ndigits {
            0
        } else {
            digits[i as usize]
        }
    };
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    // Integer part: groups 0..=weight.
    if weight < 0 {
        s.push('0');
    } else {
        for i in 0..=weight {
            let d = digit(i);
            if i == 0 {
                s.push_str(&d.to_string());
            } else {
                s.push_str(&format!("{d:04}"));
            }
        }
    }
    if dscale > 0 {
        let mut frac = String::new();
        let mut i = weight + 1;
        while frac.len() < dscale {
            frac.push_str(&format!("{:04}", digit(i)));
            i += 1;
        }
        frac.truncate(dscale);
        s.push('.');
        s.push_str(&frac);
    }
    Some(s)
}

/// A binary array in PostgreSQL's text form: `{…}` nested per dimension, each element quoted
/// (so any element's text is safe) and NULL bare; lower bounds other than 1 are written
/// `[lo:hi]=` first, as the server does.
fn array(element: u32, v: &[u8]) -> Option<String> {
    let mut r = v;
    let ndim = read_i32(&mut r)?;
    let _has_null = read_i32(&mut r)?;
    let oid = read_i32(&mut r)? as u32;
    if ndim == 0 {
        return Some("{}".into());
    }
    if !(1..=6).contains(&ndim) || oid != element {
        return None;
    }
    let mut dims = Vec::new();
    for _ in 0..ndim {
        let len = read_i32(&mut r)?;
        let lower = read_i32(&mut r)?;
        if len < 0 {
            return None;
        }
        dims.push((len as usize, lower));
    }
    let mut out = String::new();
    if dims.iter().any(|(_, lower)| *lower != 1) {
        for (len, lower) in &dims {
            out.push_str(&format!("[{lower}:{}]", *lower as i64 + *len as i64 - 1));
        }
        out.push('=');
    }
    nest(element, &dims, &mut r, &mut out)?;
    r.is_empty().then_some(out)
}

fn nest(element: u32, dims: &[(usize, i32)], r: &mut &[u8], out: &mut String) -> Option<()> {
    out.push('{');
    for i in 0..dims[0].0 {
        if i > 0 {
            out.push(',');
        }
        if dims.len() > 1 {
            nest(element, &dims[1..], r, out)?;
            continue;
        }
        let len = read_i32(r)?;
        if len == -1 {
            out.push_str("NULL");
            continue;
        }
        let len = usize::try_from(len).ok()?;
        let bytes = r.get(..len)?;
        *r = &r[len..];
        let text = scalar(element, bytes)?;
        out.push('"');
        for c in text.chars() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
    }
    out.push('}');
    Some(())
}

fn read_i32(r: &mut &[u8]) -> Option<i32> {
    let v = i32::from_be_bytes(r.get(..4)?.try_into().ok()?);
    *r = &r[4..];
    Some(v)
}

/// `value` as a SQL string literal (`'…'`, quotes doubled), the form PostgreSQL logs bind
/// parameters in (capture's `params`), so proxy and log captures write the same SQL.
pub fn quote(value: &str) -> String {
    let mut s = String::with_capacity(value.len() + 2);
    s.push('\'');
    for c in value.chars() {
        if c == '\'' {
            s.push('\'');
        }
        s.push(c);
    }
    s.push('\'');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars() {
        assert_eq!(decode(INT4, &(-42i32).to_be_bytes()).unwrap(), "-42");
        assert_eq!(decode(INT8, &7i64.to_be_bytes()).unwrap(), "7");
        assert_eq!(decode(BOOL, &[1]).unwrap(), "t");
        assert_eq!(decode(FLOAT8, &0.1f64.to_be_bytes()).unwrap(), "0.1");
        assert_eq!(decode(FLOAT4, &1.5f32.to_be_bytes()).unwrap(), "1.5");
        assert_eq!(decode(DATE, &0i32.to_be_bytes()).unwrap(), "2000-01-01");
        assert_eq!(
            decode(TIMESTAMP, &1_500_000i64.to_be_bytes()).unwrap(),
            "2000-01-01 00:00:01.500000"
        );
        assert_eq!(
            decode(TIMESTAMPTZ, &(-1i64).to_be_bytes()).unwrap(),
            "1999-12-31 23:59:59.999999+00"
        );
        assert_eq!(decode(BYTEA, &[0, 255]).unwrap(), "\\x00ff");
        assert_eq!(decode(JSONB, b"\x01{\"a\":1}").unwrap(), "{\"a\":1}");
        assert_eq!(decode(3904, b""), None, "int4range is not decoded");
        assert_eq!(decode(INT4, &[0, 0]), None, "a short int4 is not a value");
    }

    #[test]
    fn numerics() {
        // 12345.678: weight 1, digits [1, 2345, 6780], dscale 3.
        let mut v = Vec::new();
        for w in [3u16, 1, 0, 3, 1, 2345, 6780] {
            v.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(decode(NUMERIC, &v).unwrap(), "12345.678");
        // -0.05: weight -1, digits [500], dscale 2.
        let mut v = Vec::new();
        for w in [1u16, 0xFFFF, 0x4000, 2, 500] {
            v.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(decode(NUMERIC, &v).unwrap(), "-0.05");
        // 20000: weight 1, digits [2], dscale 0.
        let mut v = Vec::new();
        for w in [1u16, 1, 0, 0, 2] {
            v.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(decode(NUMERIC, &v).unwrap(), "20000");
    }

    #[test]
    fn arrays() {
        let mut v = Vec::new();
        for x in [1i32, 0, INT4 as i32, 3, 1] {
            v.extend_from_slice(&x.to_be_bytes());
        }
        for x in [Some(1i32), None, Some(3)] {
            match x {
                Some(x) => {
                    v.extend_from_slice(&4i32.to_be_bytes());
                    v.extend_from_slice(&x.to_be_bytes());
                }
                None => v.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        assert_eq!(decode(1007, &v).unwrap(), "{\"1\",NULL,\"3\"}");
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("it's"), "'it''s'");
    }
}
