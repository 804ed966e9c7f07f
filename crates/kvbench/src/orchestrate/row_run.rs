//! One row's run: start the server its engine needs, place its planned job, run the worker of
//! the engine's runtime (here or on the `--hosts`), follow its events and derive the row's
//! phases from the raw counters (`kvbench_policy::outcome`) and its disk figures.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use indicatif::ProgressBar;
use kvbench_model::job::{Event, StepResult};
use kvbench_model::result::{EngineResult, Status};
use kvbench_model::scenario::Variant;

use super::budget::RowGroup;
use super::context::Shared;
use super::disk::{Probe, Readings, Sampler};
use super::kill_step::Faults;
use super::process::{follow_worker, write_private};
use super::remote::HostsRun;
use super::rows::{runtime_of, ReadyRow};
use super::servers::ServerPool;
use crate::catalog::Resolved;
use crate::timeout::RowTimeout;
use kvbench_policy::jobs::{self, JobPlan};

/// The row's planned job, placed in `dir` and at its server's URL, run.
#[allow(clippy::too_many_arguments)]
pub fn run_variant(
    sh: &Shared<'_>,
    variant: &Variant,
    ready: &ReadyRow,
    job: &Result<JobPlan, String>,
    dir: &Path,
    pool: &mut ServerPool,
    row: &mut EngineResult,
    extra: &mut Vec<EngineResult>,
) {
    let (o, r) = (sh.o, &ready.resolved);
    row.runtime = runtime_of(r).into();
    let mut plan = match job {
        Ok(p) => p.clone(),
        Err(e) => return fail(row, e.clone()),
    };
    if let Err(e) = fresh_dir(dir) {
        return fail(row, e);
    }
    let server = &ready.server;
    let (url, token, netns) = match reach(variant, server, pool, row) {
        Ok(access) => access,
        Err(e) => return fail(row, e),
    };
    plan.place(dir, url, token);
    let limit = row_limit(sh, variant, &row.label);
    // A kill needs a cluster kvbench started (not one given by url).
    let started = server.as_ref().filter(|_| variant.url.is_none()).map(|(n, _)| n.clone());
    let members = started.as_deref().map(|n| pool.members(n)).unwrap_or_default();
    if o.hosts.is_some() {
        no_kills_on_hosts(&mut plan.phases);
    }
    let mut faults = match Faults::arm(&mut plan.phases, &members) {
        Ok(f) => f,
        Err(e) => return fail(row, e),
    };
    let job_path = dir.with_extension("job.json");
    if let Err(e) = write_private(&job_path, &serde_json::to_string_pretty(&plan.job).unwrap_or_default()) {
        return fail(row, format!("writing {}: {e}", job_path.display()));
    }
    if let Some(h) = &o.hosts {
        if started.is_some() && !h.all_loopback() {
            let why = "the server kvbench starts listens on 127.0.0.1 only, which the --hosts cannot reach: \
                       give the row url = \"...\" of a server they can reach";
            return fail(row, format!("{}: {why}", row.label));
        }
        return on_hosts(sh, h, (r, &limit), dir, &plan, row, extra);
    }
    let log_path = dir.with_extension("log");
    let mut group = match row_group(sh, variant, dir) {
        Ok(g) => g,
        Err(e) => return fail(row, e),
    };
    let server_groups = started.as_deref().map(|n| pool.process_groups(n)).unwrap_or_default();
    if let Some(g) = group.as_mut() {
        if let Err(e) = g.adopt(&pids_in(&server_groups)) {
            return fail(row, format!("memory budget: moving the row's server into its cgroup: {e}"));
        }
    }
    let group = group.map(std::sync::Arc::new);
    let probe = Probe::new(server_groups, dir.to_path_buf(), group.clone());
    let watch = Watch {
        probe: &probe,
        group: group.as_deref(),
        readings: Readings { base: probe.take(), ..Default::default() },
    };
    let worker = Worker { r, job: &job_path, log: &log_path, netns, timeout: &limit };
    let (outcome, steps, readings) = run_worker(sh, &worker, &plan, &mut faults, row, watch);
    row.phases = kvbench_policy::outcome::phases(&plan.phases, &steps);
    kvbench_policy::carried::notes(&mut row.phases);
    disk_figures(row, &plan, &steps, &readings, sh.data.raw_bytes, sh.data.dataset.loaded);
    row.budget = group.as_ref().map(|g| g.budget(sh.data.raw_bytes));
    let outcome = outcome.map_err(|e| format!("{e}{}", oom_note(row.budget.as_ref())));
    budget_in_reasons(row);
    drop(group);
    if faults.finish(&mut row.phases, plan.job.interval_ms) {
        if let Some(name) = &started {
            pool.discard(name);
        }
    }
    worker_failure(row, outcome, &log_path);
}

/// An empty directory for the row's database, closed to other users (the database is the
/// run's own).
fn fresh_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    Ok(())
}

/// The URL and token the row's client uses: the row's own `url`, or those of the server
/// kvbench starts for it (whose facts go into the row's settings).
fn reach(
    variant: &Variant,
    server: &Option<(String, kvbench_engines::ShapedStart)>,
    pool: &mut ServerPool,
    row: &mut EngineResult,
) -> Result<Reached, String> {
    let (Some((name, start)), None) = (server, &variant.url) else {
        // `env:NAME` and `file:PATH` become the URL only here, in the job the worker reads.
        let url = variant.url.as_deref().map(kvbench_model::secret::resolve_url).transpose()?;
        return Ok((url, None, None));
    };
    let access = pool.get(name, start.as_ref()).map_err(|e| format!("server did not start: {e}"))?;
    kvbench_model::secret::remember_url(&access.url);
    if let Some(t) = &access.token {
        kvbench_model::secret::remember(t);
    }
    for (k, val) in access.info {
        row.settings.insert(format!("server.{k}"), val);
    }
    Ok((Some(access.url), access.token, access.netns))
}

/// The row's url and token, and its server's network namespace (when it has its own).
type Reached = (Option<String>, Option<String>, Option<i32>);

/// The worker a row runs: how, its job file and log, and the network namespace of the server
/// it reaches, if that has one of its own.
struct Worker<'a> {
    r: &'a Resolved,
    job: &'a Path,
    log: &'a Path,
    netns: Option<i32>,
    timeout: &'a RowTimeout,
}

/// The row's timeout, said when it is not the scenario's own.
fn row_limit(sh: &Shared<'_>, variant: &Variant, label: &str) -> RowTimeout {
    let t = crate::timeout::row_timeout(sh.s, variant, sh.data.raw_bytes, sh.o.row_estimates.get(label).copied());
    if t.secs != sh.s.timeout {
        crate::note!("{label}: timeout {} s ({})", t.secs, t.why);
    }
    t
}

/// A worker's timeout error with the row's timeout and what sets it.
fn timeout_said(outcome: Result<(), String>, timeout: &RowTimeout) -> Result<(), String> {
    outcome.map_err(|e| {
        if e.contains("within") && e.contains("was killed") {
            format!("{e} (timeout: {})", timeout.why)
        } else {
            e
        }
    })
}

/// Start the worker inside network namespace `fd` (the row's server's own).
fn join_netns(cmd: &mut Command, fd: i32) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setns is async-signal-safe; it moves the child, before exec, into the namespace
    // kvbench holds open by `fd` for as long as the server runs.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The row's memory cgroup when it has a budget (`memory`), named after the run and the row.
fn row_group(sh: &Shared<'_>, variant: &Variant, dir: &Path) -> Result<Option<RowGroup>, String> {
    let Some(limit) = variant.budget(sh.s) else { return Ok(None) };
    if sh.o.hosts.is_some() {
        return Err("a memory budget bounds rows run on this host; it does not apply with --hosts".into());
    }
    let row = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let name = super::budget::group_name(&format!("{}-{row}", sh.run_name()));
    RowGroup::create(&name, limit).map(Some).map_err(|e| format!("memory budget: {e}"))
}

/// What a worker's failure adds when the budget's OOM killer ended a process: SIGKILL alone
/// does not say why.
fn oom_note(budget: Option<&kvbench_model::result::Budget>) -> String {
    let Some(budget) = budget.filter(|budget| budget.oom_kills > 0) else { return String::new() };
    format!(
        "; the memory cgroup's OOM killer ended {} process(es) at the {} budget: the worker's heap, \
         mapped files and dirty pages did not fit (give a larger --memory)",
        budget.oom_kills,
        kvbench_report::human_bytes(budget.limit_bytes)
    )
}

/// A failed phase of a row whose budget's OOM killer ended a process (a server killed under
/// the worker: the worker saw only `Broken pipe`) names the budget in its reason.
fn budget_in_reasons(row: &mut EngineResult) {
    let note = oom_note(row.budget.as_ref());
    if note.is_empty() {
        return;
    }
    for p in row.phases.iter_mut().filter(|p| p.status == Status::Failed) {
        let reason = p.reason.get_or_insert_with(String::new);
        if !reason.contains(&note) {
            reason.push_str(&note);
        }
    }
}

/// Every process in the given process groups.
fn pids_in(groups: &[i32]) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    let pids = rd.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok());
    pids.filter(|&p| super::disk::process_group(p).is_some_and(|g| groups.contains(&g))).collect()
}

/// What follows a worker besides its events: the disk probe, the budget's cgroup, readings.
struct Watch<'a> {
    probe: &'a Probe,
    group: Option<&'a RowGroup>,
    readings: Readings,
}

/// Each phase's device bytes, amplifications and timeline, from the row's readings.
fn disk_figures(
    row: &mut EngineResult,
    plan: &jobs::JobPlan,
    steps: &BTreeMap<usize, StepResult>,
    readings: &Readings,
    raw_bytes: u64,
    records: u64,
) {
    let record_bytes = raw_bytes as f64 / records.max(1) as f64;
    for (p, pp) in row.phases.iter_mut().zip(&plan.phases) {
        let Some(main) = pp.main else { continue };
        let start = steps.get(&main).map(|s| s.start_unix_ns).unwrap_or(0);
        if let Some(d) = readings.disk(main, start, raw_bytes) {
            kvbench_policy::amplification::amplify(p, d, record_bytes);
        }
    }
}

/// Run the row's worker on this host and follow its events until it exits: progress to the
/// bar, settings into the row, step results (by step index) back to the caller, with the
/// disk readings taken at each step's end and every interval.
fn run_worker(
    sh: &Shared<'_>,
    worker: &Worker<'_>,
    plan: &jobs::JobPlan,
    faults: &mut Faults,
    row: &mut EngineResult,
    mut watch: Watch<'_>,
) -> (Result<(), String>, BTreeMap<usize, StepResult>, Readings) {
    let (job_path, log_path) = (worker.job, worker.log);
    let mut cmd = command(worker.r, job_path, row, sh.o.ycsb_classpath.as_deref());
    if let Some(fd) = worker.netns {
        join_netns(&mut cmd, fd);
    }
    if let Some(g) = watch.group {
        if let Err(e) = g.join_on_exec(&mut cmd) {
            return (Err(format!("memory budget: {e}")), BTreeMap::new(), watch.readings);
        }
    }
    let sampler = Sampler::start(watch.probe.clone(), Duration::from_millis(plan.job.interval_ms.max(10)));
    let bar = bar(sh.o.progress, &row.label);
    crate::progress::steps(plan.job.steps.len());
    let names: BTreeMap<usize, String> =
        plan.phases.iter().filter_map(|p| p.main.map(|m| (m, p.name.clone()))).collect();
    let mut steps: BTreeMap<usize, StepResult> = BTreeMap::new();
    let timeout = Duration::from_secs(worker.timeout.secs.max(1));
    let probe = watch.probe;
    let marks = &mut watch.readings.marks;
    let outcome = follow_worker(&mut cmd, log_path, timeout, &mut |pgid| probe.set_worker(pgid), &mut |ev| match ev {
        Event::Hello { .. } => hello(row, ev),
        Event::Progress { index, done, total } => {
            bar.set_message(names.get(index).cloned().unwrap_or_default());
            // A phase run for a duration has no count but the cap: the bar follows what is done.
            let open_ended = *total >= kvbench_model::spec::limits::OPS;
            bar.set_length(if open_ended { *done } else { *total });
            bar.set_position(*done);
        }
        Event::Step(res) => {
            if !res.settings.is_empty() {
                row.settings.extend(res.settings.clone());
            }
            marks.insert(res.index, (probe.take(), probe.cached()));
            crate::progress::phase_done();
            faults.on_step(res.index, res.start_unix_ns);
            steps.insert(res.index, (**res).clone());
        }
        Event::Error { message } => row.error = Some(message.clone()),
        Event::Done {} => {}
    });
    bar.finish_and_clear();
    watch.readings.samples = sampler.finish();
    (timeout_said(outcome, worker.timeout), steps, watch.readings)
}

fn hello(row: &mut EngineResult, ev: &Event) {
    if let Event::Hello { worker, version, capabilities, options, timer_overhead_ns, .. } = ev {
        row.worker = worker.clone();
        row.version = version.clone();
        row.capabilities = capabilities.clone();
        row.options = options.clone();
        row.timer_overhead_ns = *timer_overhead_ns;
    }
}

/// A kill needs the orchestrator to follow the phase as it runs; a multi-host row reports only
/// at its end.
fn no_kills_on_hosts(phases: &mut [jobs::PhasePlan]) {
    for p in phases.iter_mut().filter(|p| p.kill.is_some()) {
        p.kill = None;
        p.notes.push(
            "kill step not run: not with --hosts (the orchestrator sees the hosts' steps only at the end)".into(),
        );
    }
}

/// The row on every host: one row per host (`LABEL@h1`, ...) in `extra`, and the merged row
/// in `row` (counters and histograms added, ops/s over the common wall time, the hosts' clock
/// offsets in `hosts`).
#[allow(clippy::too_many_arguments)]
fn on_hosts(
    sh: &Shared<'_>,
    hosts: &HostsRun,
    (r, limit): (&Resolved, &RowTimeout),
    dir: &Path,
    plan: &jobs::JobPlan,
    row: &mut EngineResult,
    extra: &mut Vec<EngineResult>,
) {
    let timeout = Duration::from_secs(limit.secs.max(1));
    let got = match hosts.run_row(&sh.run_name(), &plan.job, r, dir, timeout) {
        Ok(g) => g,
        Err(e) => return fail(row, e),
    };
    if let Some(ev) = got.iter().find_map(|g| g.hello.as_ref()) {
        hello(row, ev);
    }
    for st in got.first().map(|g| g.steps.values()).into_iter().flatten() {
        row.settings.extend(st.settings.clone());
    }
    row.hosts = hosts.clocks(&got);
    row.settings.insert("hosts".into(), host_list(&got));
    for (g, clock) in got.iter().zip(&row.hosts) {
        extra.push(host_row(row, g, clock, plan));
    }
    let mut failed: Vec<String> =
        got.iter().filter_map(|g| g.error.as_ref().map(|e| format!("{} ({}): {e}", g.tag, g.target))).collect();
    match super::remote::merge(&got) {
        Ok((steps, skew)) => {
            row.phases = kvbench_policy::outcome::phases(&plan.phases, &steps);
            merged_notes(row, plan, &skew, got.len());
        }
        Err(e) => failed.push(e),
    }
    row.error = (!failed.is_empty()).then(|| failed.join("; "));
}

/// "h1 = user@host (clock +0.012 ms ±0.040), ...": the hosts and their measured offsets.
fn host_list(got: &[super::remote::HostSteps]) -> String {
    let each = got.iter().map(|g| {
        let (off, within) = (g.clock.offset_ns as f64 / 1e6, g.clock.rtt_ns as f64 / 2e6);
        format!("{} = {} (clock {off:+.3} ms ±{within:.3})", g.tag, g.target)
    });
    each.collect::<Vec<_>>().join(", ")
}

/// One host's own row, `LABEL@hN`: its phases from its steps, its ending in its error (judged
/// with the row's).
fn host_row(
    row: &EngineResult,
    host: &super::remote::HostSteps,
    clock: &kvbench_model::result::HostClock,
    plan: &jobs::JobPlan,
) -> EngineResult {
    let mut hr = EngineResult {
        label: format!("{}@{}", row.label, host.tag),
        phases: kvbench_policy::outcome::phases(&plan.phases, &host.steps),
        hosts: vec![clock.clone()],
        ..row.clone()
    };
    hr.settings.insert("host".into(), host.target.clone());
    hr.error = host.error.clone();
    hr
}

fn merged_notes(row: &mut EngineResult, plan: &jobs::JobPlan, skew: &BTreeMap<usize, u64>, hosts: usize) {
    for (p, pp) in row.phases.iter_mut().zip(&plan.phases) {
        let Some(spread) = pp.main.and_then(|m| skew.get(&m)) else { continue };
        if p.kind == "open" || p.kind == "close" {
            continue;
        }
        p.notes.push(format!(
            "merged from {hosts} hosts: counts and histograms added, ops/s over the common wall time \
             (first start to last end, clocks corrected); the hosts started {:.2} ms apart; {}",
            *spread as f64 / 1e6,
            row.settings.get("hosts").cloned().unwrap_or_default()
        ));
    }
}

fn command(resolved: &Resolved, job: &Path, row: &mut EngineResult, classpath: Option<&str>) -> Command {
    match resolved {
        Resolved::Rust(_) => {
            let mut c = Command::new(std::env::current_exe().unwrap_or_else(|_| "kvbench".into()));
            c.arg("worker").arg("--job").arg(job);
            c
        }
        Resolved::Python { python, info } => {
            row.version = info.version.clone();
            let mut c = crate::catalog::python_command(python);
            c.arg("--job").arg(job);
            c
        }
        Resolved::Worker { worker, info } => {
            row.version = info.version.clone();
            let mut c = crate::catalog::worker_command(worker, classpath);
            c.arg("--job").arg(job);
            c
        }
    }
}

fn bar(progress: bool, label: &str) -> ProgressBar {
    crate::progress::phase_bar(progress, label)
}

fn fail(row: &mut EngineResult, error: String) {
    row.status = Status::Failed;
    row.error = Some(error);
}

/// The worker's own failure (crash, timeout, protocol) or a job it refused, in the row's
/// `error` until the row is judged.
fn worker_failure(row: &mut EngineResult, outcome: Result<(), String>, log: &Path) {
    if let (Err(e), None) = (outcome, &row.error) {
        let last = row.phases.iter().rev().find(|p| p.status != Status::Failed).map(|p| p.name.clone());
        let after = last.unwrap_or_else(|| "start".into());
        row.error = Some(format!("{e} (after phase {after}; log: {})", log.display()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvbench_model::result::{Budget, PhaseResult};

    #[test]
    fn regression_a_phase_failed_by_a_budget_kill_names_the_budget() {
        let failed = |reason: &str| PhaseResult {
            name: "get".into(),
            status: Status::Failed,
            reason: Some(reason.into()),
            ..Default::default()
        };
        let mut row = EngineResult { phases: vec![failed("redis: Broken pipe (os error 32)")], ..Default::default() };
        row.phases.push(PhaseResult { status: Status::Ok, ..Default::default() });
        budget_in_reasons(&mut row);
        assert_eq!(row.phases[0].reason.as_deref(), Some("redis: Broken pipe (os error 32)"), "no kill, no note");
        row.budget = Some(Budget { limit_bytes: 64 << 20, oom_kills: 1, ..Default::default() });
        budget_in_reasons(&mut row);
        budget_in_reasons(&mut row);
        let reason = row.phases[0].reason.clone().unwrap();
        assert!(reason.starts_with("redis: Broken pipe (os error 32); the memory cgroup's OOM killer"), "{reason}");
        assert!(reason.contains("at the 64.0 MiB budget") && reason.matches("OOM").count() == 1, "{reason}");
        assert_eq!(row.phases[1].reason, None, "a phase that passed keeps no reason");
    }
}
