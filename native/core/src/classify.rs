//! Workload classification: every session is analytical, transactional, mixed or bulk.
//!
//! The rules are pg-retest's (so a class means the same thing in both tools), applied to kinds
//! from the parser rather than pg-retest's prefix test: a commented SELECT is still a read here.
//!
//! | class         | rule (first match wins)                                              |
//! |---------------|----------------------------------------------------------------------|
//! | bulk          | write% > 80 and at most 2 transactions                               |
//! | analytical    | read% > 80 and mean captured latency > 10 ms                          |
//! | transactional | write% > 20 and mean captured latency < 5 ms and more than 2 transactions |
//! | mixed         | otherwise (also empty sessions)                                      |
//!
//! reads = SELECTs; writes = INSERT/UPDATE/DELETE/MERGE/DDL/COPY; percentages over reads + writes;
//! mean latency over all statements of the session. The workload's class is the most common
//! session class (ties: bulk > mixed > transactional > analytical, as in pg-retest).

use serde::Serialize;

use crate::sql::{StatementKind, TxnEffect};
use crate::workload::Workload;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum SessionClass {
    Analytical,
    Transactional,
    Mixed,
    Bulk,
}

impl SessionClass {
    pub const ALL: [SessionClass; 4] = [
        Self::Analytical,
        Self::Transactional,
        Self::Mixed,
        Self::Bulk,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Analytical => "analytical",
            Self::Transactional => "transactional",
            Self::Mixed => "mixed",
            Self::Bulk => "bulk",
        }
    }
}

/// The figures a session's class was decided on.
#[derive(Debug, Clone, Serialize)]
pub struct SessionProfile {
    pub session_id: u64,
    pub class: SessionClass,
    pub read_pct: f64,
    pub write_pct: f64,
    pub avg_latency_us: u64,
    pub transaction_count: u64,
    pub query_count: u64,
}

pub fn classify_session(workload: &Workload, index: usize) -> SessionProfile {
    let statements = workload.statements_of(index);
    let (mut reads, mut writes, mut txns, mut total_us) = (0u64, 0u64, 0u64, 0u64);
    for st in statements {
        let fp = workload.fingerprint_of(st.text);
        match fp.kind {
            StatementKind::Select => reads += 1,
            StatementKind::Insert
            | StatementKind::Update
            | StatementKind::Delete
            | StatementKind::Merge
            | StatementKind::Ddl
            | StatementKind::Copy => writes += 1,
            _ => {}
        }
        if *workload.txn_effect(st.text) == TxnEffect::Begin {
            txns += 1;
        }
        total_us = total_us.saturating_add(st.duration_us);
    }
    let n = statements.len() as u64;
    let rw = reads + writes;
    let pct = |x: u64| {
        if rw == 0 {
            0.0
        } else {
            x as f64 * 100.0 / rw as f64
        }
    };
    let (read_pct, write_pct) = (pct(reads), pct(writes));
    let avg_latency_us = total_us.checked_div(n).unwrap_or(0);
    let class = if write_pct > 80.0 && txns <= 2 {
        SessionClass::Bulk
    } else if read_pct > 80.0 && avg_latency_us > 10_000 {
        SessionClass::Analytical
    } else if write_pct > 20.0 && avg_latency_us < 5_000 && txns > 2 {
        SessionClass::Transactional
    } else {
        SessionClass::Mixed
    };
    SessionProfile {
        session_id: workload.sessions()[index].id,
        class,
        read_pct,
        write_pct,
        avg_latency_us,
        transaction_count: txns,
        query_count: n,
    }
}

pub fn classify_sessions(workload: &Workload) -> Vec<SessionProfile> {
    (0..workload.sessions().len())
        .map(|i| classify_session(workload, i))
        .collect()
}

/// The most common class; ties resolved as pg-retest does (the later class in declaration order).
pub fn overall_class(profiles: &[SessionProfile]) -> SessionClass {
    let mut best = SessionClass::Mixed;
    let mut best_count = 0usize;
    for class in SessionClass::ALL {
        let count = profiles.iter().filter(|p| p.class == class).count();
        if count >= best_count {
            best = class;
            best_count = count;
        }
    }
    best
}
