//! What the operating system tells about a process and a directory: CPU time, peak memory,
//! storage I/O, space on disk, page-cache eviction and the machine's environment.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use kvbench_model::result::Environment;

#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub user_ns: u64,
    pub sys_ns: u64,
    pub max_rss_kb: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl Usage {
    /// Usage of this process (all threads) now.
    pub fn now() -> Usage {
        // SAFETY: rusage is plain integers, for which all-zero bytes are a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage fills the struct we own.
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        let (read_bytes, write_bytes) = proc_io();
        Usage {
            user_ns: tv(ru.ru_utime),
            sys_ns: tv(ru.ru_stime),
            max_rss_kb: ru.ru_maxrss as u64,
            read_bytes,
            write_bytes,
        }
    }
}

/// This thread's timer slack in ns.
pub fn timer_slack() -> i64 {
    // SAFETY: PR_GET_TIMERSLACK only returns a value.
    unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) as i64 }
}

/// Let this thread's sleeps end when asked: Linux lets a sleep run up to the thread's timer
/// slack (50 µs by default) late, which an open loop would count as the operation's latency.
pub fn precise_sleeps() {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a value and touches nothing we own.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Runs the calling thread only on CPU time no other thread of the machine wants (Linux's
/// SCHED_IDLE): work beside a client that must not take the CPU from it.
pub fn only_when_idle() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler of the calling thread (0) reads param and touches nothing else.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
}

fn proc_io() -> (u64, u64) {
    let Ok(text) = std::fs::read_to_string("/proc/self/io") else { return (0, 0) };
    let field = |name: &str| {
        text.lines().find_map(|l| l.strip_prefix(name).map(|v| v.trim().parse::<u64>().unwrap_or(0))).unwrap_or(0)
    };
    (field("read_bytes:"), field("write_bytes:"))
}

/// (allocated bytes, apparent bytes) of every file below `dir`.
pub fn space(dir: &Path) -> (u64, u64) {
    let mut alloc = 0;
    let mut apparent = 0;
    walk(dir, &mut |_, m| {
        alloc += m.blocks() * 512;
        apparent += m.len();
    });
    (alloc, apparent)
}

/// Allocated bytes of the files below `dir` whose name `chosen` accepts.
pub fn space_of(dir: &Path, chosen: &dyn Fn(&str) -> bool) -> u64 {
    let mut alloc = 0;
    walk(dir, &mut |name, m| {
        if chosen(name) {
            alloc += m.blocks() * 512;
        }
    });
    alloc
}

fn walk(dir: &Path, visit: &mut dyn FnMut(&str, &std::fs::Metadata)) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let Ok(m) = e.metadata() else { continue };
        if m.is_dir() {
            walk(&e.path(), visit);
        } else if m.is_file() {
            visit(&e.file_name().to_string_lossy(), &m);
        }
    }
}

/// Share of the pages of the files below `dir` that are in the page cache (mincore on a
/// mapping that is never touched, so nothing is read in); None when there are no pages.
pub fn residency(dir: &Path) -> Option<f64> {
    let mut paths = Vec::new();
    collect_files(dir, &mut paths);
    let (mut resident, mut total) = (0u64, 0u64);
    for p in paths {
        if let Some((r, t)) = file_residency(&p) {
            resident += r;
            total += t;
        }
    }
    (total > 0).then(|| resident as f64 / total as f64)
}

/// (resident pages, pages) of one file.
fn file_residency(path: &Path) -> Option<(u64, u64)> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len() as usize;
    if len == 0 {
        return None;
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as usize;
    let pages = len.div_ceil(page);
    // SAFETY: a read-only shared mapping of an open file, never dereferenced; mincore fills
    // `vec` (one byte per page) and the mapping is removed before return.
    unsafe {
        let addr = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0);
        if addr == libc::MAP_FAILED {
            return None;
        }
        let mut vec = vec![0u8; pages];
        let rc = libc::mincore(addr, len, vec.as_mut_ptr());
        libc::munmap(addr, len);
        (rc == 0).then(|| (vec.iter().filter(|b| *b & 1 == 1).count() as u64, pages as u64))
    }
}

/// Write back and evict every file below `dir` from the page cache with
/// posix_fadvise(DONTNEED) (no root needed). Returns how many files were evicted.
pub fn evict(dir: &Path) -> std::io::Result<u64> {
    use std::os::fd::AsRawFd;
    let mut paths = Vec::new();
    collect_files(dir, &mut paths);
    let mut n = 0;
    for p in paths {
        let f = std::fs::File::open(&p)?;
        // Dirty pages cannot be dropped: write them back first.
        let _ = f.sync_all();
        // SAFETY: a valid open descriptor; offset 0 and length 0 mean the whole file.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        n += 1;
    }
    Ok(n)
}

fn collect_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => collect_files(&p, out),
            Ok(t) if t.is_file() => out.push(p),
            _ => {}
        }
    }
}

/// File system type of the mount holding `path` (from /proc/self/mounts, longest prefix).
pub fn filesystem(path: &Path) -> String {
    let p = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else { return "unknown".into() };
    let mut best = ("unknown".to_string(), 0usize);
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            continue;
        }
        if p.starts_with(f[1]) && f[1].len() >= best.1 {
            best = (f[2].to_string(), f[1].len());
        }
    }
    best.0
}

pub fn environment(data_dir: &Path) -> Environment {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split(':').nth(1)))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = read("/proc/meminfo");
    let memory_bytes = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024;
    let os = read("/etc/os-release")
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|s| s.trim_matches('"').to_string()))
        .unwrap_or_else(|| "unknown".into());
    Environment {
        hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
        os,
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        cpu_model,
        cores: std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1),
        memory_bytes,
        data_dir: data_dir.display().to_string(),
        filesystem: filesystem(data_dir),
        build: if cfg!(debug_assertions) { "debug".into() } else { "release".into() },
        load_average: read("/proc/loadavg").split_whitespace().next().and_then(|s| s.parse().ok()).unwrap_or(0.0),
        read_ahead_kb: read_ahead_kb(data_dir),
    }
}

/// Warnings that make numbers less trustworthy, stated before any number is shown.
/// The read-ahead of the block device holding `dir` (a partition's is its disk's).
pub fn read_ahead_kb(dir: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let block = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    let read = |p: &Path| std::fs::read_to_string(p.join("queue/read_ahead_kb")).ok()?.trim().parse().ok();
    read(&block).or_else(|| read(block.parent()?))
}

pub fn warnings(env: &Environment) -> Vec<String> {
    let mut w = Vec::new();
    if env.build == "debug" {
        w.push("kvbench is a debug build: numbers are not representative (build with --release)".into());
    }
    if matches!(env.filesystem.as_str(), "tmpfs" | "ramfs") {
        w.push(format!(
            "data directory {} is on {}: nothing reaches a disk, sync and cold cache mean nothing",
            env.data_dir, env.filesystem
        ));
    }
    if env.load_average > env.cores as f64 * 0.5 {
        w.push(format!("machine is busy: load average {:.2} on {} cores before the run", env.load_average, env.cores));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paced_threads_sleep_without_timer_slack() {
        std::thread::spawn(|| {
            assert_ne!(timer_slack(), 1, "a new thread has the default slack");
            precise_sleeps();
            assert_eq!(timer_slack(), 1);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn space_counts_allocated_blocks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), vec![1u8; 10_000]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b"), vec![1u8; 5]).unwrap();
        let (alloc, apparent) = space(dir.path());
        assert_eq!(apparent, 10_005);
        assert!(alloc >= 10_000, "allocated {alloc}");
    }

    #[test]
    fn evict_visits_every_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/b"), b"y").unwrap();
        assert_eq!(evict(dir.path()).unwrap(), 2);
    }

    #[test]
    fn debug_build_and_tmpfs_are_warned() {
        let env = Environment { build: "debug".into(), filesystem: "tmpfs".into(), cores: 2, ..Default::default() };
        let w = warnings(&env);
        assert_eq!(w.len(), 2, "{w:?}");
    }
}
