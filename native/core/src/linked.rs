//! A workload beside the generated keys found in it: what a replay and `inspect` read.
//!
//! The keys are found from the analysed workload (`keys` reads its statements, texts and
//! fingerprints), so the workload does not hold them: they stand beside it, found once when the
//! workload is loaded and shared by every replay of it.

use crate::keys::KeyLinks;
use crate::workload::Workload;

#[derive(Debug)]
pub struct LinkedWorkload {
    pub workload: Workload,
    /// Generated keys and the literals that carry them.
    pub keys: KeyLinks,
}

impl LinkedWorkload {
    /// `workload` with its key links, found now (one parse per fingerprint, more for producers).
    pub fn new(workload: Workload) -> LinkedWorkload {
        let keys = KeyLinks::build(&workload);
        LinkedWorkload { workload, keys }
    }
}
