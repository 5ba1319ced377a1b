//! Putting the workload's sequences where they stood at capture time, before a replay.
//!
//! With sequences aligned, a replayed INSERT gets the id it got in production, so even a use of
//! that id that correlation did not link (a key computed by the application, a statement
//! outside the capture) finds its row. Two sources, in order: the capture's snapshot
//! (pg-retest's `sequence_snapshot`, restored as pg-retest restores it), else the first key
//! each sequence handed out in the workload (recorded or inferred: the smallest, or the largest
//! for a descending sequence), so that its next value is that key.
//!
//! A sequence is never moved back below ids the database already holds (above, for a
//! descending one): the seed may hold more rows than production did at capture time, and a
//! sequence set under them would make every replayed INSERT a unique violation. Such a sequence
//! is kept, and the report says why. A sequence no column uses is never moved back at all.
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
        match guard(client, &name, next, s.increment_by).await {
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

/// A sequence as the server knows it: its oid, its name (quoted and always schema-qualified,
/// so a report names it alike whichever way the workload did) and its increment.
struct Resolved {
    oid: u32,
    name: String,
    increment: i64,
}

async fn resolve(client: &Client, seq: &str) -> Result<Resolved, String> {
    let row = client
        .query_typed_opt(
            "SELECT c.oid::oid, quote_ident(n.nspname) || '.' || quote_ident(c.relname), s.seqincrement \
             FROM pg_catalog.pg_class c JOIN pg_catalog.pg_sequence s ON s.seqrelid = c.oid \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.oid = $1::text::regclass",
            &[(&seq, Type::TEXT)],
        )
        .await
        .map_err(|e| format!("{seq}: {}", error_line(&e)))?;
    let row = row.ok_or_else(|| format!("{seq} is not a sequence"))?;
    Ok(Resolved {
        oid: row.get(0),
        name: row.get(1),
        increment: row.get(2),
    })
}

/// Moves each sequence the workload drew from so that its next value is the first key it
/// handed out at capture time (the smallest, or the largest for a descending sequence).
pub async fn align_inferred(client: &Client, hints: &[SequenceHint]) -> Vec<SequenceOutcome> {
    // Several producers may draw from one sequence (an INSERT … RETURNING id and a currval),
    // under several names (`public.orders_id_seq`, `orders_id_seq`): each name is resolved to
    // the sequence itself, and the first value over all of them wins.
    let mut by_sequence: Vec<(Resolved, i64)> = Vec::new();
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
        let resolved = match resolved {
            Ok(seq) => resolve(client, &seq).await,
            Err(reason) => Err(reason),
        };
        match resolved {
            Ok(seq) => match by_sequence.iter_mut().find(|(s, _)| s.oid == seq.oid) {
                Some(entry) => {
                    entry.1 = if entry.0.increment < 0 {
                        entry.1.max(h.min_value)
                    } else {
                        entry.1.min(h.min_value)
                    }
                }
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
        let Resolved {
            name: seq,
            increment,
            ..
        } = seq;
        match guard(client, &seq, Some(next), increment).await {
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

/// `Err(reason)` when setting `seq` (counting by `increment`) so that its next value is `next`
/// would hand out ids that rows already have: rows of the column that owns it (serial,
/// identity, `OWNED BY`), else of every column whose default calls it (a hand-written
/// `DEFAULT nextval('order_seq')`). With no such column, the sequence is never moved back from
/// where it stands.
async fn guard(
    client: &Client,
    seq: &str,
    next: Option<i64>,
    increment: i64,
) -> Result<(), String> {
    let Some(next) = next else {
        return Ok(());
    };
    let descending = increment < 0;
    // The column that owns the sequence (serial: 'a', identity: 'i').
    let owner = client
        .query_typed(
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
    let columns = if owner.is_empty() {
        // Columns whose default expression depends on the sequence.
        client
            .query_typed(
                "SELECT DISTINCT quote_ident(n.nspname) || '.' || quote_ident(c.relname), quote_ident(a.attname) \
                 FROM pg_depend d \
                 JOIN pg_attrdef ad ON ad.oid = d.objid \
                 JOIN pg_class c ON c.oid = ad.adrelid \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum \
                 WHERE d.classid = 'pg_attrdef'::regclass AND d.refclassid = 'pg_class'::regclass \
                   AND d.refobjid = $1::text::regclass",
                &[(&seq, Type::TEXT)],
            )
            .await
            .map_err(|e| error_line(&e))?
    } else {
        owner
    };
    if columns.is_empty() {
        // No column to look at: never move the sequence back from where it stands.
        let quoted = scalar_text(
            client,
            "SELECT $1::text::regclass::text",
            &[(&seq, Type::TEXT)],
        )
        .await
        .map_err(|e| error_line(&e))?
        .unwrap_or_else(|| seq.to_string());
        let row = client
            .query_typed_opt(&format!("SELECT last_value, is_called FROM {quoted}"), &[])
            .await
            .map_err(|e| error_line(&e))?;
        if let Some(row) = row {
            let (last, called): (i64, bool) = (row.get(0), row.get(1));
            let current = if called {
                last.checked_add(increment)
            } else {
                Some(last)
            };
            if let Some(current) = current {
                let back = if descending {
                    next > current
                } else {
                    next < current
                };
                if back {
                    return Err(format!(
                        "no column uses {seq}, so the ids it handed out cannot be checked; it would move back from {current} to {next}"
                    ));
                }
            }
        }
        return Ok(());
    }
    for c in &columns {
        let (table, column): (String, String) = (c.get(0), c.get(1));
        let aggregate = if descending { "min" } else { "max" };
        let extreme = scalar_text(
            client,
            &format!("SELECT {aggregate}({column})::text FROM {table}"),
            &[],
        )
        .await
        .map_err(|e| error_line(&e))?;
        match extreme.and_then(|m| m.parse::<i64>().ok()) {
            Some(m) if !descending && m >= next => {
                return Err(format!(
                    "{table} already holds {column} values up to {m}; setting the sequence back to {next} would make new rows collide with them"
                ))
            }
            Some(m) if descending && m <= next => {
                return Err(format!(
                    "{table} already holds {column} values down to {m}; setting the descending sequence back to {next} would make new rows collide with them"
                ))
            }
            _ => {}
        }
    }
    Ok(())
}
