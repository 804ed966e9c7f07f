//! A row's memory budget: a memory cgroup that holds the row's worker (it joins before exec)
//! and the servers it uses (moved in for the row, moved back after), so the limit bounds the
//! heap and the page cache alike. cgroup v2 (`memory.max`) where the unified hierarchy has the
//! memory controller, else cgroup v1 (`memory.limit_in_bytes`); the group is removed on Drop.

use std::fs::File;
use std::path::{Path, PathBuf};

use kvbench_model::result::Budget;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

pub struct RowGroup {
    dir: PathBuf,
    version: Version,
    limit: u64,
    /// The cgroup kvbench itself runs in: where adopted servers go back to.
    home: PathBuf,
    adopted: Vec<i32>,
    /// v2 without `memory.peak`: the highest `memory.current` seen by [`RowGroup::usage`].
    seen_peak: std::sync::atomic::AtomicU64,
}

impl RowGroup {
    /// A new cgroup named `name` below kvbench's own, limited to `limit` bytes. The error says
    /// what is missing (a hierarchy with the memory controller, write access).
    pub fn create(name: &str, limit: u64) -> Result<RowGroup, String> {
        let mut tried = Vec::new();
        for version in [Version::V2, Version::V1] {
            match Self::create_in(version, name, limit) {
                Ok(g) => return Ok(g),
                Err(e) => tried.push(e),
            }
        }
        Err(format!(
            "a memory budget needs a memory cgroup kvbench can create (as root: cgroup v2 with the memory \
             controller, or cgroup v1's memory hierarchy): {}",
            tried.join("; ")
        ))
    }

    fn create_in(version: Version, name: &str, limit: u64) -> Result<RowGroup, String> {
        let home = own_cgroup(version)?;
        let parent = match version {
            Version::V1 => home.clone(),
            Version::V2 => v2_parent(&home)?,
        };
        let dir = parent.join(name);
        if let Err(e) = std::fs::create_dir(&dir) {
            return Err(format!("{}: cannot create {}: {e}", version.name(), dir.display()));
        }
        let g = RowGroup { dir, version, limit, home, adopted: Vec::new(), seen_peak: Default::default() };
        g.set_limit()?;
        Ok(g)
    }

    fn set_limit(&self) -> Result<(), String> {
        match self.version {
            Version::V1 => {
                write(&self.dir.join("memory.limit_in_bytes"), &self.limit.to_string())?;
                // No swap under the limit's reclaim: v1's swappiness 0 keeps the group's pages
                // out of swap. memsw is left above the limit, since with memsw equal to it the
                // memsw counter fails first and `memory.failcnt` never moves.
                let swappiness = self.dir.join("memory.swappiness");
                if swappiness.exists() {
                    write(&swappiness, "0")?;
                }
            }
            Version::V2 => {
                write(&self.dir.join("memory.max"), &self.limit.to_string())?;
                let swap = self.dir.join("memory.swap.max");
                if swap.exists() {
                    write(&swap, "0")?;
                }
            }
        }
        Ok(())
    }

    /// The file a process writes `0` to so as to join the group (see [`RowGroup::join_on_exec`]).
    pub fn join_on_exec(&self, cmd: &mut std::process::Command) -> Result<(), String> {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let path = self.dir.join("cgroup.procs");
        let f = std::fs::OpenOptions::new().write(true).open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        // SAFETY: write(2) on a descriptor opened before fork is async-signal-safe; `0` names
        // the writing process, so the child joins before it execs and allocates anything.
        unsafe {
            cmd.pre_exec(move || {
                let f: &File = &f;
                if libc::write(f.as_raw_fd(), b"0\n".as_ptr().cast(), 2) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(())
    }

    /// Move running processes (a server's) into the group for the row; they go back home when
    /// the group is dropped. Memory they already hold stays charged where it was.
    pub fn adopt(&mut self, pids: &[i32]) -> Result<(), String> {
        for &pid in pids {
            write(&self.dir.join("cgroup.procs"), &pid.to_string())?;
            self.adopted.push(pid);
        }
        Ok(())
    }

    /// Memory the group holds now (heap and page cache).
    pub fn usage(&self) -> u64 {
        let file = if self.version == Version::V1 { "memory.usage_in_bytes" } else { "memory.current" };
        let now = read_u64(&self.dir.join(file)).unwrap_or(0);
        self.seen_peak.fetch_max(now, std::sync::atomic::Ordering::Relaxed);
        now
    }

    fn peak(&self) -> u64 {
        let file = if self.version == Version::V1 { "memory.max_usage_in_bytes" } else { "memory.peak" };
        let seen = self.seen_peak.load(std::sync::atomic::Ordering::Relaxed);
        read_u64(&self.dir.join(file)).unwrap_or(0).max(seen)
    }

    /// (times the limit was hit, processes OOM-killed).
    fn pressure(&self) -> (u64, u64) {
        match self.version {
            Version::V1 => {
                // A charge that fails on memsw (set by someone else) is not counted in failcnt.
                let count = |f: &str| read_u64(&self.dir.join(f)).unwrap_or(0);
                let hits = count("memory.failcnt") + count("memory.memsw.failcnt");
                (hits, keyed(&self.dir.join("memory.oom_control"), "oom_kill"))
            }
            Version::V2 => {
                let events = self.dir.join("memory.events");
                (keyed(&events, "high") + keyed(&events, "max"), keyed(&events, "oom_kill"))
            }
        }
    }

    /// What the row ran under, for its result.
    pub fn budget(&self, raw_bytes: u64) -> Budget {
        let (limit_hits, oom_kills) = self.pressure();
        let file = if self.version == Version::V1 { "memory.limit_in_bytes" } else { "memory.max" };
        Budget {
            limit_bytes: self.limit,
            peak_bytes: self.peak(),
            mechanism: format!("{} {file} of {}", self.version.name(), self.dir.display()),
            data_over_budget: raw_bytes as f64 / self.limit.max(1) as f64,
            limit_hits,
            oom_kills,
        }
    }
}

impl Drop for RowGroup {
    fn drop(&mut self) {
        for pid in std::mem::take(&mut self.adopted) {
            let _ = write(&self.home.join("cgroup.procs"), &pid.to_string());
        }
        // The worker has been reaped; a process it left behind is moved out so the group goes.
        if let Ok(text) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
            for pid in text.split_whitespace() {
                let _ = write(&self.home.join("cgroup.procs"), pid);
            }
        }
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        crate::note!("WARNING: could not remove the row's cgroup {}", self.dir.display());
    }
}

/// The name of a row's cgroup: `kvbench-p<pid>-<rest>`, the pid kvbench's own, so a later run
/// can tell a group whose kvbench is gone.
pub fn group_name(rest: &str) -> String {
    format!("kvbench-p{}-{rest}", std::process::id())
}

/// The pid of the kvbench that named a cgroup (see [`group_name`]).
fn owner(name: &str) -> Option<i32> {
    name.strip_prefix("kvbench-p")?.split('-').next()?.parse().ok()
}

/// A live process whose command is kvbench (a reused pid of another program is not).
fn kvbench_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with("kvbench"))
}

/// Remove the row cgroups a kvbench left when it was killed (SIGKILL runs no Drop): every
/// `kvbench-p<pid>-…` group beside where kvbench creates its own whose pid is no longer a
/// kvbench. What was removed, or why not, for the log.
pub fn sweep_stale() -> Vec<String> {
    let mut parents: Vec<PathBuf> = [Version::V1, Version::V2].into_iter().filter_map(|v| own_cgroup(v).ok()).collect();
    parents.extend(mount_point(Version::V2));
    parents.sort();
    parents.dedup();
    let mut said = Vec::new();
    for parent in parents {
        let Ok(entries) = std::fs::read_dir(&parent) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = owner(&name).filter(|&p| !kvbench_alive(p)) else { continue };
            let path = entry.path();
            said.push(match std::fs::remove_dir(&path) {
                Ok(()) => {
                    format!("removed {}: the memory cgroup of a kvbench (pid {pid}) that was killed", path.display())
                }
                Err(e) => {
                    let procs = std::fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
                    format!(
                        "could not remove {}, left by a killed kvbench (pid {pid}): {e}; processes still in it: {}",
                        path.display(),
                        procs.split_whitespace().collect::<Vec<_>>().join(" ")
                    )
                }
            });
        }
    }
    said
}

impl Version {
    fn name(self) -> &'static str {
        match self {
            Version::V1 => "cgroup v1",
            Version::V2 => "cgroup v2",
        }
    }
}

/// The directory of kvbench's own cgroup in the hierarchy of `version`.
fn own_cgroup(version: Version) -> Result<PathBuf, String> {
    let mount =
        mount_point(version).ok_or_else(|| format!("{}: no hierarchy with memory is mounted", version.name()))?;
    let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    let rel = own
        .lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let wanted = match version {
                Version::V1 => controllers.split(',').any(|c| c == "memory"),
                Version::V2 => controllers.is_empty(),
            };
            wanted.then(|| path.trim_start_matches('/').to_string())
        })
        .ok_or_else(|| format!("{}: kvbench's cgroup is not listed in /proc/self/cgroup", version.name()))?;
    Ok(mount.join(rel))
}

/// Where the hierarchy is mounted: v1's memory controller, or v2's unified tree if its root
/// offers the memory controller.
fn mount_point(version: Version) -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let mut r = right.split_whitespace();
        let (fstype, _source, options) = (r.next()?, r.next()?, r.next().unwrap_or(""));
        let point = PathBuf::from(left.split_whitespace().nth(4)?);
        let ok = match version {
            Version::V1 => fstype == "cgroup" && options.split(',').any(|o| o == "memory"),
            Version::V2 => fstype == "cgroup2" && has_memory(&point.join("cgroup.controllers")),
        };
        ok.then_some(point)
    })
}

fn has_memory(controllers: &Path) -> bool {
    std::fs::read_to_string(controllers).is_ok_and(|t| t.split_whitespace().any(|c| c == "memory"))
}

/// cgroup v2: a child can have a memory limit only below a group that delegates the memory
/// controller, and a group holding processes (kvbench's own) cannot delegate; the root can.
fn v2_parent(home: &Path) -> Result<PathBuf, String> {
    for candidate in [home.to_path_buf(), mount_point(Version::V2).unwrap_or_default()] {
        let subtree = candidate.join("cgroup.subtree_control");
        if std::fs::read_to_string(&subtree).is_ok_and(|t| t.split_whitespace().any(|c| c == "memory"))
            || write(&subtree, "+memory").is_ok()
        {
            return Ok(candidate);
        }
    }
    Err(format!("cgroup v2: cannot enable the memory controller below {} or the root", home.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing `{text}` to {}: {e}", path.display()))
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The number after `key` in a flat keyed file (`oom_kill 3`).
fn keyed(path: &Path, key: &str) -> u64 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.trim().parse().ok()))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usable() -> Option<RowGroup> {
        match RowGroup::create(&format!("kvbench-test-{}", std::process::id()), 64 << 20) {
            Ok(g) => Some(g),
            Err(e) => {
                eprintln!("skipped: {e}");
                None
            }
        }
    }

    #[test]
    fn a_child_joins_the_group_before_exec_and_the_group_goes_on_drop() {
        let Some(g) = usable() else { return };
        let dir = g.dir.clone();
        let mut cmd = std::process::Command::new("cat");
        cmd.arg("/proc/self/cgroup").stdout(std::process::Stdio::piped());
        g.join_on_exec(&mut cmd).unwrap();
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(out.lines().any(|l| l.contains("memory") || l.starts_with("0::")), "{out}");
        assert!(out.contains(&name), "the child is not in {name}: {out}");
        let b = g.budget(256 << 20);
        assert_eq!(b.limit_bytes, 64 << 20);
        assert!((b.data_over_budget - 4.0).abs() < 1e-9);
        drop(g);
        assert!(!dir.exists(), "{} left behind", dir.display());
    }

    /// Reading a file larger than the group from the disk: the limit forces reclaim, and the
    /// count says so (v1's failcnt stays 0 when memsw equals the limit).
    #[test]
    fn a_group_forced_to_reclaim_counts_its_limit_hits_without_an_oom_kill() {
        let Ok(g) = RowGroup::create(&format!("kvbench-test-hits-{}", std::process::id()), 16 << 20) else {
            return eprintln!("skipped: no memory cgroup");
        };
        // On the build's disk, not a tmpfs (whose pages reclaim cannot drop).
        let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("hits-{}.bin", std::process::id()));
        let mut cmd = std::process::Command::new("dd");
        cmd.args(["if=/dev/zero", "bs=1M", "count=64", "status=none"]).arg(format!("of={}", file.display()));
        g.join_on_exec(&mut cmd).unwrap();
        let status = cmd.status();
        let _ = std::fs::remove_file(&file);
        assert!(status.unwrap().success());
        let b = g.budget(64 << 20);
        assert!(b.limit_hits > 0, "64 MiB written through a 16 MiB group: {b:?}");
        assert_eq!(b.oom_kills, 0, "page cache is reclaimed, nothing killed: {b:?}");
        assert!(b.peak_bytes <= 16 << 20, "{b:?}");
    }

    #[test]
    fn a_group_whose_kvbench_is_gone_is_removed_at_start_and_a_live_ones_kept() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let rest = format!("test-stale-{}", std::process::id());
        let Ok(stale) = RowGroup::create(&format!("kvbench-p{gone}-{rest}"), 16 << 20) else {
            return eprintln!("skipped: no memory cgroup");
        };
        let live = RowGroup::create(&group_name(&rest), 16 << 20).unwrap();
        let stale_dir = stale.dir.clone();
        // As after SIGKILL: the group stays, nobody drops it.
        std::mem::forget(stale);
        let said = sweep_stale();
        assert!(!stale_dir.exists(), "{} left: {said:?}", stale_dir.display());
        let line = said.iter().find(|l| l.contains(&stale_dir.display().to_string())).expect("the removal is said");
        assert!(line.starts_with("removed") && line.contains(&format!("pid {gone}")), "{line}");
        assert!(live.dir.exists(), "a running kvbench's group is kept");
        assert!(!said.iter().any(|l| l.contains(&live.dir.display().to_string())), "{said:?}");
    }

    #[test]
    fn an_owner_pid_is_read_only_from_a_group_named_by_group_name() {
        assert_eq!(owner(&group_name("run-row")), Some(std::process::id() as i32));
        assert_eq!(owner("kvbench-test-hits-12"), None);
        assert_eq!(owner("kvbench-20250101-lmdb"), None);
    }

    #[test]
    fn keyed_files_give_their_numbers() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("memory.events");
        std::fs::write(&p, "low 0\nhigh 0\nmax 17\noom 1\noom_kill 2\n").unwrap();
        assert_eq!(keyed(&p, "max"), 17);
        assert_eq!(keyed(&p, "oom_kill"), 2);
        assert_eq!(keyed(&p, "oom"), 1);
        assert_eq!(keyed(&p, "absent"), 0);
    }
}
