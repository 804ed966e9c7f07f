//! The run: build or reuse the plan, start the servers a run needs, spawn one worker per
//! engine variant, follow its events with a timeout, write the result file after each
//! engine, and stop everything on the way out (also on Ctrl-C).

mod job;
mod process;
mod results;
mod servers;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Instant;

use kvbench_core::engine::Options;
use kvbench_core::result::{EngineResult, PlanInfo, RunResult, Status, SCHEMA};
use kvbench_core::scenario::Scenario;
use kvbench_core::sys;

use crate::catalog::{self, Resolved};
use job::run_variant;
use process::CHILD;
use results::{now_id, sanitize, write_result};
use servers::stop_servers;

pub struct RunOptions {
    pub out_dir: PathBuf,
    pub data_dir: PathBuf,
    pub plan_dir: PathBuf,
    pub keep_data: bool,
    pub progress: bool,
    pub command: Vec<String>,
}

fn install_ctrlc(result_path: PathBuf) {
    let _ = ctrlc::set_handler(move || {
        let pid = CHILD.load(Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: signalling a child we spawned.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        stop_servers();
        eprintln!("\ninterrupted: workers killed, servers stopped; results so far in {}", result_path.display());
        std::process::exit(130);
    });
}

/// Run a scenario; returns the result and the path it was written to.
pub fn run(s: &Scenario, o: &RunOptions) -> anyhow::Result<(RunResult, PathBuf)> {
    let variants = s.all_variants();
    // Bad input fails before anything runs: unknown engines and options are named here.
    let mut resolved = Vec::new();
    let mut labels = std::collections::BTreeSet::new();
    for v in &variants {
        if !labels.insert(v.label()) {
            anyhow::bail!("two engine rows are labelled `{}`: give each [[engine]] a distinct `label`", v.label());
        }
        let r = catalog::resolve(&v.name);
        if let Ok(Resolved::Rust(d)) = &r {
            Options::parse(d.name, d.options, &v.options)
                .map_err(|e| anyhow::anyhow!("[[engine]] {}: {e}", v.label()))?;
        }
        resolved.push(r);
    }

    std::fs::create_dir_all(&o.out_dir)?;
    std::fs::create_dir_all(&o.data_dir)?;
    let (started_at, stamp) = now_id();
    let run_id = format!("{stamp}-{}", s.name);
    let result_path = o.out_dir.join(format!("{run_id}.json"));
    let env = sys::environment(&o.data_dir);
    let mut warnings = sys::warnings(&env);
    let syncs: std::collections::BTreeSet<String> =
        variants.iter().map(|v| v.sync.unwrap_or(s.sync).to_string()).collect();
    if syncs.len() > 1 {
        warnings.push(format!(
            "rows use different durability settings ({}): compare write figures with care",
            syncs.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    for w in &warnings {
        eprintln!("WARNING: {w}");
    }

    // The data: derived by every worker from seeds; a plan file only where data is stored.
    let t0 = Instant::now();
    let data = kvbench_core::policy::dataset::resolve(s, &o.plan_dir)?;
    let gen_ns = t0.elapsed().as_nanos() as u64;
    if !data.note.is_empty() {
        eprintln!("plan: {}", data.note);
    }

    let mut result = RunResult {
        schema: SCHEMA.into(),
        kvbench_version: env!("CARGO_PKG_VERSION").into(),
        run_id: run_id.clone(),
        started_at,
        scenario: s.name.clone(),
        command: o.command.clone(),
        intent: s.intent.clone(),
        sync: s.sync.to_string(),
        plan: PlanInfo {
            hash: kvbench_core::policy::dataset::plan_id(s),
            seed: s.seed,
            records: data.dataset.loaded,
            unique_records: data.positions.min(data.dataset.loaded),
            raw_bytes: data.raw_bytes,
            generation_ns: gen_ns,
            reused: data.plan.is_none(),
        },
        workload: serde_json::to_value(s)?,
        environment: env,
        warnings,
        engines: Vec::new(),
    };
    install_ctrlc(result_path.clone());
    let run_data = o.data_dir.join(&run_id);

    for rep in 0..s.repetitions.max(1) {
        for (i, (v, r)) in variants.iter().zip(&resolved).enumerate() {
            crate::progress::engine(
                rep as usize * variants.len() + i + 1,
                variants.len() * s.repetitions.max(1) as usize,
            );
            let mut row = EngineResult {
                label: v.label(),
                engine: v.name.clone(),
                repetition: rep,
                sync: v.sync.unwrap_or(s.sync).to_string(),
                open_mode: format!("{:?}", v.open).to_lowercase(),
                options: v.options.clone(),
                ..Default::default()
            };
            let t = Instant::now();
            match r {
                Err(why) => {
                    row.status = Status::Failed;
                    row.error = Some(why.clone());
                    eprintln!("{:>16}: skipped: {why}", row.label);
                }
                Ok(res) => {
                    let dir = run_data.join(format!("{}-r{rep}", sanitize(&row.label)));
                    run_variant(s, v, res, &data, &dir, o, &mut row);
                    let (alloc, apparent) = sys::space(&dir);
                    row.space_bytes = alloc;
                    row.apparent_bytes = apparent;
                    row.space_amplification = alloc as f64 / result.plan.raw_bytes.max(1) as f64;
                    if !o.keep_data {
                        let _ = std::fs::remove_dir_all(&dir);
                    }
                    let status = match &row.error {
                        None => "ok".to_string(),
                        Some(e) => format!("FAILED: {}", e.lines().next().unwrap_or("")),
                    };
                    eprintln!("{:>16}: {status} ({:.1} s)", row.label, t.elapsed().as_secs_f64());
                }
            }
            row.wall_ns = t.elapsed().as_nanos() as u64;
            result.engines.push(row);
            // Written after each engine: a later crash loses nothing measured.
            write_result(&result_path, &result)?;
        }
    }
    stop_servers();
    if !o.keep_data {
        let _ = std::fs::remove_dir(&run_data);
    }
    Ok((result, result_path))
}
