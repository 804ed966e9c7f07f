//! A phase's kill step (`kill = { member, after }`), run by the orchestrator, which owns the
//! servers: when the worker reports the step just before the phase's timed step, that step
//! has begun, and a timer thread SIGKILLs the member's process group `after` later, unless
//! the phase has ended first. A worker may spend a moment setting a step up before its clock
//! starts (the Go worker opens its readers first), so the kill's place on the phase's timeline
//! is the kill's wall-clock time minus the step's reported `start_unix_ns` (same machine, same
//! clock). What the kill cost is derived from the timeline (`kvbench_policy::kill_cost`).

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kvbench_model::result::PhaseResult;
use kvbench_policy::jobs::PhasePlan;
use kvbench_policy::kill_cost;

struct Timer {
    /// Dropped to cancel the kill (the phase ended before it was due).
    cancel: mpsc::Sender<()>,
    /// When the kill happened (ns since the epoch), or None when it was cancelled.
    handle: JoinHandle<Option<u64>>,
}

struct Armed {
    /// Index of the phase in the plan and of its timed step.
    phase: usize,
    main: usize,
    member: (String, i32),
    after_ms: u64,
    timer: Option<Timer>,
    /// When the phase's clock started (ns since the epoch), from its report.
    started: Option<u64>,
}

/// The kills of one row.
#[derive(Default)]
pub struct Faults {
    armed: Vec<Armed>,
}

impl Faults {
    /// Arm the kills of `plan` against the row's cluster members. A row without a cluster runs
    /// its phases unharmed and says so; a member out of range is an error naming the phase.
    pub fn arm(plan: &mut [PhasePlan], members: &[(String, i32)]) -> Result<Faults, String> {
        let mut armed = Vec::new();
        for (phase, p) in plan.iter_mut().enumerate() {
            let (Some(k), Some(main)) = (p.kill.clone(), p.main) else { continue };
            if members.len() < 2 {
                p.notes.push("kill step not run: this row's server is not a cluster kvbench started".into());
                continue;
            }
            let Some(member) = members.get(k.member as usize) else {
                return Err(format!(
                    "phase {}: kill.member = {}, but the cluster has {} members (0 to {})",
                    p.name,
                    k.member,
                    members.len(),
                    members.len() - 1
                ));
            };
            let after_ms = k.after_ms()?;
            armed.push(Armed { phase, main, member: member.clone(), after_ms, timer: None, started: None });
        }
        Ok(Faults { armed })
    }

    /// The worker reported step `index`: the next step has started (start the timers of the
    /// phases whose timed step it is) and step `index` is over (cancel its timer).
    pub fn on_step(&mut self, index: usize, start_unix_ns: u64) {
        for a in &mut self.armed {
            if a.main == index {
                a.started = Some(start_unix_ns).filter(|&t| t > 0);
                // Dropping the sender wakes the timer, which then does not kill.
                if let Some(t) = &mut a.timer {
                    let (dead, _) = mpsc::channel();
                    t.cancel = dead;
                }
            } else if a.main == index + 1 && a.timer.is_none() {
                a.timer = Some(start_timer(a.member.1, a.after_ms));
            }
        }
    }

    /// Wait for the timers and record each kill in its phase. True when a member was killed
    /// (the cluster is then stopped, so the next row gets a whole one).
    pub fn finish(self, phases: &mut [PhaseResult], interval_ms: u64) -> bool {
        let mut killed = false;
        for a in self.armed {
            let at = a.timer.map(|t| {
                drop(t.cancel);
                t.handle.join().unwrap_or(None)
            });
            let Some(p) = phases.get_mut(a.phase) else { continue };
            match at {
                Some(Some(kill)) => {
                    killed = true;
                    // A worker that does not report its start: the kill's own timer is the best guess.
                    let ms = a.started.map(|s| kill.saturating_sub(s) / 1_000_000).unwrap_or(a.after_ms);
                    let who = format!("{} (pid {})", a.member.0, a.member.1);
                    kill_cost::record(p, who, a.after_ms, ms, interval_ms);
                }
                Some(None) => p.notes.push(format!(
                    "kill step not run: the phase ended before it was due ({} ms after the start)",
                    a.after_ms
                )),
                None => p.notes.push("kill step not run: the phase did not start".into()),
            }
        }
        killed
    }
}

fn unix_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

fn start_timer(pgid: i32, after_ms: u64) -> Timer {
    let (cancel, rx) = mpsc::channel::<()>();
    let handle = std::thread::spawn(move || match rx.recv_timeout(Duration::from_millis(after_ms)) {
        Err(mpsc::RecvTimeoutError::Timeout) => {
            // SAFETY: SIGKILL to the process group of a cluster member this run started: the
            // crash the step declares.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            Some(unix_ns())
        }
        _ => None,
    });
    Timer { cancel, handle }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvbench_model::scenario::KillDef;

    fn phase(member: u32) -> PhasePlan {
        let kill = Some(KillDef { member, after: "50ms".into() });
        PhasePlan { name: "failover".into(), main: Some(4), kill, ..Default::default() }
    }

    #[test]
    fn a_member_out_of_range_names_the_phase_and_the_range() {
        let members = vec![("m0".to_string(), 1), ("m1".to_string(), 2), ("m2".to_string(), 3)];
        let e = Faults::arm(&mut [phase(3)], &members).err().unwrap();
        assert_eq!(e, "phase failover: kill.member = 3, but the cluster has 3 members (0 to 2)");
    }

    #[test]
    fn a_row_without_a_cluster_runs_the_phase_unharmed_and_says_so() {
        let mut plan = [phase(0)];
        let f = Faults::arm(&mut plan, &[("redis".to_string(), 1)]).unwrap();
        assert!(f.armed.is_empty());
        assert!(plan[0].notes[0].contains("not a cluster kvbench started"), "{:?}", plan[0].notes);
    }

    #[test]
    fn a_phase_that_ends_first_cancels_the_kill() {
        // A process group that does not exist: were the kill sent, nothing would die.
        let members = vec![("a".to_string(), i32::MAX - 1), ("b".to_string(), i32::MAX - 2)];
        let mut f = Faults::arm(&mut [phase(1)], &members).unwrap();
        f.on_step(3, 0);
        f.on_step(4, 1);
        let mut phases = vec![PhaseResult::default()];
        assert!(!f.finish(&mut phases, 100), "nothing was killed");
        assert!(phases[0].notes[0].contains("ended before it was due"), "{:?}", phases[0].notes);
        assert!(phases[0].fault.is_none());
    }
}
