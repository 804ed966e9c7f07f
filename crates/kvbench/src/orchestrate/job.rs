//! One engine variant: build its job file, start the server it needs, run its worker and turn
//! the worker's events into the row.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use kvbench_core::protocol::{Event, Job, PROTOCOL_VERSION};
use kvbench_core::result::{EngineResult, Status};
use kvbench_core::scenario::Variant;

use super::process::follow_worker;
use super::servers::ServerPool;
use super::Shared;
use crate::catalog::Resolved;

pub fn run_variant(
    sh: &Shared<'_>,
    v: &Variant,
    r: &Resolved,
    dir: &Path,
    pool: &mut ServerPool,
    row: &mut EngineResult,
) {
    let (s, o, plan) = (sh.s, sh.o, sh.plan);
    let fail = |row: &mut EngineResult, e: String| {
        row.status = Status::Failed;
        row.error = Some(e);
    };
    let _ = std::fs::remove_dir_all(dir);
    if let Err(e) = std::fs::create_dir_all(dir) {
        return fail(row, format!("creating {}: {e}", dir.display()));
    }
    {
        use std::os::unix::fs::PermissionsExt;
        // The database is the run's own: closed to other users.
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    let mut url = v.url.clone();
    if let Resolved::Rust(d) = r {
        if let (Some(start), None) = (d.start_server, &url) {
            match pool.get(d.name, start) {
                Ok(access) => {
                    url = Some(access.url);
                    if access.token.is_some() {
                        row.settings.insert("server.auth".into(), "generated credential".into());
                    }
                    for (k, val) in access.info {
                        row.settings.insert(format!("server.{k}"), val);
                    }
                }
                Err(e) => return fail(row, format!("server did not start: {e}")),
            }
        }
    }
    let job = Job {
        protocol: PROTOCOL_VERSION,
        engine: v.name.clone(),
        label: v.label(),
        options: v.options.clone(),
        plan: plan.to_path_buf(),
        dir: dir.to_path_buf(),
        sync: v.sync.unwrap_or(s.sync),
        open_mode: v.open,
        url,
        phases: s.job_phases(),
        progress_ms: 200,
    };
    let job_path = dir.with_extension("job.json");
    if let Err(e) = std::fs::write(&job_path, serde_json::to_string_pretty(&job).unwrap_or_default()) {
        return fail(row, format!("writing {}: {e}", job_path.display()));
    }
    let log_path = dir.with_extension("log");
    let mut cmd = match r {
        Resolved::Rust(_) => {
            row.runtime = "rust".into();
            let mut c = Command::new(std::env::current_exe().unwrap_or_else(|_| "kvbench".into()));
            c.arg("worker").arg("--job").arg(&job_path);
            c
        }
        Resolved::Python { python, info } => {
            row.runtime = "python".into();
            row.version = info.version.clone();
            let mut c = Command::new(python);
            c.args(["-m", "kvbench_driver", "--job"]).arg(&job_path);
            c
        }
        Resolved::Go { worker, info } => {
            row.runtime = "go".into();
            row.version = info.version.clone();
            let mut c = Command::new(worker);
            c.arg("--job").arg(&job_path);
            c
        }
    };
    let bar = if o.progress { ProgressBar::new(0) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{prefix:>16.bold} {msg:<12} [{bar:30}] {pos}/{len} ({per_sec}, {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(row.label.clone());
    let timeout = Duration::from_secs(s.timeout.max(1));
    let outcome = follow_worker(&mut cmd, &log_path, timeout, &mut |ev| match ev {
        Event::Hello { worker, version, capabilities, options, settings, timer_overhead_ns, .. } => {
            row.worker = worker.clone();
            row.version = version.clone();
            row.capabilities = capabilities.clone();
            row.options = options.clone();
            row.settings.extend(settings.clone());
            row.timer_overhead_ns = *timer_overhead_ns;
        }
        Event::Progress { phase, done, total } => {
            bar.set_message(phase.clone());
            bar.set_length(*total);
            bar.set_position(*done);
        }
        Event::Phase { result } => {
            bar.set_message(result.name.clone());
            row.phases.push(result.clone());
        }
        Event::Error { phase, message } => {
            let at = phase.as_ref().map(|p| format!("phase {p}: ")).unwrap_or_default();
            row.error = Some(format!("{at}{message}"));
        }
        Event::Done {} => {}
    });
    bar.finish_and_clear();
    if let (Err(e), None) = (outcome, &row.error) {
        let last = row.phases.last().map(|p| p.name.clone()).unwrap_or_else(|| "start".into());
        row.error = Some(format!("{e} (after phase {last}; log: {})", log_path.display()));
    }
    if row.error.is_none() {
        if let Some(p) = row.phases.iter().find(|p| p.status == Status::Failed) {
            row.error = Some(format!("phase {}: {}", p.name, p.reason.clone().unwrap_or_default()));
        }
    }
    if row.error.is_some() {
        row.status = Status::Failed;
    } else {
        let _ = std::fs::remove_file(&job_path);
        if std::fs::metadata(&log_path).map(|m| m.len() == 0).unwrap_or(false) {
            let _ = std::fs::remove_file(&log_path);
        }
    }
}
