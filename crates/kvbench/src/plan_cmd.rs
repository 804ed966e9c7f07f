//! `kvbench plan`: the dry run. The same data and op streams every worker derives, shown
//! without an engine: per phase the op counts by kind, the records touched, how skewed the
//! choice is (top-1, top-10, top-1% shares; apart for the records scans start at), and the
//! sizes; `--dump` prints every op.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use kvbench_model::engine::Capabilities;
use kvbench_model::job::{Dist, OpsStep, PhaseKind, Step};
use kvbench_model::scenario::Scenario;
use kvbench_plan::opstream::{Op, OpStream, TO_END};
use kvbench_policy::{dataset, jobs};
use kvbench_worker::data::Data;

/// A store that can do everything, so no phase is left out of the plan.
const EVERYTHING: Capabilities = Capabilities {
    ordered_scan: true,
    multi_get: true,
    batch: true,
    read_only_open: true,
    secondary_open: true,
    persistent: true,
    build_once: false,
    delete: true,
    field_update: false,
};

/// Records a dry run derives: it derives every record's key and value to size the data, so
/// its time grows with them (about a second per million); `run` takes any count.
pub const MAX_RECORDS: u64 = 10_000_000;

pub fn main(scenario: &Scenario, plan_dir: &Path, dump: bool, only: Option<&str>) -> Result<(), String> {
    if scenario.dataset.records > MAX_RECORDS {
        return Err(format!(
            "records = {}: `kvbench plan` shows plans of 1 to {MAX_RECORDS} records (it derives each \
             one); `kvbench run` takes any count",
            scenario.dataset.records
        ));
    }
    let data = dataset::resolve(scenario, plan_dir).map_err(|e| format!("{e:#}"))?;
    let v = scenario.all_variants().into_iter().next().ok_or("no engine rows")?;
    let dir = plan_dir.join("dry-run");
    // No engine, so no options (no phase of a dry run reads them).
    let facts =
        jobs::RowFacts { variant: &v, options: &BTreeMap::new(), caps: EVERYTHING, runtime: "rust", server: false };
    let mut plan = jobs::build(scenario, &data, &facts)?;
    plan.place(&dir, None, None);
    let job = plan.job;
    let steps: Vec<&OpsStep> = job
        .steps
        .iter()
        .filter_map(|st| match st {
            Step::Ops(o) if only.is_none_or(|n| n == o.name) => Some(o.as_ref()),
            _ => None,
        })
        .collect();
    if let (Some(name), true) = (only, steps.is_empty()) {
        // Settle and size phases run no operations: they have no stream to show.
        let names: Vec<String> = (0..scenario.phases.len())
            .filter(|&i| scenario.phases[i].kind.runs_ops())
            .map(|i| scenario.phase_name(i))
            .collect();
        return Err(format!("--phase {name}: no such phase (phases: {})", names.join(", ")));
    }
    let ds = Data::open(&job.dataset, job.plan.as_deref())?;
    if dump {
        return dump_ops(&ds, &steps);
    }
    crate::out::stdout(&format!("{}\n", header(scenario, &data)))?;
    for st in steps {
        crate::out::stdout(&format!("{}\n", summary(&ds, st)?))?;
    }
    Ok(())
}

fn header(scenario: &Scenario, data: &dataset::ResolvedData) -> String {
    let ds = &data.dataset;
    let plan = match &data.plan {
        Some(p) => {
            let size = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
            format!("plan file {} ({})", p.display(), kvbench_report::human_bytes(size))
        }
        None => "no plan file: keys, values and ops are derived from seeds".into(),
    };
    format!(
        "{}: seed {}, {} records loaded, {} with inserts; raw data {} (keys + values); {plan}",
        scenario.name,
        scenario.seed,
        ds.loaded,
        ds.total,
        kvbench_report::human_bytes(data.raw_bytes)
    )
}

/// Every op of the steps, one `kind record` line each (a scan: the record whose key it starts
/// at, and its length). The first
/// failed write (a closed pipe, a full disk) ends the dump with an error.
fn dump_ops(ds: &Data, steps: &[&OpsStep]) -> Result<(), String> {
    let out = std::io::stdout();
    let mut w = std::io::BufWriter::new(out.lock());
    for st in steps {
        writeln!(w, "# phase {} ({}), {} ops{}", st.name, st.kind.as_str(), shown_count(st), for_a_time(st))
            .map_err(crate::out::stdout_error)?;
        try_each_op(ds, st, |o| match o.kind {
            PhaseKind::Scan if o.len == TO_END => {
                writeln!(w, "scan {} end", o.record).map_err(crate::out::stdout_error)
            }
            PhaseKind::Scan => writeln!(w, "scan {} {}", o.record, o.len).map_err(crate::out::stdout_error),
            k => writeln!(w, "{} {}", k.as_str(), o.record).map_err(crate::out::stdout_error),
        })?;
    }
    w.flush().map_err(crate::out::stdout_error)
}

/// Every op of the step; returns the units (requests, batches) they came in.
fn each_op(ds: &Data, st: &OpsStep, mut visit: impl FnMut(&Op)) -> Result<u64, String> {
    try_each_op(ds, st, |o| {
        visit(o);
        Ok(())
    })
}

/// Ops a dry run shows of a step that runs for a duration (its count is only a cap).
const TIMED_SAMPLE: u64 = 1_000_000;
/// Ops a dry run walks of any step: its first ones beyond (the plan's time and output stay
/// bounded whatever `--ops` asks).
const MAX_WALKED: u64 = 10_000_000;

/// The ops a dry run walks: the count, or a sample of a step that runs for a duration or
/// beyond [`MAX_WALKED`].
fn shown_count(st: &OpsStep) -> u64 {
    match st.duration_ms {
        Some(_) => st.count.min(TIMED_SAMPLE),
        None => st.count.min(MAX_WALKED),
    }
}

/// The step's ops in order, one thread's stream; stops at the first error of `visit`. Returns
/// the units the ops came in.
fn try_each_op(ds: &Data, st: &OpsStep, mut visit: impl FnMut(&Op) -> Result<(), String>) -> Result<u64, String> {
    let one = OpsStep { threads: 1, rate: None, count: shown_count(st), ..st.clone() };
    let mut stream =
        OpStream::with_plan(ds.dataset(), ds.plan(), &one, 0, 1).map_err(|e| format!("phase {}: {e:#}", st.name))?;
    let (mut ops, mut units) = (Vec::new(), 0);
    while stream.next_unit(&mut ops) {
        units += 1;
        ops.iter().try_for_each(&mut visit)?;
    }
    Ok(units)
}

/// What a step that runs for a duration, or beyond [`MAX_WALKED`] ops, shows instead of its
/// whole stream.
fn for_a_time(st: &OpsStep) -> String {
    match st.duration_ms {
        Some(ms) => format!(" (runs for {} s: its first {} ops shown)", ms as f64 / 1000.0, shown_count(st)),
        None if st.count > MAX_WALKED => format!(" (its first {MAX_WALKED} ops shown)"),
        None => String::new(),
    }
}

/// How often records are chosen: counts of the records chosen (memory follows the ops walked,
/// not the records), sorted on demand into top shares.
struct Hits {
    counts: std::collections::HashMap<u64, u32>,
    n: u64,
}

impl Hits {
    fn new() -> Hits {
        Hits { counts: std::collections::HashMap::new(), n: 0 }
    }

    fn add(&mut self, record: u64) {
        let h = self.counts.entry(record).or_default();
        *h = h.saturating_add(1);
        self.n += 1;
    }

    fn touched(&self) -> u64 {
        self.counts.len() as u64
    }

    /// Shares (%) of the choices taken by the top 1, top 10 and top 1% of `records` records.
    fn top_shares(&mut self, records: u64) -> (f64, f64, f64) {
        let mut counts: Vec<u32> = self.counts.values().copied().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let share =
            |k: usize| counts.iter().take(k).map(|&h| h as u64).sum::<u64>() as f64 / self.n.max(1) as f64 * 100.0;
        (share(1), share(10), share((records as usize / 100).max(1)))
    }
}

fn summary(data: &Data, st: &OpsStep) -> Result<String, String> {
    let ds = data.dataset();
    let mut kinds: BTreeMap<&'static str, u64> = BTreeMap::new();
    let (mut all, mut starts) = (Hits::new(), Hits::new());
    let (mut newest, mut past_newest) = (st.last, 0u64);
    let units = each_op(data, st, |o| {
        *kinds.entry(o.kind.as_str()).or_default() += 1;
        all.add(o.record);
        match o.kind {
            PhaseKind::Insert => newest = newest.max(o.record),
            PhaseKind::Scan => {
                starts.add(o.record);
                past_newest += u64::from(o.record > newest);
            }
            _ => {}
        }
    })?;
    let kinds: Vec<String> = kinds.iter().map(|(k, c)| format!("{k} {c}")).collect();
    Ok(format!(
        "  {:<14} {} ({}); {}, {} threads; {}{}{}{}",
        st.name,
        counted(st, all.n, units),
        kinds.join(", "),
        if st.replay.is_some() { "replayed" } else { dist_name(&st.dist) },
        st.threads,
        touched(st, &mut all, ds.total),
        reachable(&st.dist),
        scan_starts(&mut starts, ds.loaded, past_newest),
        for_a_time(st)
    ))
}

/// The step's size as `--ops` counts it: requests of a multi-get (and the keys they read),
/// scans of a scan phase, operations otherwise.
fn counted(st: &OpsStep, ops: u64, units: u64) -> String {
    match st.kind {
        PhaseKind::MultiGet => {
            format!("{units:>10} requests of {} keys ({ops} keys)", st.keys_per_request.max(1))
        }
        PhaseKind::Scan => format!("{units:>10} scans"),
        _ => format!("{ops:>10} ops"),
    }
}

/// Which records the step reads or writes: a scan phase by its length (its starts have a line
/// of their own), other steps by the records chosen and how skewed the choice is.
fn touched(st: &OpsStep, all: &mut Hits, total: u64) -> String {
    if st.kind == PhaseKind::Scan {
        return match st.scan.max {
            0 => "each scan reads from its start to the end of the key space".into(),
            max => format!("each scan reads {} to {max} records", st.scan.min.max(1)),
        };
    }
    let touched = all.touched();
    let (top1, top10, top1pc) = all.top_shares(total);
    format!(
        "records touched {touched} of {total} ({:.1}%); top-1 {top1:.2}%, top-10 {top10:.2}%, top-1% {top1pc:.1}%",
        touched as f64 / total.max(1) as f64 * 100.0
    )
}

/// The records scans start at: their skew over the loaded records, and how many start past
/// the newest record written so far (YCSB never does; kvbench's draw cannot).
fn scan_starts(starts: &mut Hits, loaded: u64, past_newest: u64) -> String {
    if starts.n == 0 {
        return String::new();
    }
    let (top1, top10, top1pc) = starts.top_shares(loaded);
    format!(
        "\n  {:<14} scan start records: top-1 {top1:.2}%, top-10 {top10:.2}%, top-1% {top1pc:.1}%; \
         {past_newest} of {} start past the newest record",
        "", starts.n
    )
}

fn dist_name(dist: &Dist) -> &'static str {
    match dist {
        Dist::Sequential { .. } => "sequential",
        Dist::Shuffle { .. } => "shuffle",
        Dist::LoadOrder { .. } => "load-order",
        Dist::Uniform { .. } => "uniform",
        Dist::Hot { .. } => "hot",
        Dist::Zipfian { .. } => "zipfian",
        Dist::Latest { .. } => "latest",
    }
}

/// For YCSB's scrambled zipfian: the share of records some rank maps to (checked over the
/// 30·n most popular ranks, which carry almost all of the probability).
fn reachable(dist: &Dist) -> String {
    let Dist::Zipfian { n, .. } = dist else { return String::new() };
    let n = *n;
    let mut hit = vec![false; n as usize];
    for rank in 0..n.saturating_mul(30) {
        hit[(kvbench_plan::derive::ycsbhash(rank).unsigned_abs() % n) as usize] = true;
    }
    let r = hit.iter().filter(|&&h| h).count() as f64 / n as f64 * 100.0;
    format!("; reachable {r:.2}% of records")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_a_step_of_a_trillion_ops_walks_at_most_max_walked_and_says_so() {
        let mut st: OpsStep = serde_json::from_value(serde_json::json!({
            "index": 0, "name": "get", "kind": "get", "count": 1_000_000_000_000u64,
            "dist": {"name": "uniform", "n": 10}, "rec_seed": 1,
        }))
        .unwrap();
        assert_eq!(shown_count(&st), MAX_WALKED);
        assert_eq!(for_a_time(&st), format!(" (its first {MAX_WALKED} ops shown)"));
        st.count = 500;
        assert_eq!((shown_count(&st), for_a_time(&st)), (500, String::new()));
        let mut hits = Hits::new();
        [u64::MAX, u64::MAX, 7].into_iter().for_each(|r| hits.add(r));
        assert_eq!(hits.touched(), 2, "records of any number, memory by the ops walked");
        assert_eq!(hits.top_shares(1_000_000_000_000).0.round(), 67.0);
    }
}
