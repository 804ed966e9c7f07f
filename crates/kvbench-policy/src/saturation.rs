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

/// A client's CPU per operation this much above what it spent on the same work with fewer
/// threads is "growing with threads".
pub const CPU_GROWTH: f64 = 0.25;

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
    /// The client's own CPU per operation grew from `cpu_ns.0` at `threads.0` threads to
    /// `cpu_ns.1` at `threads.1` while the server had capacity to spare (`server_share` of its
    /// CPU, when measured): the client's threads contend with each other.
    ClientScaling { threads: (u32, u32), cpu_ns: (f64, f64), server_share: Option<f64> },
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
            Saturation::ClientScaling { threads, cpu_ns, server_share } => format!(
                "load generator contended: its CPU per op grew from {:.1} µs at {} thread{} to {:.1} µs at {} \
                 threads while the server {}, so the client, not the store, limits this phase",
                cpu_ns.0 / 1e3,
                threads.0,
                if threads.0 == 1 { "" } else { "s" },
                cpu_ns.1 / 1e3,
                threads.1,
                match server_share {
                    Some(s) => format!("was on CPU {:.0}% of the phase", s * 100.0),
                    None => "was not measured as saturated".into(),
                }
            ),
        }
    }
}

/// Share of their CPU capacity the worker's threads used (0 when the phase took no time).
pub fn client_share(load: &PhaseLoad) -> f64 {
    let lanes = load.threads.min(load.cpus).max(1) as f64;
    if load.wall_ns == 0 {
        return 0.0;
    }
    (load.cpu_user_ns + load.cpu_sys_ns) as f64 / (load.wall_ns as f64 * lanes)
}

/// The warnings a phase deserves, none when the client had capacity to spare.
pub fn check(load: &PhaseLoad) -> Vec<Saturation> {
    let mut out = Vec::new();
    if load.wall_ns == 0 {
        return out;
    }
    let share = client_share(load);
    if !load.store_in_process && share >= BUSY_SHARE {
        out.push(Saturation::ClientBusy { share });
    }
    if let Some(target) = load.target_rate.filter(|t| *t > 0.0) {
        let achieved = load.ops as f64 / (load.wall_ns as f64 / 1e9);
        if achieved < target * (1.0 - RATE_TOLERANCE) {
            out.push(Saturation::RateShort { target, achieved, client_share: share });
        }
    }
    out
}

/// Client CPU per operation in ns (None for a phase without operations).
pub fn cpu_per_op(load: &PhaseLoad) -> Option<f64> {
    (load.ops > 0).then(|| (load.cpu_user_ns + load.cpu_sys_ns) as f64 / load.ops as f64)
}

/// Compare a server phase with the same work run with fewer threads (`base`): the warning when
/// the client's own CPU per op grew by more than [`CPU_GROWTH`] while the server was not
/// saturated (`server_share`: the server's CPU over its capacity in the phase, when measured).
/// Added threads should add throughput at the same cost per op; a client whose cost per op
/// grows spends it on its own contention (a shared lock or connection).
pub fn scaling(base: &PhaseLoad, load: &PhaseLoad, server_share: Option<f64>) -> Option<Saturation> {
    if load.store_in_process || base.store_in_process || load.threads <= base.threads {
        return None;
    }
    if server_share.is_some_and(|s| s >= BUSY_SHARE) {
        return None;
    }
    let (from, to) = (cpu_per_op(base)?, cpu_per_op(load)?);
    (to > from * (1.0 + CPU_GROWTH)).then_some(Saturation::ClientScaling {
        threads: (base.threads, load.threads),
        cpu_ns: (from, to),
        server_share,
    })
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

    /// 100 000 ops at `cpu_us` µs of client CPU each, on `threads` threads.
    fn per_op(cpu_us: f64, threads: u32) -> PhaseLoad {
        PhaseLoad { ops: 100_000, ..server_phase((cpu_us * 1e3 * 100_000.0) as u64, threads) }
    }

    #[test]
    fn client_cpu_per_op_growing_with_threads_is_reported() {
        // The figures: 8.5 µs per op at 1 thread, 14 at 2, the server not saturated.
        let w = scaling(&per_op(8.5, 1), &per_op(14.0, 2), Some(0.4)).expect("a warning");
        let Saturation::ClientScaling { threads, cpu_ns, .. } = w else { panic!("{w:?}") };
        assert_eq!(threads, (1, 2));
        assert!((cpu_ns.0 - 8_500.0).abs() < 1.0 && (cpu_ns.1 - 14_000.0).abs() < 1.0, "{cpu_ns:?}");
        let m = w.message();
        assert!(m.contains("8.5 µs at 1 thread to 14.0 µs at 2 threads") && m.contains("40%"), "{m}");
        assert!(scaling(&per_op(8.5, 1), &per_op(14.0, 2), None).is_some(), "an unmeasured server");
    }

    #[test]
    fn client_cpu_per_op_steady_with_threads_is_not_a_warning() {
        assert_eq!(scaling(&per_op(8.5, 1), &per_op(9.5, 2), Some(0.4)), None, "within 25%");
        assert_eq!(scaling(&per_op(8.5, 2), &per_op(14.0, 2), Some(0.4)), None, "not more threads");
    }

    #[test]
    fn a_saturated_server_or_an_embedded_store_explains_the_growth() {
        assert_eq!(scaling(&per_op(8.5, 1), &per_op(14.0, 2), Some(0.95)), None, "the server was the limit");
        let embedded = |p: PhaseLoad| PhaseLoad { store_in_process: true, ..p };
        assert_eq!(scaling(&embedded(per_op(8.5, 1)), &embedded(per_op(14.0, 2)), None), None);
        assert_eq!(scaling(&per_op(8.5, 1), &PhaseLoad { ops: 0, ..per_op(14.0, 2) }, None), None);
    }

    #[test]
    fn an_empty_phase_is_silent() {
        let p = PhaseLoad { wall_ns: 0, target_rate: Some(1.0), ..server_phase(SEC, 1) };
        assert!(check(&p).is_empty());
    }
}
