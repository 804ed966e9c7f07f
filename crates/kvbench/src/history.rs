//! The results store (`run --history PATH`, `kvbench history`, `kvbench dashboard`): every run
//! appended to one SQLite file with its manifest (what makes two runs comparable: machine,
//! kernel, file system, build, kvbench version, scenario, plan, each row's engine, version,
//! options and sync) and one line per row and phase (the medians over the repetitions). A
//! series is one row and phase of one scenario and plan on one machine, in time order.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kvbench_model::result::{PhaseResult, RunResult, Status};
use kvbench_report::median;
use kvbench_report::trend::{Point, Series};
use rusqlite::{params, Connection};

/// Where `kvbench history` and `kvbench dashboard` look: the store a bare `run --history`
/// makes in run's default `--output` directory.
pub const DEFAULT_PATH: &str = "results/history.sqlite";
/// The store's file name in a run's `--output` directory.
const FILE_NAME: &str = "history.sqlite";

/// The store `run --history [PATH]` appends to: PATH, or history.sqlite beside the run's
/// results (the --output directory), so that runs sent elsewhere keep their own history.
pub fn store_of_run(path: Option<&Path>, out: &Path) -> PathBuf {
    path.map(Path::to_path_buf).unwrap_or_else(|| out.join(FILE_NAME))
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, started_at INTEGER NOT NULL, scenario TEXT NOT NULL,
    machine TEXT NOT NULL, plan TEXT NOT NULL, kvbench_version TEXT NOT NULL,
    manifest TEXT NOT NULL, manifest_hash TEXT NOT NULL, file TEXT);
CREATE TABLE IF NOT EXISTS figures (
    run_id TEXT NOT NULL REFERENCES runs(run_id), label TEXT NOT NULL, phase TEXT NOT NULL,
    version TEXT NOT NULL, repetitions INTEGER NOT NULL, ops_per_sec REAL NOT NULL,
    p99_ns REAL, read_per_op REAL, write_per_op REAL, space_bytes INTEGER NOT NULL,
    regime TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, label, phase));";

pub struct History {
    db: Connection,
    path: PathBuf,
}

/// One stored run, for `kvbench history`.
pub struct RunRow {
    pub run_id: String,
    pub started_at: u64,
    pub scenario: String,
    pub machine: String,
    pub kvbench_version: String,
    pub rows: u64,
}

fn err(path: &Path) -> impl Fn(rusqlite::Error) -> String + '_ {
    move |e| format!("history {}: {e}", path.display())
}

impl History {
    /// Open (or create) the store at `path`; its directory is created if missing.
    pub fn open(path: &Path) -> Result<History, String> {
        // SQLite would block reading a FIFO's header, or write into a device: a regular file only.
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(format!("history {}: not a regular file", path.display()));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("--history {}: {e}", dir.display()))?;
        }
        let db = Connection::open(path).map_err(err(path))?;
        db.execute_batch(SCHEMA).map_err(err(path))?;
        add_regime_column(&db).map_err(err(path))?;
        Ok(History { db, path: path.to_path_buf() })
    }

    /// Append `run` (from `file`); a run already stored is left as it is. Returns the figures added.
    pub fn append(&mut self, run: &RunResult, file: Option<&Path>) -> Result<usize, String> {
        let path = self.path.clone();
        let tx = self.db.transaction().map_err(err(&path))?;
        let manifest = manifest(run);
        let text = manifest.to_string();
        let added = tx
            .execute(
                "INSERT OR IGNORE INTO runs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    run.run_id,
                    run.started_at as i64,
                    run.scenario,
                    machine(run),
                    run.plan.hash,
                    run.kvbench_version,
                    text,
                    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes())),
                    file.map(|f| f.display().to_string()),
                ],
            )
            .map_err(err(&path))?;
        let mut n = 0;
        if added == 1 {
            for f in figures(run) {
                tx.execute(
                    "INSERT INTO figures VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                    params![
                        run.run_id,
                        f.label,
                        f.phase,
                        f.point.version,
                        f.repetitions,
                        f.point.ops_per_sec,
                        f.point.p99_ns,
                        f.point.read_per_op,
                        f.point.write_per_op,
                        f.point.space_bytes as i64,
                        f.point.regime,
                    ],
                )
                .map_err(err(&path))?;
                n += 1;
            }
        }
        tx.commit().map_err(err(&path))?;
        Ok(n)
    }

    pub fn runs(&self) -> Result<Vec<RunRow>, String> {
        let mut q = self
            .db
            .prepare(
                "SELECT r.run_id, r.started_at, r.scenario, r.machine, r.kvbench_version, \
                 (SELECT COUNT(*) FROM figures f WHERE f.run_id = r.run_id) FROM runs r ORDER BY r.started_at, r.run_id",
            )
            .map_err(err(&self.path))?;
        let rows = q
            .query_map([], |row| {
                Ok(RunRow {
                    run_id: row.get(0)?,
                    started_at: row.get::<_, i64>(1)? as u64,
                    scenario: row.get(2)?,
                    machine: row.get(3)?,
                    kvbench_version: row.get(4)?,
                    rows: row.get::<_, i64>(5)? as u64,
                })
            })
            .map_err(err(&self.path))?;
        rows.collect::<Result<_, _>>().map_err(err(&self.path))
    }

    /// Every series (scenario, plan, machine, label, phase), optionally only `label` and `phase`;
    /// phases in the order the runs ran them (the first stored first), rows by label. Open and
    /// close steps stored by earlier versions are left out: they are not operation phases.
    pub fn series(&self, label: Option<&str>, phase: Option<&str>) -> Result<Vec<Series>, String> {
        let mut q = self
            .db
            .prepare(
                "SELECT r.scenario, r.plan, r.machine, f.label, f.phase, r.run_id, r.started_at, r.kvbench_version, \
                 f.version, f.ops_per_sec, f.p99_ns, f.read_per_op, f.write_per_op, f.space_bytes, f.regime, \
                 MIN(f.rowid) OVER (PARTITION BY r.scenario, r.plan, r.machine, f.phase) AS first \
                 FROM figures f JOIN runs r ON r.run_id = f.run_id \
                 WHERE (?1 IS NULL OR f.label = ?1) AND (?2 IS NULL OR f.phase = ?2) AND f.phase NOT IN ('open', 'close') \
                 ORDER BY r.scenario, r.plan, r.machine, first, f.label, r.started_at, r.run_id",
            )
            .map_err(err(&self.path))?;
        let rows = q
            .query_map(params![label, phase], |row| {
                let key: (String, String, String, String, String) =
                    (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?);
                let point = Point {
                    run_id: row.get(5)?,
                    started_at: row.get::<_, i64>(6)? as u64,
                    kvbench_version: row.get(7)?,
                    version: row.get(8)?,
                    ops_per_sec: row.get(9)?,
                    p99_ns: row.get(10)?,
                    read_per_op: row.get(11)?,
                    write_per_op: row.get(12)?,
                    space_bytes: row.get::<_, i64>(13)? as u64,
                    regime: row.get(14)?,
                };
                Ok((key, point))
            })
            .map_err(err(&self.path))?;
        let mut out: Vec<(String, Series)> = Vec::new();
        for row in rows {
            let ((scenario, plan, machine, label, phase), point) = row.map_err(err(&self.path))?;
            let key = format!("{scenario}\0{plan}\0{machine}\0{label}\0{phase}");
            match out.last_mut() {
                Some((k, s)) if *k == key => s.points.push(point),
                _ => out.push((key, Series { scenario, plan, machine, label, phase, points: vec![point] })),
            }
        }
        Ok(out.into_iter().map(|(_, s)| s).collect())
    }
}

/// Stores made before figures had a regime get the column (empty for their figures).
fn add_regime_column(db: &Connection) -> rusqlite::Result<()> {
    let has: bool =
        db.query_row("SELECT COUNT(*) FROM pragma_table_info('figures') WHERE name = 'regime'", [], |row| {
            row.get::<_, i64>(0).map(|n| n > 0)
        })?;
    if !has {
        db.execute_batch("ALTER TABLE figures ADD COLUMN regime TEXT NOT NULL DEFAULT ''")?;
    }
    Ok(())
}

/// The machine a run's figures belong to: host, CPU and cores.
fn machine(run: &RunResult) -> String {
    let e = &run.environment;
    format!("{} ({}, {} cores)", e.hostname, e.cpu_model, e.cores)
}

/// What makes two runs comparable, as JSON.
fn manifest(run: &RunResult) -> serde_json::Value {
    let e = &run.environment;
    let rows: serde_json::Map<String, serde_json::Value> = run
        .engines
        .iter()
        .filter(|x| x.repetition == 0)
        .map(|x| {
            let row =
                serde_json::json!({"engine": x.engine, "version": x.version, "options": x.options, "sync": x.sync});
            (x.label.clone(), row)
        })
        .collect();
    serde_json::json!({
        "machine": {"hostname": e.hostname, "cpu": e.cpu_model, "cores": e.cores, "memory_bytes": e.memory_bytes},
        "os": e.os, "kernel": e.kernel, "filesystem": e.filesystem, "build": e.build,
        "kvbench": run.kvbench_version, "scenario": run.scenario, "plan": run.plan.hash, "rows": rows,
    })
}

/// One row and phase of a run, collapsed over its repetitions.
struct Figure {
    label: String,
    phase: String,
    repetitions: u32,
    point: Point,
}

/// A phase of operations, timed as a rate: not the one-call open and close steps, nor the
/// untimed settle and size steps.
fn timed(kind: &str) -> bool {
    kvbench_model::spec::PhaseKind::named_runs_ops(kind) && !matches!(kind, "open" | "close")
}

fn figures(run: &RunResult) -> Vec<Figure> {
    let mut out: Vec<Figure> = Vec::new();
    let mut labels: Vec<&str> = run.engines.iter().map(|e| e.label.as_str()).collect();
    labels.sort_unstable();
    labels.dedup();
    for label in labels {
        let reps: Vec<_> = run.engines.iter().filter(|e| e.label == label && e.status == Status::Ok).collect();
        let Some(first) = reps.first() else { continue };
        for p in &first.phases {
            let same: Vec<&PhaseResult> = reps
                .iter()
                .filter_map(|e| e.phases.iter().find(|q| q.name == p.name && q.status == Status::Ok))
                .collect();
            if same.is_empty() || !timed(&p.kind) {
                continue;
            }
            let opt = |f: &dyn Fn(&PhaseResult) -> Option<f64>| {
                let v: Vec<f64> = same.iter().filter_map(|q| f(q)).collect();
                (!v.is_empty()).then(|| median(v))
            };
            let per_op = |b: fn(&kvbench_model::result::Disk) -> u64| {
                opt(&|q| q.disk.as_ref().map(|d| b(d) as f64 / q.ops.max(1) as f64))
            };
            out.push(Figure {
                label: label.to_string(),
                phase: p.name.clone(),
                repetitions: same.len() as u32,
                point: Point {
                    run_id: run.run_id.clone(),
                    started_at: run.started_at,
                    kvbench_version: run.kvbench_version.clone(),
                    version: first.version.clone(),
                    ops_per_sec: median(same.iter().map(|q| q.ops_per_sec).collect()),
                    p99_ns: opt(&|q| q.latency.as_ref().map(|l| l.p99_ns as f64)),
                    read_per_op: per_op(|d| d.read_bytes),
                    write_per_op: per_op(|d| d.write_bytes),
                    space_bytes: median(reps.iter().map(|e| e.space_bytes as f64).collect()) as u64,
                    regime: kvbench_report::row_regime(run, first),
                },
            });
        }
    }
    out
}

/// `kvbench history`: the stored runs, or with a label and/or phase each series with its steps.
#[derive(clap::Args)]
pub struct HistoryArgs {
    /// The results store (`run --history` without a path writes history.sqlite in its --output
    /// directory, results/ by default).
    #[arg(long, default_value = DEFAULT_PATH, value_name = "PATH")]
    db: PathBuf,
    /// Result files to add to the store first (a run already stored is skipped).
    #[arg(long, value_name = "FILE", num_args = 1..)]
    add: Vec<PathBuf>,
    /// Show the trend of this row label (every phase unless --phase).
    #[arg(long)]
    label: Option<String>,
    /// Show the trend of this phase (every row unless --label).
    #[arg(long)]
    phase: Option<String>,
    /// Smallest change of level called a step, in percent.
    #[arg(long, value_name = "PCT", default_value = "5", value_parser = kvbench_model::flags::parse::non_negative_f64)]
    min_effect: f64,
}

/// `kvbench dashboard`: the store as a static page.
#[derive(clap::Args)]
pub struct DashboardArgs {
    /// The results store (`run --history` without a path writes history.sqlite in its --output
    /// directory, results/ by default).
    #[arg(long, default_value = DEFAULT_PATH, value_name = "PATH")]
    db: PathBuf,
    /// Directory the page (index.html) is written into.
    #[arg(long, short, value_name = "DIR")]
    output: PathBuf,
    /// Smallest change of level called a step, in percent.
    #[arg(long, value_name = "PCT", default_value = "5", value_parser = kvbench_model::flags::parse::non_negative_f64)]
    min_effect: f64,
}

/// Append a finished run to `--history PATH`; says how many figures went in.
pub fn record(path: &Path, run: &RunResult, file: &Path) -> Result<(), String> {
    let n = History::open(path)?.append(run, Some(file))?;
    crate::note!("history: {n} figures of run {} added to {}", run.run_id, path.display());
    Ok(())
}

fn open_existing(db: &Path) -> Result<History, String> {
    if !db.is_file() {
        return Err(format!(
            "--db {}: no results store there (run with --history, or history --add FILE)",
            db.display()
        ));
    }
    History::open(db)
}

pub fn history_cmd(args: &HistoryArgs) -> Result<String, String> {
    let mut h = if args.add.is_empty() { open_existing(&args.db)? } else { History::open(&args.db)? };
    for f in &args.add {
        let r = crate::export::load_result(f)?;
        h.append(&r, Some(f))?;
    }
    if args.label.is_none() && args.phase.is_none() {
        return Ok(runs_table(&h.runs()?));
    }
    let mut out = String::new();
    for s in h.series(args.label.as_deref(), args.phase.as_deref())? {
        out.push_str(&trend_text(&s, args.min_effect / 100.0));
    }
    if out.is_empty() {
        return Err("no stored figures for that --label/--phase".into());
    }
    Ok(out)
}

/// The stored runs as columns padded to their widest cell (run ids and scenario names have no
/// fixed length); the machine, of any length, last.
fn runs_table(runs: &[RunRow]) -> String {
    let head = ["started (UTC)", "run", "scenario", "figures", "kvbench", "machine"].map(String::from);
    let mut lines = vec![head];
    for r in runs {
        lines.push([
            kvbench_report::trend::utc_time(r.started_at),
            r.run_id.clone(),
            r.scenario.clone(),
            r.rows.to_string(),
            r.kvbench_version.clone(),
            r.machine.clone(),
        ]);
    }
    let width = |c: usize| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0);
    let w: Vec<usize> = (0..5).map(width).collect();
    let mut out = String::new();
    for l in &lines {
        let _ = writeln!(
            out,
            "{:<w0$}  {:<w1$}  {:<w2$}  {:>w3$}  {:<w4$}  {}",
            l[0],
            l[1],
            l[2],
            l[3],
            l[4],
            l[5],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
            w4 = w[4]
        );
    }
    out
}

/// One series as lines: each run's figures, steps marked.
fn trend_text(series: &Series, min_effect: f64) -> String {
    let ops: Vec<f64> = series.points.iter().map(|p| p.ops_per_sec).collect();
    let steps = kvbench_report::trend::steps(&ops, min_effect);
    let mut out = format!("{}\n", series.title());
    for (i, p) in series.points.iter().enumerate() {
        let mark = steps
            .iter()
            .find(|st| st.at == i)
            .map(|st| format!("  <- step {:+.0}%", (st.ratio() - 1.0) * 100.0))
            .unwrap_or_default();
        let p99 = p.p99_ns.map(kvbench_report::human_ns).unwrap_or_else(|| "-".into());
        if i == 0 || series.points[i - 1].regime != p.regime {
            out.push_str(&format!("  regime: {}\n", if p.regime.is_empty() { "not recorded" } else { &p.regime }));
        }
        out.push_str(&format!(
            "  {:<28} {:>12} ops/s  p99 {:>9}  {}{mark}\n",
            p.run_id,
            kvbench_report::human_rate(p.ops_per_sec),
            p99,
            kvbench_report::short_version(&p.version)
        ));
    }
    if steps.is_empty() {
        out.push_str("  no step (a lasting change of level beyond the noise)\n");
    }
    out
}

pub fn dashboard_cmd(args: &DashboardArgs) -> Result<String, String> {
    let h = open_existing(&args.db)?;
    let series: Vec<_> = h
        .series(None, None)?
        .into_iter()
        .map(|s| {
            let ops: Vec<f64> = s.points.iter().map(|p| p.ops_per_sec).collect();
            let steps = kvbench_report::trend::steps(&ops, args.min_effect / 100.0);
            (s, steps)
        })
        .collect();
    std::fs::create_dir_all(&args.output).map_err(|e| format!("--output {}: {e}", args.output.display()))?;
    let page = args.output.join("index.html");
    let html = kvbench_report::dashboard(&series);
    std::fs::write(&page, &html).map_err(|e| format!("--output {}: {e}", page.display()))?;
    Ok(format!(
        "dashboard: {} series, {} charts ({}) in {}\n",
        series.len(),
        html.matches("<figure class=\"chart\"").count(),
        kvbench_report::human_bytes(html.len() as u64),
        page.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvbench_model::result::{EngineResult, Latency};

    /// A run at `t` with row `lmdb` (version `v`) whose get phase ran at `ops` ops/s in each
    /// repetition.
    fn run(t: u64, v: &str, ops: &[f64]) -> RunResult {
        let mut r = RunResult { run_id: format!("run-{t}"), started_at: t, scenario: "s".into(), ..Default::default() };
        r.environment.hostname = "h".into();
        r.plan.hash = "p".into();
        for (rep, &o) in ops.iter().enumerate() {
            let get = PhaseResult {
                name: "get".into(),
                kind: "get".into(),
                ops: 1000,
                ops_per_sec: o,
                latency: Some(Latency { p99_ns: 2000, ..Default::default() }),
                ..Default::default()
            };
            r.engines.push(EngineResult {
                label: "lmdb".into(),
                version: v.into(),
                repetition: rep as u32,
                phases: vec![get],
                space_bytes: 4096,
                ..Default::default()
            });
        }
        r
    }

    #[test]
    fn a_run_appended_twice_is_stored_once() {
        let d = tempfile::tempdir().unwrap();
        let mut h = History::open(&d.path().join("h.sqlite")).unwrap();
        assert_eq!(h.append(&run(1, "1.0", &[10.0, 12.0, 11.0]), None).unwrap(), 1);
        assert_eq!(h.append(&run(1, "1.0", &[10.0, 12.0, 11.0]), None).unwrap(), 0);
        let runs = h.runs().unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].rows, 1);
        let s = h.series(Some("lmdb"), Some("get")).unwrap();
        assert_eq!(s[0].points[0].ops_per_sec, 11.0, "the median of the repetitions");
    }

    #[test]
    fn a_synthetic_history_shows_its_step_at_the_new_version() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("h.sqlite");
        let mut h = History::open(&db).unwrap();
        // Stored out of order: the series follows the start times.
        for t in (0..16u64).rev() {
            let (v, level) = if t < 8 { ("1.0", 100.0) } else { ("2.0", 70.0) };
            let wobble = 1.0 + 0.02 * ((t % 3) as f64 - 1.0);
            h.append(&run(1000 + t, v, &[level * wobble]), None).unwrap();
        }
        let s = &h.series(None, None).unwrap()[0];
        assert!(s.points.windows(2).all(|w| w[0].started_at < w[1].started_at));
        let a = HistoryArgs { db, add: vec![], label: Some("lmdb".into()), phase: None, min_effect: 5.0 };
        let text = history_cmd(&a).unwrap();
        let marked: Vec<&str> = text.lines().filter(|l| l.contains("<- step")).collect();
        assert_eq!(marked.len(), 1, "{text}");
        assert!(marked[0].contains("run-1008") && marked[0].contains("-30%"), "{text}");
    }

    #[test]
    fn regression_41_the_run_list_keeps_its_columns_aligned_with_real_timestamps() {
        let row = |id: &str, t: u64, scenario: &str| RunRow {
            run_id: id.into(),
            started_at: t,
            scenario: scenario.into(),
            machine: "h (cpu, 2 cores)".into(),
            kvbench_version: "0.1.0".into(),
            rows: 37,
        };
        let runs = [
            row("20260314-092653-81234-1a2b3c4d-default_comparison", 1_773_480_413, "default comparison"),
            row("r", 0, "s"),
        ];
        let text = runs_table(&runs);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[1].starts_with("2026-03-14 09:26:53  20260314-092653"), "{text}");
        assert!(lines[2].starts_with("1970-01-01 00:00:00  r "), "{text}");
        // Each column starts where its heading does, on every line.
        for (heading, cells) in [("run", ["20260314", "r "]), ("scenario", ["default comparison", "s "])] {
            let at = lines[0].find(heading).unwrap();
            for (line, cell) in lines[1..].iter().zip(cells) {
                assert_eq!(line.find(cell), Some(at), "{heading} column:\n{text}");
            }
        }
        let figures_end = lines[0].find("figures").unwrap() + "figures".len();
        assert!(lines[1..].iter().all(|l| &l[figures_end - 2..figures_end] == "37"), "{text}");
    }

    #[test]
    fn regression_41_a_bare_history_follows_the_output_directory() {
        let out = Path::new("elsewhere/out");
        assert_eq!(store_of_run(None, out), out.join("history.sqlite"));
        assert_eq!(store_of_run(Some(Path::new("h.sqlite")), out), Path::new("h.sqlite"));
        // The default store of `history` and `dashboard` is the one a bare --history makes with
        // run's default --output.
        assert_eq!(store_of_run(None, Path::new("results")), Path::new(DEFAULT_PATH));
    }

    #[test]
    fn regression_a_fifo_as_the_store_is_refused_not_waited_on() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path and nothing else.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = History::open(&fifo).err().expect("refused");
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn each_figure_keeps_its_rows_regime() {
        let d = tempfile::tempdir().unwrap();
        let mut h = History::open(&d.path().join("h.sqlite")).unwrap();
        let mut fits = run(1, "1.0", &[10.0]);
        fits.plan.raw_bytes = 1 << 20;
        fits.environment.memory_bytes = 1 << 30;
        let mut over = run(2, "1.0", &[5.0]);
        over.plan.raw_bytes = 1 << 30;
        over.engines[0].budget = Some(kvbench_model::result::Budget { limit_bytes: 256 << 20, ..Default::default() });
        h.append(&fits, None).unwrap();
        h.append(&over, None).unwrap();
        let s = &h.series(None, None).unwrap()[0];
        assert!(s.points[0].regime.contains("fits in memory"), "{}", s.points[0].regime);
        assert!(s.points[1].regime.contains("the data is 4.00x the budget"), "{}", s.points[1].regime);
    }

    #[test]
    fn regression_a_store_made_before_regimes_gains_the_column() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("old.sqlite");
        let old = SCHEMA.replace("    regime TEXT NOT NULL DEFAULT '',\n", "");
        assert_ne!(old, SCHEMA);
        Connection::open(&db).unwrap().execute_batch(&old).unwrap();
        let mut h = History::open(&db).unwrap();
        h.append(&run(1, "1.0", &[10.0]), None).unwrap();
        assert_eq!(h.series(None, None).unwrap()[0].points.len(), 1);
    }

    #[test]
    fn series_of_other_machines_stay_apart() {
        let d = tempfile::tempdir().unwrap();
        let mut h = History::open(&d.path().join("h.sqlite")).unwrap();
        h.append(&run(1, "1.0", &[10.0]), None).unwrap();
        let mut other = run(2, "1.0", &[20.0]);
        other.environment.hostname = "elsewhere".into();
        h.append(&other, None).unwrap();
        assert_eq!(h.series(None, None).unwrap().len(), 2);
    }

    #[test]
    fn the_dashboard_marks_steps_and_version_changes() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("h.sqlite");
        let mut h = History::open(&db).unwrap();
        for t in 0..12u64 {
            let (v, level) = if t < 6 { ("1.0", 100.0) } else { ("2.0", 130.0) };
            h.append(&run(t, v, &[level]), None).unwrap();
        }
        let out = d.path().join("site");
        dashboard_cmd(&DashboardArgs { db, output: out.clone(), min_effect: 5.0 }).unwrap();
        let page = std::fs::read_to_string(out.join("index.html")).unwrap();
        assert!(page.contains("class=\"mark step\""), "a step ring");
        assert!(page.contains("class=\"mark change\""), "a version ring");
        assert!(page.contains("version 1.0 → 2.0") && page.contains("step: ops/s 100 → 130 (+30%)"), "listed");
        assert!(page.contains("data-chart=\"get-throughput\"") && page.contains("data-chart=\"get-p99\""));
        assert!(!page.contains("data-chart=\"get-read\""), "no chart for what no run measured");
    }

    /// A run at hour `t` of `rows` rows (two variants of twenty engine names) through an open
    /// step, a load, a settle step, four operation phases and a close step. Row 1 loses a
    /// quarter of its throughput from run 6 on, with a new version.
    fn many_rows_run(t: u64, rows: usize) -> RunResult {
        const NAMES: [&str; 20] = [
            "lmdb",
            "rocksdb",
            "speedb",
            "leveldb",
            "tokyocabinet-hash",
            "kyotocabinet",
            "qdbm",
            "tinycdb",
            "gdbm",
            "berkeleydb",
            "sqlite",
            "bbolt",
            "pebble",
            "goleveldb",
            "pogreb",
            "badger",
            "memcached",
            "redis",
            "postgres",
            "py-rocksdict",
        ];
        let mut r = RunResult {
            run_id: format!("20260301-{t:02}0000-4242-0000abcd-default"),
            started_at: 1_772_323_200 + t * 3600,
            scenario: "default".into(),
            kvbench_version: "0.1.0".into(),
            ..Default::default()
        };
        r.environment.hostname = "bench-1".into();
        r.environment.cpu_model = "Xeon".into();
        r.environment.cores = 2;
        r.environment.memory_bytes = 8 << 30;
        r.plan.hash = "0123456789abcdef".into();
        r.plan.raw_bytes = 600 << 20;
        let kinds = [
            ("open", "open"),
            ("load", "load"),
            ("settle", "settle"),
            ("get", "get"),
            ("multi-get", "multi-get"),
            ("scan", "scan"),
            ("update", "update"),
            ("close", "close"),
        ];
        for i in 0..rows {
            let label = format!("{}{}", NAMES[i % 20], if i < 20 { "" } else { " sync=always" });
            let slow = if i == 1 && t >= 6 { 0.75 } else { 1.0 };
            let wobble = 1.0 + 0.02 * ((t * 7 + i as u64) % 5) as f64 / 4.0;
            let base = 3e6 / 1.2f64.powi(i as i32) * slow * wobble;
            let phases = kinds
                .iter()
                .enumerate()
                .map(|(k, (name, kind))| {
                    let ops_per_sec = base / (k as f64 + 1.0);
                    PhaseResult {
                        name: name.to_string(),
                        kind: kind.to_string(),
                        ops: 10_000,
                        ops_per_sec,
                        latency: Some(Latency { p99_ns: (2e9 / ops_per_sec) as u64, ..Default::default() }),
                        disk: Some(kvbench_model::result::Disk {
                            read_bytes: 40_960 * (i as u64 % 4),
                            write_bytes: 1_000_000 * (k as u64 % 3) + 7 * i as u64,
                            ..Default::default()
                        }),
                        ..Default::default()
                    }
                })
                .collect();
            let version = if i == 1 && t >= 6 { "9.0" } else { "8.0" };
            let space_bytes = (20 << 20) + (i as u64) * (3 << 20) + t * 4096;
            r.engines.push(EngineResult { label, version: version.into(), phases, space_bytes, ..Default::default() });
        }
        r
    }

    #[test]
    fn regression_41_open_close_and_settle_steps_are_not_stored_as_figures() {
        let d = tempfile::tempdir().unwrap();
        let mut h = History::open(&d.path().join("h.sqlite")).unwrap();
        assert_eq!(h.append(&many_rows_run(0, 2), None).unwrap(), 2 * 5, "two rows, five operation phases");
        let phases: Vec<String> = h.series(Some("lmdb"), None).unwrap().into_iter().map(|s| s.phase).collect();
        assert_eq!(phases, ["load", "get", "multi-get", "scan", "update"], "in the order the run ran them");
    }

    /// The engine lines of a chart the filter leaves shown.
    fn lines_shown(chart: &str) -> usize {
        chart
            .split("<g class=\"")
            .skip(1)
            .filter_map(|t| t.split('"').next())
            .filter(|c| c.starts_with("s ") && !c.contains("off"))
            .count()
    }

    /// The dashboard at 40 rows x 10 runs in headless Chromium: an index linking every phase
    /// and engine, one chart per phase and metric, a filter that works, a bounded page, and a
    /// screenshot for a person to look at.
    #[test]
    fn regression_41_the_dashboard_of_40_rows_and_10_runs_is_navigable_in_chromium() {
        use kvbench_report::browser;
        let dir = browser::screenshot_dir();
        let db = dir.join("history-40x10.sqlite");
        let _ = std::fs::remove_file(&db);
        let mut h = History::open(&db).unwrap();
        for t in 0..10 {
            h.append(&many_rows_run(t, 40), None).unwrap();
        }
        let site = dir.join("dashboard");
        let said = dashboard_cmd(&DashboardArgs { db, output: site.clone(), min_effect: 5.0 }).unwrap();
        let page = site.join("index.html");
        let html = std::fs::read_to_string(&page).unwrap();
        // About 9 KiB per engine and phase at ten runs (four lines, a legend entry, a table cell).
        assert!(html.len() < 450_000, "{} bytes: {said}", html.len());
        let index = &html[html.find("<nav class=\"index\"").unwrap()..html.find("</nav>").unwrap()];
        assert_eq!(index.matches("<a data-engine=").count(), 40, "the index links every engine");
        for phase in ["load", "get", "multi-get", "scan", "update"] {
            assert!(index.contains(&format!("\">{phase}</a>")), "the index links phase {phase}");
        }
        assert!(!index.contains(">open</a>") && !index.contains(">settle</a>"), "only operation phases");
        let charts = html.matches("<figure class=\"chart\"").count();
        assert_eq!(charts, 5 * 4 + 1, "a chart per phase and metric, and the space");
        let get = &html[html.find("data-chart=\"get-throughput\"").unwrap()..];
        let get = &get[..get.find("</figure>").unwrap()];
        assert_eq!(lines_shown(get), 40, "one line per engine");
        assert!(get.contains("(log scale)"), "2k to 3M ops/s on a log axis");
        let ticks: Vec<&str> = get.split("class=\"tick\"").skip(1).filter_map(|t| t.split(['>', '<']).nth(1)).collect();
        let distinct: std::collections::HashSet<&&str> = ticks.iter().collect();
        assert_eq!(distinct.len(), ticks.len(), "no two ticks alike: {ticks:?}");
        assert!(html.contains("step: ops/s") && html.contains("version 8.0 → 9.0"), "rocksdb's drop is listed");

        // In Chromium, the filter given by a link: substrings or exact names, either matching.
        let Some(bin) = browser::browser("dashboard") else { return };
        let url = format!("file://{}", page.display());
        let (dom, err) = browser::run_url(&bin, &["--dump-dom".into()], &format!("{url}#filter=rocks,=redis"));
        assert!(browser::console_lines(&err).is_empty(), "console messages: {:?}", browser::console_lines(&err));
        let get = &dom[dom.find("data-chart=\"get-throughput\"").unwrap()..];
        let get = &get[..get.find("</figure>").unwrap()];
        assert_eq!(lines_shown(get), 5, "rocksdb and py-rocksdict in two variants, and redis alone");
        assert!(dom.contains("5 engines shown"));

        let shot = dir.join("dashboard.png");
        let size = browser::screenshot(&bin, &url, &shot, 1300, 2400);
        assert!(size > 50_000, "screenshot {} written ({size} bytes)", shot.display());
        eprintln!("dashboard screenshot: {} (page {} bytes)", shot.display(), html.len());
    }
}
