//! One table per timed phase: ops/s, MB/s, the chosen percentiles, what was checked, CPU and
//! the harness's share, with allocation and disk columns where a row measured them, and the
//! notes that belong to the phase's rows.

use kvbench_model::result::{EngineResult, Latency, PhaseResult, RunResult, Status};

use crate::human::{first_line, human_bytes, human_mb, human_ns, human_rate};
use crate::repetitions::{Spreads, WIDE_SPREAD};
use crate::sections::{best_of, conditions, phase, status_cell, Section};

/// Above this share of the wall time outside the engine's calls, the report warns.
pub const HARNESS_WARN: f64 = 0.10;

pub(crate) const DEFAULT_PERCENTILES: [f64; 4] = [50.0, 95.0, 99.0, 99.9];

/// `50,99,99.99` as percentiles, each above 0 and at most 100.
pub fn parse_percentiles(text: &str) -> Result<Vec<f64>, String> {
    text.split(',')
        .map(|q| match q.trim().parse::<f64>() {
            Ok(v) if v > 0.0 && v <= 100.0 => Ok(v),
            _ => Err(format!(
                "`{}` is not a percentile (allowed: numbers above 0 and at most 100, e.g. 50,99,99.99)",
                q.trim()
            )),
        })
        .collect()
}

/// A latency percentile: the summary's own field where it has one, else from the histogram.
fn latency_at(latency: &Latency, quantile: f64) -> u64 {
    match quantile {
        50.0 => latency.p50_ns,
        90.0 => latency.p90_ns,
        95.0 => latency.p95_ns,
        99.0 => latency.p99_ns,
        99.9 => latency.p999_ns,
        100.0 => latency.max_ns,
        _ => kvbench_model::histogram::decode_histogram(&latency.hdr)
            .map(|h| h.value_at_quantile(quantile / 100.0))
            .unwrap_or(0),
    }
}

/// The latency cells of a row: each percentile, then the max.
fn latency_cells(latency: &Latency, qs: &[f64]) -> Vec<u64> {
    qs.iter().map(|&q| latency_at(latency, q)).chain([latency.max_ns]).collect()
}

/// The columns of the phase tables with the percentiles in force: p50 and p99 are kept longest
/// in a narrow terminal, others go before them.
fn phase_columns(qs: &[f64]) -> Vec<(String, u8)> {
    let mut cols: Vec<(String, u8)> =
        [("engine", 0), ("ops/s", 0), ("MB/s", 2)].map(|(n, p)| (n.to_string(), p)).to_vec();
    for &q in qs {
        let prio = if q == 50.0 || q == 99.0 {
            1
        } else if q < 99.0 {
            2
        } else {
            3
        };
        cols.push((format!("p{q}"), prio));
    }
    cols.push(("max".into(), 3));
    cols.extend(PHASE_TAIL.iter().map(|(n, p)| (n.to_string(), *p)));
    cols
}

const PHASE_TAIL: &[(&str, u8)] = &[("ops", 5), ("checked", 1), ("cpu", 4), ("harness", 4), ("threads", 4)];

/// Go's allocation counters per operation, where the worker reports them.
const ALLOC_COLUMNS: &[(&str, u8)] = &[("B/op", 3), ("allocs/op", 3)];

/// What the disk saw, where it was measured: device bytes per op, amplifications, and the
/// share of the store's pages cached when the phase started.
const DISK_COLUMNS: &[(&str, u8)] = &[("disk r/op", 4), ("disk w/op", 4), ("RA", 3), ("WA", 3), ("cached", 5)];

pub(crate) fn phase_section(run: &RunResult, spreads: &Spreads, name: &str, kind: &str, qs: &[f64]) -> Section {
    let allocs = run.engines.iter().filter_map(|e| phase(e, name)).any(|p| p.runtime.contains_key("alloc_bytes"));
    let disk = run.engines.iter().filter_map(|e| phase(e, name)).any(|p| p.disk.is_some());
    let mut cols = phase_columns(qs);
    let own = |c: &[(&str, u8)]| c.iter().map(|(n, p)| (n.to_string(), *p)).collect::<Vec<_>>();
    if allocs {
        cols.extend(own(ALLOC_COLUMNS));
    }
    if disk {
        cols.extend(own(DISK_COLUMNS));
    }
    // Stalls (intervals far below the phase's median) only where a row had some.
    let stalls = run.engines.iter().filter_map(|e| phase(e, name)).any(|p| p.stalls > 0);
    if stalls {
        cols.push(("stalls".into(), 2));
    }
    let cols: Vec<(&str, u8)> = cols.iter().map(|(n, p)| (n.as_str(), *p)).collect();
    let width = cols.len();
    let mut s = Section::new(format!("Phase {name}"), String::new(), &cols);
    let latencies = qs.len() + 1;
    let mut vals: Vec<Vec<Option<f64>>> = vec![Vec::new(); 1 + latencies];
    let mut conds = Vec::new();
    let mut unit = String::new();
    let mut notes = Notes::default();
    let blank = |first: String, second: String| {
        let mut row = vec![first, second];
        row.resize(width, String::new());
        row
    };
    for e in &run.engines {
        let measured = phase(e, name).filter(|p| p.status == Status::Ok);
        for (v, f) in vals.iter_mut().zip(figures(measured, qs)) {
            v.push(f);
        }
        conds.push(measured.map(conditions).unwrap_or_default());
        let Some(p) = phase(e, name) else {
            let why = e.error.as_deref().map(first_line).unwrap_or("not run");
            s.rows.push(blank(e.label.clone(), format!("- ({why})")));
            continue;
        };
        unit = p.unit.clone();
        notes.add(e, p);
        // A phase with a declared fault keeps its figures: its errors are in the checked cell.
        if let Some(st) = status_cell(p).filter(|_| p.fault.is_none()) {
            let why = p.reason.as_deref().map(first_line).unwrap_or("");
            s.rows.push(blank(e.label.clone(), format!("{st}: {why}")));
            continue;
        }
        let mut row = measured_row(e, p, spreads.get(&(e.label.clone(), name.to_string())), allocs, qs);
        row.insert(2, human_mb(p.ops_per_sec * record_bytes(run)));
        if disk {
            row.extend(disk_row(p));
        }
        if stalls {
            row.push(p.stalls.to_string());
        }
        s.rows.push(row);
        // Mixed phases: one sub-row per operation kind (not ranked).
        for row in by_kind_rows(p, width, qs) {
            vals.iter_mut().for_each(|v| v.push(None));
            conds.push(String::new());
            s.rows.push(row);
        }
    }
    // Columns: ops/s, MB/s (its rank is ops/s's, not marked twice), then the latencies.
    s.best[1] = best_of(&vals[0], &conds, true);
    for (v, lat) in vals.iter().enumerate().skip(1) {
        s.best[v + 2] = best_of(lat, &conds, false);
    }
    s.note = phase_note(kind, &unit, spreads.keys().any(|(_, p)| p == name), &conds, &vals[0]);
    s.note.push_str("; MB/s = ops/s × the mean record size (key + value)");
    if disk {
        s.note.push_str(DISK_NOTE);
    }
    s.note.push_str(&notes.text(run.engines.len()));
    s
}

/// The mean size of a record (key + value) of the run's data, in bytes.
fn record_bytes(run: &RunResult) -> f64 {
    run.plan.raw_bytes as f64 / run.plan.unique_records.max(1) as f64
}

/// The ranked figures of a measured phase: ops/s, each percentile, max.
pub(crate) fn figures(measured: Option<&PhaseResult>, qs: &[f64]) -> Vec<Option<f64>> {
    let l = measured.and_then(|p| p.latency.as_ref());
    let lat = match l {
        Some(l) => latency_cells(l, qs).into_iter().map(|v| Some(v as f64)).collect(),
        None => vec![None; qs.len() + 1],
    };
    std::iter::once(measured.map(|p| p.ops_per_sec)).chain(lat).collect()
}

/// A mixed phase's sub-rows: latency and count of each operation kind.
fn by_kind_rows(phase: &PhaseResult, width: usize, qs: &[f64]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (op, l) in &phase.latency_by_op {
        let n = kvbench_model::histogram::decode_histogram(&l.hdr).map(|h| h.len().to_string()).unwrap_or_default();
        let mut row = vec![format!("  {op}"), String::new(), String::new()];
        row.extend(latency_cells(l, qs).into_iter().map(|v| human_ns(v as f64)));
        row.push(n);
        row.resize(width, String::new());
        rows.push(row);
    }
    rows
}

/// The notes of a phase's rows. Notes differ per engine (an emulated multi-get, say): each
/// names its engines unless all of them share it.
#[derive(Default)]
struct Notes {
    notes: Vec<(String, Vec<String>)>,
    busy_harness: Vec<String>,
}

impl Notes {
    fn add(&mut self, row: &EngineResult, phase: &PhaseResult) {
        for n in phase.notes.iter().filter(|n| !n.starts_with("reopened")) {
            match self.notes.iter_mut().find(|(t, _)| t == n) {
                Some((_, who)) => who.push(row.label.clone()),
                None => self.notes.push((n.clone(), vec![row.label.clone()])),
            }
        }
        let measured = status_cell(phase).is_none() || phase.fault.is_some();
        if measured && phase.harness_share > HARNESS_WARN {
            self.busy_harness.push(format!("{} {:.0}%", row.label, phase.harness_share * 100.0));
        }
    }

    /// What follows the phase's own note, each part after "; ".
    fn text(&self, engines: usize) -> String {
        let mut out = String::new();
        // The runner's own note says the same with its causes; one warning is enough.
        let runner_said = self.notes.iter().any(|(n, _)| n.starts_with("the harness took"));
        if !self.busy_harness.is_empty() && !runner_said {
            out.push_str(&format!(
                "; WARNING: the harness took over {:.0}% of the wall time outside the engine's calls ({})",
                HARNESS_WARN * 100.0,
                self.busy_harness.join(", ")
            ));
        }
        for (n, who) in &self.notes {
            out.push_str(if is_warning(n) { "; WARNING: " } else { "; " });
            out.push_str(n);
            if who.len() < engines {
                out.push_str(&format!(" ({})", who.join(", ")));
            }
        }
        out
    }
}

/// Notes that say a figure describes the harness or the load generator, not only the store.
fn is_warning(note: &str) -> bool {
    ["the harness took", "load generator saturated", "target rate not sustained"].iter().any(|w| note.starts_with(w))
}

fn measured_row(
    engine_row: &EngineResult,
    phase: &PhaseResult,
    spread: Option<&(usize, f64)>,
    allocs: bool,
    qs: &[f64],
) -> Vec<String> {
    let l = phase.latency.clone().unwrap_or_default();
    let mut checked = if phase.mismatches + phase.missing == 0 {
        "ok".to_string()
    } else {
        format!("{} bad", phase.mismatches + phase.missing)
    };
    if phase.errors > 0 {
        checked.push_str(&format!(", {} errors", phase.errors));
    }
    let rate_cell = match spread {
        Some((n, sp)) => format!(
            "{} ±{:.0}%{} (n={n})",
            human_rate(phase.ops_per_sec),
            sp * 50.0,
            if *sp > WIDE_SPREAD { " !" } else { "" }
        ),
        None => human_rate(phase.ops_per_sec),
    };
    let mut row = vec![engine_row.label.clone(), rate_cell];
    row.extend(latency_cells(&l, qs).into_iter().map(|v| human_ns(v as f64)));
    row.extend([
        phase.ops.to_string(),
        checked,
        human_ns((phase.cpu_user_ns + phase.cpu_sys_ns) as f64),
        format!("{:.0}%{}", phase.harness_share * 100.0, if phase.harness_share > HARNESS_WARN { " !" } else { "" }),
        phase.threads.to_string(),
    ]);
    if allocs {
        let per_op = |k: &str| {
            phase
                .runtime
                .get(k)
                .filter(|_| phase.ops > 0)
                .map(|v| format!("{:.0}", v / phase.ops as f64))
                .unwrap_or_default()
        };
        row.push(per_op("alloc_bytes"));
        row.push(per_op("mallocs"));
    }
    row
}

const DISK_NOTE: &str = "; disk r/op, w/op = bytes the row's processes read from and wrote to storage per op \
     (/proc/PID/io); RA, WA = those bytes over the records' key+value bytes read and written; \
     cached = share of the store's pages in the page cache when the phase started";

/// The disk cells of a measured phase (blank where nothing was measured).
fn disk_row(phase: &PhaseResult) -> Vec<String> {
    let Some(d) = phase.disk.as_ref() else { return vec![String::new(); DISK_COLUMNS.len()] };
    let per_op = |b: u64| b.checked_div(phase.ops).map(human_bytes).unwrap_or_else(|| "-".into());
    let amp = |a: f64, logical: u64| if logical > 0 { format!("{a:.2}x") } else { "-".into() };
    vec![
        per_op(d.read_bytes),
        per_op(d.write_bytes),
        amp(d.read_amplification, d.logical_read_bytes),
        amp(d.write_amplification, d.logical_write_bytes),
        d.cached_at_start.map(|c| format!("{:.0}%", c * 100.0)).unwrap_or_else(|| "-".into()),
    ]
}

fn phase_note(kind: &str, unit: &str, repeated: bool, conds: &[String], rates: &[Option<f64>]) -> String {
    let mut note = format!(
        "{kind}; ops/s over the wall time; latency per {}; harness = share of the wall time outside the engine's calls",
        if unit.is_empty() { "op" } else { unit }
    );
    // ops count what was read, so rows with different request sizes compare.
    match kind {
        "multi-get" => note.push_str("; ops = keys read (requests × keys per request)"),
        "scan" => note.push_str("; ops = records returned (scans × records per scan)"),
        _ => {}
    }
    if repeated {
        note.push_str(&format!(
            "; median of repetitions, ± half the min-max range, ! = range over {:.0}% of the median; latency of the repetitions pooled",
            WIDE_SPREAD * 100.0
        ));
    }
    let measured: std::collections::BTreeSet<&String> =
        conds.iter().zip(rates).filter(|(_, r)| r.is_some()).map(|(c, _)| c).collect();
    if measured.len() > 1 {
        note.push_str("; no best marked: the rows ran with different units, threads, batches or cache");
    }
    note
}
