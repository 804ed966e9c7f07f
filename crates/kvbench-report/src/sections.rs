//! The report's tables in the [`Section`] model every format renders: the scenario's own
//! table, the summary, ratios, variations and phase times, then a table per timed phase.

use kvbench_model::result::{EngineResult, PhaseResult, RunResult, Status};
use kvbench_model::spec::PhaseKind;

use crate::human::{first_line, human_bytes, human_ns, human_rate, short_version};
use crate::phase_tables::phase_section;
use crate::repetitions::collapse;
use crate::{compare, own_table, ReportOptions};

/// One titled table of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub title: String,
    pub note: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Per column: which row holds the best value (marked in the output).
    pub best: Vec<Option<usize>>,
    /// Per column: 0 is always shown; in a narrow terminal the highest numbers go first.
    pub priority: Vec<u8>,
}

impl Section {
    pub(crate) fn new(title: String, note: String, columns: &[(&str, u8)]) -> Section {
        Section {
            title,
            note,
            headers: columns.iter().map(|c| c.0.to_string()).collect(),
            rows: Vec::new(),
            best: vec![None; columns.len()],
            priority: columns.iter().map(|c| c.1).collect(),
        }
    }
}

pub(crate) fn phase<'a>(row: &'a EngineResult, name: &str) -> Option<&'a PhaseResult> {
    row.phases.iter().find(|p| p.name == name)
}

pub(crate) fn status_cell(phase: &PhaseResult) -> Option<String> {
    match phase.status {
        Status::Ok => None,
        Status::NotApplicable => Some("n/a".into()),
        Status::Failed => Some("FAILED".into()),
        Status::Interrupted => Some("interrupted".into()),
        Status::Expected => Some("expected".into()),
    }
}

/// Wall time of a phase (older results carry only the time inside the calls).
pub fn wall_ns(phase: &PhaseResult) -> u64 {
    if phase.wall_ns > 0 {
        phase.wall_ns
    } else {
        phase.elapsed_ns
    }
}

/// A server keeps its data in its own files, not in the row's directory, so the row's space
/// is not the store's, unless the row says what it measured (`space_source`).
pub fn space_measured(row: &EngineResult) -> bool {
    let server = row.settings.contains_key("url") || row.settings.keys().any(|k| k.starts_with("server."));
    row.status == Status::Ok && row.space_bytes > 0 && (!server || row.settings.contains_key("space_source"))
}

/// Index of the best value in `vals` (None entries ignored); `higher` says which way is better.
/// Values are only ranked when every measured one was taken under the same conditions
/// (`conds`, e.g. unit, threads, batch, cache) and there are at least two.
pub(crate) fn best_of(vals: &[Option<f64>], conds: &[String], higher: bool) -> Option<usize> {
    let measured: Vec<usize> = (0..vals.len()).filter(|&i| vals[i].is_some()).collect();
    if measured.len() < 2 {
        return None;
    }
    let first = conds.get(measured[0]);
    if measured.iter().any(|&i| conds.get(i) != first) {
        return None;
    }
    let mut best: Option<(usize, f64)> = None;
    for &i in &measured {
        let v = vals[i].unwrap_or_default();
        if best.is_none_or(|(_, b)| (higher && v > b) || (!higher && v < b)) {
            best = Some((i, v));
        }
    }
    best.map(|b| b.0)
}

/// What makes two rows' figures of one phase comparable.
pub(crate) fn conditions(phase: &PhaseResult) -> String {
    format!("{} {} {} {}", phase.unit, phase.threads, phase.batch, phase.cache)
}

/// Names of the timed phases, in run order, over all engines.
pub(crate) fn phase_names(run: &RunResult) -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = Vec::new();
    for e in &run.engines {
        for p in &e.phases {
            if p.name == "open" || p.name == "close" {
                continue;
            }
            if !names.iter().any(|(n, _)| n == &p.name) {
                names.push((p.name.clone(), p.kind.clone()));
            }
        }
    }
    names
}

/// How the summary shows engine versions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Versions {
    /// Shortened to fit a table cell ([`short_version`]).
    Short,
    Whole,
}

/// The report's tables with the default options.
pub fn sections(run: &RunResult) -> Vec<Section> {
    sections_with(run, &ReportOptions::default())
}

/// The report's tables, versions shortened for a text table.
pub fn sections_with(run: &RunResult, options: &ReportOptions) -> Vec<Section> {
    sections_of(run, options, Versions::Short)
}

pub(crate) fn sections_of(run: &RunResult, options: &ReportOptions, versions: Versions) -> Vec<Section> {
    let varied = compare::vary_section(run);
    let (run, spreads) = collapse(run);
    // A scenario that declares its own table (an article's, a peer benchmark's) opens with it.
    let mut out: Vec<Section> = own_table(&run).into_iter().collect();
    out.push(summary(&run, versions));
    out.extend(ratios(&run));
    out.extend(varied);
    out.push(phase_times(&run));
    // A settle or size phase has no rate or latency: its wall time is in the phase-time table only.
    for (name, kind) in phase_names(&run).into_iter().filter(|(_, k)| PhaseKind::named_runs_ops(k)) {
        out.push(phase_section(&run, &spreads, &name, &kind, &options.percentiles));
    }
    out
}

pub(crate) fn summary(run: &RunResult, versions: Versions) -> Section {
    let load_name = phase_names(run).into_iter().find(|(_, k)| k == "load").map(|(n, _)| n);
    let mut s = Section::new(
        "Summary".into(),
        format!(
            "{} records, {} of keys+values; space is allocated blocks after close; sync = {}",
            run.plan.unique_records,
            human_bytes(run.plan.raw_bytes),
            run.sync
        ),
        &[
            ("engine", 0),
            ("version", 4),
            ("status", 0),
            ("sync", 3),
            ("open", 4),
            ("load time", 1),
            ("load rate", 2),
            ("space", 1),
            ("space amp", 2),
            ("close", 4),
        ],
    );
    let (mut load_t, mut load_c, mut space) = (Vec::new(), Vec::new(), Vec::new());
    let mut unmeasured = Vec::new();
    for e in &run.engines {
        let lp = load_name.as_deref().and_then(|n| phase(e, n)).filter(|p| p.status == Status::Ok);
        let time = |name: &str| phase(e, name).map(|p| human_ns(wall_ns(p) as f64)).unwrap_or_else(|| "-".into());
        let status = engine_status(e);
        load_t.push(lp.map(|p| wall_ns(p) as f64));
        load_c.push(lp.map(conditions).unwrap_or_default());
        let measured = space_measured(e);
        if e.status == Status::Ok && !measured {
            unmeasured.push(e.label.clone());
        }
        space.push(measured.then_some(e.space_bytes as f64));
        let (space_cell, amp_cell) = space_cells(e, measured);
        s.rows.push(vec![
            e.label.clone(),
            match versions {
                Versions::Short => short_version(&e.version),
                Versions::Whole => e.version.clone(),
            },
            status,
            e.sync.clone(),
            time("open"),
            lp.map(|p| human_ns(wall_ns(p) as f64)).unwrap_or_else(|| "-".into()),
            lp.map(|p| format!("{}/s", human_rate(p.ops_per_sec))).unwrap_or_else(|| "-".into()),
            space_cell,
            amp_cell,
            time("close"),
        ]);
    }
    s.best[5] = best_of(&load_t, &load_c, false);
    s.best[7] = best_of(&space, &vec![String::new(); space.len()], false);
    if !unmeasured.is_empty() {
        s.note.push_str(&format!(
            "; – = not measured (a server keeps its data in its own files): {}",
            unmeasured.join(", ")
        ));
    }
    s
}

/// An engine's status cell: ok, or why not.
fn engine_status(row: &EngineResult) -> String {
    match (&row.status, &row.error) {
        (Status::Ok, _) => "ok".to_string(),
        (Status::Expected, _) => "expected: failed verification as declared".to_string(),
        (Status::Interrupted, _) => "interrupted (a signal): phases measured before are kept".to_string(),
        (_, Some(err)) => format!("FAILED: {}", first_line(err)),
        _ => "FAILED".into(),
    }
}

/// The space and space amplification cells: `–` where a server keeps its data in its own
/// files, `-` where the engine failed.
fn space_cells(row: &EngineResult, measured: bool) -> (String, String) {
    match (measured, row.status) {
        (true, _) if row.log_space_bytes > 0 => (
            format!("{} (logs {})", human_bytes(row.space_bytes), human_bytes(row.log_space_bytes)),
            format!("{:.2}x", row.space_amplification),
        ),
        (true, _) => (human_bytes(row.space_bytes), format!("{:.2}x", row.space_amplification)),
        (false, Status::Ok) => ("–".into(), "–".into()),
        _ => ("-".into(), "-".into()),
    }
}

/// Ratios the scenario asks for (`[[ratio]]`), e.g. COPY over INSERT rows/s.
pub(crate) fn ratios(run: &RunResult) -> Option<Section> {
    let defs = run.workload.get("ratio").and_then(|v| v.as_array()).filter(|a| !a.is_empty())?;
    let mut s = Section::new(
        "Ratios".into(),
        "ops/s of one row over another in the same phase, as the scenario asks".into(),
        &[("phase", 0), ("numerator", 0), ("denominator", 0), ("ratio", 0)],
    );
    for d in defs {
        let f = |k: &str| d.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        let (ph, num, den) = (f("phase"), f("numerator"), f("denominator"));
        let rate = |label: &str| {
            run.engines
                .iter()
                .find(|e| e.label == label)
                .and_then(|e| phase(e, &ph))
                .filter(|p| p.status == Status::Ok)
                .map(|p| p.ops_per_sec)
        };
        let cell = match (rate(&num), rate(&den)) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
            _ => "-".into(),
        };
        s.rows.push(vec![ph, num, den, cell]);
    }
    Some(s)
}

/// The articles' own view: wall time of each phase side by side (open and close included).
fn phase_times(run: &RunResult) -> Section {
    let mut names: Vec<String> = vec!["open".into()];
    names.extend(phase_names(run).into_iter().map(|(n, _)| n));
    names.push("close".into());
    let mut cols: Vec<(&str, u8)> = vec![("engine", 0)];
    cols.extend(
        names.iter().enumerate().map(|(i, n)| (n.as_str(), if i == 0 || i == names.len() - 1 { 3 } else { 1 })),
    );
    let mut s = Section::new(
        "Phase times".into(),
        "wall time of each phase (the figure the articles report); the tables below give rates and latency percentiles"
            .into(),
        &cols,
    );
    if phase_names(run).iter().any(|(_, k)| k == "settle") {
        s.note.push_str("; a settle phase is the untimed flush and compaction between phases, not a workload figure");
    }
    let mut vals: Vec<Vec<Option<f64>>> = vec![Vec::new(); names.len()];
    let mut conds: Vec<Vec<String>> = vec![Vec::new(); names.len()];
    for e in &run.engines {
        let mut row = vec![e.label.clone()];
        for (c, n) in names.iter().enumerate() {
            let p = phase(e, n);
            let ok = p.filter(|p| p.status == Status::Ok);
            vals[c].push(ok.map(|p| wall_ns(p) as f64));
            conds[c].push(ok.map(conditions).unwrap_or_default());
            row.push(match p {
                Some(p) => status_cell(p).unwrap_or_else(|| human_ns(wall_ns(p) as f64)),
                None => "-".into(),
            });
        }
        s.rows.push(row);
    }
    // A settle's (or size's) time is what the store needed, not a result to win: no column best.
    let settles: Vec<String> =
        phase_names(run).into_iter().filter(|(_, k)| !PhaseKind::named_runs_ops(k)).map(|(n, _)| n).collect();
    for c in (0..names.len()).filter(|&c| !settles.contains(&names[c])) {
        s.best[c + 1] = best_of(&vals[c], &conds[c], false);
    }
    s
}
