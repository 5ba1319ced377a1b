//! Which sessions a replay runs: the captured ones, multiplied.
//!
//! Uniform scaling makes `scale` copies of every session; per-class factors override it for their
//! class (a factor of 0 leaves the class out, and the report says how many sessions that was).
//! Copy `k` of a session starts `k × stagger` later than the original. The plan is deterministic:
//! sessions in file order, copies in order, new ids counting up from the largest captured id.

use serde::Serialize;
use thiserror::Error;

use crate::classify::{SessionClass, SessionProfile};
use crate::workload::Workload;

/// Per-class factors; `None` means "use the uniform factor".
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ClassFactors {
    pub analytical: Option<u32>,
    pub transactional: Option<u32>,
    pub mixed: Option<u32>,
    pub bulk: Option<u32>,
}

impl ClassFactors {
    fn get(&self, class: SessionClass) -> Option<u32> {
        match class {
            SessionClass::Analytical => self.analytical,
            SessionClass::Transactional => self.transactional,
            SessionClass::Mixed => self.mixed,
            SessionClass::Bulk => self.bulk,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.analytical.is_none()
            && self.transactional.is_none()
            && self.mixed.is_none()
            && self.bulk.is_none()
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct ScaleOptions {
    /// Copies of every session (1 = as captured).
    pub scale: u32,
    /// Delay between consecutive copies of a session.
    pub stagger_ms: u64,
    pub per_class: ClassFactors,
}

impl Default for ScaleOptions {
    fn default() -> Self {
        Self {
            scale: 1,
            stagger_ms: 0,
            per_class: ClassFactors::default(),
        }
    }
}

/// One session to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionPlan {
    /// Index of the captured session in the workload.
    pub source: u32,
    /// 0 for the original, 1.. for copies.
    pub copy: u32,
    /// Unique id in this replay.
    pub id: u64,
    /// Added to every offset of the session.
    pub shift_us: u64,
}

#[derive(Debug, Error)]
pub enum ScaleError {
    #[error("scale must be at least 1 (got {0}); use per-class factors of 0 to leave classes out")]
    ZeroScale(u32),
    #[error("scaling would replay {0} sessions, more than the limit of {1}; lower the scale")]
    TooMany(u64, u64),
}

/// Upper bound on planned sessions: each is a task and a connection attempt.
pub const MAX_PLANNED_SESSIONS: u64 = 1_000_000;

#[derive(Debug, Clone, Default)]
pub struct ScalePlan {
    pub sessions: Vec<SessionPlan>,
    /// Captured sessions left out because their class factor is 0.
    pub excluded_sessions: u64,
    pub excluded_statements: u64,
}

pub fn plan_sessions(
    workload: &Workload,
    classes: &[SessionProfile],
    opts: &ScaleOptions,
) -> Result<ScalePlan, ScaleError> {
    if opts.scale == 0 {
        return Err(ScaleError::ZeroScale(0));
    }
    let captured = workload.sessions();
    let factor_of = |i: usize| -> u32 {
        if opts.per_class.is_empty() {
            opts.scale
        } else {
            opts.per_class.get(classes[i].class).unwrap_or(opts.scale)
        }
    };
    let total: u64 = (0..captured.len()).map(|i| u64::from(factor_of(i))).sum();
    if total > MAX_PLANNED_SESSIONS {
        return Err(ScaleError::TooMany(total, MAX_PLANNED_SESSIONS));
    }
    let mut next_id = captured.iter().map(|s| s.id).max().unwrap_or(0);
    let mut plan = ScalePlan {
        sessions: Vec::with_capacity(total as usize),
        ..Default::default()
    };
    let stagger_us = opts.stagger_ms.saturating_mul(1000);
    // Originals first (keeping their ids), then copies, so ids stay stable when the scale changes.
    for (i, s) in captured.iter().enumerate() {
        if factor_of(i) == 0 {
            plan.excluded_sessions += 1;
            plan.excluded_statements += workload.statements_of(i).len() as u64;
            continue;
        }
        plan.sessions.push(SessionPlan {
            source: i as u32,
            copy: 0,
            id: s.id,
            shift_us: 0,
        });
    }
    for (i, _) in captured.iter().enumerate() {
        for k in 1..factor_of(i) {
            next_id += 1;
            plan.sessions.push(SessionPlan {
                source: i as u32,
                copy: k,
                id: next_id,
                shift_us: stagger_us.saturating_mul(u64::from(k)),
            });
        }
    }
    Ok(plan)
}
