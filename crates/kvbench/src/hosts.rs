//! Load from many hosts: run one worker command per host over SSH, started together, and merge
//! what they return.
//!
//! For each host, on a thread of its own: upload the files the job needs (job, plan, binary)
//! through `ssh HOST 'cat > FILE'`, measure the host's clock against ours over one SSH session
//! (NTP's way: the sample with the shortest round trip, its midpoint against the remote
//! reading), then start the worker behind a barrier: a small `sh` wrapper prints `ready` and
//! waits for one line on its standard input, a start time in the host's own clock, sleeps until
//! then and `exec`s the worker. When every host is ready, kvbench picks a start a little ahead
//! and sends each host that instant translated by its offset, so the phases start together
//! within the offsets' uncertainty (half the best round trip), not within SSH's start-up time.
//!
//! SSH always runs with `BatchMode=yes` (never a prompt), the user's key or `-i KEY`, and the
//! port given. The remote shell must be POSIX with GNU `date +%s%N` (Linux hosts).
//!
//! [`merge_steps`] turns the per-host step results into the merged row: counters add up,
//! histograms add up (merging HdrHistograms is adding counts), wall time is the longest host's.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kvbench_model::job::{Interval, StepResult, Usage};
use kvbench_worker::clock::{decode_histogram, encode_histogram};

/// `[user@]host`, as given to `--hosts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub user: Option<String>,
    pub name: String,
}

impl Host {
    pub fn target(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// Parse `user@h1,h2,user@h3`; the error names the entry and what is wrong with it.
pub fn parse_hosts(list: &str) -> Result<Vec<Host>, String> {
    let mut out = Vec::new();
    for (i, entry) in list.split(',').map(str::trim).enumerate() {
        let (user, name) = match entry.rsplit_once('@') {
            Some((u, h)) => (Some(u.to_string()), h.to_string()),
            None => (None, entry.to_string()),
        };
        let bad = |why: &str| format!("--hosts entry {} `{entry}`: {why} (expected [user@]host)", i + 1);
        if name.is_empty() {
            return Err(bad("no host"));
        }
        if user.as_deref() == Some("") {
            return Err(bad("empty user"));
        }
        if entry.chars().any(|c| c.is_whitespace() || "'\"`$;&|<>\\".contains(c)) || name.starts_with('-') {
            return Err(bad("characters a host name cannot have"));
        }
        out.push(Host { user, name });
    }
    Ok(out)
}

/// How to reach the hosts.
#[derive(Debug, Clone, Default)]
pub struct Ssh {
    /// `ssh` binary (default: `ssh` in PATH).
    pub program: Option<PathBuf>,
    pub port: Option<u16>,
    /// `-i KEY`; without it, the user's own keys and agent.
    pub identity: Option<PathBuf>,
    /// More `-o NAME=VALUE` options (known-hosts file, timeouts).
    pub options: Vec<String>,
}

impl Ssh {
    fn command(&self, host: &Host, remote: &str) -> Command {
        let mut c = Command::new(self.program.clone().unwrap_or_else(|| "ssh".into()));
        c.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]);
        for o in &self.options {
            c.args(["-o", o]);
        }
        if let Some(p) = self.port {
            c.args(["-p", &p.to_string()]);
        }
        if let Some(i) = &self.identity {
            c.arg("-i").arg(i);
        }
        c.arg("--").arg(host.target()).arg(remote);
        c
    }

    /// Run `remote` on `host` to completion, feeding it `input`; its standard output.
    pub fn run(&self, host: &Host, remote: &str, input: &[u8]) -> Result<Vec<u8>, String> {
        let mut child = self
            .command(host, remote)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: cannot run ssh: {e}", host.target()))?;
        let mut stdin = child.stdin.take().expect("piped");
        let input = input.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().map_err(|e| format!("{}: ssh: {e}", host.target()))?;
        let _ = writer.join();
        if !out.status.success() {
            return Err(format!(
                "{}: `{remote}` failed ({}): {}",
                host.target(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(out.stdout)
    }
}

/// Quote one word for a POSIX shell.
pub fn sh_quote(text: &str) -> String {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b)) {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A file to put on a host before its worker starts.
#[derive(Debug, Clone)]
pub struct Upload {
    pub local: PathBuf,
    /// Absolute path on the host; its directory is created.
    pub remote: String,
    pub executable: bool,
}

/// What one host runs.
#[derive(Debug, Clone)]
pub struct HostJob {
    pub host: Host,
    pub uploads: Vec<Upload>,
    /// The worker's command line as shell words (quoted here).
    pub command: Vec<String>,
}

/// The host's clock minus ours, and how sure we are of it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClockOffset {
    pub offset_ns: i64,
    /// Round trip of the sample used; the offset is within half of it.
    pub rtt_ns: u64,
}

/// What one host returned.
#[derive(Debug, Clone)]
pub struct HostOutput {
    pub host: String,
    pub clock: ClockOffset,
    /// The worker's standard output, line by line (events).
    pub lines: Vec<String>,
    pub stderr: String,
    pub success: bool,
}

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}

/// Pick the sample with the shortest round trip: (local send, remote reading, local receive).
pub fn best_offset(samples: &[(i64, i64, i64)]) -> Option<ClockOffset> {
    samples
        .iter()
        .min_by_key(|(t0, _, t1)| t1 - t0)
        .map(|&(t0, remote, t1)| ClockOffset { offset_ns: remote - (t0 + (t1 - t0) / 2), rtt_ns: (t1 - t0) as u64 })
}

/// Measure `host`'s clock against ours with `samples` round trips over one SSH session.
pub fn clock_offset(ssh: &Ssh, host: &Host, samples: usize) -> Result<ClockOffset, String> {
    let mut child = ssh
        .command(host, "while read -r _; do date +%s%N; done")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: cannot run ssh: {e}", host.target()))?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut got = Vec::with_capacity(samples);
    let mut line = String::new();
    for _ in 0..samples.max(1) {
        let t0 = now_ns();
        if stdin.write_all(b"t\n").and_then(|_| stdin.flush()).is_err() {
            break;
        }
        line.clear();
        if stdout.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let t1 = now_ns();
        let remote: i64 =
            line.trim().parse().map_err(|_| format!("{}: `date +%s%N` answered `{}`", host.target(), line.trim()))?;
        got.push((t0, remote, t1));
    }
    drop(stdin);
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let _ = child.wait();
    best_offset(&got).ok_or_else(|| format!("{}: cannot read the host's clock: {}", host.target(), err.trim()))
}

/// The wrapper that holds the worker at the barrier: `ready`, one line (start time in the
/// host's clock, ns since the epoch), sleep until then, exec the worker.
fn barrier_script(command: &[String]) -> String {
    let cmd: Vec<String> = command.iter().map(|w| sh_quote(w)).collect();
    format!(
        "echo ready; read -r at || exit 97; now=$(date +%s%N); d=$((at - now)); \
         if [ \"$d\" -gt 0 ]; then sleep \"$((d / 1000000000)).$(printf %09d $((d % 1000000000)))\"; fi; \
         exec {} </dev/null",
        cmd.join(" ")
    )
}

fn upload(ssh: &Ssh, host: &Host, upload: &Upload) -> Result<(), String> {
    let data = std::fs::read(&upload.local).map_err(|e| format!("{}: {e}", upload.local.display()))?;
    let dir = upload.remote.rsplit_once('/').map(|(d, _)| d).filter(|d| !d.is_empty()).unwrap_or("/");
    let mut remote = format!("mkdir -p {} && cat > {}", sh_quote(dir), sh_quote(&upload.remote));
    if upload.executable {
        remote.push_str(&format!(" && chmod 755 {}", sh_quote(&upload.remote)));
    }
    ssh.run(host, &remote, &data).map(|_| ())
}

/// A worker started and waiting at the barrier.
struct Waiting {
    host: Host,
    clock: ClockOffset,
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

fn prepare_host(ssh: &Ssh, job: &HostJob) -> Result<Waiting, String> {
    for u in &job.uploads {
        upload(ssh, &job.host, u)?;
    }
    let clock = clock_offset(ssh, &job.host, 8)?;
    let mut child = ssh
        .command(&job.host, &format!("sh -c {}", sh_quote(&barrier_script(&job.command))))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: cannot run ssh: {e}", job.host.target()))?;
    let stdin = child.stdin.take().expect("piped");
    let stdout = BufReader::new(child.stdout.take().expect("piped"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(l) if l == "ready" => Ok(Waiting { host: job.host.clone(), clock, child, stdin, lines: rx }),
        other => {
            let _ = child.kill();
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let _ = child.wait();
            Err(format!("{}: the worker did not reach the barrier ({other:?}): {}", job.host.target(), err.trim()))
        }
    }
}

/// Upload, measure clocks, start every host's worker behind the barrier, release them together
/// and collect their output. Hosts are prepared in parallel; a host that fails to prepare fails
/// the whole run before any worker starts. A worker still running after `timeout` is cut off
/// (its ssh is killed) and reported as failed.
pub fn run_together(ssh: &Ssh, jobs: &[HostJob], timeout: Duration) -> Result<Vec<HostOutput>, String> {
    let prepared: Vec<Result<Waiting, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs.iter().map(|j| s.spawn(move || prepare_host(ssh, j))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("host thread panicked".into()))).collect()
    });
    let mut waiting = Vec::new();
    let mut errors = Vec::new();
    for p in prepared {
        match p {
            Ok(w) => waiting.push(w),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        for mut w in waiting {
            let _ = w.child.kill();
            let _ = w.child.wait();
        }
        return Err(errors.join("\n"));
    }
    // Far enough ahead for every go-line to arrive: the slowest round trip, with a floor.
    let worst = waiting.iter().map(|w| w.clock.rtt_ns).max().unwrap_or(0) as i64;
    let start = now_ns() + (4 * worst).max(100_000_000);
    for w in &mut waiting {
        let at = start + w.clock.offset_ns;
        let _ = writeln!(w.stdin, "{at}").and_then(|_| w.stdin.flush());
    }
    let deadline = Instant::now() + timeout;
    Ok(waiting.into_iter().map(|w| collect(w, deadline)).collect())
}

fn collect(mut waiting: Waiting, deadline: Instant) -> HostOutput {
    drop(waiting.stdin);
    let mut lines = Vec::new();
    let mut timed_out = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match waiting.lines.recv_timeout(left) {
            Ok(l) => lines.push(l),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                timed_out = true;
                let _ = waiting.child.kill();
                break;
            }
        }
    }
    let mut stderr = String::new();
    if let Some(mut e) = waiting.child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    let status = waiting.child.wait();
    if timed_out {
        stderr.push_str("\n(timed out: ssh killed)");
    }
    HostOutput {
        host: waiting.host.target(),
        clock: waiting.clock,
        lines,
        stderr,
        success: !timed_out && status.map(|s| s.success()).unwrap_or(false),
    }
}

/// Add histogram `more` (encoded) into `sum` (encoded); either may be missing.
fn add_hist(sum: Option<&String>, more: &str) -> Result<String, String> {
    let Some(sum) = sum else { return Ok(more.to_string()) };
    let mut h = decode_histogram(sum)?;
    h.add(decode_histogram(more)?).map_err(|e| format!("histograms do not merge: {e:?}"))?;
    Ok(encode_histogram(&h))
}

fn add_usage(sum: &mut Usage, more: &Usage) {
    sum.cpu_user_ns += more.cpu_user_ns;
    sum.cpu_sys_ns += more.cpu_sys_ns;
    sum.max_rss_kb = sum.max_rss_kb.max(more.max_rss_kb);
    sum.io_read_bytes += more.io_read_bytes;
    sum.io_write_bytes += more.io_write_bytes;
}

/// Intervals of the same start offset add up: the hosts' phases started together (within the
/// start spread the merged row reports). A host's interval without a peer is kept as it is.
fn add_intervals(sum: &mut Vec<Interval>, more: &[Interval]) -> Result<(), String> {
    for iv in more {
        match sum.iter_mut().find(|m| m.t_ms == iv.t_ms) {
            Some(m) => {
                m.ops += iv.ops;
                m.errors += iv.errors;
                m.hdr = add_hist(Some(&m.hdr), &iv.hdr)?;
            }
            None => sum.push(iv.clone()),
        }
    }
    sum.sort_by_key(|i| i.t_ms);
    Ok(())
}

fn add_step(into: &mut StepResult, step: &StepResult, host: &str) -> Result<(), String> {
    if into.step != step.step {
        return Err(format!("step {}: {} here, {} on {host}", step.index, into.step, step.step));
    }
    if into.error.is_none() {
        into.error = step.error.as_ref().map(|e| format!("{host}: {e}"));
    }
    into.wall_ns = into.wall_ns.max(step.wall_ns);
    into.evicted += step.evicted;
    into.ops += step.ops;
    into.requests += step.requests;
    into.wire = match (into.wire, step.wire) {
        (Some(a), Some(b)) => Some(kvbench_model::engine::Wire {
            commands: a.commands + b.commands,
            round_trips: a.round_trips + b.round_trips,
        }),
        (a, b) => a.or(b),
    };
    into.errors += step.errors;
    for (class, n) in &step.error_classes {
        kvbench_worker::tally::add_error_class(&mut into.error_classes, class, *n);
    }
    into.mismatches += step.mismatches;
    into.missing += step.missing;
    into.busy_ns += step.busy_ns;
    into.busy_max_ns = into.busy_max_ns.max(step.busy_max_ns);
    if into.first_error.is_none() {
        into.first_error = step.first_error.as_ref().map(|e| format!("{host}: {e}"));
    }
    for (kind, h) in &step.hist {
        let merged = add_hist(into.hist.get(kind), h)?;
        into.hist.insert(kind.clone(), merged);
    }
    add_intervals(&mut into.intervals, &step.intervals)?;
    add_usage(&mut into.usage, &step.usage);
    for (k, v) in &step.runtime {
        *into.runtime.entry(k.clone()).or_default() += v;
    }
    Ok(())
}

/// The merged row of a multi-host run: step i of every host merged into one (counters and
/// histograms added, the longest wall time, the first error named by its host). Every host
/// must have run the same steps.
pub fn merge_steps(per_host: &[(String, Vec<StepResult>)]) -> Result<Vec<StepResult>, String> {
    let Some((first_host, first)) = per_host.first() else { return Ok(Vec::new()) };
    let mut merged: Vec<StepResult> = first.clone();
    for m in &mut merged {
        m.error = m.error.take().map(|e| format!("{first_host}: {e}"));
        m.first_error = m.first_error.take().map(|e| format!("{first_host}: {e}"));
    }
    for (host, steps) in &per_host[1..] {
        if steps.len() != merged.len() {
            return Err(format!("{host} returned {} steps, {first_host} {}", steps.len(), merged.len()));
        }
        for (m, s) in merged.iter_mut().zip(steps) {
            add_step(m, s, host)?;
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_parse_with_clear_errors() {
        let h = parse_hosts("alice@h1, h2").unwrap();
        assert_eq!(h[0], Host { user: Some("alice".into()), name: "h1".into() });
        assert_eq!(h[1].target(), "h2");
        assert!(parse_hosts("a@").unwrap_err().contains("entry 1"));
        assert!(parse_hosts("h1,@h2").unwrap_err().contains("entry 2"));
        assert!(parse_hosts("h;rm").is_err());
        assert!(parse_hosts("-oProxyCommand=x").is_err());
    }

    #[test]
    fn the_shortest_round_trip_gives_the_offset() {
        // Remote clock 1 000 ns ahead; the second sample has the shortest round trip.
        let s = [(0, 900 + 1000, 2000), (5000, 5050 + 1000, 5100), (9000, 9400 + 1000, 9900)];
        let o = best_offset(&s).unwrap();
        assert_eq!(o, ClockOffset { offset_ns: 1000, rtt_ns: 100 });
        assert!(best_offset(&[]).is_none());
    }

    #[test]
    fn words_are_quoted_for_sh() {
        assert_eq!(sh_quote("/a/b"), "/a/b");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert!(barrier_script(&["/bin/w".into(), "a b".into()]).ends_with("exec /bin/w 'a b' </dev/null"));
    }
}
