//! The open-loop rate mode: with `rate` set, a stall delays the operations due after it and
//! their latency counts from their intended start (coordinated omission corrected); the closed
//! loop hides the same stall in a single sample.

mod in_process;
mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kvbench_model::engine::*;
use kvbench_model::result::{PhaseResult, Status};
use kvbench_model::scenario::Scenario;

/// A map whose 50th get stalls for 30 ms.
#[derive(Default)]
struct Stalling {
    gets: AtomicU64,
}

impl support::MapReaders for Stalling {
    fn reader(engine: &support::MapEngine<Self>) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(StallingReader(engine)))
    }
}

struct StallingReader<'a>(&'a support::MapEngine<Stalling>);

impl Reader for StallingReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        if self.0.state.gets.fetch_add(1, Ordering::Relaxed) == 50 {
            std::thread::sleep(Duration::from_millis(30));
        }
        Ok(kvbench_engines::copy_found(self.0.map.lock().unwrap().get(key), out))
    }
}

static STALLING: EngineDescriptor = support::map_engine("stalling", "test engine with one slow get", |_| {
    Ok(Box::new(support::MapEngine::<Stalling>::default()))
});

fn get_phase(rate: Option<f64>) -> PhaseResult {
    let text = format!(
        "engines = [\"stalling\"]\n[dataset]\nrecords = 300\n[[phase]]\nkind = \"load\"\n[[phase]]\nkind = \"get\"\ncount = 300\n{}",
        rate.map(|r| format!("rate = {r}\n")).unwrap_or_default()
    );
    support::get_phase(&STALLING, &text)
}

fn samples_over(r: &PhaseResult, ns: u64) -> u64 {
    let h = kvbench_model::histogram::decode_histogram(&r.latency.as_ref().unwrap().hdr).unwrap();
    h.iter_recorded().filter(|v| v.value_iterated_to() >= ns).map(|v| v.count_at_value()).sum()
}

#[test]
fn open_loop_charges_a_stall_to_the_operations_behind_it() {
    let closed = get_phase(None);
    assert_eq!(closed.status, Status::Ok, "{:?}", closed.reason);
    assert!(samples_over(&closed, 5_000_000) <= 1, "closed loop: one slow sample");

    // 2000 ops/s: one operation due every 0.5 ms; the 30 ms stall makes ~60 of them late.
    let open = get_phase(Some(2000.0));
    assert_eq!(open.status, Status::Ok, "{:?}", open.reason);
    assert_eq!(open.ops, 300);
    let late = samples_over(&open, 5_000_000);
    assert!(late >= 20, "open loop: the operations due during the stall are late too ({late} over 5 ms)");
    assert!(open.notes.iter().any(|n| n.contains("open loop")), "{:?}", open.notes);
    // 300 operations at 2000/s take about 150 ms.
    let secs = open.wall_ns as f64 / 1e9;
    assert!((0.14..0.5).contains(&secs), "elapsed {secs} s");
}

#[test]
fn a_rate_that_is_not_positive_is_refused() {
    let text = "engines = [\"memory\"]\n[[phase]]\nkind = \"load\"\n[[phase]]\nkind = \"get\"\nrate = 0.0\n";
    let s: Scenario = toml::from_str(text).unwrap();
    assert!(s.check().unwrap_err().contains("rate"));
}
