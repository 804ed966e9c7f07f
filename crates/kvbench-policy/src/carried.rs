//! Background work a phase paid for: the compaction an LSM engine ran inside the phase, from the
//! engine's own cumulative counters at each phase's end. A read phase after a load pays for the
//! load's compaction (its device bytes include it), so the phase says so, and how to leave it out.

use kvbench_model::result::PhaseResult;

/// Engines whose internals count compaction bytes since open (`PREFIX.compaction.bytes_read`
/// and `_written`).
const ENGINES: [&str; 2] = ["rocksdb", "leveldb"];

/// Phase kinds that write nothing themselves: their compaction is carried from before.
const READ_ONLY: [&str; 4] = ["get", "multi-get", "scan", "size"];

/// A note on every phase inside which the engine's compactions read or wrote bytes.
pub fn notes(phases: &mut [PhaseResult]) {
    for i in 0..phases.len() {
        let prev = i.checked_sub(1).map(|j| phases[j].clone());
        if let Some(note) = note(prev.as_ref(), &phases[i]) {
            phases[i].notes.push(note);
        }
    }
}

fn note(prev: Option<&PhaseResult>, phase: &PhaseResult) -> Option<String> {
    let engine = ENGINES.iter().find(|e| phase.internals.contains_key(&format!("{e}.compaction.bytes_read")))?;
    let inside = |what: &str| {
        let key = format!("{engine}.compaction.bytes_{what}");
        let now = phase.internals.get(&key).copied().unwrap_or(0.0);
        let before = prev.and_then(|q| q.internals.get(&key)).copied().unwrap_or(0.0);
        // A counter below its earlier value restarted: the store was reopened.
        if now >= before {
            now - before
        } else {
            now
        }
    };
    let (read, written) = (inside("read"), inside("written"));
    if read + written <= 0.0 {
        return None;
    }
    let amounts = format!("read {} and wrote {}", human(read), human(written));
    Some(match prev.filter(|_| READ_ONLY.contains(&phase.kind.as_str())) {
        Some(q) => format!(
            "background work carried from {}: the engine's compactions {amounts} during this phase ({engine}'s \
             own counters); its device bytes include them (a settle phase before it leaves them out)",
            q.name
        ),
        None => format!("the engine's compactions {amounts} during this phase ({engine}'s own counters)"),
    })
}

fn human(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let (mut v, mut u) = (bytes, 0);
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn phase(name: &str, kind: &str, read: f64, written: f64) -> PhaseResult {
        let internals = BTreeMap::from([
            ("rocksdb.compaction.bytes_read".to_string(), read),
            ("rocksdb.compaction.bytes_written".to_string(), written),
        ]);
        PhaseResult { name: name.into(), kind: kind.into(), internals, ..Default::default() }
    }

    #[test]
    fn a_get_phase_says_the_compaction_it_carried_from_the_load() {
        let mut phases = vec![
            phase("load", "load", 100e6, 400e6),
            phase("get", "get", 387e6, 690e6),
            phase("get2", "get", 387e6, 690e6),
        ];
        notes(&mut phases);
        assert_eq!(
            phases[0].notes,
            ["the engine's compactions read 95.4 MiB and wrote 381.5 MiB during this phase (rocksdb's own counters)"]
        );
        let n = &phases[1].notes[0];
        assert!(n.starts_with("background work carried from load: the engine's compactions read 273.7 MiB"), "{n}");
        assert!(n.contains("a settle phase before it"), "{n}");
        assert!(phases[2].notes.is_empty(), "nothing ran inside the second get: {:?}", phases[2].notes);
    }

    #[test]
    fn a_reopened_store_counts_from_zero_and_an_engine_without_counters_says_nothing() {
        let mut phases = vec![phase("load", "load", 100e6, 400e6), phase("get", "get", 1e6, 0.0)];
        notes(&mut phases);
        assert!(phases[1].notes[0].contains("read 976.6 KiB and wrote 0.0 B"), "{:?}", phases[1].notes);
        let mut plain = vec![PhaseResult { name: "get".into(), kind: "get".into(), ..Default::default() }];
        notes(&mut plain);
        assert!(plain[0].notes.is_empty());
    }
}
