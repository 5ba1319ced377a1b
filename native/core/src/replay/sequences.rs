//! Putting the workload's sequences where they stood at capture time, before a replay.
//!
//! With sequences aligned, a replayed INSERT gets the id it got in production, so even a use of
//! that id that correlation did not link (a key computed by the application, a statement
//! outside the capture) finds its row. Two sources, in order: the capture's snapshot
//! (pg-retest's `sequence_snapshot`, restored as pg-retest restores it), else the smallest key
//! each sequence handed out in the workload (recorded or inferred), so that its next value is
//! that key.
//!
//! A sequence is never moved back below ids the database already holds: the seed may hold more
//! rows than production did at capture time, and a sequence set under them would make every
//! replayed INSERT a unique violation. Such a sequence is kept, and the report says why.
//!
//! Every query here is sent with `query_typed`: one round trip with the unnamed statement. A
//! named statement (what `query` prepares first) does not survive a transaction-mode pooler
//! such as PgBouncer, which may run the Bind on another server connection than the Parse.

use serde::Serialize;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Client;

use crate::keys::{KeyOrigin, SequenceHint};
use crate::wkl::SequenceState;

/// What was done to one sequence.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SequenceOutcome {
    pub sequence: String,
    /// The value its next `nextval` returns after alignment (or would have, when kept).
    pub value: Option<i64>,
    pub source: &'static str,
    /// `set` or `kept`.
    pub action: &'static str,
    pub reason: Option<String>,
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn kept(
    sequence: String,
    value: Option<i64>,
    source: &'static str,
    reason: String,
) -> SequenceOutcome {
    SequenceOutcome {
        sequence,
        value,
        source,
        action: "kept",
        reason: Some(reason),
    }
}

/// One line of an error, for the report.
fn error_line(e: &tokio_postgres::Error) -> String {
    e.as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_else(|| e.to_string())
}

async fn scalar_text(
    client: &Client,
    sql: &str,
    params: &[(&(dyn ToSql + Sync), Type)],
) -> Result<Option<String>, tokio_postgres::Error> {
    let row = client.query_typed_opt(sql, params).await?;
    Ok(row.and_then(|r| r.get::<_, Option<String>>(0)))
}

/// Restores a capture-time snapshot (pg-retest's rule: `setval(seq, last_value, true)` when the
/// sequence had been called, else `setval(seq, start_value, false)`).
pub async fn restore_snapshot(client: &Client, snapshot: &[SequenceState]) -> Vec<SequenceOutcome> {
    let mut out = Vec::new();
    for s in snapshot {
        let name = format!("{}.{}", quote_ident(&s.schema), quote_ident(&s.name));
        let (value, called) = match (s.is_called, s.last_value) {
            (true, Some(v)) => (v, true),
            _ => (s.start_value, false),
        };
        let next = if called {
            value.checked_add(s.increment_by)
        } else {
            Some(value)
        };
        match guard(client, &name, next).await {
            Err(reason) => out.push(kept(name, next, "snapshot", reason)),
            Ok(()) => match client
                .query_typed(
                    "SELECT setval($1::text::regclass, $2, $3)",
                    &[
                        (&name, Type::TEXT),
                        (&value, Type::INT8),
                        (&called, Type::BOOL),
                    ],
                )
                .await
            {
                Ok(_) => out.push(SequenceOutcome {
                    sequence: name,
                    value: next,
                    source: "snapshot",
                    action: "set",
                    reason: None,
                }),
                Err(e) => out.push(kept(name, next, "snapshot", error_line(&e))),
            },
        }
    }
    out
}

/// Moves each sequence the workload drew from so that its next value is the smallest key it
/// handed out at capture time.
pub async fn align_inferred(client: &Client, hints: &[SequenceHint]) -> Vec<SequenceOutcome> {
    // Several producers may draw from one sequence (an INSERT … RETURNING id and a currval);
    // the smallest value over all of them wins.
    let mut by_sequence: Vec<(String, i64)> = Vec::new();
    let mut out = Vec::new();
    for h in hints {
        let resolved = match &h.origin {
            KeyOrigin::Column { table, column } => {
                let table_ref = table
                    .split('.')
                    .map(quote_ident)
                    .collect::<Vec<_>>()
                    .join(".");
                match scalar_text(
                    client,
                    "SELECT pg_get_serial_sequence($1, $2)",
                    &[(&table_ref, Type::TEXT), (column, Type::TEXT)],
                )
                .await
                {
                    Ok(Some(seq)) => Ok(seq),
                    Ok(None) => Err(format!(
                        "{table}.{column} draws from no sequence (not serial or identity)"
                    )),
                    Err(e) => Err(format!("{table}.{column}: {}", error_line(&e))),
                }
            }
            KeyOrigin::Sequence(name) => Ok(name.clone()),
            KeyOrigin::Unknown => continue,
        };
        match resolved {
            Ok(seq) => match by_sequence.iter_mut().find(|(s, _)| *s == seq) {
                Some(entry) => entry.1 = entry.1.min(h.min_value),
                None => by_sequence.push((seq, h.min_value)),
            },
            Err(reason) => {
                let name = match &h.origin {
                    KeyOrigin::Column { table, column } => format!("{table}.{column}"),
                    KeyOrigin::Sequence(s) => s.clone(),
                    KeyOrigin::Unknown => String::new(),
                };
                out.push(kept(name, Some(h.min_value), "inferred", reason));
            }
        }
    }
    for (seq, next) in by_sequence {
        match guard(client, &seq, Some(next)).await {
            Err(reason) => out.push(kept(seq, Some(next), "inferred", reason)),
            Ok(()) => match client
                .query_typed(
                    "SELECT setval($1::text::regclass, $2, false)",
                    &[(&seq, Type::TEXT), (&next, Type::INT8)],
                )
                .await
            {
                Ok(_) => out.push(SequenceOutcome {
                    sequence: seq,
                    value: Some(next),
                    source: "inferred",
                    action: "set",
                    reason: None,
                }),
                Err(e) => out.push(kept(seq, Some(next), "inferred", error_line(&e))),
            },
        }
    }
    out
}

/// `Err(reason)` when setting `seq` so that its next value is `next` would hand out ids that
/// rows of the column it belongs to already have.
async fn guard(client: &Client, seq: &str, next: Option<i64>) -> Result<(), String> {
    let Some(next) = next else {
        return Ok(());
    };
    // The column that owns the sequence (serial: 'a', identity: 'i').
    let owner = client
        .query_typed_opt(
            "SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), quote_ident(a.attname) \
             FROM pg_depend d \
             JOIN pg_class c ON c.oid = d.refobjid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid \
             WHERE d.classid = 'pg_class'::regclass AND d.objid = $1::text::regclass AND d.deptype IN ('a', 'i')",
            &[(&seq, Type::TEXT)],
        )
        .await
        .map_err(|e| error_line(&e))?;
    let Some(owner) = owner else {
        return Ok(());
    };
    let (table, column): (String, String) = (owner.get(0), owner.get(1));
    let max = scalar_text(
        client,
        &format!("SELECT max({column})::text FROM {table}"),
        &[],
    )
    .await
    .map_err(|e| error_line(&e))?;
    match max.and_then(|m| m.parse::<i64>().ok()) {
        Some(m) if m >= next => Err(format!(
            "{table} already holds {column} values up to {m}; setting the sequence back to {next} would make new rows collide with them"
        )),
        _ => Ok(()),
    }
}
