//! Azure Database for PostgreSQL (Flexible Server): diagnostic-settings records whose
//! `properties.message` is a line of the server's stderr log, with the fixed `log_line_prefix`
//! [`PREFIX`].
//!
//! Records of other categories (sessions, Query Store, table statistics…) are skipped and
//! counted: only `PostgreSQLLogs` holds the server's log. The server-log files Azure lets one
//! download (`az postgres flexible-server server-logs download`) are plain stderr logs, not
//! wrapped.

use super::json::{restore_lines, starts_with_time, Entry};
use super::Skipped;

/// Azure Flexible Server's `log_line_prefix`.
pub(super) const PREFIX: &str = "%t-%c-";

/// The record's log text, or `None` (counted in `skipped`) when it holds none.
pub(super) fn text(entry: &Entry, skipped: &Skipped) -> Option<String> {
    if let Some(category) = entry.category.as_deref() {
        if !category.eq_ignore_ascii_case("PostgreSQLLogs") {
            skipped.add("records_of_other_categories");
            return None;
        }
    }
    let Some(message) = entry.message.as_deref().filter(|m| !m.trim().is_empty()) else {
        skipped.add("records_without_a_message");
        return None;
    };
    Some(restore_lines(message, starts_with_time))
}
