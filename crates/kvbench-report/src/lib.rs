//! Reports derived from a result file. Every format renders the same [`Section`] model, so
//! the terminal table, Markdown and HTML always agree; CSV, JSON, YCSB lines and `.hlog`
//! interval logs are flat views of the canonical JSON.

use std::collections::BTreeMap;

use kvbench_model::result::{EngineResult, Latency, PhaseResult, RunResult, Status};
use kvbench_model::spec::PhaseKind;

mod axis;
#[cfg(any(test, feature = "browser-test"))]
pub mod browser;
mod compare;
mod csv;
mod dashboard;
mod escape;
mod export;
mod hlog;
mod html;
mod tables;
mod svg;
mod text;
pub mod trend;
mod ycsb;

pub use compare::{
    compare, compare_json, compared, differences, rank_p, regressions, unreliable, verdict, Compared, Method, Verdict,
};
pub use csv::csv;
pub use dashboard::dashboard;
pub use escape::{csv_neutral, terminal_safe};
pub use export::{bencher, github_action_benchmark};
pub use hlog::hlog_files;
pub use tables::own_table;
pub use text::{fit_table, markdown_of, terminal_width, text_table, text_table_width};
pub use ycsb::ycsb;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
    Html,
    /// YCSB's summary lines, so YCSB's parsers read kvbench results.
    Ycsb,
    /// HdrHistogram interval logs, one file per row, repetition and phase (needs `--output DIR`).
    Hlog,
    /// github-action-benchmark's `customBiggerIsBetter` JSON (ops/s per row and phase).
    GithubActionBenchmark,
    /// Bencher's metric format (throughput, p99, device bytes per op).
    Bencher,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        Ok(match s {
            "table" => Format::Table,
            "markdown" | "md" => Format::Markdown,
            "csv" => Format::Csv,
            "json" => Format::Json,
            "html" => Format::Html,
            "ycsb" => Format::Ycsb,
            "hlog" => Format::Hlog,
            "github-action-benchmark" => Format::GithubActionBenchmark,
            "bencher" => Format::Bencher,
            other => {
                return Err(format!(
                    "unknown format `{other}` (table, markdown, csv, json, html, ycsb, hlog, github-action-benchmark, bencher)"
                ))
            }
        })
    }
}

/// What the command line chose about a report, passed down to whatever renders it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    /// The percentiles the phase tables show, in percent, each in (0, 100] (`--percentiles`).
    pub percentiles: Vec<f64>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { percentiles: DEFAULT_PERCENTILES.to_vec() }
    }
}

impl ReportOptions {
    /// The options with `--percentiles` when it was given, the defaults otherwise.
    pub fn with_percentiles(list: Option<Vec<f64>>) -> Self {
        match list {
            Some(p) if !p.is_empty() => ReportOptions { percentiles: p },
            _ => ReportOptions::default(),
        }
    }
}

/// The report as one text with the default options (see [`render_with`]).
pub fn render(r: &RunResult, format: Format) -> String {
    render_with(r, format, &ReportOptions::default())
}

/// The report as one text. `Hlog` is a set of files: see [`hlog_files`]; here it lists them.
pub fn render_with(r: &RunResult, format: Format, o: &ReportOptions) -> String {
    match format {
        Format::Table => table(r, o),
        Format::Markdown => markdown(r, o),
        Format::Csv => csv(r),
        Format::Json => serde_json::to_string_pretty(r).expect("result serialises") + "\n",
        // A page has room for a whole version string; a table cell does not.
        Format::Html => html::page(r, &sections_of(r, o, Versions::Whole)),
        Format::Ycsb => ycsb(r),
        Format::Hlog => hlog_files(r).iter().map(|(name, _)| format!("{name}\n")).collect(),
        Format::GithubActionBenchmark => github_action_benchmark(r),
        Format::Bencher => bencher(r),
    }
}

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
    fn new(title: String, note: String, columns: &[(&str, u8)]) -> Section {
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

pub fn human_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < units.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

pub fn human_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.1} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

pub fn human_rate(r: f64) -> String {
    if r == 0.0 {
        "0".into()
    } else if r >= 1e6 {
        format!("{:.2}M", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1}k", r / 1e3)
    } else {
        format!("{r:.1}")
    }
}

/// A version short enough for a table cell: long strings (a server's banner, say) keep their
/// first version-like token, marked with `…`.
pub fn short_version(v: &str) -> String {
    const MAX: usize = 20;
    if v.chars().count() <= MAX {
        return v.to_string();
    }
    // The first run of digits and dots that holds a dot: `7.0.15` out of `redis v=7.0.15 sha=...`.
    let mut rest = v;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let run: String = rest[start..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let run = run.trim_end_matches('.');
        if run.contains('.') {
            return format!("{run}…");
        }
        rest = &rest[start + run.len().max(1)..];
    }
    let mut s: String = v.chars().take(MAX - 1).collect();
    s.push('…');
    s
}

fn phase<'a>(e: &'a EngineResult, name: &str) -> Option<&'a PhaseResult> {
    e.phases.iter().find(|p| p.name == name)
}

fn status_cell(p: &PhaseResult) -> Option<String> {
    match p.status {
        Status::Ok => None,
        Status::NotApplicable => Some("n/a".into()),
        Status::Failed => Some("FAILED".into()),
        Status::Interrupted => Some("interrupted".into()),
        Status::Expected => Some("expected".into()),
    }
}

/// Wall time of a phase (older results carry only the time inside the calls).
pub fn wall_ns(p: &PhaseResult) -> u64 {
    if p.wall_ns > 0 {
        p.wall_ns
    } else {
        p.elapsed_ns
    }
}

/// A server keeps its data in its own files, not in the row's directory, so the row's space
/// is not the store's, unless the row says what it measured (`space_source`).
pub fn space_measured(e: &EngineResult) -> bool {
    let server = e.settings.contains_key("url") || e.settings.keys().any(|k| k.starts_with("server."));
    e.status == Status::Ok && e.space_bytes > 0 && (!server || e.settings.contains_key("space_source"))
}

/// Index of the best value in `vals` (None entries ignored); `higher` says which way is better.
/// Values are only ranked when every measured one was taken under the same conditions
/// (`conds`, e.g. unit, threads, batch, cache) and there are at least two.
fn best_of(vals: &[Option<f64>], conds: &[String], higher: bool) -> Option<usize> {
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
fn conditions(p: &PhaseResult) -> String {
    format!("{} {} {} {}", p.unit, p.threads, p.batch, p.cache)
}

/// Names of the timed phases, in run order, over all engines.
pub(crate) fn phase_names(r: &RunResult) -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = Vec::new();
    for e in &r.engines {
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

/// Row labels in run order, each with its repetitions.
pub(crate) fn by_label(r: &RunResult) -> Vec<(String, Vec<&EngineResult>)> {
    let mut out: Vec<(String, Vec<&EngineResult>)> = Vec::new();
    for e in &r.engines {
        match out.iter_mut().find(|(l, _)| l == &e.label) {
            Some((_, v)) => v.push(e),
            None => out.push((e.label.clone(), vec![e])),
        }
    }
    out
}

/// Spread of ops/s over repetitions, per (label, phase): (repetitions, (max-min)/median).
type Spreads = BTreeMap<(String, String), (usize, f64)>;

/// Above this relative spread between repetitions a figure is flagged.
pub const WIDE_SPREAD: f64 = 0.10;

/// Above this share of the wall time outside the engine's calls, the report warns.
pub const HARNESS_WARN: f64 = 0.10;

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One row per label: with repetitions, each figure is the median over the repetitions
/// whose phase measured it (ok, or failed only as the row declared), and the ops/s spread is
/// kept to be shown.
pub fn collapse(r: &RunResult) -> (RunResult, Spreads) {
    let mut spreads = Spreads::new();
    let mut out = r.clone();
    out.engines.clear();
    for (label, reps) in by_label(r) {
        let mut row = reps.iter().find(|e| measured(e.status)).copied().unwrap_or(reps[0]).clone();
        if reps.len() > 1 {
            // A failure outranks a declared one: the row shows the worst repetition's status.
            let bad =
                reps.iter().find(|e| !measured(e.status)).or_else(|| reps.iter().find(|e| e.status != Status::Ok));
            if let Some(bad) = bad {
                row.status = bad.status;
                row.error = bad.error.clone().map(|e| format!("repetition {}: {e}", bad.repetition));
            }
            row.space_bytes = median(reps.iter().map(|e| e.space_bytes as f64).collect()) as u64;
            row.space_amplification = median(reps.iter().map(|e| e.space_amplification).collect());
            for p in row.phases.iter_mut() {
                // Every repetition that measured the phase: ok, or failed only as the row
                // declared (`expect = "mismatch"`), whose figures are as real.
                let same: Vec<&PhaseResult> = reps
                    .iter()
                    .filter_map(|e| e.phases.iter().find(|q| q.name == p.name && measured(q.status)))
                    .collect();
                if same.len() < 2 {
                    continue;
                }
                median_phase(p, &same);
                let rates: Vec<f64> = same.iter().map(|q| q.ops_per_sec).collect();
                let (lo, hi) = rates.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
                spreads.insert((label.clone(), p.name.clone()), (same.len(), (hi - lo) / p.ops_per_sec.max(1e-9)));
            }
        }
        out.engines.push(row);
    }
    (out, spreads)
}

/// Whether a status carries measured figures: ok, or failed only as the row declared.
fn measured(s: Status) -> bool {
    matches!(s, Status::Ok | Status::Expected)
}

/// `p` becomes the median of `same` (the repetitions of one phase) figure by figure.
fn median_phase(p: &mut PhaseResult, same: &[&PhaseResult]) {
    let m = |f: &dyn Fn(&PhaseResult) -> f64| median(same.iter().map(|q| f(q)).collect());
    p.ops_per_sec = m(&|q| q.ops_per_sec);
    p.elapsed_ns = m(&|q| q.elapsed_ns as f64) as u64;
    p.wall_ns = m(&|q| q.wall_ns as f64) as u64;
    p.busy_ns = m(&|q| q.busy_ns as f64) as u64;
    p.harness_share = m(&|q| q.harness_share);
    p.cpu_user_ns = m(&|q| q.cpu_user_ns as f64) as u64;
    p.cpu_sys_ns = m(&|q| q.cpu_sys_ns as f64) as u64;
    for (k, v) in p.runtime.iter_mut() {
        *v = median(same.iter().filter_map(|q| q.runtime.get(k).copied()).collect());
    }
    // Percentiles of the pooled histograms stay ordered (p99 <= p99.9 <= max), which medians
    // taken figure by figure do not; medians only when a histogram does not decode.
    if let Some(pooled) = pooled_latency(same) {
        p.latency = Some(pooled);
    } else if let Some(l) = p.latency.as_mut() {
        let lat = |f: &dyn Fn(&Latency) -> u64| {
            median(same.iter().filter_map(|q| q.latency.as_ref().map(|l| f(l) as f64)).collect()) as u64
        };
        l.p50_ns = lat(&|l| l.p50_ns);
        l.p95_ns = lat(&|l| l.p95_ns);
        l.p99_ns = lat(&|l| l.p99_ns);
        l.p999_ns = lat(&|l| l.p999_ns);
        l.max_ns = lat(&|l| l.max_ns);
    }
}

/// The repetitions' latency histograms added together, if every one decodes.
pub(crate) fn pooled_histogram(same: &[&PhaseResult]) -> Option<hdrhistogram::Histogram<u64>> {
    let mut all: Option<hdrhistogram::Histogram<u64>> = None;
    for q in same {
        let h = kvbench_model::histogram::decode_histogram(&q.latency.as_ref()?.hdr).ok()?;
        match all.as_mut() {
            None => all = Some(h),
            Some(a) => a.add(&h).ok()?,
        }
    }
    all.filter(|h| !h.is_empty())
}

fn pooled_latency(same: &[&PhaseResult]) -> Option<Latency> {
    kvbench_model::histogram::summarize(&pooled_histogram(same)?)
}

/// How the summary shows engine versions.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Versions {
    /// Shortened to fit a table cell ([`short_version`]).
    Short,
    Whole,
}

/// The report's tables with the default options.
pub fn sections(r: &RunResult) -> Vec<Section> {
    sections_with(r, &ReportOptions::default())
}

/// The report's tables, versions shortened for a text table.
pub fn sections_with(r: &RunResult, o: &ReportOptions) -> Vec<Section> {
    sections_of(r, o, Versions::Short)
}

fn sections_of(r: &RunResult, o: &ReportOptions, versions: Versions) -> Vec<Section> {
    let varied = compare::vary_section(r);
    let (r, spreads) = collapse(r);
    // A scenario that declares its own table (an article's, a peer benchmark's) opens with it.
    let mut out: Vec<Section> = own_table(&r).into_iter().collect();
    out.push(summary(&r, versions));
    out.extend(ratios(&r));
    out.extend(varied);
    out.push(phase_times(&r));
    // A settle or size phase has no rate or latency: its wall time is in the phase-time table only.
    for (name, kind) in phase_names(&r).into_iter().filter(|(_, k)| PhaseKind::named_runs_ops(k)) {
        out.push(phase_section(&r, &spreads, &name, &kind, &o.percentiles));
    }
    out
}

fn summary(r: &RunResult, versions: Versions) -> Section {
    let load_name = phase_names(r).into_iter().find(|(_, k)| k == "load").map(|(n, _)| n);
    let mut s = Section::new(
        "Summary".into(),
        format!(
            "{} records, {} of keys+values; space is allocated blocks after close; sync = {}",
            r.plan.unique_records,
            human_bytes(r.plan.raw_bytes),
            r.sync
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
    for e in &r.engines {
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
fn engine_status(e: &EngineResult) -> String {
    match (&e.status, &e.error) {
        (Status::Ok, _) => "ok".to_string(),
        (Status::Expected, _) => "expected: failed verification as declared".to_string(),
        (Status::Interrupted, _) => "interrupted (a signal): phases measured before are kept".to_string(),
        (_, Some(err)) => format!("FAILED: {}", first_line(err)),
        _ => "FAILED".into(),
    }
}

/// The space and space amplification cells: `–` where a server keeps its data in its own
/// files, `-` where the engine failed.
fn space_cells(e: &EngineResult, measured: bool) -> (String, String) {
    match (measured, e.status) {
        (true, _) => (human_bytes(e.space_bytes), format!("{:.2}x", e.space_amplification)),
        (false, Status::Ok) => ("–".into(), "–".into()),
        _ => ("-".into(), "-".into()),
    }
}

/// Ratios the scenario asks for (`[[ratio]]`), e.g. COPY over INSERT rows/s.
fn ratios(r: &RunResult) -> Option<Section> {
    let defs = r.workload.get("ratio").and_then(|v| v.as_array()).filter(|a| !a.is_empty())?;
    let mut s = Section::new(
        "Ratios".into(),
        "ops/s of one row over another in the same phase, as the scenario asks".into(),
        &[("phase", 0), ("numerator", 0), ("denominator", 0), ("ratio", 0)],
    );
    for d in defs {
        let f = |k: &str| d.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        let (ph, num, den) = (f("phase"), f("numerator"), f("denominator"));
        let rate = |label: &str| {
            r.engines
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
fn phase_times(r: &RunResult) -> Section {
    let mut names: Vec<String> = vec!["open".into()];
    names.extend(phase_names(r).into_iter().map(|(n, _)| n));
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
    if phase_names(r).iter().any(|(_, k)| k == "settle") {
        s.note.push_str("; a settle phase is the untimed flush and compaction between phases, not a workload figure");
    }
    let mut vals: Vec<Vec<Option<f64>>> = vec![Vec::new(); names.len()];
    let mut conds: Vec<Vec<String>> = vec![Vec::new(); names.len()];
    for e in &r.engines {
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
        phase_names(r).into_iter().filter(|(_, k)| !PhaseKind::named_runs_ops(k)).map(|(n, _)| n).collect();
    for c in (0..names.len()).filter(|&c| !settles.contains(&names[c])) {
        s.best[c + 1] = best_of(&vals[c], &conds[c], false);
    }
    s
}

const DEFAULT_PERCENTILES: [f64; 4] = [50.0, 95.0, 99.0, 99.9];

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
fn latency_at(l: &Latency, q: f64) -> u64 {
    match q {
        50.0 => l.p50_ns,
        90.0 => l.p90_ns,
        95.0 => l.p95_ns,
        99.0 => l.p99_ns,
        99.9 => l.p999_ns,
        100.0 => l.max_ns,
        _ => kvbench_model::histogram::decode_histogram(&l.hdr).map(|h| h.value_at_quantile(q / 100.0)).unwrap_or(0),
    }
}

/// The latency cells of a row: each percentile, then the max.
fn latency_cells(l: &Latency, qs: &[f64]) -> Vec<u64> {
    qs.iter().map(|&q| latency_at(l, q)).chain([l.max_ns]).collect()
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

fn phase_section(r: &RunResult, spreads: &Spreads, name: &str, kind: &str, qs: &[f64]) -> Section {
    let allocs = r.engines.iter().filter_map(|e| phase(e, name)).any(|p| p.runtime.contains_key("alloc_bytes"));
    let disk = r.engines.iter().filter_map(|e| phase(e, name)).any(|p| p.disk.is_some());
    let mut cols = phase_columns(qs);
    let own = |c: &[(&str, u8)]| c.iter().map(|(n, p)| (n.to_string(), *p)).collect::<Vec<_>>();
    if allocs {
        cols.extend(own(ALLOC_COLUMNS));
    }
    if disk {
        cols.extend(own(DISK_COLUMNS));
    }
    // Stalls (intervals far below the phase's median) only where a row had some.
    let stalls = r.engines.iter().filter_map(|e| phase(e, name)).any(|p| p.stalls > 0);
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
    for e in &r.engines {
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
        row.insert(2, human_mb(p.ops_per_sec * record_bytes(r)));
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
    s.note.push_str(&notes.text(r.engines.len()));
    s
}

/// The mean size of a record (key + value) of the run's data, in bytes.
fn record_bytes(r: &RunResult) -> f64 {
    r.plan.raw_bytes as f64 / r.plan.unique_records.max(1) as f64
}

/// Megabytes (10^6 bytes) per second, to three significant figures.
fn human_mb(mb_bytes: f64) -> String {
    match mb_bytes / 1e6 {
        v if v >= 100.0 => format!("{v:.0}"),
        v if v >= 10.0 => format!("{v:.1}"),
        v => format!("{v:.2}"),
    }
}

/// The ranked figures of a measured phase: ops/s, each percentile, max.
fn figures(measured: Option<&PhaseResult>, qs: &[f64]) -> Vec<Option<f64>> {
    let l = measured.and_then(|p| p.latency.as_ref());
    let lat = match l {
        Some(l) => latency_cells(l, qs).into_iter().map(|v| Some(v as f64)).collect(),
        None => vec![None; qs.len() + 1],
    };
    std::iter::once(measured.map(|p| p.ops_per_sec)).chain(lat).collect()
}

/// A mixed phase's sub-rows: latency and count of each operation kind.
fn by_kind_rows(p: &PhaseResult, width: usize, qs: &[f64]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (op, l) in &p.latency_by_op {
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
    fn add(&mut self, e: &EngineResult, p: &PhaseResult) {
        for n in p.notes.iter().filter(|n| !n.starts_with("reopened")) {
            match self.notes.iter_mut().find(|(t, _)| t == n) {
                Some((_, who)) => who.push(e.label.clone()),
                None => self.notes.push((n.clone(), vec![e.label.clone()])),
            }
        }
        let measured = status_cell(p).is_none() || p.fault.is_some();
        if measured && p.harness_share > HARNESS_WARN {
            self.busy_harness.push(format!("{} {:.0}%", e.label, p.harness_share * 100.0));
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
    e: &EngineResult,
    p: &PhaseResult,
    spread: Option<&(usize, f64)>,
    allocs: bool,
    qs: &[f64],
) -> Vec<String> {
    let l = p.latency.clone().unwrap_or_default();
    let mut checked =
        if p.mismatches + p.missing == 0 { "ok".to_string() } else { format!("{} bad", p.mismatches + p.missing) };
    if p.errors > 0 {
        checked.push_str(&format!(", {} errors", p.errors));
    }
    let rate_cell = match spread {
        Some((n, sp)) => format!(
            "{} ±{:.0}%{} (n={n})",
            human_rate(p.ops_per_sec),
            sp * 50.0,
            if *sp > WIDE_SPREAD { " !" } else { "" }
        ),
        None => human_rate(p.ops_per_sec),
    };
    let mut row = vec![e.label.clone(), rate_cell];
    row.extend(latency_cells(&l, qs).into_iter().map(|v| human_ns(v as f64)));
    row.extend([
        p.ops.to_string(),
        checked,
        human_ns((p.cpu_user_ns + p.cpu_sys_ns) as f64),
        format!("{:.0}%{}", p.harness_share * 100.0, if p.harness_share > HARNESS_WARN { " !" } else { "" }),
        p.threads.to_string(),
    ]);
    if allocs {
        let per_op = |k: &str| {
            p.runtime.get(k).filter(|_| p.ops > 0).map(|v| format!("{:.0}", v / p.ops as f64)).unwrap_or_default()
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
fn disk_row(p: &PhaseResult) -> Vec<String> {
    let Some(d) = p.disk.as_ref() else { return vec![String::new(); DISK_COLUMNS.len()] };
    let per_op = |b: u64| b.checked_div(p.ops).map(human_bytes).unwrap_or_else(|| "-".into());
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

pub(crate) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

pub(crate) fn preamble(r: &RunResult) -> Vec<String> {
    let env = &r.environment;
    let mut lines = vec![
        format!("kvbench {} — scenario {} — run {}", r.kvbench_version, r.scenario, r.run_id),
        format!(
            "{} ({} cores, {}), {} {}, data on {} ({})",
            env.cpu_model,
            env.cores,
            human_bytes(env.memory_bytes),
            env.os,
            env.kernel,
            env.data_dir,
            env.filesystem
        ),
    ];
    if !r.intent.is_empty() {
        lines.push(format!("intent: {}", r.intent));
    }
    lines.push(regime(r));
    if let Some(t) = &r.plan.trace {
        lines.push(trace_line(t));
    }
    for w in &r.warnings {
        lines.push(format!("WARNING: {w}"));
    }
    lines
}

/// What a replay ran: the stream, its identity and what it holds.
pub fn trace_line(t: &kvbench_model::result::TraceInfo) -> String {
    let kinds: Vec<String> = t.by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let hash = if t.hash.is_empty() { String::new() } else { format!(", xxh3 {}", t.hash) };
    let mut line = format!(
        "trace: {} ({}{hash}): {} ops ({}) in {} requests from {} clients over {:.3} s, {} distinct keys ({} \
         loaded first), reads per write {:.2}",
        t.source,
        t.format,
        t.ops,
        kinds.join(", "),
        t.requests,
        t.clients,
        t.duration_us as f64 / 1e6,
        t.distinct_keys,
        t.preloaded,
        t.read_write_ratio
    );
    if !t.skipped.is_empty() {
        let skipped: Vec<String> = t.skipped.iter().map(|(k, n)| format!("{k} {n}")).collect();
        line.push_str(&format!("; not replayed: {}", skipped.join(", ")));
    }
    if t.resized_puts > 0 {
        line.push_str(&format!("; {} puts replayed at their key's first size", t.resized_puts));
    }
    line
}

/// The regime of the run: its data against each row's memory budget as it was applied (with
/// what the limit did: peak, limit hits, OOM kills), a budget given but never applied (the row
/// failed first), or against the machine's memory for rows without one.
pub fn regime(r: &RunResult) -> String {
    let data = human_bytes(r.plan.raw_bytes);
    let applied: Vec<&EngineResult> = r.engines.iter().filter(|e| e.budget.is_some()).collect();
    let not_applied: Vec<&EngineResult> =
        r.engines.iter().filter(|e| e.budget.is_none() && e.budget_requested.is_some()).collect();
    let unbounded: Vec<&str> = r
        .engines
        .iter()
        .filter(|e| e.budget.is_none() && e.budget_requested.is_none())
        .map(|e| e.label.as_str())
        .collect();
    if applied.is_empty() && not_applied.is_empty() {
        let largest = r.engines.iter().map(|e| e.space_bytes).max().unwrap_or(0);
        return format!("regime: {data} of data (keys+values), {}", without_budget(r, largest));
    }
    let mut parts = Vec::new();
    if !applied.is_empty() {
        parts.push(format!("memory budget per row (a cgroup: heap and page cache) {}", applied_budgets(r, &applied)));
    }
    let mut asked: Vec<u64> = not_applied.iter().filter_map(|e| e.budget_requested).collect();
    asked.sort_unstable();
    asked.dedup();
    for limit in asked {
        let rows: Vec<&str> =
            not_applied.iter().filter(|e| e.budget_requested == Some(limit)).map(|e| e.label.as_str()).collect();
        parts.push(format!(
            "memory budget {} NOT applied to {} (failed before its cgroup held it: no figures under a budget)",
            human_bytes(limit),
            rows.join(", ")
        ));
    }
    if !unbounded.is_empty() {
        parts.push(format!("without a budget: {}", unbounded.join(", ")));
    }
    format!("regime: {data} of data (keys+values); {}", parts.join("; "))
}

/// Each applied limit with its rows and what the limit did to each.
fn applied_budgets(r: &RunResult, rows: &[&EngineResult]) -> String {
    let mut limits: Vec<u64> = rows.iter().filter_map(|e| e.budget.as_ref().map(|b| b.limit_bytes)).collect();
    limits.sort_unstable();
    limits.dedup();
    let each = limits.iter().map(|&l| {
        let pressure: Vec<String> = rows
            .iter()
            .filter_map(|e| e.budget.as_ref().filter(|b| b.limit_bytes == l).map(|b| (e, b)))
            .map(|(e, b)| {
                format!(
                    "{}: peak {}, {} limit hits, {} OOM kills",
                    e.label,
                    human_bytes(b.peak_bytes),
                    b.limit_hits,
                    b.oom_kills
                )
            })
            .collect();
        format!("{} ({})", against_budget(r.plan.raw_bytes, l), pressure.join("; "))
    });
    each.collect::<Vec<_>>().join("; ")
}

/// One row's regime, for a series in the history: its data against its own budget, or
/// against the machine's memory.
pub fn row_regime(r: &RunResult, e: &EngineResult) -> String {
    match (&e.budget, e.budget_requested) {
        (Some(b), _) => format!(
            "{} of data; memory budget {}",
            human_bytes(r.plan.raw_bytes),
            against_budget(r.plan.raw_bytes, b.limit_bytes)
        ),
        (None, Some(asked)) => {
            format!("{} of data; memory budget {} NOT applied", human_bytes(r.plan.raw_bytes), human_bytes(asked))
        }
        (None, None) => format!("{} of data, {}", human_bytes(r.plan.raw_bytes), without_budget(r, e.space_bytes)),
    }
}

fn against_budget(raw: u64, limit: u64) -> String {
    let x = raw as f64 / limit.max(1) as f64;
    let fits = if x <= 1.0 { "fits in" } else { "is" };
    format!("{}: the data {fits} {x:.2}x the budget", human_bytes(limit))
}

/// The machine's memory against the larger of the data and `space` (the store on disk).
fn without_budget(r: &RunResult, space: u64) -> String {
    let mem = r.environment.memory_bytes;
    let fits = if space.max(r.plan.raw_bytes) < mem { "the store fits in memory" } else { "larger than memory" };
    format!("no memory budget, {} of memory: {fits}", human_bytes(mem))
}

/// The terminal table, fitted to the terminal's width when there is one.
pub fn table(r: &RunResult, o: &ReportOptions) -> String {
    text_table_width(&preamble(r), &sections_with(r, o), terminal_width())
}

pub fn markdown(r: &RunResult, o: &ReportOptions) -> String {
    markdown_of(&preamble(r), &sections_with(r, o))
}

#[cfg(test)]
mod chromium;
#[cfg(test)]
mod table_snapshots;
#[cfg(test)]
mod tests;
