//! The progress display of `kvbench run`: an overall line (engine k of n, phase, elapsed,
//! ETA of the whole run) above the bar of the running phase, with whole-number rates.
//!
//! Both lines are one two-line indicatif bar, so the orchestrator's own status lines, printed
//! after the bar is cleared, never interleave with it. The overall figures live in atomics:
//! the bar's template reads them while drawing.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

static RUN_START: OnceLock<Instant> = OnceLock::new();
/// Engine jobs of the run (rows × repetitions), the 1-based one running, phases per job and
/// phases finished of the running job.
static JOBS: AtomicU64 = AtomicU64::new(0);
static JOB: AtomicU64 = AtomicU64::new(0);
static PHASES: AtomicU64 = AtomicU64::new(1);
static PHASES_DONE: AtomicU64 = AtomicU64::new(0);

/// A job starts: `nth` of `of` (1-based).
pub fn engine(nth: usize, of: usize) {
    RUN_START.get_or_init(Instant::now);
    JOB.store(nth as u64, Ordering::Relaxed);
    JOBS.store(of as u64, Ordering::Relaxed);
    PHASES.store(1, Ordering::Relaxed);
    PHASES_DONE.store(0, Ordering::Relaxed);
}

/// The running job has `count` steps, each reported when done.
pub fn steps(count: usize) {
    PHASES.store(count.max(1) as u64, Ordering::Relaxed);
}

/// A step's result arrived.
pub fn phase_done() {
    PHASES_DONE.fetch_add(1, Ordering::Relaxed);
}

/// `h:mm:ss` or `m:ss`.
pub fn clock(elapsed: Duration) -> String {
    let s = elapsed.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// Share of the run done: finished jobs plus the running job's finished phases.
fn done_fraction() -> f64 {
    let (k, n) = (JOB.load(Ordering::Relaxed), JOBS.load(Ordering::Relaxed).max(1));
    let phases = PHASES.load(Ordering::Relaxed) as f64;
    let within = (PHASES_DONE.load(Ordering::Relaxed) as f64 / phases).min(1.0);
    ((k.saturating_sub(1)) as f64 + within) / n as f64
}

/// The overall line: `engine 3 of 17 · 0:42 elapsed · ETA 1:30`.
pub fn overall_line(elapsed: Duration) -> String {
    let (k, n) = (JOB.load(Ordering::Relaxed), JOBS.load(Ordering::Relaxed));
    let mut s = format!("engine {k} of {n} · {} elapsed", clock(elapsed));
    let f = done_fraction();
    if f > 0.0 {
        let left = elapsed.as_secs_f64() / f * (1.0 - f);
        let _ = write!(s, " · ETA {}", clock(Duration::from_secs_f64(left)));
    }
    s
}

fn overall_key(_: &ProgressState, out: &mut dyn Write) {
    let elapsed = RUN_START.get().map(|t| t.elapsed()).unwrap_or_default();
    let _ = out.write_str(&overall_line(elapsed));
}

/// `done/total`, or nothing for a step without a count (open, close).
fn count_key(state: &ProgressState, out: &mut dyn Write) {
    if let Some(len) = state.len().filter(|l| *l > 0) {
        let _ = write!(out, "{}/{len}", state.pos());
    }
}

/// Operations per second as a whole number.
fn rate_key(state: &ProgressState, out: &mut dyn Write) {
    if state.len().is_some_and(|l| l > 0) && state.pos() > 0 {
        let _ = write!(out, "{:.0}/s", state.per_sec());
    }
}

/// Time left in the phase, once it has a count and a rate.
fn phase_eta_key(state: &ProgressState, out: &mut dyn Write) {
    if state.len().is_some_and(|l| l > 0) && state.pos() > 0 {
        let _ = write!(out, "ETA {}", clock(state.eta()));
    }
}

/// Seconds between status lines when stderr is not a terminal (0: none).
static STATUS_S: AtomicU64 = AtomicU64::new(10);

/// `--status-interval`: a status line every `secs` seconds where no bar can be drawn.
pub fn set_status_interval(secs: u64) {
    STATUS_S.store(secs, Ordering::Relaxed);
}

/// One status line: `status 0:42 · engine 3 of 17 · 0:42 elapsed · lmdb get 5123/10000 · 812/s`.
fn status_line(bar: &ProgressBar) -> String {
    let elapsed = RUN_START.get().map(|t| t.elapsed()).unwrap_or_default();
    let mut s = format!("status: {} · {} {}", overall_line(elapsed), bar.prefix(), bar.message());
    if let Some(len) = bar.length().filter(|l| *l > 0) {
        let _ = write!(s, " {}/{len}", bar.position());
        if bar.position() > 0 {
            let _ = write!(s, " · {:.0} ops/s", bar.per_sec());
        }
    }
    s
}

/// Where stderr is not a terminal (CI logs), a status line every `secs` seconds until the bar
/// is finished, as YCSB's `-s` and memtier print theirs.
fn status_lines(bar: ProgressBar, secs: u64) {
    std::thread::spawn(move || {
        let every = Duration::from_secs(secs);
        let mut next = Instant::now() + every;
        while !bar.is_finished() {
            std::thread::sleep(Duration::from_millis(100));
            if Instant::now() >= next && !bar.is_finished() {
                crate::note!("{}", status_line(&bar));
                next += every;
            }
        }
    });
}

/// The bar of one engine's job: the overall line above its phase bar; where stderr is not a
/// terminal, status lines instead.
pub fn phase_bar(show: bool, label: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let secs = STATUS_S.load(Ordering::Relaxed);
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) && secs > 0 {
        let bar = ProgressBar::hidden();
        bar.set_prefix(label.to_string());
        status_lines(bar.clone(), secs);
        return bar;
    }
    let bar = ProgressBar::new(0);
    let style =
        ProgressStyle::with_template("{overall}\n{prefix:>16.bold} {msg:<12} [{bar:30}] {count} {rate} {phase_eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .with_key("overall", overall_key)
            .with_key("count", count_key)
            .with_key("rate", rate_key)
            .with_key("phase_eta", phase_eta_key)
            .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(label.to_string());
    bar.enable_steady_tick(Duration::from_millis(500));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overall_line_counts_engines_and_estimates_the_rest() {
        engine(3, 4);
        steps(2);
        phase_done();
        // 2.5 of 4 jobs done in 50 s: 30 s to go.
        assert_eq!(overall_line(Duration::from_secs(50)), "engine 3 of 4 · 0:50 elapsed · ETA 0:30");
        assert_eq!(clock(Duration::from_secs(3725)), "1:02:05");
    }
}
