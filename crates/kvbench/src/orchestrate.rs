//! The run: build or reuse the plan, start the servers a run needs, spawn one worker per
//! engine variant, follow its events with a timeout, write the result file after each
//! engine, and stop everything on the way out (also on Ctrl-C).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use kvbench_core::engine::{Options, RunningServer};
use kvbench_core::protocol::{Event, Job, PROTOCOL_VERSION};
use kvbench_core::result::{EngineResult, PlanInfo, RunResult, Status, SCHEMA};
use kvbench_core::scenario::{Scenario, Variant};
use kvbench_core::sys;

use crate::catalog::{self, Resolved};

/// Pid of the worker running now (0 = none), for the Ctrl-C handler.
static CHILD: AtomicI32 = AtomicI32::new(0);
/// Servers this run started; the Ctrl-C handler stops them.
static SERVERS: Mutex<Vec<(String, Box<dyn RunningServer>)>> = Mutex::new(Vec::new());

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

fn stop_servers() {
    let mut servers = match SERVERS.lock() {
        Ok(s) => s,
        Err(p) => p.into_inner(),
    };
    for (name, s) in servers.drain(..) {
        if let Err(e) = s.stop() {
            eprintln!("stopping the {name} server: {e}");
        }
    }
}

fn now_id() -> (u64, String) {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    // UTC date-time from the epoch without a date library: civil-from-days.
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (secs, format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", rem / 3600, (rem / 60) % 60, rem % 60))
}

fn write_result(path: &Path, r: &RunResult) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(r)?)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
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

    // The plan: built once, shared by every worker.
    let spec = s.plan_spec();
    let t0 = Instant::now();
    let (plan_path, built) = kvbench_core::plan::ensure(&spec, &o.plan_dir)?;
    let gen_ns = t0.elapsed().as_nanos() as u64;
    let plan = kvbench_core::plan::Plan::open(&plan_path)?;
    let size = std::fs::metadata(&plan_path).map(|m| m.len()).unwrap_or(0);
    if built {
        eprintln!(
            "plan: {} records, {} in {:.2} s ({:.0} MB/s of keys+values) -> {}",
            plan.records(),
            kvbench_report::human_bytes(size),
            gen_ns as f64 / 1e9,
            plan.raw_bytes() as f64 / gen_ns.max(1) as f64 * 1e3,
            plan_path.display()
        );
    } else {
        eprintln!("plan: reusing {} ({} records)", plan_path.display(), plan.records());
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
            hash: format!("{:016x}", plan.spec_hash()),
            seed: plan.seed(),
            records: plan.records(),
            unique_records: plan.unique_records(),
            raw_bytes: plan.raw_bytes(),
            generation_ns: if built { gen_ns } else { 0 },
            reused: !built,
        },
        workload: serde_json::to_value(s)?,
        environment: env,
        warnings,
        engines: Vec::new(),
    };
    drop(plan);
    install_ctrlc(result_path.clone());
    let run_data = o.data_dir.join(&run_id);

    for rep in 0..s.repetitions.max(1) {
        for (i, (v, r)) in variants.iter().zip(&resolved).enumerate() {
            crate::progress::engine(
                rep as usize * variants.len() + i + 1,
                variants.len() * s.repetitions.max(1) as usize,
                s.phases.len() + 2,
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
                    run_variant(s, v, res, &plan_path, &dir, o, &mut row);
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

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// Start (once per run) the server an engine needs, unless the row gives a URL.
fn server_url(
    name: &str,
    start: fn(&Path) -> Result<Box<dyn RunningServer>, String>,
    o: &RunOptions,
) -> Result<(String, BTreeMap<String, String>), String> {
    let mut servers = SERVERS.lock().map_err(|_| "server registry poisoned".to_string())?;
    if let Some((_, s)) = servers.iter().find(|(n, _)| n == name) {
        return Ok((s.url(), s.info()));
    }
    let dir = o.data_dir.join(format!("server-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    }
    let s = start(&dir)?;
    let out = (s.url(), s.info());
    servers.push((name.to_string(), s));
    Ok(out)
}

fn run_variant(
    s: &Scenario,
    v: &Variant,
    r: &Resolved,
    plan: &Path,
    dir: &Path,
    o: &RunOptions,
    row: &mut EngineResult,
) {
    let fail = |row: &mut EngineResult, e: String| {
        row.status = Status::Failed;
        row.error = Some(e);
    };
    let _ = std::fs::remove_dir_all(dir);
    if let Err(e) = std::fs::create_dir_all(dir) {
        return fail(row, format!("creating {}: {e}", dir.display()));
    }
    let mut url = v.url.clone();
    if let Resolved::Rust(d) = r {
        if let (Some(start), None) = (d.start_server, &url) {
            match server_url(d.name, start, o) {
                Ok((u, info)) => {
                    url = Some(u);
                    for (k, val) in info {
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
    let bar = crate::progress::phase_bar(o.progress, &row.label);
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
            crate::progress::phase_done();
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

enum Line {
    Text(String),
    Eof,
}

/// Spawn a worker and feed its events to `on_event` until it says done, dies, hangs past
/// `timeout` or prints something that is not an event. Err says which.
pub fn follow_worker(
    cmd: &mut Command,
    log: &Path,
    timeout: Duration,
    on_event: &mut dyn FnMut(&Event),
) -> Result<(), String> {
    let log_file = std::fs::File::create(log).map_err(|e| format!("creating {}: {e}", log.display()))?;
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe; it makes the kernel kill the worker if kvbench
        // dies (even by SIGKILL), so no worker outlives its run.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log_file))
        .spawn()
        .map_err(|e| format!("cannot start worker {:?}: {e}", cmd.get_program()))?;
    CHILD.store(child.id() as i32, Ordering::SeqCst);
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(l) => {
                    if tx.send(Line::Text(l)).is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = tx.send(Line::Eof);
    });
    let deadline = Instant::now() + timeout;
    let mut done = false;
    let mut failure: Option<String> = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Line::Text(l)) => {
                if l.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Event>(&l) {
                    Ok(ev) => {
                        if matches!(ev, Event::Done {}) {
                            done = true;
                        }
                        on_event(&ev);
                    }
                    Err(_) => {
                        let shown: String = l.chars().take(120).collect();
                        failure = Some(format!("worker printed a line that is not a protocol event: {shown:?}"));
                        let _ = child.kill();
                        break;
                    }
                }
            }
            Ok(Line::Eof) => break,
            Err(_) => {
                failure = Some(format!("worker did not finish within {} s and was killed", timeout.as_secs()));
                let _ = child.kill();
                break;
            }
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    CHILD.store(0, Ordering::SeqCst);
    let _ = reader.join();
    if let Some(f) = failure {
        return Err(f);
    }
    if !done {
        use std::os::unix::process::ExitStatusExt;
        let how = match (status.code(), status.signal()) {
            (_, Some(sig)) => format!("killed by signal {sig}"),
            (Some(c), _) => format!("exited with code {c}"),
            _ => "ended".into(),
        };
        let tail = std::fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = tail.lines().rev().take(3).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "worker {how} before finishing{}",
            if tail.is_empty() { String::new() } else { format!(": {}", tail.join(" | ")) }
        ));
    }
    Ok(())
}
