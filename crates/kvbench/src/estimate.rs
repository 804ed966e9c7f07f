//! How long a run will take, said before it starts when that is long: each phase's operations
//! at the pace the same engine, phase kind, durability and batch had in the newest earlier
//! result in `--out`, and phases that run for a duration at their duration. Phases with no
//! earlier figure are counted as unknown and said so, never guessed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kvbench_model::result::{RunResult, Status};
use kvbench_model::scenario::{PhaseDef, Scenario, Warmup};
use kvbench_model::spec::PhaseKind;

/// A run estimated at least this long is announced (seconds).
pub const ANNOUNCE_S: f64 = 60.0;
/// A run estimated at least this long starts only when confirmed (`--yes`, or a yes at a
/// terminal): the guard against a flag that turned seconds into hours (seconds).
pub const CONFIRM_S: f64 = 600.0;
/// Earlier results read for their paces, newest first.
const FILES: usize = 20;

/// What the pace of a phase depends on most: engine, phase kind, durability, batch, and the
/// memory regime (`limit/records` under a budget, empty without): a pace measured from the page
/// cache says nothing of a store read through a budget.
type Key = (String, String, String, u32, String);

/// The regime part of a pace's key.
fn regime(budget: Option<u64>, records: u64) -> String {
    budget.map(|b| format!("{b}/{records}")).unwrap_or_default()
}

/// The time one unit (an op; a multi-get's or scan's request) took, and the file it came from.
#[derive(Debug, Clone)]
struct Pace {
    secs: f64,
    file: PathBuf,
}

/// The estimate: seconds known, the largest part in words, and the phases without a figure.
#[derive(Debug, Default)]
pub struct Estimate {
    pub secs: f64,
    pub largest: Option<(f64, String)>,
    pub unknown: usize,
    /// Of `unknown`, the phase runs of rows under a memory budget.
    pub unknown_budgeted: usize,
    /// Seconds per phase name, every row's together, in the scenario's order.
    pub phases: Vec<(String, f64)>,
    /// Seconds per row label, for rows whose every phase had a figure.
    pub rows: BTreeMap<String, f64>,
}

impl Estimate {
    /// The line kvbench prints, or None for a run shorter than `min_secs` or with no figure.
    pub fn line(&self, out: &Path, min_secs: f64) -> Option<String> {
        if self.largest.is_none() && self.unknown_budgeted > 0 {
            return Some(format!(
                "estimate: cannot know: {} phase runs under a memory budget and no earlier result under it in {} \
                 (a pace without the budget does not apply)",
                self.unknown_budgeted,
                out.display()
            ));
        }
        if self.secs < min_secs || self.largest.is_none() {
            return None;
        }
        let about = if self.unknown > 0 { "at least" } else { "about" };
        let mut line = format!("estimate: {about} {}", human(self.secs));
        if let Some((_, why)) = &self.largest {
            line.push_str(&format!(" (largest part: {why})"));
        }
        line.push_str(&format!("; basis: the newest earlier results in {} and the phases' durations", out.display()));
        if self.unknown > 0 {
            line.push_str(&format!("; {} phase runs without an earlier figure not counted", self.unknown));
        }
        if self.unknown_budgeted > 0 {
            line.push_str(&format!(
                " ({} of them under a memory budget, with no earlier result under it)",
                self.unknown_budgeted
            ));
        }
        Some(line)
    }

    /// Every phase's part (`load ~3 s, get ~10 s`), or None without a figure.
    pub fn by_phase(&self) -> Option<String> {
        self.largest.as_ref()?;
        let parts: Vec<String> = self.phases.iter().map(|(name, secs)| format!("{name} ~{}", human(*secs))).collect();
        Some(format!("estimate by phase (every row, warm-ups included): {}", parts.join(", ")))
    }
}

/// Whether a run of this estimate may start: below [`CONFIRM_S`], with `--yes`, or when the
/// person at the terminal says yes; a run without a terminal stops, naming `--yes`.
pub fn confirm(estimate: &Estimate, yes: bool) -> Result<(), String> {
    use std::io::IsTerminal;
    if yes || estimate.secs < CONFIRM_S || estimate.largest.is_none() {
        return Ok(());
    }
    let why = format!(
        "the run is estimated at about {} (over {}; see the estimate above)",
        human(estimate.secs),
        human(CONFIRM_S)
    );
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Err(format!("{why}: pass --yes to run it"));
    }
    crate::note!("{why}. Run it? [y/N]");
    let mut answer = String::new();
    let _read = std::io::stdin().read_line(&mut answer);
    match answer.trim() {
        "y" | "Y" | "yes" => Ok(()),
        _ => Err(format!("{why}: not confirmed (--yes skips the question)")),
    }
}

fn human(secs: f64) -> String {
    match secs {
        s if s < 1.0 => format!("{:.0} ms", s * 1e3),
        s if s < 120.0 => format!("{s:.0} s"),
        s if s < 7200.0 => format!("{:.0} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    }
}

/// The estimate of `scenario` from the results in `out`.
pub fn estimate(scenario: &Scenario, out: &Path) -> Estimate {
    let paces = paces(out);
    let mut e = Estimate::default();
    for v in scenario.all_variants() {
        let (before, unknown_before) = (e.secs, e.unknown);
        let sync = v.effective_sync(scenario);
        let sync = serde_json::to_value(sync).ok().and_then(|x| x.as_str().map(String::from)).unwrap_or_default();
        let budget = regime(v.budget(scenario), scenario.dataset.records);
        for p in &scenario.phases {
            let key = (v.name.clone(), p.kind.as_str().to_string(), sync.clone(), batch(p), budget.clone());
            let name = p.name.clone().unwrap_or_else(|| p.kind.as_str().to_string());
            for (secs, why) in phase_secs(scenario, p, paces.get(&key), &v.label()) {
                let secs = secs * f64::from(scenario.repetitions);
                e.secs += secs;
                match e.phases.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, total)) => *total += secs,
                    None => e.phases.push((name.clone(), secs)),
                }
                if e.largest.as_ref().is_none_or(|(l, _)| secs > *l) {
                    e.largest = Some((secs, why));
                }
            }
            let timed = p.kind.runs_ops() || p.kind == PhaseKind::Settle;
            let unknown = usize::from(timed && !known(p) && !paces.contains_key(&key));
            e.unknown += unknown;
            e.unknown_budgeted += if budget.is_empty() { 0 } else { unknown };
        }
        if e.unknown == unknown_before {
            e.rows.insert(v.label(), (e.secs - before) / f64::from(scenario.repetitions.max(1)));
        }
    }
    e
}

fn batch(phase: &PhaseDef) -> u32 {
    phase.batch.unwrap_or(phase.kind.default_batch())
}

fn known(phase: &PhaseDef) -> bool {
    phase.duration_ms().is_some()
}

/// The parts of one phase of one row: its warm-up and its timed step, in seconds with words.
fn phase_secs(scenario: &Scenario, phase: &PhaseDef, pace: Option<&Pace>, label: &str) -> Vec<(f64, String)> {
    let mut parts = Vec::new();
    let name = phase.name.clone().unwrap_or_else(|| phase.kind.as_str().to_string());
    match phase.warmup.as_ref().map(|w| (w, w.ms())) {
        Some((_, Some(ms))) => parts.push((ms as f64 / 1000.0, format!("{label}'s {name} warm-up"))),
        Some((Warmup::Ops(n), None)) if *n > 0 => {
            if let Some(pace) = pace {
                parts.push((*n as f64 * pace.secs, format!("{label}'s {name} warm-up")));
            }
        }
        _ => {}
    }
    if let Some(ms) = phase.duration_ms() {
        parts.push((ms as f64 / 1000.0, format!("{label}'s {name} for its duration")));
    } else if let (Some(pace), Some(units)) = (pace, units(scenario, phase)) {
        let why = format!(
            "{label}'s {} {name} at ~{} each, from {}",
            group(units),
            per_unit(pace.secs),
            pace.file.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
        );
        parts.push((units as f64 * pace.secs, why));
    }
    parts
}

/// A phase's units as the scenario gives them (requests for multi-get and scan).
pub fn units(scenario: &Scenario, phase: &PhaseDef) -> Option<u64> {
    let records = scenario.dataset.source.is_none().then_some(scenario.dataset.records)?;
    if let Some(n) = phase.share_of(records) {
        let per = if phase.kind == PhaseKind::MultiGet { u64::from(phase.keys.unwrap_or(100)).max(1) } else { 1 };
        return Some(n.div_ceil(per));
    }
    Some(match phase.kind {
        // A settle's pace is per phase.
        PhaseKind::Settle => 1,
        PhaseKind::Size | PhaseKind::Reopen => return None,
        PhaseKind::Load => records,
        PhaseKind::MultiGet => phase.count.unwrap_or(records.div_ceil(u64::from(phase.keys.unwrap_or(100)).max(1))),
        PhaseKind::Scan => phase.count.unwrap_or(1),
        _ => phase.count.unwrap_or(records * u64::from(phase.passes.unwrap_or(1))),
    })
}

/// `100000` as `100 000`.
fn group(count: u64) -> String {
    let s = count.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

fn per_unit(secs: f64) -> String {
    match secs {
        s if s >= 1.0 => format!("{s:.1} s"),
        s if s >= 1e-3 => format!("{:.1} ms", s * 1e3),
        s => format!("{:.1} µs", s * 1e6),
    }
}

/// The newest pace of every (engine, kind, sync, batch) in the newest result files of `out`.
fn paces(out: &Path) -> BTreeMap<Key, Pace> {
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(out)
        .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.is_symlink())
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    let mut paces = BTreeMap::new();
    for (_, file) in files.into_iter().take(FILES) {
        let limit = kvbench_model::input::limits::RESULT_BYTES;
        let Ok(text) = kvbench_model::input::read_regular_text(&file, "result file", limit) else { continue };
        let Ok(r) = RunResult::from_json(&text) else { continue };
        for (key, secs) in result_paces(&r) {
            paces.entry(key).or_insert(Pace { secs, file: file.clone() });
        }
    }
    paces
}

/// The seconds per unit of every finished phase of every row of `result`.
fn result_paces(result: &RunResult) -> Vec<(Key, f64)> {
    let mut v = Vec::new();
    for e in result.engines.iter().filter(|e| e.status == Status::Ok) {
        let budget = regime(e.budget.as_ref().map(|b| b.limit_bytes), result.plan.records);
        for p in e.phases.iter().filter(|p| p.status == Status::Ok) {
            // The scenario counts requests of multi-gets and scans, a settle as one, records
            // of the rest.
            let units = match p.kind.as_str() {
                "multi-get" | "scan" => p.requests,
                "settle" => 1,
                _ => p.ops,
            };
            let ns = if p.wall_ns > 0 { p.wall_ns } else { p.elapsed_ns };
            if units == 0 || ns == 0 || p.stopped_by.is_some() {
                continue;
            }
            let key = (e.engine.clone(), p.kind.clone(), e.sync.clone(), p.batch.max(1), budget.clone());
            v.push((key, ns as f64 / 1e9 / units as f64));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_run_is_announced_with_its_largest_part_and_basis() {
        let e = Estimate {
            secs: 360.0,
            largest: Some((300.0, "lmdb's 100 000 update at ~3.0 ms each".into())),
            unknown: 2,
            phases: vec![("load".into(), 60.0), ("update".into(), 300.0)],
            ..Default::default()
        };
        let line = e.line(Path::new("results"), ANNOUNCE_S).unwrap();
        assert!(line.starts_with("estimate: at least 6 min (largest part: lmdb's 100 000 update"), "{line}");
        assert!(
            line.contains("basis: the newest earlier results in results") && line.contains("2 phase runs"),
            "{line}"
        );
        assert_eq!(
            e.by_phase().unwrap(),
            "estimate by phase (every row, warm-ups included): load ~60 s, update ~5 min"
        );
        let short = Estimate { secs: 59.0, largest: Some((59.0, "x".into())), ..Default::default() };
        assert!(short.line(Path::new("r"), ANNOUNCE_S).is_none());
        assert!(short.line(Path::new("r"), 0.0).is_some());
    }

    #[test]
    fn a_run_over_the_confirm_limit_stops_without_yes_where_no_one_can_answer() {
        let long = Estimate { secs: CONFIRM_S + 1.0, largest: Some((1.0, "x".into())), ..Default::default() };
        // Tests run without a terminal on stdin.
        let e = confirm(&long, false).unwrap_err();
        assert!(e.contains("pass --yes") && e.contains("about 10 min"), "{e}");
        assert!(confirm(&long, true).is_ok());
        let short = Estimate { secs: CONFIRM_S - 1.0, ..long };
        assert!(confirm(&short, false).is_ok());
    }

    #[test]
    fn a_pace_is_kept_per_memory_regime_and_a_settle_counts_as_one() {
        use kvbench_model::result::{Budget, EngineResult, PhaseResult};
        let phase = |kind: &str, ops: u64, secs: u64| PhaseResult {
            name: kind.into(),
            kind: kind.into(),
            ops,
            wall_ns: secs * 1_000_000_000,
            batch: 1,
            ..Default::default()
        };
        let row = |budget: Option<u64>| EngineResult {
            engine: "leveldb".into(),
            sync: "none".into(),
            phases: vec![phase("load", 1000, 10), phase("settle", 0, 178)],
            budget: budget.map(|limit_bytes| Budget { limit_bytes, ..Default::default() }),
            ..Default::default()
        };
        let mut r = RunResult::default();
        r.plan.records = 1000;
        r.engines = vec![row(None), row(Some(512 << 20))];
        let paces = result_paces(&r);
        let key = |kind: &str, regime: &str| ("leveldb".to_string(), kind.to_string(), "none".into(), 1, regime.into());
        let budgeted = format!("{}/1000", 512u64 << 20);
        assert!(paces.contains(&(key("load", ""), 0.01)), "{paces:?}");
        assert!(paces.contains(&(key("load", &budgeted), 0.01)), "{paces:?}");
        assert!(paces.contains(&(key("settle", &budgeted), 178.0)), "{paces:?}");
    }

    #[test]
    fn a_budgeted_run_without_an_earlier_figure_under_its_budget_says_it_cannot_know() {
        let none = Estimate { unknown: 14, unknown_budgeted: 14, ..Default::default() };
        let line = none.line(Path::new("results"), ANNOUNCE_S).unwrap();
        assert!(line.starts_with("estimate: cannot know: 14 phase runs under a memory budget"), "{line}");
        let floor = Estimate {
            secs: 630.0,
            largest: Some((30.0, "x".into())),
            unknown: 14,
            unknown_budgeted: 14,
            ..Default::default()
        };
        let line = floor.line(Path::new("results"), ANNOUNCE_S).unwrap();
        assert!(
            line.starts_with("estimate: at least 10 min") && line.contains("14 of them under a memory budget"),
            "{line}"
        );
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(group(100000), "100 000");
        assert_eq!(group(999), "999");
        assert_eq!(per_unit(0.003), "3.0 ms");
        assert_eq!(human(7200.0), "2.0 h");
    }
}
