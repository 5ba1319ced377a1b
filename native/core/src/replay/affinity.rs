//! CPU affinity of the replay's worker threads (`workers.rs`), on Linux; elsewhere threads are
//! left where the system puts them. `bench_floor` includes this file too, so that the benchmark's
//! floor client is pinned exactly as the engine is.

/// The CPUs the calling thread may run on, ascending (empty when unknown).
#[cfg(target_os = "linux")]
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set the call fills in; its size is passed along.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` is below CPU_SETSIZE, the set's capacity.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Keeps the calling thread on `cpu`; false when the system refuses.
#[cfg(target_os = "linux")]
pub fn pin_current_thread(cpu: usize) -> bool {
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: as above; `cpu` is below CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[cfg(not(target_os = "linux"))]
pub fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

#[cfg(not(target_os = "linux"))]
pub fn pin_current_thread(_cpu: usize) -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_may_run_on_its_cpu_only() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty(), "this thread may run somewhere");
        let last = *allowed.last().unwrap();
        let after = std::thread::spawn(move || {
            assert!(pin_current_thread(last));
            allowed_cpus()
        })
        .join()
        .unwrap();
        assert_eq!(after, vec![last]);
        // The spawning thread's own mask is untouched.
        assert_eq!(allowed_cpus(), allowed);
    }
}
