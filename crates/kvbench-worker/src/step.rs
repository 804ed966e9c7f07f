//! What an ops step asks of its threads (a reader, a writer, locked records, explicit record
//! states) and the raw counters it reports: rules the Rust worker (loops.rs) and the hosted
//! path (hosted.rs, blocks.rs) share.

use std::collections::BTreeMap;

use crate::clock::{encode_histogram, new_histogram};
use crate::sys::Usage;
use crate::tally::Tally;
use kvbench_model::job::{self, Dataset, OpsStep, PhaseKind, StepResult};

/// Whether record states must become explicit before the step: only once something writes
/// after the load (until then they follow from the dataset), or a replay writes (whose load
/// may have had nothing to load).
pub(crate) fn keeps_states(st: &OpsStep, loaded: bool) -> bool {
    (loaded || st.replay.is_some()) && st.kind != PhaseKind::Load && (st.kind.may_write() || st.writer.is_some())
}

/// Whether the step's records are locked while written: several threads write (a background
/// writer is one more).
pub(crate) fn locks_records(st: &OpsStep) -> bool {
    let threads = st.threads + u32::from(st.writer.is_some());
    threads > 1 && (st.kind.may_write() || st.writer.is_some()) && st.kind != PhaseKind::Load
}

/// Whether an update of the step reads its record, merges the one field it writes in and
/// writes the record back (an `rmw` unit), rather than handing the field to an engine that
/// merges it in itself (`field_updates`) or writing every field.
pub(crate) fn updates_read(st: &OpsStep, ds: &Dataset) -> bool {
    ds.value.merges_updates() && !st.field_updates
}

/// Whether a step needs a reader: every kind but writes, and updates that read their record.
pub(crate) fn reads(st: &OpsStep, ds: &Dataset) -> bool {
    let update_reads = st.kind == PhaseKind::Update && updates_read(st, ds);
    (update_reads || !matches!(st.kind, PhaseKind::Load | PhaseKind::Update | PhaseKind::Insert | PhaseKind::Delete))
        && !st.open_per_op
}

/// Whether each thread of the step may write (it then takes the engine's own writer, if any).
pub(crate) fn writes(st: &OpsStep) -> bool {
    let mixed_writes = st.kind == PhaseKind::Mixed && st.kinds.iter().any(|k| k.writes());
    !st.open_per_op && (st.kind.writes() || mixed_writes || st.kind == PhaseKind::Replay)
}

/// Whether every op of the step is a get of one key: a get phase, or a mix of gets alone
/// (YCSB's workload C), which then runs as gets do.
pub(crate) fn gets_only(st: &OpsStep) -> bool {
    match st.kind {
        PhaseKind::Get => true,
        PhaseKind::Mixed => !st.kinds.is_empty() && st.kinds.iter().all(|&k| k == PhaseKind::Get),
        _ => false,
    }
}

/// Whether every op of the step is checked by the record's state as its block was made: a
/// get, a write or a read-modify-write (a scan's, a multi-get's and an open-per-op get's
/// checks take the state as they are counted; a replay may hold any op).
pub(crate) fn checked_as_made(st: &OpsStep) -> bool {
    use PhaseKind::{Delete, Get, Insert, Load, Mixed, Rmw, Update};
    let fits = |k: &PhaseKind| matches!(k, Load | Get | Update | Insert | Delete | Rmw);
    !st.open_per_op
        && match st.kind {
            Mixed => !st.kinds.is_empty() && st.kinds.iter().all(fits),
            k => fits(&k),
        }
}

/// Whether the step's threads wait for due times (an open loop: a rate, or a replay at a
/// speed), so their sleeps must end on time.
pub(crate) fn paced(st: &OpsStep) -> bool {
    st.rate.is_some() || st.replay.is_some_and(|r| r.speed.is_some())
}

/// The raw counters of an ops step.
pub(crate) fn counters(st: &OpsStep, mut tally: Tally, wall_ns: u64, interval_ms: u64) -> StepResult {
    let intervals = tally
        .merged_intervals()
        .into_iter()
        .map(|(n, ops, errors, hdr)| job::Interval { t_ms: n * interval_ms, ops, errors, hdr })
        .collect();
    let mut hist = BTreeMap::new();
    for (k, h) in &tally.hists {
        hist.insert(k.as_str().to_string(), encode_histogram(&h.total));
    }
    if hist.is_empty() {
        hist.insert(st.kind.as_str().to_string(), encode_histogram(&new_histogram()));
    }
    let (first_error, error_kind) = match tally.first_error {
        Some((m, k)) => (Some(m), Some(k.to_string())),
        None => (None, None),
    };
    StepResult {
        index: st.index,
        step: "ops".into(),
        error: None,
        error_kind,
        wall_ns,
        ops: tally.ops,
        requests: tally.requests,
        errors: tally.errors,
        first_error,
        error_classes: tally.error_classes.clone(),
        mismatches: tally.mismatches,
        missing: tally.missing,
        busy_ns: tally.busy_ns,
        busy_max_ns: tally.busy_max,
        hist,
        intervals,
        ..Default::default()
    }
}

/// States how an engine keeps a record of fields when it does not say so itself: a store of
/// single values holds the fields serialised (docs/plan-format.md, "Fields").
pub(crate) fn state_record(ds: &Dataset, settings: &mut BTreeMap<String, String>) {
    let n = ds.value.fields;
    if n > 0 && !settings.contains_key("record") {
        let update = if ds.value.merges_updates() {
            "; an update of one field reads the record, merges the field in and writes it back"
        } else {
            ""
        };
        settings.insert("record".into(), format!("blob: the {n} fields serialised into one value{update}"));
    }
}

/// The process's own resources used since `before`.
pub(crate) fn usage_since(before: Usage) -> job::Usage {
    let after = Usage::now();
    job::Usage {
        cpu_user_ns: after.user_ns.saturating_sub(before.user_ns),
        cpu_sys_ns: after.sys_ns.saturating_sub(before.sys_ns),
        max_rss_kb: after.max_rss_kb,
        io_read_bytes: after.read_bytes.saturating_sub(before.read_bytes),
        io_write_bytes: after.write_bytes.saturating_sub(before.write_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(kind: &str, kinds: &[&str]) -> OpsStep {
        serde_json::from_value(serde_json::json!({
            "index": 0, "name": "t", "kind": kind, "count": 10, "dist": {"name": "uniform", "n": 10}, "rec_seed": 1,
            "kinds": kinds, "thresholds": vec![u64::MAX; kinds.len()],
        }))
        .unwrap()
    }

    #[test]
    fn a_mix_of_gets_alone_runs_as_gets() {
        assert!(gets_only(&step("get", &[])));
        assert!(gets_only(&step("mixed", &["get"])), "YCSB C: read = 100");
        assert!(gets_only(&step("mixed", &["get", "get"])));
        assert!(!gets_only(&step("mixed", &["get", "update"])));
        assert!(!gets_only(&step("mixed", &["scan"])));
        assert!(!gets_only(&step("mixed", &[])), "a mix without kinds is refused by the stream");
        assert!(!gets_only(&step("multi-get", &[])));
    }
}
