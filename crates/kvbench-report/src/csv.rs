//! CSV: one row per engine, repetition and phase, raw numbers (nanoseconds, bytes). A phase
//! that measured nothing (n/a, failed) has empty numeric cells and says why in `reason`, so
//! averages over a column are not dragged down by zeros.

use kvbench_model::result::{EngineResult, Latency, PhaseResult, RunResult, Status};

use crate::space_measured;

const HEADER: &str = "run_id,engine,label,repetition,runtime,version,sync,phase,kind,status,reason,unit,ops,requests,errors,mismatches,missing,elapsed_ns,wall_ns,busy_ns,harness_share,ops_per_sec,min_ns,mean_ns,p50_ns,p90_ns,p95_ns,p99_ns,p999_ns,max_ns,threads,batch,cache,cpu_user_ns,cpu_sys_ns,max_rss_kb,io_read_bytes,io_write_bytes,alloc_bytes,mallocs,space_bytes,space_amplification,disk_read_bytes,disk_write_bytes,cancelled_write_bytes,logical_read_bytes,logical_write_bytes,read_amplification,write_amplification,cached_at_start,budget_bytes,budget_peak_bytes";

/// A cell a spreadsheet shows as text and a terminal shows as printed: formulas neutralised,
/// control characters (ESC, BEL, CR ...) written as `\uXXXX`.
fn field(text: &str) -> String {
    let neutral = crate::csv_neutral(text);
    let text = crate::terminal_safe(&neutral);
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

pub fn csv(run: &RunResult) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for e in &run.engines {
        for p in &e.phases {
            let fields = row(run, e, p);
            out.push_str(&fields.iter().map(|f| field(f)).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
    }
    out
}

fn row(run: &RunResult, engine_row: &EngineResult, phase: &PhaseResult) -> Vec<String> {
    let status = match phase.status {
        Status::Ok => "ok",
        Status::Failed => "failed",
        Status::NotApplicable => "n/a",
        Status::Expected => "expected",
        Status::Interrupted => "interrupted",
    };
    let ok = phase.status == Status::Ok;
    let reason = match phase.status {
        Status::Ok => String::new(),
        _ => phase.reason.clone().or_else(|| engine_row.error.clone()).unwrap_or_default(),
    };
    // Numbers only where something was measured.
    let num = |v: String| if ok { v } else { String::new() };
    let l = phase.latency.clone().filter(|_| ok);
    let lat = |f: &dyn Fn(&Latency) -> String| l.as_ref().map(f).unwrap_or_default();
    let rt = |k: &str| phase.runtime.get(k).filter(|_| ok).map(|v| format!("{v:.0}")).unwrap_or_default();
    let space = space_measured(engine_row);
    let mut f = vec![
        run.run_id.clone(),
        engine_row.engine.clone(),
        engine_row.label.clone(),
        engine_row.repetition.to_string(),
        engine_row.runtime.clone(),
        engine_row.version.clone(),
        engine_row.sync.clone(),
        phase.name.clone(),
        phase.kind.clone(),
        status.into(),
        reason,
        phase.unit.clone(),
    ];
    f.extend(
        [
            phase.ops,
            phase.requests,
            phase.errors,
            phase.mismatches,
            phase.missing,
            phase.elapsed_ns,
            phase.wall_ns,
            phase.busy_ns,
        ]
        .map(|v| num(v.to_string())),
    );
    f.push(num(format!("{:.4}", phase.harness_share)));
    f.push(num(format!("{:.3}", phase.ops_per_sec)));
    f.push(lat(&|l| l.min_ns.to_string()));
    f.push(lat(&|l| format!("{:.1}", l.mean_ns)));
    let percentiles: [fn(&Latency) -> u64; 6] =
        [|l| l.p50_ns, |l| l.p90_ns, |l| l.p95_ns, |l| l.p99_ns, |l| l.p999_ns, |l| l.max_ns];
    for g in percentiles {
        f.push(lat(&|l| g(l).to_string()));
    }
    f.extend([phase.threads.to_string(), phase.batch.to_string(), phase.cache.clone()]);
    f.extend(
        [phase.cpu_user_ns, phase.cpu_sys_ns, phase.max_rss_kb, phase.io_read_bytes, phase.io_write_bytes]
            .map(|v| num(v.to_string())),
    );
    f.push(rt("alloc_bytes"));
    f.push(rt("mallocs"));
    f.push(if space { engine_row.space_bytes.to_string() } else { String::new() });
    f.push(if space { format!("{:.3}", engine_row.space_amplification) } else { String::new() });
    f.extend(disk_cells(phase.disk.as_ref().filter(|_| ok)));
    let budget = engine_row.budget.as_ref();
    f.push(budget.map(|b| b.limit_bytes.to_string()).unwrap_or_default());
    f.push(budget.map(|b| b.peak_bytes.to_string()).unwrap_or_default());
    f
}

/// What the disk saw: device and logical bytes, amplifications (empty where there are no
/// logical bytes) and the page-cache share at the start.
fn disk_cells(disk: Option<&kvbench_model::result::Disk>) -> Vec<String> {
    let Some(disk) = disk else { return vec![String::new(); 8] };
    let amp = |a: f64, logical: u64| if logical > 0 { format!("{a:.3}") } else { String::new() };
    vec![
        disk.read_bytes.to_string(),
        disk.write_bytes.to_string(),
        disk.cancelled_write_bytes.to_string(),
        disk.logical_read_bytes.to_string(),
        disk.logical_write_bytes.to_string(),
        amp(disk.read_amplification, disk.logical_read_bytes),
        amp(disk.write_amplification, disk.logical_write_bytes),
        disk.cached_at_start.map(|c| format!("{c:.4}")).unwrap_or_default(),
    ]
}
