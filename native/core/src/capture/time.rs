//! Log timestamps as csvlog and jsonlog write them: `2026-11-22 11:15:33.687 EST`.
//!
//! The zone is `log_timezone`'s abbreviation (`UTC`, `CET`, `EST`, …) or, for zones without one,
//! a numeric offset (`+03`, `-0330`). An abbreviation does not name one offset everywhere
//! (`CST` is both US Central and China), so only unambiguous ones are built in; others are given
//! by the caller (`--zone-offset CST=+08:00`) and an unknown one is an error, never a guess.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;

/// Microseconds since the Unix epoch, UTC.
pub type Micros = i64;

const BUILT_IN: &[(&str, i32)] = &[
    ("UTC", 0),
    ("GMT", 0),
    ("UCT", 0),
    ("Z", 0),
    ("WET", 0),
    ("WEST", 60),
    ("BST", 60),
    ("CET", 60),
    ("CEST", 120),
    ("MET", 60),
    ("MEST", 120),
    ("EET", 120),
    ("EEST", 180),
    ("MSK", 180),
    ("SAST", 120),
    ("EST", -300),
    ("EDT", -240),
    ("CDT", -300),
    ("MST", -420),
    ("MDT", -360),
    ("PST", -480),
    ("PDT", -420),
    ("AKST", -540),
    ("AKDT", -480),
    ("HST", -600),
    ("JST", 540),
    ("KST", 540),
    ("HKT", 480),
    ("AWST", 480),
    ("ACST", 570),
    ("ACDT", 630),
    ("AEST", 600),
    ("AEDT", 660),
    ("NZST", 720),
    ("NZDT", 780),
];

/// Resolves zone names to offsets: the built-in table plus the caller's additions (which win).
#[derive(Debug, Clone, Default)]
pub struct Zones {
    extra: BTreeMap<String, i32>,
}

impl Zones {
    /// `extra`: abbreviation → offset east of UTC in minutes.
    pub fn new(extra: BTreeMap<String, i32>) -> Self {
        Zones { extra }
    }

    fn offset_minutes(&self, zone: &str) -> Result<i32, String> {
        if let Some(m) = self.extra.get(zone) {
            return Ok(*m);
        }
        if zone.starts_with('+') || zone.starts_with('-') {
            return parse_offset(zone)
                .ok_or_else(|| format!("unreadable time zone offset '{zone}'"));
        }
        BUILT_IN
            .iter()
            .find(|(name, _)| *name == zone)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                format!(
                    "time zone '{zone}' is ambiguous or unknown; give its offset with --zone-offset {zone}=+HH:MM (or set log_timezone = 'UTC')"
                )
            })
    }

    /// Parses `YYYY-MM-DD HH:MM:SS[.fff] ZONE` into UTC microseconds.
    pub fn parse(&self, text: &str) -> Result<Micros, String> {
        let text = text.trim();
        let (local, zone) = text
            .rsplit_once(' ')
            .ok_or_else(|| format!("timestamp '{text}' has no time zone"))?;
        let naive = match fast_local(local) {
            Some(t) => t,
            None => NaiveDateTime::parse_from_str(local, "%Y-%m-%d %H:%M:%S%.f")
                .map_err(|_| format!("unreadable timestamp '{text}'"))?,
        };
        let offset = self.offset_minutes(zone)?;
        Ok(naive.and_utc().timestamp_micros() - i64::from(offset) * 60_000_000)
    }
}

/// `YYYY-MM-DD HH:MM:SS` with up to six fraction digits, the form every log line has, read
/// without chrono's format interpreter (a capture parses millions); `None` for anything else,
/// which then goes the general way.
fn fast_local(local: &str) -> Option<NaiveDateTime> {
    let b = local.as_bytes();
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b' '
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let micros = match &b[19..] {
        [] => 0,
        [b'.', digits @ ..] if (1..=6).contains(&digits.len()) => {
            let n = num(20..b.len())?;
            n * 10u32.pow(6 - digits.len() as u32)
        }
        _ => return None,
    };
    let date = chrono::NaiveDate::from_ymd_opt(num(0..4)? as i32, num(5..7)?, num(8..10)?)?;
    let time =
        chrono::NaiveTime::from_hms_micro_opt(num(11..13)?, num(14..16)?, num(17..19)?, micros)?;
    Some(NaiveDateTime::new(date, time))
}

/// `+03`, `-0330`, `+05:30` → minutes east of UTC.
pub fn parse_offset(text: &str) -> Option<i32> {
    let sign = match text.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits: String = text[1..].chars().filter(|c| *c != ':').collect();
    if !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        1 | 2 => (digits.parse::<i32>().ok()?, 0),
        4 => (
            digits[..2].parse::<i32>().ok()?,
            digits[2..].parse::<i32>().ok()?,
        ),
        _ => return None,
    };
    (h <= 15 && m < 60).then_some(sign * (h * 60 + m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_instant_in_any_zone() {
        let z = Zones::default();
        let utc = z.parse("2026-11-22 16:15:33.687 UTC").unwrap();
        assert_eq!(z.parse("2026-11-22 11:15:33.687 EST").unwrap(), utc);
        assert_eq!(z.parse("2026-11-22 19:15:33.687 +03").unwrap(), utc);
        assert_eq!(z.parse("2026-11-22 12:45:33.687 -0330").unwrap(), utc);
        assert_eq!(z.parse("2026-11-22 17:15:33.687 CET").unwrap(), utc);
    }

    #[test]
    fn ambiguous_zone_needs_an_offset() {
        let err = Zones::default()
            .parse("2026-11-22 11:15:33 CST")
            .unwrap_err();
        assert!(err.contains("--zone-offset CST="), "{err}");
        let z = Zones::new([("CST".to_string(), 480)].into_iter().collect());
        assert_eq!(
            z.parse("2026-11-23 00:15:33 CST").unwrap(),
            Zones::default().parse("2026-11-22 16:15:33 UTC").unwrap()
        );
    }

    #[test]
    fn the_fast_path_reads_what_chrono_reads() {
        for t in [
            "2026-11-22 16:15:33.687",
            "2026-11-22 16:15:33",
            "2026-02-28 23:59:59.1",
            "2026-11-22 16:15:33.123456",
            "1999-12-31 00:00:00.000",
        ] {
            assert_eq!(
                fast_local(t),
                NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f").ok(),
                "{t}"
            );
        }
        for t in [
            "2026-13-22 16:15:33",
            "2026-11-22 16:15:33.1234567",
            "2026-11-22T16:15:33",
            "2026-11-22 16:15",
        ] {
            assert_eq!(fast_local(t), None, "{t}");
        }
    }

    #[test]
    fn offsets() {
        assert_eq!(parse_offset("+05:30"), Some(330));
        assert_eq!(parse_offset("-3"), Some(-180));
        assert_eq!(parse_offset("+x"), None);
    }
}
