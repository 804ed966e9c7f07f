//! Is the load generator, not the store, the bottleneck of a phase?
//!
//! A benchmark of a server measures the server only while the client has capacity to spare.
//! Two signs that it had none: the worker's threads were on CPU nearly all the phase (user + sys
//! over the CPU time its threads could have had), or an open-loop phase did not deliver the rate
//! it was asked for. Either way the figures describe the client as much as the store, and the
//! report says so. For an embedded engine the store runs inside the worker's threads, so busy
//! threads are the store's work, not a warning: only the rate rule applies there.

/// Threads busier than this share of their CPU capacity are "near 100%".
pub const BUSY_SHARE: f64 = 0.90;
/// An achieved rate this much below the target is "not sustained".
pub const RATE_TOLERANCE: f64 = 0.05;

/// What one phase used and achieved, from its raw counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseLoad {
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    pub wall_ns: u64,
    /// Threads of the worker that ran the operations.
    pub threads: u32,
    /// CPUs the worker could use (a thread beyond them cannot be on CPU all the time).
    pub cpus: u32,
    pub ops: u64,
    /// Operations per second asked of an open-loop phase.
    pub target_rate: Option<f64>,
    /// The store runs in the worker's own threads (embedded engines).
    pub store_in_process: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Saturation {
    /// The client's threads were on CPU `share` of the time they could have been.
    ClientBusy { share: f64 },
    /// The open loop delivered `achieved` operations per second of the `target` asked.
    RateShort { target: f64, achieved: f64, client_share: f64 },
}

impl Saturation {
    /// One sentence for the report.
    pub fn message(&self) -> String {
        match self {
            Saturation::ClientBusy { share } => format!(
                "load generator saturated: its threads were on CPU {:.0}% of the phase, so the store may be \
                 faster than shown; add threads, connections or client hosts",
                share * 100.0
            ),
            Saturation::RateShort { target, achieved, client_share } => format!(
                "target rate not sustained: {achieved:.0} ops/s of {target:.0} asked ({:.1}% short; client threads \
                 on CPU {:.0}%): latencies describe an overloaded {}",
                (1.0 - achieved / target) * 100.0,
                client_share * 100.0,
                if *client_share >= BUSY_SHARE { "load generator" } else { "store" }
            ),
        }
    }
}

/// Share of their CPU capacity the worker's threads used (0 when the phase took no time).
pub fn client_share(p: &PhaseLoad) -> f64 {
    let lanes = p.threads.min(p.cpus).max(1) as f64;
    if p.wall_ns == 0 {
        return 0.0;
    }
    (p.cpu_user_ns + p.cpu_sys_ns) as f64 / (p.wall_ns as f64 * lanes)
}

/// The warnings a phase deserves, none when the client had capacity to spare.
pub fn check(p: &PhaseLoad) -> Vec<Saturation> {
    let mut out = Vec::new();
    if p.wall_ns == 0 {
        return out;
    }
    let share = client_share(p);
    if !p.store_in_process && share >= BUSY_SHARE {
        out.push(Saturation::ClientBusy { share });
    }
    if let Some(target) = p.target_rate.filter(|t| *t > 0.0) {
        let achieved = p.ops as f64 / (p.wall_ns as f64 / 1e9);
        if achieved < target * (1.0 - RATE_TOLERANCE) {
            out.push(Saturation::RateShort { target, achieved, client_share: share });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    fn server_phase(cpu_ns: u64, threads: u32) -> PhaseLoad {
        PhaseLoad {
            cpu_user_ns: cpu_ns * 3 / 4,
            cpu_sys_ns: cpu_ns / 4,
            wall_ns: 10 * SEC,
            threads,
            cpus: 8,
            ops: 1_000_000,
            target_rate: None,
            store_in_process: false,
        }
    }

    #[test]
    fn an_idle_client_gets_no_warning() {
        assert!(check(&server_phase(4 * SEC, 2)).is_empty(), "20% busy");
    }

    #[test]
    fn busy_client_threads_are_reported() {
        let w = check(&server_phase(19 * SEC, 2));
        assert_eq!(w.len(), 1);
        let Saturation::ClientBusy { share } = w[0] else { panic!("{w:?}") };
        assert!((share - 0.95).abs() < 1e-9);
        assert!(w[0].message().contains("95%"), "{}", w[0].message());
    }

    #[test]
    fn capacity_counts_cpus_not_threads() {
        // 16 threads on 8 CPUs, 76 CPU-seconds in 10 s: 95% of what 8 CPUs allow.
        let w = check(&server_phase(76 * SEC, 16));
        assert!(matches!(w[..], [Saturation::ClientBusy { .. }]), "{w:?}");
    }

    #[test]
    fn an_embedded_store_busy_in_process_is_not_a_warning() {
        let p = PhaseLoad { store_in_process: true, ..server_phase(20 * SEC, 2) };
        assert!(check(&p).is_empty());
    }

    #[test]
    fn a_rate_within_five_percent_is_sustained() {
        // 1 000 000 ops in 10 s = 100 000/s.
        let p = PhaseLoad { target_rate: Some(104_000.0), ..server_phase(SEC, 2) };
        assert!(check(&p).is_empty());
    }

    #[test]
    fn a_short_rate_names_the_side_that_could_not_keep_up() {
        let p = PhaseLoad { target_rate: Some(200_000.0), ..server_phase(SEC, 2) };
        let w = check(&p);
        assert!(matches!(w[..], [Saturation::RateShort { .. }]), "{w:?}");
        assert!(w[0].message().contains("50.0% short") && w[0].message().ends_with("store"), "{}", w[0].message());
        let p = PhaseLoad { target_rate: Some(200_000.0), ..server_phase(19 * SEC, 2) };
        let w = check(&p);
        assert_eq!(w.len(), 2);
        assert!(w[1].message().ends_with("load generator"), "{}", w[1].message());
    }

    #[test]
    fn an_empty_phase_is_silent() {
        let p = PhaseLoad { wall_ns: 0, target_rate: Some(1.0), ..server_phase(SEC, 1) };
        assert!(check(&p).is_empty());
    }
}
