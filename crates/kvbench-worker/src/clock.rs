//! The worker's clock. The only place in the Rust worker where clocks are read.

use std::time::Instant;

// The codec of the histograms the clock's samples go into (it is the model's).
pub use kvbench_model::histogram::{decode_histogram, encode_histogram, new_histogram, summarize, MAX_NS};

/// The clock of every sample: the CPU's time-stamp counter where it is invariant, calibrated
/// against the monotonic clock by `quanta` (a pair of reads is cheaper than two
/// `Instant::now()`); quanta falls back to the monotonic clock where the TSC is unusable.
static CLOCK: std::sync::OnceLock<quanta::Clock> = std::sync::OnceLock::new();

fn clock() -> &'static quanta::Clock {
    CLOCK.get_or_init(quanta::Clock::new)
}

/// A raw time stamp for [`since`]. The counter is read only once every earlier instruction has
/// completed (`lfence` before `rdtsc`, as the kernel's `clock_gettime` reads it): a bare `rdtsc`
/// runs ahead of the loads still in flight, so the stamp that ends an engine call could be
/// taken before the call's last cache misses were served, timing a memory-bound call at a
/// fraction of what it took (`stamps_wait_for_the_loads_they_follow` below).
#[inline]
pub fn stamp() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `lfence` takes no operands and touches no memory; it only orders execution.
    unsafe {
        std::arch::x86_64::_mm_lfence()
    };
    clock().raw()
}

/// Nanoseconds since a [`stamp`].
#[inline]
pub fn since(t0: u64) -> u64 {
    delta(t0, stamp())
}

/// Mean cost (ns) of what the loop adds to each sample: two clock reads and a record.
pub fn calibrate_timer() -> f64 {
    let mut h = new_histogram();
    let n = 200_000u64;
    let start = Instant::now();
    for _ in 0..n {
        let t0 = stamp();
        let dt = since(t0);
        h.saturating_record(dt.max(1));
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

/// Nanoseconds between two [`stamp`]s.
#[inline]
pub fn delta(start: u64, end: u64) -> u64 {
    clock().delta_as_nanos(start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain of dependent loads over more memory than the caches hold, timed link by link:
    /// the timed spans must cover most of the loop's time. With a bare `rdtsc` both stamps
    /// ran ahead of the load and the spans covered about a tenth of the loop in a release build.
    #[test]
    fn stamps_wait_for_the_loads_they_follow() {
        let n = 1usize << 24; // 64 MiB of u32: more than a last-level cache holds
        let mut next: Vec<u32> = (0..n as u32).collect();
        // One cycle through every slot, in a scattered order (Sattolo's algorithm).
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            next.swap(i, (x % i as u64) as usize);
        }
        let (mut at, mut timed) = (0u32, 0u64);
        let wall = Instant::now();
        for _ in 0..200_000 {
            let t0 = stamp();
            at = next[at as usize];
            timed += since(t0);
        }
        let wall = wall.elapsed().as_nanos() as u64;
        std::hint::black_box(at);
        assert!(timed * 10 >= wall * 6, "timed spans cover {timed} ns of a {wall} ns loop");
    }
}
