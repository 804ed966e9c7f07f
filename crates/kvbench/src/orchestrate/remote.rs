//! `kvbench run --hosts`: one row's job run on every host over SSH (`crate::hosts`), the
//! workers released together at a start barrier, and the per-host step results turned into
//! per-host rows and one merged row.
//!
//! Every host gets its own directory, `REMOTE_DIR/<run>/h<i>/` (so two "hosts" that are one
//! machine do not share files): the worker binary (this kvbench, or the Go worker; uploaded
//! once per run unless `--remote-kvbench` names one already there), the plan file when the
//! dataset is stored, and per row the job and its database directory. The data is derived
//! from the job's seeds there, as locally. The merged row adds counters and histograms; its
//! wall time is the common one, from the first host's start to the last host's end on one
//! clock (each host's `start_unix_ns` corrected by its measured clock offset), so its ops/s
//! is the hosts' combined throughput.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use kvbench_model::job::{Event, Job, StepResult};
use kvbench_model::result::HostClock;

use crate::catalog::Resolved;
use crate::hosts::{self, ClockOffset, Host, HostJob, HostOutput, Ssh, Upload};

/// The hosts of a run and how to reach them.
pub struct HostsRun {
    pub hosts: Vec<Host>,
    pub ssh: Ssh,
    /// Under this directory on every host each run keeps its files.
    pub remote_dir: String,
    /// A kvbench already installed on the hosts (Rust rows); None: upload this one.
    pub remote_kvbench: Option<String>,
    /// (host, remote path) of binaries already uploaded in this run.
    uploaded: Mutex<BTreeSet<(usize, String)>>,
}

/// What one host returned for a row.
pub struct HostSteps {
    /// `h1`, `h2`, ...: row labels must be unique even when two hosts are one machine.
    pub tag: String,
    pub target: String,
    pub clock: ClockOffset,
    pub hello: Option<Event>,
    pub steps: BTreeMap<usize, StepResult>,
    /// Why the host's worker failed (no `done`, an `error` event, ssh failed).
    pub error: Option<String>,
}

impl HostsRun {
    pub fn new(hosts: Vec<Host>, ssh: Ssh, remote_dir: String, remote_kvbench: Option<String>) -> HostsRun {
        HostsRun { hosts, ssh, remote_dir, remote_kvbench, uploaded: Mutex::new(BTreeSet::new()) }
    }

    fn base(&self, run: &str, index: usize) -> String {
        format!("{}/{run}/h{}", self.remote_dir.trim_end_matches('/'), index + 1)
    }

    /// Every host is this machine's loopback: a server kvbench starts (on 127.0.0.1) is
    /// reachable from them.
    pub fn all_loopback(&self) -> bool {
        self.hosts.iter().all(|h| h.name == "localhost" || h.name == "::1" || h.name.starts_with("127."))
    }

    /// Remove the run's directory on every host (errors are shown, not fatal).
    pub fn cleanup(&self, run: &str) {
        let dir = format!("{}/{run}", self.remote_dir.trim_end_matches('/'));
        let mut seen = BTreeSet::new();
        for h in &self.hosts {
            if !seen.insert(h.target()) {
                continue;
            }
            if let Err(e) = self.ssh.run(h, &format!("rm -rf {}", hosts::sh_quote(&dir)), b"") {
                crate::note!("cannot remove {dir} on {}: {e}", h.target());
            }
        }
    }

    /// The worker binary a host runs for this row, and the upload it needs (first time only).
    fn worker(
        &self,
        resolved: &Resolved,
        index: usize,
        base: &str,
    ) -> Result<(String, Vec<String>, Option<Upload>), String> {
        let (local, name, args): (PathBuf, &str, Vec<String>) = match resolved {
            Resolved::Rust(_) => {
                if let Some(p) = &self.remote_kvbench {
                    return Ok((p.clone(), vec!["worker".into(), "--job".into()], None));
                }
                let exe = std::env::current_exe().map_err(|e| format!("cannot find this kvbench to upload: {e}"))?;
                (exe, "kvbench", vec!["worker".into(), "--job".into()])
            }
            Resolved::Worker { worker, info } if info.runtime == kvbench_model::engine::Runtime::Go => {
                (worker.clone(), info.name.as_str(), vec!["--job".into()])
            }
            Resolved::Python { .. } | Resolved::Worker { .. } => {
                return Err("--hosts runs Rust and Go workers (a Python, Java or Node worker needs its \
                            environment on every host)"
                    .into())
            }
        };
        let remote = format!("{base}/bin/{name}");
        let first = self.uploaded.lock().map(|mut u| u.insert((index, remote.clone()))).unwrap_or(true);
        let upload = first.then(|| Upload { local, remote: remote.clone(), executable: true });
        Ok((remote, args, upload))
    }

    /// Run `job` on every host together; `local_dir` is the row's local directory (the per-host
    /// job files are written beside it), `row_dir` the name of its directory on the hosts.
    pub fn run_row(
        &self,
        run: &str,
        job: &Job,
        resolved: &Resolved,
        local_dir: &Path,
        timeout: Duration,
    ) -> Result<Vec<HostSteps>, String> {
        let row_dir = local_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "row".into());
        let mut jobs = Vec::new();
        let mut local_jobs = Vec::new();
        for (i, host) in self.hosts.iter().enumerate() {
            let base = self.base(run, i);
            let (exe, mut args, bin) = self.worker(resolved, i, &base)?;
            let mut uploads: Vec<Upload> = bin.into_iter().collect();
            let mut hj = job.clone();
            hj.dir = PathBuf::from(format!("{base}/{row_dir}"));
            if let Some(plan) = &job.plan {
                let remote = format!("{base}/plan-{row_dir}.kvbplan");
                uploads.push(Upload { local: plan.clone(), remote: remote.clone(), executable: false });
                hj.plan = Some(PathBuf::from(remote));
            }
            let local_job = local_dir.with_extension(format!("h{}.job.json", i + 1));
            let text = serde_json::to_string(&hj).map_err(|e| e.to_string())?;
            super::process::write_private(&local_job, &text).map_err(|e| format!("{}: {e}", local_job.display()))?;
            let rjob = format!("{base}/{row_dir}.job.json");
            uploads.push(Upload { local: local_job.clone(), remote: rjob.clone(), executable: false });
            local_jobs.push(local_job);
            args.push(rjob);
            let dir = hj.dir.display().to_string();
            let mut line = format!("umask 077 && mkdir -p {} && exec {}", hosts::sh_quote(&dir), hosts::sh_quote(&exe));
            for a in &args {
                line.push(' ');
                line.push_str(&hosts::sh_quote(a));
            }
            jobs.push(HostJob { host: host.clone(), uploads, command: vec!["sh".into(), "-c".into(), line] });
        }
        let outputs = hosts::run_together(&self.ssh, &jobs, timeout);
        // Uploaded (or not needed any more): a job may carry a server's credential.
        for j in &local_jobs {
            let _ = std::fs::remove_file(j);
        }
        let outputs = outputs?;
        Ok(outputs.iter().enumerate().map(|(i, o)| host_steps(i, o)).collect())
    }

    /// The clocks of the hosts, for the result.
    pub fn clocks(&self, got: &[HostSteps]) -> Vec<HostClock> {
        got.iter()
            .map(|h| HostClock {
                tag: h.tag.clone(),
                host: h.target.clone(),
                offset_ns: h.clock.offset_ns,
                rtt_ns: h.clock.rtt_ns,
            })
            .collect()
    }
}

/// A host's output as events: its steps by index and how it ended.
fn host_steps(index: usize, output: &HostOutput) -> HostSteps {
    let mut h = HostSteps {
        tag: format!("h{}", index + 1),
        target: output.host.clone(),
        clock: output.clock,
        hello: None,
        steps: BTreeMap::new(),
        error: None,
    };
    let mut done = false;
    for line in output.lines.iter().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Event>(line) {
            Ok(Event::Step(s)) => {
                h.steps.insert(s.index, *s);
            }
            Ok(e @ Event::Hello { .. }) => h.hello = Some(e),
            Ok(Event::Error { message }) => h.error = Some(message),
            Ok(Event::Done {}) => done = true,
            Ok(Event::Progress { .. }) => {}
            Err(_) => {
                let shown: String = line.chars().take(120).collect();
                h.error = Some(format!("worker printed a line that is not a protocol event: {shown:?}"));
            }
        }
    }
    if h.error.is_none() && (!done || !output.success) {
        let why = crate::orchestrate::process::meaningful_line(&output.stderr).unwrap_or_else(|| "no message".into());
        h.error = Some(format!("the worker on {} ended before finishing: {why}", output.host));
    }
    h
}

/// Merged steps by index, and per step how far apart the hosts started (ns).
pub type Merged = (BTreeMap<usize, StepResult>, BTreeMap<usize, u64>);

/// The merged steps of the hosts (those that reported every step the first did), with the
/// common wall time: from the earliest start to the latest end on this machine's clock.
pub fn merge(got: &[HostSteps]) -> Result<Merged, String> {
    let per_host: Vec<(String, Vec<StepResult>)> =
        got.iter().map(|h| (h.tag.clone(), h.steps.values().cloned().collect())).collect();
    let merged = hosts::merge_steps(&per_host)?;
    let mut out = BTreeMap::new();
    let mut skew = BTreeMap::new();
    for mut m in merged {
        if let Some((wall, spread)) = common_wall(got, m.index) {
            m.wall_ns = wall;
            skew.insert(m.index, spread);
        }
        out.insert(m.index, m);
    }
    Ok((out, skew))
}

/// (common wall time, start spread) of step `index` when every host reported its start.
pub fn common_wall(got: &[HostSteps], index: usize) -> Option<(u64, u64)> {
    let mut spans = Vec::new();
    for h in got {
        let s = h.steps.get(&index)?;
        if s.start_unix_ns == 0 {
            return None;
        }
        let start = s.start_unix_ns as i128 - h.clock.offset_ns as i128;
        spans.push((start, start + s.wall_ns as i128));
    }
    let first = spans.iter().map(|s| s.0).min()?;
    let last_start = spans.iter().map(|s| s.0).max()?;
    let end = spans.iter().map(|s| s.1).max()?;
    Some(((end - first).max(0) as u64, (last_start - first).max(0) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(tag: &str, offset_ns: i64, start: u64, wall: u64) -> HostSteps {
        let s = StepResult { index: 3, step: "ops".into(), start_unix_ns: start, wall_ns: wall, ..Default::default() };
        HostSteps {
            tag: tag.into(),
            target: "x".into(),
            clock: ClockOffset { offset_ns, rtt_ns: 10 },
            hello: None,
            steps: BTreeMap::from([(3, s)]),
            error: None,
        }
    }

    #[test]
    fn the_common_wall_time_runs_from_the_first_start_to_the_last_end_on_one_clock() {
        // h2's clock is 5 000 ns ahead: its start at 11 000 is 6 000 here.
        let got = [host("h1", 0, 5_000, 10_000), host("h2", 5_000, 11_000, 12_000)];
        assert_eq!(common_wall(&got, 3), Some((13_000, 1_000)));
        let unknown = [host("h1", 0, 0, 10_000), host("h2", 0, 1, 1)];
        assert_eq!(common_wall(&unknown, 3), None, "a host without its start: no common wall time");
    }
}
