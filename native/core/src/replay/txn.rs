//! The transaction state of one replayed session, tracked from the statements it sends.
//!
//! When a statement fails inside a transaction block, PostgreSQL refuses everything until the
//! block ends or rolls back to a savepoint. Replaying those statements would record a cascade of
//! "current transaction is aborted" errors that say nothing about the schema, so the engine:
//! - looks ahead: if the workload itself recovers with `ROLLBACK TO` a savepoint taken before the
//!   failure, it skips up to that statement, runs it, and carries on as the application did;
//! - otherwise sends its own `ROLLBACK` at once and skips the rest of the block, including the
//!   block's own COMMIT/ROLLBACK.
//!
//! Skipped statements are counted as skipped, never as successes or failures.

use crate::sql::TxnEffect;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Aborted {
    /// Our ROLLBACK was sent; skip until the workload's block ends.
    RolledBack,
    /// The workload rolls back to this savepoint later; skip until then.
    AwaitingRollbackTo(String),
}

#[derive(Debug, Default)]
pub struct TxnState {
    pub in_block: bool,
    savepoints: Vec<String>,
    pub aborted: Option<Aborted>,
}

/// What to do with the next statement.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    Execute,
    Skip,
    /// Skip it, and the aborted block is over.
    SkipAndEndBlock,
}

impl TxnState {
    /// Decide for a statement with effect `effect` while possibly aborted.
    pub fn decide(&mut self, effect: &TxnEffect) -> Decision {
        match (&self.aborted, effect) {
            (None, _) => Decision::Execute,
            (Some(Aborted::AwaitingRollbackTo(sp)), TxnEffect::RollbackTo(name)) if sp == name => {
                Decision::Execute
            }
            (Some(_), TxnEffect::End) => {
                self.reset();
                Decision::SkipAndEndBlock
            }
            // A BEGIN while we think the block is still open means the workload's block ended
            // without a statement we recognise; our ROLLBACK already ended it server-side.
            (Some(Aborted::RolledBack), TxnEffect::Begin) => {
                self.reset();
                Decision::Execute
            }
            (Some(_), _) => Decision::Skip,
        }
    }

    /// Record that a statement with `effect` succeeded.
    pub fn succeeded(&mut self, effect: &TxnEffect) {
        match effect {
            TxnEffect::None => {}
            TxnEffect::Begin => {
                self.in_block = true;
                self.savepoints.clear();
            }
            TxnEffect::End => self.reset(),
            TxnEffect::Savepoint(name) => {
                if self.in_block {
                    self.savepoints.push(name.clone());
                }
            }
            TxnEffect::Release(name) => {
                if let Some(pos) = self.savepoints.iter().rposition(|s| s == name) {
                    self.savepoints.truncate(pos);
                }
            }
            TxnEffect::RollbackTo(name) => {
                if let Some(pos) = self.savepoints.iter().rposition(|s| s == name) {
                    self.savepoints.truncate(pos + 1);
                }
                self.aborted = None;
            }
        }
    }

    /// Takes the server's account of the transaction after a failed statement, where the client
    /// has one (see `exec::Answer::Failed`): `Some(true)`, a failed block is open; `Some(false)`,
    /// none is. A text of several statements (`BEGIN; INSERT …; INSERT …`) can open or end a
    /// block that its one effect does not tell: without this, a block opened and failed inside
    /// such a text went unnoticed and every statement after it failed with 25P02.
    pub fn server_says(&mut self, failed_block: Option<bool>) {
        match failed_block {
            Some(true) if !self.in_block => {
                self.in_block = true;
                self.savepoints.clear();
            }
            Some(false) if self.in_block => self.reset(),
            _ => {}
        }
    }

    /// Record that a statement with `effect` failed. `upcoming` yields the effects of the
    /// session's following statements. Returns true when the caller must send ROLLBACK now.
    pub fn failed<'a>(
        &mut self,
        effect: &TxnEffect,
        upcoming: impl Iterator<Item = &'a TxnEffect>,
    ) -> bool {
        if !self.in_block {
            return false;
        }
        if matches!(effect, TxnEffect::End) {
            // A failed COMMIT (e.g. a serialization failure) still ends the block.
            self.reset();
            return false;
        }
        if matches!(effect, TxnEffect::RollbackTo(_)) {
            // Could not even recover: give up on the block.
            self.aborted = Some(Aborted::RolledBack);
            return true;
        }
        for next in upcoming {
            match next {
                TxnEffect::RollbackTo(name) if self.savepoints.iter().any(|s| s == name) => {
                    self.aborted = Some(Aborted::AwaitingRollbackTo(name.clone()));
                    return false;
                }
                TxnEffect::End | TxnEffect::Begin => break,
                _ => {}
            }
        }
        self.aborted = Some(Aborted::RolledBack);
        true
    }

    fn reset(&mut self) {
        self.in_block = false;
        self.savepoints.clear();
        self.aborted = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TxnEffect as E;

    #[test]
    fn failure_without_savepoint_rolls_back_and_skips_to_block_end() {
        let mut t = TxnState::default();
        t.succeeded(&E::Begin);
        assert!(t.failed(&E::None, [E::None, E::End].iter()));
        assert_eq!(t.decide(&E::None), Decision::Skip);
        assert_eq!(t.decide(&E::End), Decision::SkipAndEndBlock);
        assert_eq!(t.decide(&E::None), Decision::Execute);
        assert!(!t.in_block);
    }

    #[test]
    fn failure_recovered_by_rollback_to_savepoint_continues() {
        let mut t = TxnState::default();
        t.succeeded(&E::Begin);
        t.succeeded(&E::Savepoint("sp".into()));
        let upcoming = [E::None, E::RollbackTo("sp".into()), E::None, E::End];
        assert!(!t.failed(&E::None, upcoming.iter()));
        assert_eq!(t.decide(&E::None), Decision::Skip);
        assert_eq!(t.decide(&E::RollbackTo("sp".into())), Decision::Execute);
        t.succeeded(&E::RollbackTo("sp".into()));
        assert_eq!(t.decide(&E::None), Decision::Execute);
        assert_eq!(t.decide(&E::End), Decision::Execute);
    }

    #[test]
    fn rollback_to_unknown_savepoint_does_not_count_as_recovery() {
        let mut t = TxnState::default();
        t.succeeded(&E::Begin);
        let upcoming = [E::RollbackTo("later".into()), E::End];
        assert!(t.failed(&E::None, upcoming.iter()));
    }

    #[test]
    fn the_servers_account_after_a_failure_wins() {
        // `BEGIN; INSERT …; INSERT …` failed in its last part: the server is in a failed block.
        let mut t = TxnState::default();
        t.server_says(Some(true));
        assert!(t.failed(&E::Begin, [E::None, E::End, E::None].iter()));
        assert_eq!(t.decide(&E::None), Decision::Skip);
        assert_eq!(t.decide(&E::End), Decision::SkipAndEndBlock);
        assert_eq!(t.decide(&E::None), Decision::Execute);
        // `…; COMMIT; <failing>`: the block ended within the text, nothing is left to skip.
        let mut t = TxnState::default();
        t.succeeded(&E::Begin);
        t.server_says(Some(false));
        assert!(!t.failed(&E::None, [E::None, E::End].iter()));
        assert_eq!(t.decide(&E::None), Decision::Execute);
        // No account (tokio-postgres): the tracker's own view stands.
        let mut t = TxnState::default();
        t.server_says(None);
        assert!(!t.failed(&E::Begin, [E::End].iter()));
    }

    #[test]
    fn failure_outside_a_block_changes_nothing() {
        let mut t = TxnState::default();
        assert!(!t.failed(&E::None, [E::None].iter()));
        assert_eq!(t.decide(&E::None), Decision::Execute);
    }
}
