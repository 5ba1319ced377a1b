//! The pieces a session can be cut into without breaking it: *units* (a transaction from BEGIN
//! to COMMIT or ROLLBACK, or one statement outside any transaction), and the *settings* a
//! session made before the part that is kept, which that part may depend on.

use crate::capture::kind::pg_retest_kind;
use crate::wkl::QueryKind;

/// Follows a session's statements and says where each unit starts.
#[derive(Debug, Default)]
pub struct Units {
    open: bool,
}

impl Units {
    /// Starts a session.
    pub fn reset(&mut self) {
        self.open = false;
    }

    /// True when the statement `sql` starts a unit (it is not inside an open transaction).
    pub fn starts(&mut self, sql: &str) -> bool {
        let starts = !self.open;
        match pg_retest_kind(sql) {
            QueryKind::Begin => self.open = true,
            QueryKind::Commit | QueryKind::Rollback => self.open = false,
            _ => {}
        }
        starts
    }
}

/// Statements outside a transaction that change what the session's later statements do: a
/// part of a session cut from the middle replays them first. (`SET LOCAL` and
/// `SET TRANSACTION` only act inside a transaction, where they are part of the unit.)
pub fn is_setting(sql: &str) -> bool {
    let s = sql.trim_start();
    let starts =
        |p: &str| s.len() >= p.len() && s.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes());
    if starts("SET LOCAL ") || starts("SET TRANSACTION ") || starts("SET SESSION CHARACTERISTICS ")
    {
        return false;
    }
    [
        "SET ",
        "RESET ",
        "PREPARE ",
        "DEALLOCATE ",
        "DISCARD ",
        "LISTEN ",
        "CREATE TEMP ",
        "CREATE TEMPORARY ",
        "SELECT set_config(",
        "SELECT pg_catalog.set_config(",
    ]
    .iter()
    .any(|p| starts(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transactions_are_units_and_so_is_each_statement_outside_one() {
        let mut u = Units::default();
        let starts: Vec<bool> = [
            "SET search_path TO app",
            "BEGIN",
            "INSERT INTO t VALUES (1)",
            "SAVEPOINT a",
            "ROLLBACK TO a",
            "COMMIT",
            "SELECT 1",
            "start transaction",
            "select 2",
            "rollback",
        ]
        .iter()
        .map(|s| u.starts(s))
        .collect();
        assert_eq!(
            starts,
            vec![true, true, false, false, false, false, true, true, false, false]
        );
    }

    #[test]
    fn settings_a_cut_session_carries() {
        assert!(is_setting("SET search_path TO app"));
        assert!(is_setting("  set TimeZone = 'UTC'"));
        assert!(is_setting("PREPARE q AS SELECT 1"));
        assert!(is_setting("CREATE TEMP TABLE x (a int)"));
        assert!(is_setting("SELECT set_config('app.user', '7', false)"));
        assert!(!is_setting("SET LOCAL statement_timeout = 0"));
        assert!(!is_setting("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"));
        assert!(!is_setting("SELECT settings FROM t"));
        assert!(!is_setting("UPDATE t SET a = 1"));
    }
}
