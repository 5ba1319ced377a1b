//! Statement kinds as pg-retest assigns them at capture (its prefix rules), so that a file we
//! write carries the same `kind` and `transaction_id` values pg-retest's own capture would.

use crate::wkl::QueryKind;

/// pg-retest's `QueryKind::from_sql`: first word(s) after leading whitespace, in this order.
pub fn pg_retest_kind(sql: &str) -> QueryKind {
    // Only the start matters: upper-case the first bytes, not a statement of any length.
    let head = sql.trim_start();
    let upper = head[..floor_char_boundary(head, 24)].to_ascii_uppercase();
    let starts = |p: &str| upper.starts_with(p);
    if starts("SELECT") || starts("WITH") {
        QueryKind::Select
    } else if starts("INSERT") {
        QueryKind::Insert
    } else if starts("UPDATE") {
        QueryKind::Update
    } else if starts("DELETE") {
        QueryKind::Delete
    } else if starts("CREATE") || starts("ALTER") || starts("DROP") || starts("TRUNCATE") {
        QueryKind::Ddl
    } else if starts("BEGIN") || starts("START TRANSACTION") {
        QueryKind::Begin
    } else if starts("COMMIT") || starts("END") {
        QueryKind::Commit
    } else if starts("ROLLBACK TO") {
        QueryKind::Other
    } else if starts("ROLLBACK") || starts("ABORT") {
        QueryKind::Rollback
    } else {
        QueryKind::Other
    }
}

/// The largest index ≤ `at` that is a char boundary of `s`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut i = at.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Transaction ids as pg-retest numbers them: one counter over the whole file, from 1; BEGIN
/// opens a transaction, COMMIT/ROLLBACK close it, everything in between carries its id.
#[derive(Debug, Default)]
pub struct TransactionCounter {
    last: u64,
    /// The current session's open transaction.
    open: Option<u64>,
}

impl TransactionCounter {
    /// Assigns ids to one session's statements, in order.
    pub fn assign(&mut self, kinds: &[QueryKind]) -> Vec<Option<u64>> {
        self.begin_session();
        kinds.iter().map(|kind| self.next(*kind)).collect()
    }

    /// Starts the next session: no transaction is open.
    pub fn begin_session(&mut self) {
        self.open = None;
    }

    /// The id of the session's next statement.
    pub fn next(&mut self, kind: QueryKind) -> Option<u64> {
        match kind {
            QueryKind::Begin => {
                self.last += 1;
                self.open = Some(self.last);
                self.open
            }
            QueryKind::Commit | QueryKind::Rollback => self.open.take(),
            _ => self.open,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_transactions() {
        let sqls = [
            "BEGIN",
            "update t set a=1",
            "ROLLBACK TO s",
            "COMMIT",
            "select 1",
            "start transaction",
            "abort",
        ];
        let kinds: Vec<_> = sqls.iter().map(|s| pg_retest_kind(s)).collect();
        assert_eq!(kinds[2], QueryKind::Other);
        let mut c = TransactionCounter::default();
        let ids = c.assign(&kinds);
        assert_eq!(
            ids,
            vec![Some(1), Some(1), Some(1), Some(1), None, Some(2), Some(2)]
        );
        assert_eq!(c.assign(&[QueryKind::Begin]), vec![Some(3)]);
    }
}
