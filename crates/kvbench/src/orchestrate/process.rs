//! A worker process: spawned in a process group of its own, followed event by event with a
//! timeout, and killed as a whole group (whatever it forked too) on timeout or a stopping signal. When it
//! fails, the reason says what happened: the signal by name, the worker's last meaningful error
//! line (not a backtrace tail or a register dump), and on a full disk the file system and its
//! free space.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kvbench_model::job::Event;

/// Process group of the worker running now (0 = none), for the signal thread.
static WORKER_GROUP: AtomicI32 = AtomicI32::new(0);
/// The first stopping signal received (0: none): no new engine starts, the running one is
/// stopped.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The result file as last written, said when a late signal ends kvbench at once.
static RESULT_PATH: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The signals that stop a run: Ctrl-C, `kill`/`timeout`/systemd/CI runners, a closed terminal.
pub const STOPPING: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// After a first signal, how long kvbench may take to stop the engine and the servers and write
/// the results; a second signal within it changes nothing, a later one exits at once.
pub const GRACE: Duration = Duration::from_secs(10);

/// Has a stopping signal arrived during this run?
pub fn interrupted() -> bool {
    stop_signal().is_some()
}

/// The first stopping signal received, if any.
pub fn stop_signal() -> Option<i32> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// A run's exit status after signal `sig`: 128 + its number, as a shell reports a program the
/// signal ended (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
pub fn exit_status(sig: i32) -> i32 {
    128 + sig
}

/// "interrupted by SIGTERM", as a row's error and on screen.
pub fn interruption() -> String {
    match stop_signal() {
        Some(libc::SIGINT) => "interrupted by the user (Ctrl-C, SIGINT)".into(),
        Some(sig) => format!("interrupted by {}", signal_name(sig)),
        None => "interrupted".into(),
    }
}

/// Where the results were last written (after each row).
pub fn written_to(path: &Path) {
    if let Ok(mut p) = RESULT_PATH.lock() {
        *p = Some(path.to_path_buf());
    }
}

/// SIGINT, SIGTERM and SIGHUP alike: the first marks the run interrupted and kills the running
/// worker's whole group; the run then records the row as interrupted, stops its servers,
/// removes its directories and writes its results. Before the engines start (`running` false)
/// or at a signal after [`GRACE`], kvbench exits at once, saying where the finished rows are;
/// the kernel's parent-death signal ends any server or worker with it.
pub fn install_signals(running: &'static AtomicBool) {
    let mut signals = match signal_hook::iterator::Signals::new(STOPPING) {
        Ok(s) => s,
        Err(e) => return crate::note!("WARNING: cannot handle signals ({e}): a signal ends the run at once"),
    };
    std::thread::spawn(move || {
        let mut first: Option<Instant> = None;
        for sig in signals.forever() {
            on_signal(sig, running, &mut first);
        }
    });
}

fn on_signal(sig: i32, running: &AtomicBool, first: &mut Option<Instant>) {
    let name = signal_name(sig);
    kill_group(WORKER_GROUP.load(Ordering::SeqCst));
    match *first {
        None => {
            SIGNAL.store(sig, Ordering::SeqCst);
            *first = Some(Instant::now());
            if !running.load(Ordering::SeqCst) {
                exit_now(&name);
            }
            crate::note!(
                "\n{name}: stopping the running engine, then the servers; the finished rows are written \
                 (a signal within {} s waits for that, a later one exits at once)",
                GRACE.as_secs()
            );
        }
        Some(t) if t.elapsed() < GRACE => crate::note!("{name} again: already stopping, the results are being written"),
        Some(_) => exit_now(&name),
    }
}

/// Exit at once with the first signal's status, saying where the finished rows are.
fn exit_now(name: &str) -> ! {
    let path = RESULT_PATH.lock().ok().and_then(|p| p.clone());
    match path {
        Some(p) => crate::note!("\n{name}: exiting now; the finished rows are in {}", p.display()),
        None => crate::note!("\n{name}: exiting now; no row had finished"),
    }
    std::process::exit(exit_status(stop_signal().unwrap_or(libc::SIGINT)))
}

fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: signalling the process group of a worker we spawned.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
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
    on_spawn: &mut dyn FnMut(i32),
    on_event: &mut dyn FnMut(&Event),
) -> Result<(), String> {
    if interrupted() {
        return Err("interrupted before the worker started".into());
    }
    let (mut child, rx, reader) = spawn_worker(cmd, log)?;
    let pgid = child.id() as i32;
    on_spawn(pgid);
    // A deadline beyond what Instant can hold is no deadline.
    let deadline = Instant::now().checked_add(timeout);
    let (done, mut failure, eof) = follow(&rx, pgid, deadline, timeout, on_event);
    let status = wait_until(&mut child, deadline, pgid);
    WORKER_GROUP.store(0, Ordering::SeqCst);
    if status.as_ref().is_ok_and(|(_, late)| *late) && failure.is_none() {
        failure = Some(format!(
            "worker closed its output but did not exit within {} s; its process group was killed",
            timeout.as_secs()
        ));
    }
    let status = status.map(|(s, _)| s);
    if eof {
        let _ = reader.join();
    } // else: a process outside the group may hold the pipe; the thread ends when it closes.
    if interrupted() {
        return Err(interruption());
    }
    if let Some(f) = failure {
        return Err(f);
    }
    let status = status?;
    if !done {
        return Err(format!("worker {} before finishing{}", how_it_ended(&status), explain(log)));
    }
    Ok(())
}

/// Start the worker in its own process group, killed with kvbench, its stderr to `log`; a
/// thread passes its stdout's lines on.
fn spawn_worker(cmd: &mut Command, log: &Path) -> Result<(Child, mpsc::Receiver<Line>, JoinHandle<()>), String> {
    let log_file = std::fs::File::create(log).map_err(|e| format!("creating {}: {e}", log.display()))?;
    {
        use std::os::unix::process::CommandExt;
        // Its own group: Ctrl-C at the terminal reaches kvbench only, and a kill reaches
        // everything the worker forked.
        cmd.process_group(0);
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
    WORKER_GROUP.store(child.id() as i32, Ordering::SeqCst);
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
    Ok((child, rx, reader))
}

/// Read events until done, end of output, a bad line or the timeout (then the group is
/// killed). Returns (done seen, failure, end of output seen).
fn follow(
    rx: &mpsc::Receiver<Line>,
    pgid: i32,
    deadline: Option<Instant>,
    timeout: Duration,
    on_event: &mut dyn FnMut(&Event),
) -> (bool, Option<String>, bool) {
    let mut done = false;
    loop {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now())).unwrap_or(Duration::from_secs(3600));
        match rx.recv_timeout(left) {
            Ok(Line::Text(l)) => {
                if l.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Event>(&l) {
                    Ok(ev) => {
                        done |= matches!(ev, Event::Done {});
                        on_event(&ev);
                    }
                    Err(_) => {
                        kill_group(pgid);
                        let shown: String = l.chars().take(120).collect();
                        let f = format!("worker printed a line that is not a protocol event: {shown:?}");
                        return (done, Some(f), false);
                    }
                }
            }
            Ok(Line::Eof) => return (done, None, true),
            Err(mpsc::RecvTimeoutError::Timeout) if deadline.is_none() => continue,
            Err(_) => {
                kill_group(pgid);
                let f = format!("worker did not finish within {} s; its process group was killed", timeout.as_secs());
                return (done, Some(f), false);
            }
        }
    }
}

/// The worker's exit status, its group killed at `deadline` if it still runs then (a worker
/// that closed its output is not waited for beyond its timeout); true when it was.
fn wait_until(
    child: &mut Child,
    deadline: Option<Instant>,
    pgid: i32,
) -> Result<(std::process::ExitStatus, bool), String> {
    let mut late = false;
    loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok((s, late));
        }
        if !late && deadline.is_some_and(|d| Instant::now() >= d) {
            kill_group(pgid);
            late = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// "killed by signal SIGSEGV (9)", "exited with code 3".
fn how_it_ended(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (_, Some(sig)) => format!("was killed by signal {} ({sig})", signal_name(sig)),
        (Some(c), _) => format!("exited with code {c}"),
        _ => "ended".into(),
    }
}

pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.into()
}

/// ": <last meaningful error line>" from the log, plus the data file system's state when it
/// is (nearly) full; empty when there is nothing to say.
fn explain(log: &Path) -> String {
    let text = std::fs::read(log).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let mut out = match meaningful_line(&text) {
        Some(l) => format!(": {l}"),
        None => String::new(),
    };
    // The job's directory is where the worker writes: the log sits beside it.
    let data = log.parent().unwrap_or(Path::new("."));
    let full = text.contains("No space left") || text.contains("ENOSPC") || disk_nearly_full(data);
    if full {
        out.push_str(&format!("; {}", disk_state(data)));
    }
    out
}

/// The last line of a worker's log that says what went wrong, skipping backtraces, Go
/// goroutine and register dumps and Python traceback frames.
pub fn meaningful_line(log: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect();
    // A Rust panic puts its message on the line after "panicked at FILE:LINE:COL:".
    for (i, l) in lines.iter().enumerate().rev() {
        if l.contains("panicked at") {
            let msg = lines.get(i + 1).filter(|m| !is_noise(m)).map(|m| format!(" {}", m.trim())).unwrap_or_default();
            return Some(format!("{}{msg}", l.trim()));
        }
    }
    let keyed = lines.iter().rev().find(|l| !is_noise(l) && says_error(l));
    keyed.or_else(|| lines.iter().rev().find(|l| !is_noise(l))).map(|l| shorten(l.trim()))
}

fn says_error(line: &str) -> bool {
    let low = line.to_ascii_lowercase();
    ["error", "panic:", "fatal", "exception", "no space left", "failed", "cannot", "denied"]
        .iter()
        .any(|k| low.contains(k))
}

/// Lines that are context, not the error: backtrace frames, dumps, notes.
fn is_noise(line: &str) -> bool {
    let t = line.trim_start();
    let indented = line.starts_with(' ') || line.starts_with('\t');
    let register = t.split_whitespace().nth(1).is_some_and(|v| v.starts_with("0x"))
        && t.split_whitespace().next().is_some_and(|r| r.len() <= 6 && r.chars().all(|c| c.is_ascii_alphanumeric()));
    indented
        || register
        || t.starts_with("stack backtrace")
        || t.starts_with("note: ")
        || t.starts_with("goroutine ")
        || t.starts_with("created by ")
        || t.starts_with("[signal ")
        || t.starts_with("Traceback (most recent call last)")
        || t.starts_with("exit status")
}

fn shorten(line: &str) -> String {
    if line.chars().count() > 300 {
        format!("{}…", line.chars().take(300).collect::<String>())
    } else {
        line.to_string()
    }
}

/// (free bytes, total bytes) of the file system holding `path`.
fn disk_space(path: &Path) -> Option<(u64, u64)> {
    kvbench_policy::sizeguard::disk_space(path).ok()
}

/// Less than 64 MiB or 1% free.
pub fn disk_nearly_full(path: &Path) -> bool {
    disk_space(path).is_some_and(|(free, total)| free < (64 << 20).min(total / 100 + 1))
}

/// "file system ext4 at /data: 1.2 MiB free of 10 GiB".
pub fn disk_state(path: &Path) -> String {
    let fs = kvbench_worker::sys::filesystem(path);
    match disk_space(path) {
        Some((free, total)) => format!(
            "the data file system ({fs}, holding {}) has {} free of {}",
            path.display(),
            kvbench_report::human_bytes(free),
            kvbench_report::human_bytes(total)
        ),
        None => format!("the data file system ({fs}, holding {}) could not be inspected", path.display()),
    }
}

/// A file only kvbench's user can read: a job may carry a server's credential.
pub fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rust_panic_gives_its_message_not_the_backtrace() {
        let log = "thread 'main' panicked at src/x.rs:3:5:\nindex out of bounds\nstack backtrace:\n   0: foo\n             at src/x.rs:3\nnote: run with `RUST_BACKTRACE=full`";
        assert_eq!(meaningful_line(log).unwrap(), "thread 'main' panicked at src/x.rs:3:5: index out of bounds");
    }

    #[test]
    fn a_go_crash_gives_the_panic_not_the_registers() {
        let log = "panic: runtime error: invalid memory address\n[signal SIGSEGV: segmentation violation]\n\ngoroutine 1 [running]:\nmain.f()\n\t/x/main.go:3 +0x1\nrax    0x0\nrbx    0x1\nrip    0x4000\nexit status 2";
        assert_eq!(meaningful_line(log).unwrap(), "panic: runtime error: invalid memory address");
    }

    #[test]
    fn a_python_traceback_gives_the_exception() {
        let log = "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    f()\nOSError: [Errno 28] No space left on device";
        assert_eq!(meaningful_line(log).unwrap(), "OSError: [Errno 28] No space left on device");
    }

    #[test]
    fn signals_have_names() {
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(libc::SIGABRT), "SIGABRT");
    }
}

#[cfg(test)]
mod group_tests {
    use super::*;

    #[test]
    fn a_timeout_kills_the_whole_group_even_a_child_holding_stdout() {
        let d = tempfile::tempdir().unwrap();
        let marker = d.path().join("grandchild");
        // The inner shell writes its own pid, then becomes a sleep that inherits stdout.
        let script = format!("sh -c 'echo $$ > {}; exec sleep 600' & exec sleep 600", marker.display());
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &script]);
        let t0 = Instant::now();
        let e = follow_worker(&mut cmd, &d.path().join("w.log"), Duration::from_millis(500), &mut |_| {}, &mut |_| {})
            .unwrap_err();
        assert!(e.contains("did not finish within") && e.contains("process group was killed"), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(10), "blocked by the child holding stdout: {:?}", t0.elapsed());
        let pid: i32 = std::fs::read_to_string(&marker).unwrap().trim().parse().unwrap();
        assert_ne!(pid, 0);
        std::thread::sleep(Duration::from_millis(200));
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let alive = state.rsplit_once(") ").is_some_and(|(_, a)| !a.starts_with('Z'));
        assert!(!alive, "the worker's child survived: {state}");
    }
}
