//! A worker process: spawned, followed event by event with a timeout, killed on Ctrl-C.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kvbench_core::job::Event;

/// Pid of the worker running now (0 = none), for the Ctrl-C handler.
pub static CHILD: AtomicI32 = AtomicI32::new(0);

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
