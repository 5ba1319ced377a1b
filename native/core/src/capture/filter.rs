//! Which captured statements go into the workload: the caller's filters (database, user,
//! application, time window), statements that set or carry a password (never kept, see
//! [`super::password`]) and the noise a capture drags in (driver `SET`s, `SHOW`, catalog-only
//! introspection), which says nothing about the application's performance.

use super::password::carries_password;
use super::time::Micros;
use crate::sql::lex::{contains_ignore_case, non_code_at, NonCode};

/// The caller's choice of statements. Empty lists accept everything.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub databases: Vec<String>,
    pub users: Vec<String>,
    pub application_names: Vec<String>,
    /// Statements starting at or after this instant.
    pub since_us: Option<Micros>,
    /// Statements starting before this instant.
    pub until_us: Option<Micros>,
    /// Keep `SET`/`SHOW`/catalog introspection.
    pub include_noise: bool,
}

/// Why a statement was left out (the sidecar counts them by this name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exclusion {
    Database,
    User,
    ApplicationName,
    TimeWindow,
    Password,
    Noise,
}

impl Exclusion {
    pub fn as_str(self) -> &'static str {
        match self {
            Exclusion::Database => "database",
            Exclusion::User => "user",
            Exclusion::ApplicationName => "application_name",
            Exclusion::TimeWindow => "time_window",
            Exclusion::Password => "password",
            Exclusion::Noise => "noise",
        }
    }
}

impl Filters {
    /// `None` when the statement stays in the workload.
    pub fn exclude(
        &self,
        database: &str,
        user: &str,
        application: &str,
        start_us: Micros,
        sql: &str,
    ) -> Option<Exclusion> {
        let listed = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
        if !listed(&self.databases, database) {
            return Some(Exclusion::Database);
        }
        if !listed(&self.users, user) {
            return Some(Exclusion::User);
        }
        if !listed(&self.application_names, application) {
            return Some(Exclusion::ApplicationName);
        }
        if self.since_us.is_some_and(|s| start_us < s)
            || self.until_us.is_some_and(|u| start_us >= u)
        {
            return Some(Exclusion::TimeWindow);
        }
        if carries_password(sql) {
            return Some(Exclusion::Password);
        }
        if !self.include_noise && is_noise(sql) {
            return Some(Exclusion::Noise);
        }
        None
    }
}

/// Session settings drivers and tools send on connect that change neither what statements do
/// nor how their literals are read. (`DateStyle`, `TimeZone`, `IntervalStyle`, `search_path`,
/// `ROLE`, timeouts, `SET TRANSACTION`, … do, and are kept.)
const NOISE_SETTINGS: &[&str] = &[
    "application_name",
    "extra_float_digits",
    "client_encoding",
    "client_min_messages",
    "bytea_output",
    "lc_messages",
];

/// `SET` of a driver setting, `SHOW`, or a query that reads only system catalogs. A text of
/// several statements (simple protocol) is noise only when each of them is.
pub fn is_noise(sql: &str) -> bool {
    // Nearly every captured text is one statement: no split, no scan, on the capture's hot path.
    if memchr::memchr(b';', sql.as_bytes()).is_none() {
        return statement_is_noise(sql);
    }
    let mut statements = statements(sql).peekable();
    if statements.peek().is_none() {
        return false;
    }
    statements.all(statement_is_noise)
}

/// The statements of `sql`: split at each `;` in code (not in a string, quoted identifier,
/// comment or dollar-quoted body), those holding nothing but whitespace and comments left out.
fn statements(sql: &str) -> impl Iterator<Item = &str> {
    let b = sql.as_bytes();
    let mut parts = Vec::new();
    let (mut i, mut start, mut has_code) = (0, 0, false);
    while i < b.len() {
        if let Some((kind, end)) = non_code_at(b, i) {
            // A string or quoted identifier is code; a comment is not.
            has_code |= kind == NonCode::StandardString || matches!(b[i], b'\'' | b'"' | b'$');
            i = end.max(i + 1);
            continue;
        }
        if b[i] == b';' {
            if has_code {
                parts.push(&sql[start..i]);
            }
            (start, has_code) = (i + 1, false);
        } else if !b[i].is_ascii_whitespace() {
            has_code = true;
        }
        i += 1;
    }
    if has_code {
        parts.push(&sql[start..]);
    }
    parts.into_iter()
}

fn statement_is_noise(sql: &str) -> bool {
    let mut words = sql
        .split(|c: char| c.is_whitespace() || c == '=' || c == ';')
        .filter(|w| !w.is_empty());
    let first = words.next().unwrap_or("");
    let is = |w: &str, what: &str| w.eq_ignore_ascii_case(what);
    if is(first, "show") {
        return true;
    }
    if is(first, "set") {
        let mut name = words.next().unwrap_or("");
        if is(name, "session") {
            name = words.next().unwrap_or("");
        }
        let name = name.trim_matches('"');
        return NOISE_SETTINGS.iter().any(|s| is(name, s));
    }
    if !is(first, "select") && !is(first, "with") {
        return false;
    }
    // A catalog-only query names a catalog; the parser (costly, and run for every statement of
    // a big log) is needed only for the few that do.
    if !contains_ignore_case(sql, b"pg_") && !contains_ignore_case(sql, b"information_schema") {
        return false;
    }
    let Ok(parsed) = pg_query::parse(sql, 0) else {
        return false;
    };
    let tables = parsed.tables();
    !tables.is_empty()
        && tables.iter().all(|t| {
            let t = t.to_ascii_lowercase();
            t.starts_with("pg_")
                || t.starts_with("pg_catalog.")
                || t.starts_with("information_schema.")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise() {
        assert!(is_noise("SET extra_float_digits = 3"));
        assert!(is_noise("SET SESSION application_name TO 'web'"));
        assert!(!is_noise("SET TimeZone TO 'UTC'"));
        assert!(!is_noise("SET datestyle = 'SQL, DMY'"));
        assert!(is_noise("show transaction_isolation"));
        assert!(is_noise(
            "SELECT oid, typname FROM pg_catalog.pg_type WHERE typname = 'x'"
        ));
        assert!(is_noise("select * from information_schema.tables"));
        assert!(!is_noise("SET search_path TO app"));
        assert!(!is_noise("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"));
        assert!(!is_noise("SELECT 1"));
        assert!(!is_noise("SELECT * FROM orders JOIN pg_class ON true"));
        assert!(!is_noise("UPDATE pg_temp_x SET a = 1"));
    }

    #[test]
    fn filters() {
        let f = Filters {
            databases: vec!["shop".into()],
            since_us: Some(10),
            ..Default::default()
        };
        assert_eq!(
            f.exclude("other", "u", "a", 20, "SELECT 1"),
            Some(Exclusion::Database)
        );
        assert_eq!(
            f.exclude("shop", "u", "a", 5, "SELECT 1"),
            Some(Exclusion::TimeWindow)
        );
        assert_eq!(
            f.exclude("shop", "u", "a", 20, "SHOW x"),
            Some(Exclusion::Noise)
        );
        assert_eq!(f.exclude("shop", "u", "a", 20, "SELECT 1"), None);
        assert_eq!(
            f.exclude("shop", "u", "a", 20, "ALTER ROLE app PASSWORD 'x'"),
            Some(Exclusion::Password)
        );
        // --include-noise keeps noise, never a password.
        let all = Filters {
            include_noise: true,
            ..Default::default()
        };
        assert_eq!(
            all.exclude("shop", "u", "a", 20, "CREATE USER app PASSWORD 'x'"),
            Some(Exclusion::Password)
        );
    }

    #[test]
    fn a_text_starting_with_a_driver_set_is_not_all_noise() {
        // A simple-protocol text of several statements is one logged statement.
        assert!(!is_noise(
            "SET application_name = 'web'; DELETE FROM orders WHERE id = 1"
        ));
        assert!(!is_noise("SHOW server_version; UPDATE t SET n = 1"));
    }

    #[test]
    fn a_text_of_noise_statements_only_is_noise() {
        assert!(is_noise(
            "SET application_name = 'web'; SHOW server_version;"
        ));
        assert!(is_noise(
            "SET application_name = 'a;b' /* ; */ ; -- DELETE FROM t"
        ));
        assert!(!is_noise("SELECT ';'; SET application_name = 'web'"));
        assert!(!is_noise("SET application_name = 'web'; $$ ; $$"));
        assert!(!is_noise(";"));
    }
}
