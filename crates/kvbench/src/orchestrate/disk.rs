//! What the disk saw for one row: bytes every process of the row (the worker's process group
//! and its servers' groups) read from and wrote to storage, as `/proc/PID/io` counts them
//! (`read_bytes`; `write_bytes` less `cancelled_write_bytes`), with the store's allocated
//! bytes and the row cgroup's memory. Sampled every interval by a thread, and at each step's
//! end by the event handler, so each phase gets its own bytes and timeline.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kvbench_model::result::{Disk, DiskInterval};

use super::budget::RowGroup;

/// One reading of the row's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    pub unix_ns: u64,
    pub read: u64,
    pub write: u64,
    /// Written, then truncated or deleted before writeback: never reached the device.
    pub cancelled: u64,
    pub space: u64,
    /// The store's file lengths summed.
    pub files: u64,
    pub memory: u64,
}

/// How to read the row's counters: its process groups, its store's directory, its cgroup.
#[derive(Clone)]
pub struct Probe {
    /// The worker's process group, known once it is spawned (0 before).
    worker: Arc<AtomicI32>,
    servers: Vec<i32>,
    dir: PathBuf,
    group: Option<Arc<RowGroup>>,
}

impl Probe {
    pub fn new(servers: Vec<i32>, dir: PathBuf, group: Option<Arc<RowGroup>>) -> Probe {
        Probe { worker: Arc::default(), servers, dir, group }
    }

    /// The worker was spawned as process group `pgid`.
    pub fn set_worker(&self, pgid: i32) {
        self.worker.store(pgid, Ordering::SeqCst);
    }

    pub fn take(&self) -> Sample {
        let mut groups = self.servers.clone();
        groups.push(self.worker.load(Ordering::SeqCst));
        let (read, write, cancelled) = group_io(&groups);
        let (space, files) = kvbench_worker::sys::space(&self.dir);
        Sample {
            unix_ns: unix_ns(),
            read,
            write,
            cancelled,
            space,
            files,
            memory: self.group.as_ref().map(|g| g.usage()).unwrap_or(0),
        }
    }

    /// Share of the store's file pages in the page cache now.
    pub fn cached(&self) -> Option<f64> {
        kvbench_worker::sys::residency(&self.dir)
    }
}

/// Storage bytes (read, written, cancelled) of every process whose group is in `groups`.
/// Files a store writes beside its data, by name: write-ahead logs and journals (RocksDB's,
/// LevelDB's and Pebble's `NNNNNN.log`, SQLite's `-wal` and `-journal`, Kyoto Cabinet's `.wal`,
/// Badger's value log, which holds small values' log), WiredTiger's log and the log files it
/// preallocates, and RocksDB's text info logs. A row's space states them apart, so a store that
/// preallocates 300 MiB of log is not read as 300 MiB of data.
pub fn is_log_file(name: &str) -> bool {
    const SUFFIXES: [&str; 5] = [".log", "-wal", "-journal", ".wal", ".vlog"];
    const PREFIXES: [&str; 3] = ["WiredTigerLog.", "WiredTigerPreplog.", "LOG.old."];
    name == "LOG" || SUFFIXES.iter().any(|s| name.ends_with(s)) || PREFIXES.iter().any(|p| name.starts_with(p))
}

fn group_io(groups: &[i32]) -> (u64, u64, u64) {
    let (mut read, mut write, mut cancelled) = (0, 0, 0);
    let Ok(rd) = std::fs::read_dir("/proc") else { return (0, 0, 0) };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if !process_group(pid).is_some_and(|g| g > 0 && groups.contains(&g)) {
            continue;
        }
        if let Some((r, w, c)) = process_io(pid) {
            read += r;
            write += w;
            cancelled += c;
        }
    }
    (read, write, cancelled)
}

/// Field 5 of /proc/PID/stat, after the command name (which may hold spaces and parentheses).
pub fn process_group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.split_whitespace().nth(2)?.parse().ok()
}

fn process_io(pid: i32) -> Option<(u64, u64, u64)> {
    parse_io(&std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?)
}

/// (read_bytes, write_bytes - cancelled_write_bytes, cancelled_write_bytes) of a
/// /proc/PID/io text.
fn parse_io(text: &str) -> Option<(u64, u64, u64)> {
    let field = |k: &str| text.lines().find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok());
    let cancelled = field("cancelled_write_bytes:").unwrap_or(0);
    Some((field("read_bytes:")?, field("write_bytes:")?.saturating_sub(cancelled), cancelled))
}

fn unix_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// Samples a probe every interval until finished.
pub struct Sampler {
    stop: Option<Sender<()>>,
    handle: Option<JoinHandle<()>>,
    samples: Arc<Mutex<Vec<Sample>>>,
}

impl Sampler {
    /// The thread wakes once an interval and no more often: it shares the CPUs with the worker
    /// it watches.
    pub fn start(probe: Probe, every: Duration) -> Sampler {
        let (stop, stopped) = channel::<()>();
        let samples = Arc::new(Mutex::new(Vec::new()));
        let out = samples.clone();
        let handle = std::thread::spawn(move || {
            let mut next = Instant::now() + every;
            // Dropping the sender ends the wait at once.
            while let Err(RecvTimeoutError::Timeout) =
                stopped.recv_timeout(next.saturating_duration_since(Instant::now()))
            {
                next += every;
                let s = probe.take();
                out.lock().unwrap_or_else(|p| p.into_inner()).push(s);
            }
        });
        Sampler { stop: Some(stop), handle: Some(handle), samples }
    }

    /// Stop sampling; the samples so far, in time order.
    pub fn finish(mut self) -> Vec<Sample> {
        self.halt();
        std::mem::take(&mut *self.samples.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn halt(&mut self) {
        self.stop = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.halt();
    }
}

/// A row's readings: before the worker, at each step's end, and every interval.
#[derive(Default)]
pub struct Readings {
    pub base: Sample,
    /// By step index: the reading when its result arrived, and the page-cache share then.
    pub marks: BTreeMap<usize, (Sample, Option<f64>)>,
    pub samples: Vec<Sample>,
}

impl Readings {
    /// What the disk saw during step `main`: from the end of the step before it to its own.
    pub fn disk(&self, main: usize, start_unix_ns: u64, raw_bytes: u64) -> Option<Disk> {
        let (end, _) = *self.marks.get(&main)?;
        let (from, cached) = self.marks.range(..main).next_back().map(|(_, m)| *m).unwrap_or((self.base, None));
        let t0 = if start_unix_ns > 0 { start_unix_ns } else { from.unix_ns };
        let inside = self.samples.iter().filter(|s| s.unix_ns > from.unix_ns && s.unix_ns < end.unix_ns);
        let points: Vec<Sample> = std::iter::once(from).chain(inside.copied()).chain(std::iter::once(end)).collect();
        let intervals = points.windows(2).map(|w| interval(&w[0], &w[1], t0)).collect();
        Some(Disk {
            read_bytes: end.read.saturating_sub(from.read),
            write_bytes: end.write.saturating_sub(from.write),
            cancelled_write_bytes: end.cancelled.saturating_sub(from.cancelled),
            cached_at_start: cached,
            space_bytes: end.space,
            file_bytes: end.files,
            space_amplification: end.space as f64 / raw_bytes.max(1) as f64,
            intervals,
            ..Default::default()
        })
    }
}

fn interval(before: &Sample, after: &Sample, t0: u64) -> DiskInterval {
    DiskInterval {
        t_ms: after.unix_ns.saturating_sub(t0) / 1_000_000,
        read_bytes: after.read.saturating_sub(before.read),
        write_bytes: after.write.saturating_sub(before.write),
        space_bytes: after.space,
        memory_bytes: after.memory,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_files_are_known_by_name_and_data_files_are_not() {
        let logs = ["000012.log", "LOG", "LOG.old.1732", "WiredTigerLog.0000000001", "WiredTigerPreplog.0000000002"];
        let logs = logs.into_iter().chain(["db.sqlite-wal", "db.sqlite-journal", "casket.wal", "000001.vlog"]);
        for name in logs {
            assert!(is_log_file(name), "{name}");
        }
        for name in ["000010.sst", "MANIFEST-000005", "data.mdb", "WiredTiger.wt", "kv.wt", "OPTIONS-000007"] {
            assert!(!is_log_file(name), "{name}");
        }
    }

    /// The sampler sleeps a whole interval between samples (it woke every 10 ms, taking a CPU
    /// from the worker 100 times a second), and still stops at once, whatever the interval.
    #[test]
    fn a_sampler_samples_every_interval_and_stops_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let t = std::time::Instant::now();
        let sampler =
            Sampler::start(Probe::new(Vec::new(), dir.path().to_path_buf(), None), Duration::from_millis(150));
        std::thread::sleep(Duration::from_millis(400));
        let samples = sampler.finish();
        assert!(t.elapsed() < Duration::from_secs(60), "finish waited out an interval");
        assert!((1..=3).contains(&samples.len()), "{} samples in 400 ms at one every 150 ms", samples.len());
        let sampler = Sampler::start(Probe::new(Vec::new(), dir.path().to_path_buf(), None), Duration::from_secs(3600));
        let t = std::time::Instant::now();
        assert!(sampler.finish().is_empty());
        assert!(t.elapsed() < Duration::from_secs(60), "finish waited out an hour's interval");
    }

    #[test]
    fn proc_io_counts_cancelled_writes_out() {
        let text = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 12288\ncancelled_write_bytes: 4096\n";
        assert_eq!(parse_io(text), Some((4096, 8192, 4096)));
        assert_eq!(parse_io("rchar: 1\n"), None);
    }

    #[test]
    fn a_step_gets_the_bytes_between_the_step_before_and_its_own_end() {
        let s = |t: u64, r: u64, w: u64| Sample {
            unix_ns: t * 1_000_000_000,
            read: r,
            write: w,
            space: w,
            files: w + 1,
            ..Default::default()
        };
        let mut rd = Readings { base: s(0, 0, 0), ..Default::default() };
        rd.marks.insert(0, (s(1, 10, 100), Some(1.0)));
        rd.marks.insert(1, (s(5, 410, 200), Some(0.25)));
        rd.samples = vec![s(2, 110, 120), s(3, 210, 140), s(6, 500, 300)];
        let d = rd.disk(1, 1_000_000_000, 100).unwrap();
        assert_eq!((d.read_bytes, d.write_bytes), (400, 100));
        assert_eq!((d.space_bytes, d.file_bytes), (200, 201), "blocks and file lengths at the step's end");
        assert_eq!(d.cached_at_start, Some(1.0));
        let reads: Vec<u64> = d.intervals.iter().map(|i| i.read_bytes).collect();
        assert_eq!(reads, vec![100, 100, 200]);
        assert_eq!(d.intervals.iter().map(|i| i.t_ms).collect::<Vec<_>>(), vec![1000, 2000, 4000]);
        assert!(rd.disk(7, 0, 100).is_none());
    }

    #[test]
    fn this_process_is_found_by_its_group() {
        // SAFETY: getpgrp has no preconditions.
        let own = unsafe { libc::getpgrp() };
        assert_eq!(process_group(std::process::id() as i32), Some(own));
        let dir = tempfile::tempdir().unwrap();
        let p = Probe::new(vec![own], dir.path().to_path_buf(), None);
        std::fs::write(dir.path().join("f"), vec![1u8; 1 << 20]).unwrap();
        let s = p.take();
        assert!(s.unix_ns > 0 && s.space >= 1 << 20, "{s:?}");
    }
}
