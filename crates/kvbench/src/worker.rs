//! `kvbench worker --job FILE`: the Rust worker. Runs one job of a Rust/C engine and streams
//! protocol events on stdout; everything else it says goes to stderr.

use std::io::Write;
use std::path::Path;

use kvbench_engines::{find, Entry};
use kvbench_model::job::{Event, Job, Step};

/// Test hook: KVBENCH_FAULT=abort|garbage|hang|mute@PHASE[@LABEL] (mute: closes stdout, then hangs)
/// makes the worker (of row LABEL) fail at the start of PHASE, so tests can prove that a
/// broken worker costs its own row and nothing else.
fn fault_at(label: &str, phase: &str) {
    let Ok(f) = std::env::var("KVBENCH_FAULT") else { return };
    let mut parts = f.split('@');
    let (Some(what), Some(at)) = (parts.next(), parts.next()) else { return };
    if at != phase || parts.next().is_some_and(|l| l != label) {
        return;
    }
    match what {
        "abort" => std::process::abort(),
        "garbage" => {
            let _ = writeln!(std::io::stdout(), "this is not an event");
            let _ = std::io::stdout().flush();
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
        "hang" => {
            // Said on stderr (the row's log), so a test signals a worker that really hangs
            // rather than guessing how long the phases before it take on a loaded machine.
            let _ = writeln!(std::io::stderr(), "fault: hanging at {phase}");
            std::thread::sleep(std::time::Duration::from_secs(3600))
        }
        "mute" => {
            // SAFETY: closing our own stdout; nothing writes to it after this.
            unsafe { libc::close(1) };
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
        _ => {}
    }
}

pub fn main(job_path: &Path) -> i32 {
    let stdout = std::io::stdout();
    let emit = |e: Event| {
        let mut out = stdout.lock();
        let _ = writeln!(out, "{}", e.to_line());
        let _ = out.flush();
    };
    let job: Job = match std::fs::read_to_string(job_path)
        .map_err(|e| format!("reading job {}: {e}", job_path.display()))
        .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("job {}: {e}", job_path.display())))
    {
        Ok(j) => j,
        Err(message) => {
            emit(Event::Error { message });
            return 2;
        }
    };
    let desc = match find(&job.engine) {
        Some(Entry::Ready(d)) => d,
        Some(Entry::Missing { why, .. }) => {
            emit(Event::Error { message: format!("engine {} was not built: {why}", job.engine) });
            return 2;
        }
        None => {
            emit(Event::Error { message: format!("unknown engine `{}`", job.engine) });
            return 2;
        }
    };
    // The fault hook fires before the ops step named PHASE ("open": before anything).
    let names: Vec<Option<String>> = job
        .steps
        .iter()
        .map(|st| match st {
            Step::Ops(o) => Some(o.name.clone()),
            _ => None,
        })
        .collect();
    let label = job.label.clone();
    fault_at(&label, "open");
    let mut emit_with_faults = |e: Event| {
        let next = match &e {
            Event::Step(r) => names.get(r.index + 1).cloned().flatten(),
            _ => None,
        };
        emit(e);
        if let Some(p) = next {
            fault_at(&label, &p);
        }
    };
    match kvbench_worker::run_job(&job, desc, &mut emit_with_faults) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}
