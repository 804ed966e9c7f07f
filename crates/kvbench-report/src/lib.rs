//! Reports derived from a result file. Every format renders the same [`Section`] model, so
//! the terminal table, Markdown and HTML always agree; CSV and JSON are flat and canonical.

use kvbench_core::result::{EngineResult, PhaseResult, RunResult, Status};

mod html;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
    Html,
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
            other => return Err(format!("unknown format `{other}` (table, markdown, csv, json, html)")),
        })
    }
}

pub fn render(r: &RunResult, format: Format) -> String {
    match format {
        Format::Table => table(r),
        Format::Markdown => markdown(r),
        Format::Csv => csv(r),
        Format::Json => serde_json::to_string_pretty(r).expect("result serialises") + "\n",
        Format::Html => html::page(r, &sections(r)),
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
    if r >= 1e6 {
        format!("{:.2}M", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1}k", r / 1e3)
    } else {
        format!("{r:.1}")
    }
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
    }
}

/// Index of the best value in `vals` (None entries ignored); `higher` says which way is better.
fn best_of(vals: &[Option<f64>], higher: bool) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, v) in vals.iter().enumerate() {
        if let Some(v) = *v {
            let better = match best {
                None => true,
                Some((_, b)) => (higher && v > b) || (!higher && v < b),
            };
            if better {
                best = Some((i, v));
            }
        }
    }
    if vals.iter().filter(|v| v.is_some()).count() < 2 {
        return None;
    }
    best.map(|b| b.0)
}

/// Names of the timed phases, in run order, over all engines.
fn phase_names(r: &RunResult) -> Vec<(String, String)> {
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

/// Spread of ops/s over repetitions, per (label, phase): (repetitions, (max-min)/median).
type Spreads = std::collections::BTreeMap<(String, String), (usize, f64)>;

/// Above this relative spread between repetitions a figure is flagged.
pub const WIDE_SPREAD: f64 = 0.10;

fn median(mut v: Vec<f64>) -> f64 {
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
/// whose phase succeeded, and the ops/s spread is kept to be shown.
pub fn collapse(r: &RunResult) -> (RunResult, Spreads) {
    let mut labels: Vec<String> = Vec::new();
    for e in &r.engines {
        if !labels.contains(&e.label) {
            labels.push(e.label.clone());
        }
    }
    let mut spreads = Spreads::new();
    let mut out = r.clone();
    out.engines.clear();
    for label in labels {
        let reps: Vec<&EngineResult> = r.engines.iter().filter(|e| e.label == label).collect();
        let mut row = reps.iter().find(|e| e.status == Status::Ok).copied().unwrap_or(reps[0]).clone();
        if reps.len() > 1 {
            if let Some(bad) = reps.iter().find(|e| e.status != Status::Ok) {
                row.status = bad.status;
                row.error = bad.error.clone().map(|e| format!("repetition {}: {e}", bad.repetition));
            }
            row.space_bytes = median(reps.iter().map(|e| e.space_bytes as f64).collect()) as u64;
            row.space_amplification = median(reps.iter().map(|e| e.space_amplification).collect());
            for p in row.phases.iter_mut() {
                let same: Vec<&PhaseResult> = reps
                    .iter()
                    .filter_map(|e| e.phases.iter().find(|q| q.name == p.name && q.status == Status::Ok))
                    .collect();
                if same.len() < 2 {
                    continue;
                }
                let m = |f: &dyn Fn(&PhaseResult) -> f64| median(same.iter().map(|q| f(q)).collect());
                let rates: Vec<f64> = same.iter().map(|q| q.ops_per_sec).collect();
                let (lo, hi) = rates.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
                p.ops_per_sec = m(&|q| q.ops_per_sec);
                p.elapsed_ns = m(&|q| q.elapsed_ns as f64) as u64;
                if let Some(l) = p.latency.as_mut() {
                    let lat = |f: &dyn Fn(&kvbench_core::result::Latency) -> u64| {
                        median(same.iter().filter_map(|q| q.latency.as_ref().map(|l| f(l) as f64)).collect()) as u64
                    };
                    l.p50_ns = lat(&|l| l.p50_ns);
                    l.p99_ns = lat(&|l| l.p99_ns);
                    l.p999_ns = lat(&|l| l.p999_ns);
                    l.max_ns = lat(&|l| l.max_ns);
                }
                spreads.insert((label.clone(), p.name.clone()), (same.len(), (hi - lo) / p.ops_per_sec.max(1e-9)));
            }
        }
        out.engines.push(row);
    }
    (out, spreads)
}

pub fn sections(r: &RunResult) -> Vec<Section> {
    let (r, spreads) = collapse(r);
    let r = &r;
    let mut out = Vec::new();
    let load_name = phase_names(r).into_iter().find(|(_, k)| k == "load").map(|(n, _)| n);

    // Summary: one row per engine.
    let headers =
        ["engine", "version", "status", "sync", "open", "load time", "load rate", "space", "space amp", "close"];
    let mut rows = Vec::new();
    let (mut load_t, mut space) = (Vec::new(), Vec::new());
    for e in &r.engines {
        let lp = load_name.as_deref().and_then(|n| phase(e, n)).filter(|p| p.status == Status::Ok);
        let open = phase(e, "open").map(|p| human_ns(p.elapsed_ns as f64)).unwrap_or_else(|| "-".into());
        let close = phase(e, "close").map(|p| human_ns(p.elapsed_ns as f64)).unwrap_or_else(|| "-".into());
        let status = match (&e.status, &e.error) {
            (Status::Ok, _) => "ok".to_string(),
            (_, Some(err)) => format!("FAILED: {}", first_line(err)),
            _ => "FAILED".into(),
        };
        load_t.push(lp.map(|p| p.elapsed_ns as f64));
        let ok = e.status == Status::Ok && e.space_bytes > 0;
        space.push(ok.then_some(e.space_bytes as f64));
        rows.push(vec![
            e.label.clone(),
            e.version.clone(),
            status,
            e.sync.clone(),
            open,
            lp.map(|p| human_ns(p.elapsed_ns as f64)).unwrap_or_else(|| "-".into()),
            lp.map(|p| format!("{}/s", human_rate(p.ops_per_sec))).unwrap_or_else(|| "-".into()),
            if ok { human_bytes(e.space_bytes) } else { "-".into() },
            if ok { format!("{:.2}x", e.space_amplification) } else { "-".into() },
            close,
        ]);
    }
    let mut best = vec![None; headers.len()];
    best[5] = best_of(&load_t, false);
    best[7] = best_of(&space, false);
    out.push(Section {
        title: "Summary".into(),
        note: format!(
            "{} records, {} of keys+values; space is allocated blocks after close; sync = {}",
            r.plan.unique_records,
            human_bytes(r.plan.raw_bytes),
            r.sync
        ),
        headers: headers.iter().map(|s| s.to_string()).collect(),
        rows,
        best,
    });

    // Ratios the scenario asks for (`[[ratio]]`), e.g. COPY over INSERT rows/s.
    if let Some(defs) = r.workload.get("ratio").and_then(|v| v.as_array()).filter(|a| !a.is_empty()) {
        let mut rows = Vec::new();
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
            rows.push(vec![ph.clone(), num.clone(), den.clone(), cell]);
        }
        out.push(Section {
            title: "Ratios".into(),
            note: "ops/s of one row over another in the same phase, as the scenario asks".into(),
            headers: ["phase", "numerator", "denominator", "ratio"].iter().map(|s| s.to_string()).collect(),
            rows,
            best: vec![None; 4],
        });
    }

    // The articles' own view: wall time of each phase side by side (open and close included).
    let mut names: Vec<String> = vec!["open".into()];
    names.extend(phase_names(r).into_iter().map(|(n, _)| n));
    names.push("close".into());
    let mut headers = vec!["engine".to_string()];
    headers.extend(names.iter().cloned());
    let mut rows = Vec::new();
    let mut cols: Vec<Vec<Option<f64>>> = vec![Vec::new(); names.len()];
    for e in &r.engines {
        let mut row = vec![e.label.clone()];
        for (c, n) in names.iter().enumerate() {
            let p = phase(e, n);
            cols[c].push(p.filter(|p| p.status == Status::Ok).map(|p| p.elapsed_ns as f64));
            row.push(match p {
                Some(p) => status_cell(p).unwrap_or_else(|| human_ns(p.elapsed_ns as f64)),
                None => "-".into(),
            });
        }
        rows.push(row);
    }
    let mut best = vec![None];
    best.extend(cols.iter().map(|c| best_of(c, false)));
    out.push(Section {
        title: "Phase times".into(),
        note: "time of each phase inside the engine calls (the figure the articles report); the tables below give rates and latency percentiles".into(),
        headers,
        rows,
        best,
    });

    for (name, kind) in phase_names(r) {
        let headers = ["engine", "ops/s", "p50", "p99", "p99.9", "max", "ops", "checked", "cpu", "threads"];
        let mut rows = Vec::new();
        let (mut rate, mut p50, mut p99, mut p999, mut max) = (vec![], vec![], vec![], vec![], vec![]);
        let mut unit = String::new();
        // Notes differ per engine (an emulated multi-get, say): each names its engines unless
        // all of them share it.
        let mut notes: Vec<(String, Vec<String>)> = Vec::new();
        for e in &r.engines {
            let Some(p) = phase(e, &name) else {
                for v in [&mut rate, &mut p50, &mut p99, &mut p999, &mut max] {
                    v.push(None);
                }
                let why = e.error.as_deref().map(first_line).unwrap_or("not run");
                rows.push(vec![
                    e.label.clone(),
                    format!("- ({why})"),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                ]);
                continue;
            };
            unit = p.unit.clone();
            for n in p.notes.iter().filter(|n| !n.starts_with("reopened")) {
                match notes.iter_mut().find(|(t, _)| t == n) {
                    Some((_, who)) => who.push(e.label.clone()),
                    None => notes.push((n.clone(), vec![e.label.clone()])),
                }
            }
            if let Some(s) = status_cell(p) {
                for v in [&mut rate, &mut p50, &mut p99, &mut p999, &mut max] {
                    v.push(None);
                }
                let why = p.reason.as_deref().map(first_line).unwrap_or("");
                rows.push(vec![
                    e.label.clone(),
                    format!("{s}: {why}"),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    p.ops.to_string(),
                    "".into(),
                    "".into(),
                    "".into(),
                ]);
                continue;
            }
            let l = p.latency.clone().unwrap_or_default();
            rate.push(Some(p.ops_per_sec));
            p50.push(Some(l.p50_ns as f64));
            p99.push(Some(l.p99_ns as f64));
            p999.push(Some(l.p999_ns as f64));
            max.push(Some(l.max_ns as f64));
            let checked = if p.mismatches + p.missing == 0 {
                "ok".to_string()
            } else {
                format!("{} bad", p.mismatches + p.missing)
            };
            let rate_cell = match spreads.get(&(e.label.clone(), name.clone())) {
                Some((n, sp)) => format!(
                    "{} ±{:.0}%{} (n={n})",
                    human_rate(p.ops_per_sec),
                    sp * 50.0,
                    if *sp > WIDE_SPREAD { " !" } else { "" }
                ),
                None => human_rate(p.ops_per_sec),
            };
            rows.push(vec![
                e.label.clone(),
                rate_cell,
                human_ns(l.p50_ns as f64),
                human_ns(l.p99_ns as f64),
                human_ns(l.p999_ns as f64),
                human_ns(l.max_ns as f64),
                p.ops.to_string(),
                checked,
                human_ns((p.cpu_user_ns + p.cpu_sys_ns) as f64),
                p.threads.to_string(),
            ]);
            // Mixed phases: one sub-row per operation kind (not ranked).
            for (op, l) in &p.latency_by_op {
                for v in [&mut rate, &mut p50, &mut p99, &mut p999, &mut max] {
                    v.push(None);
                }
                let n = kvbench_core::worker::clock::decode_histogram(&l.hdr)
                    .map(|h| h.len().to_string())
                    .unwrap_or_default();
                rows.push(vec![
                    format!("  {op}"),
                    String::new(),
                    human_ns(l.p50_ns as f64),
                    human_ns(l.p99_ns as f64),
                    human_ns(l.p999_ns as f64),
                    human_ns(l.max_ns as f64),
                    n,
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
            }
        }
        let best = vec![
            None,
            best_of(&rate, true),
            best_of(&p50, false),
            best_of(&p99, false),
            best_of(&p999, false),
            best_of(&max, false),
            None,
            None,
            None,
            None,
        ];
        let mut note = format!("{kind}; latency per {}", if unit.is_empty() { "op" } else { &unit });
        if spreads.keys().any(|(_, p)| p == &name) {
            note.push_str(&format!(
                "; median of repetitions, ± half the min-max range, ! = range over {:.0}% of the median",
                WIDE_SPREAD * 100.0
            ));
        }
        for (n, who) in notes {
            note.push_str("; ");
            note.push_str(&n);
            if who.len() < r.engines.len() {
                note.push_str(&format!(" ({})", who.join(", ")));
            }
        }
        out.push(Section {
            title: format!("Phase {name}"),
            note,
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows,
            best,
        });
    }
    out
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn preamble(r: &RunResult) -> Vec<String> {
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
    for w in &r.warnings {
        lines.push(format!("WARNING: {w}"));
    }
    lines
}

fn mark(cell: &str, best: bool) -> String {
    if best {
        format!("{cell} *")
    } else {
        cell.to_string()
    }
}

pub fn table(r: &RunResult) -> String {
    text_table(&preamble(r), &sections(r))
}

/// Sections as terminal tables under a preamble (shared by `table` and `compare`).
pub fn text_table(preamble: &[String], sections: &[Section]) -> String {
    use comfy_table::presets::UTF8_FULL_CONDENSED;
    let mut out = preamble.join("\n");
    out.push('\n');
    for s in sections {
        let mut t = comfy_table::Table::new();
        t.load_preset(UTF8_FULL_CONDENSED);
        t.set_header(&s.headers);
        for (i, row) in s.rows.iter().enumerate() {
            t.add_row(
                row.iter()
                    .enumerate()
                    .map(|(c, cell)| mark(cell, s.best.get(c).copied().flatten() == Some(i)))
                    .collect::<Vec<_>>(),
            );
        }
        out.push_str(&format!("\n{} ({})\n{t}\n", s.title, s.note));
    }
    out.push_str("\n* best in column\n");
    out
}

pub fn markdown(r: &RunResult) -> String {
    markdown_of(&preamble(r), &sections(r))
}

/// Sections as Markdown under a preamble (shared by `markdown` and `compare`).
pub fn markdown_of(preamble: &[String], sections: &[Section]) -> String {
    let mut out = String::new();
    for (i, l) in preamble.iter().enumerate() {
        if i == 0 {
            out.push_str(&format!("# {l}\n\n"));
        } else {
            out.push_str(&format!("{l}  \n"));
        }
    }
    for s in sections {
        out.push_str(&format!("\n## {}\n\n{}\n\n", s.title, s.note));
        out.push_str(&format!("| {} |\n", s.headers.join(" | ")));
        out.push_str(&format!("|{}\n", s.headers.iter().map(|_| "---|").collect::<String>()));
        for (i, row) in s.rows.iter().enumerate() {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(c, cell)| {
                    let cell = cell.replace('|', "\\|");
                    if s.best.get(c).copied().flatten() == Some(i) {
                        format!("**{cell}**")
                    } else {
                        cell
                    }
                })
                .collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
    }
    out.push_str("\nBold: best in column.\n");
    out
}

/// Two runs side by side: for every row label and phase present in both, ops/s and p99 of
/// each and the ratio B/A. Repetitions are collapsed to their medians first.
pub fn compare(a: &RunResult, b: &RunResult) -> (Vec<String>, Vec<Section>) {
    let (a, _) = collapse(a);
    let (b, _) = collapse(b);
    let preamble = vec![
        format!("kvbench compare — A: {} ({}) — B: {} ({})", a.run_id, a.scenario, b.run_id, b.scenario),
        format!(
            "A: {} cores, {}; B: {} cores, {}",
            a.environment.cores, a.environment.cpu_model, b.environment.cores, b.environment.cpu_model
        ),
    ];
    let mut warn = Vec::new();
    if a.plan.hash != b.plan.hash {
        warn.push("the runs used different plans (data or operations differ): compare with care".to_string());
    }
    let mut sections = Vec::new();
    for (name, kind) in phase_names(&a) {
        let mut rows = Vec::new();
        for ea in &a.engines {
            let Some(eb) = b.engines.iter().find(|e| e.label == ea.label) else { continue };
            let (Some(pa), Some(pb)) = (phase(ea, &name), phase(eb, &name)) else { continue };
            let ok = |p: &PhaseResult| p.status == Status::Ok;
            let rate =
                |p: &PhaseResult| if ok(p) { human_rate(p.ops_per_sec) } else { status_cell(p).unwrap_or_default() };
            let p99 = |p: &PhaseResult| {
                p.latency.as_ref().filter(|_| ok(p)).map(|l| human_ns(l.p99_ns as f64)).unwrap_or_default()
            };
            let ratio = if ok(pa) && ok(pb) && pa.ops_per_sec > 0.0 {
                format!("{:.2}x", pb.ops_per_sec / pa.ops_per_sec)
            } else {
                "-".into()
            };
            rows.push(vec![ea.label.clone(), rate(pa), rate(pb), ratio, p99(pa), p99(pb)]);
        }
        if rows.is_empty() {
            continue;
        }
        sections.push(Section {
            title: format!("Phase {name}"),
            note: format!("{kind}; ratio = ops/s of B over A"),
            headers: ["engine", "A ops/s", "B ops/s", "B/A", "A p99", "B p99"].iter().map(|s| s.to_string()).collect(),
            best: vec![None; 6],
            rows,
        });
    }
    let mut pre = preamble;
    pre.extend(warn.into_iter().map(|w| format!("WARNING: {w}")));
    (pre, sections)
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One row per engine and phase, raw numbers (nanoseconds, bytes).
pub fn csv(r: &RunResult) -> String {
    let header = "run_id,engine,label,repetition,runtime,version,sync,phase,kind,status,unit,ops,requests,errors,mismatches,missing,elapsed_ns,ops_per_sec,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns,threads,batch,cache,cpu_user_ns,cpu_sys_ns,max_rss_kb,io_read_bytes,io_write_bytes,space_bytes,space_amplification";
    let mut out = String::from(header);
    out.push('\n');
    for e in &r.engines {
        for p in &e.phases {
            let l = p.latency.clone().unwrap_or_default();
            let status = match p.status {
                Status::Ok => "ok",
                Status::Failed => "failed",
                Status::NotApplicable => "n/a",
                Status::Interrupted => "interrupted",
            };
            let fields: Vec<String> = vec![
                r.run_id.clone(),
                e.engine.clone(),
                e.label.clone(),
                e.repetition.to_string(),
                e.runtime.clone(),
                e.version.clone(),
                e.sync.clone(),
                p.name.clone(),
                p.kind.clone(),
                status.into(),
                p.unit.clone(),
                p.ops.to_string(),
                p.requests.to_string(),
                p.errors.to_string(),
                p.mismatches.to_string(),
                p.missing.to_string(),
                p.elapsed_ns.to_string(),
                format!("{:.3}", p.ops_per_sec),
                l.min_ns.to_string(),
                format!("{:.1}", l.mean_ns),
                l.p50_ns.to_string(),
                l.p90_ns.to_string(),
                l.p99_ns.to_string(),
                l.p999_ns.to_string(),
                l.max_ns.to_string(),
                p.threads.to_string(),
                p.batch.to_string(),
                p.cache.clone(),
                p.cpu_user_ns.to_string(),
                p.cpu_sys_ns.to_string(),
                p.max_rss_kb.to_string(),
                p.io_read_bytes.to_string(),
                p.io_write_bytes.to_string(),
                e.space_bytes.to_string(),
                format!("{:.3}", e.space_amplification),
            ];
            out.push_str(&fields.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests;
