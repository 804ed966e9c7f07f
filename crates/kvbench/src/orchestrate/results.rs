//! Run ids, file names and the result file: written atomically after each engine, and when the
//! place asked for cannot be written (disk full, permission), kept in memory and written to a
//! fallback place at the end, so nothing measured is lost.

use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use kvbench_model::result::RunResult;

/// UTC time of day as `YYYYMMDD-HHMMSS`, with the seconds since the epoch.
pub fn now_id() -> (u64, String) {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    (secs, utc_stamp(secs))
}

/// `secs` since the epoch as UTC `YYYYMMDD-HHMMSS`: the report's UTC time, compacted.
pub fn utc_stamp(secs: u64) -> String {
    kvbench_report::trend::utc_time(secs).replace(['-', ':'], "").replace(' ', "-")
}

/// A prefix no other run shares, even one started in the same second in the same directory:
/// time, process id and random bits. Names the run's data directory (short, so sockets inside
/// it fit the kernel's limit).
pub fn unique_id(stamp: &str) -> String {
    // RandomState is seeded from the OS's random source once per process and per call.
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish() as u32;
    format!("{stamp}-{}-{random:08x}", std::process::id())
}

/// The run id: the unique prefix, then the scenario name made safe for file names.
pub fn run_id(unique: &str, scenario: &str) -> String {
    format!("{unique}-{}", sanitize(scenario))
}

/// A name made of ASCII letters, digits, `-` and `_` only (at most 64 bytes, never empty), so it
/// can be one path component: no `/`, no `..`, no control characters.
pub fn sanitize(text: &str) -> String {
    let out: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(64)
        .collect();
    if out.is_empty() {
        "unnamed".into()
    } else {
        out
    }
}

/// The directory name of row `index` (its place among the run's variants), repetition `rep`:
/// one per row by construction. A label that is already a safe name keeps it (`LABEL-rREP`);
/// any other gets its safe form and its index after a `~`, which no safe name contains, so
/// `a/b` and `a_b`, or two labels alike in their first 64 characters, never share a directory.
pub fn row_dir_name(label: &str, index: usize, rep: u32) -> String {
    let safe = sanitize(label);
    if safe == label {
        format!("{safe}-r{rep}")
    } else {
        format!("{safe}~{index}-r{rep}")
    }
}

/// Write `bytes` to `path` atomically: a temporary file beside it, fsync, rename, fsync of the
/// directory. The temporary file is created new (never an existing file, never through a
/// symlink someone planted at its name); the rename replaces whatever is at `path`, a symlink
/// included, rather than writing through it. On failure the temporary file is removed and the
/// error names the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", unique_id("w")));
    let mut created = false;
    let result = (|| -> std::io::Result<()> {
        // A result that held a secret (now redacted) is its owner's alone.
        let mode = if kvbench_model::secret::holds_redaction(bytes) { 0o600 } else { 0o644 };
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&tmp)?;
        created = true;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        // The rename is durable once the directory is synced.
        std::fs::File::open(dir)?.sync_all()
    })();
    result.map_err(|e| {
        if created {
            let _ = std::fs::remove_file(&tmp);
        }
        format!("cannot write {}: {e}", path.display())
    })
}

/// Where a run's results went.
#[derive(Debug)]
pub struct Written {
    pub path: PathBuf,
    /// Why the place asked for could not be written, when the results went to a fallback.
    pub fallback_because: Option<String>,
}

/// The result file of a run: where it should go, and where it went.
pub struct ResultFile {
    path: PathBuf,
    /// The last error writing `path` (None: the last write succeeded).
    failed: Option<String>,
    /// A write to `path` succeeded once: a copy older than the results may be there.
    wrote: bool,
}

impl ResultFile {
    pub fn new(path: PathBuf) -> Self {
        ResultFile { path, failed: None, wrote: false }
    }

    /// Write after an engine: an error is shown once and the run goes on (rows stay in memory).
    /// Every write first redacts the secrets the run knows from the result itself, so the
    /// reports printed from it hold none either.
    pub fn update(&mut self, result: &mut RunResult) {
        kvbench_model::secret::scrub_serde(result);
        match write_atomic(&self.path, &to_json(result)) {
            Ok(()) => {
                (self.failed, self.wrote) = (None, true);
                super::process::written_to(&self.path);
            }
            Err(e) => {
                if self.failed.is_none() {
                    crate::note!("WARNING: {e}; the results stay in memory and go to a fallback place at the end");
                }
                self.failed = Some(e);
            }
        }
    }

    /// The final write; if the place asked for still fails, a new private directory (named on
    /// screen), and the stale copy at the place asked for is removed so no one mistakes it for
    /// the results.
    pub fn finish(&mut self, result: &mut RunResult) -> Result<Written, String> {
        kvbench_model::secret::scrub_serde(result);
        let bytes = to_json(result);
        let first = match write_atomic(&self.path, &bytes) {
            Ok(()) => {
                link_latest(&self.path);
                return Ok(Written { path: self.path.clone(), fallback_because: None });
            }
            Err(e) => e,
        };
        let name = self.path.file_name().map(PathBuf::from).unwrap_or_else(|| "result.json".into());
        let mut errors = vec![first.clone()];
        for place in fallback_places() {
            match place.dir().and_then(|d| write_atomic(&d.join(&name), &bytes).map(|()| d.join(&name))) {
                Ok(p) => {
                    crate::note!("RESULTS WRITTEN TO THE FALLBACK {} ({first})", p.display());
                    if self.wrote && std::fs::remove_file(&self.path).is_ok() {
                        crate::note!("removed the partial copy at {}", self.path.display());
                    }
                    link_latest(&p);
                    return Ok(Written { path: p, fallback_because: Some(first) });
                }
                Err(e) => errors.push(e),
            }
        }
        Err(errors.join("; "))
    }
}

/// The name, beside every result file, of a link to the newest one (`kvbench report` reads
/// `results/latest.json` when given no file).
pub const LATEST: &str = "latest.json";

/// Point `latest.json` beside `result` at it: a relative symlink, replaced by rename so a
/// reader never finds it missing. Not being able to is a warning, not a lost run.
fn link_latest(result: &Path) {
    let dir = result.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let Some(name) = result.file_name() else { return };
    let tmp = dir.join(format!(".{LATEST}.{}.tmp", unique_id("l")));
    let linked = std::os::unix::fs::symlink(name, &tmp).and_then(|()| std::fs::rename(&tmp, dir.join(LATEST)));
    if let Err(e) = linked {
        let _ = std::fs::remove_file(&tmp);
        crate::note!("WARNING: cannot point {} at {}: {e}", dir.join(LATEST).display(), result.display());
    }
}

fn to_json(result: &RunResult) -> Vec<u8> {
    serde_json::to_vec_pretty(result).unwrap_or_default()
}

/// Where results go when `--out` cannot be written.
enum Fallback {
    /// `$KVBENCH_FALLBACK_DIR`: the user's own choice, used as `--out` is.
    Chosen(PathBuf),
    /// A new private directory made under this one.
    PrivateUnder(PathBuf),
}

/// $KVBENCH_FALLBACK_DIR, then a private directory in the temp directory, the home directory,
/// the working directory.
fn fallback_places() -> Vec<Fallback> {
    let mut v = Vec::new();
    if let Some(d) = std::env::var_os("KVBENCH_FALLBACK_DIR") {
        v.push(Fallback::Chosen(PathBuf::from(d)));
    }
    v.push(Fallback::PrivateUnder(std::env::temp_dir()));
    if let Some(h) = std::env::var_os("HOME") {
        v.push(Fallback::PrivateUnder(PathBuf::from(h)));
    }
    v.push(Fallback::PrivateUnder(PathBuf::from(".")));
    v
}

impl Fallback {
    fn dir(&self) -> Result<PathBuf, String> {
        match self {
            Fallback::Chosen(d) => std::fs::create_dir_all(d)
                .map(|()| d.clone())
                .map_err(|e| format!("cannot create {}: {e}", d.display())),
            Fallback::PrivateUnder(parent) => private_dir_in(parent),
        }
    }
}

/// A new directory under `parent` that only this user can enter, with a random name (mkdtemp):
/// never one that existed before, so never another user's, never a planted symlink.
fn private_dir_in(parent: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::Builder::new()
        .prefix("kvbench-results-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(parent)
        .map_err(|e| format!("cannot create a private directory in {}: {e}", parent.display()))?;
    Ok(d.keep())
}

/// A directory of this run only (mode 0711: others may pass through to a server's own 0700
/// directory, but not list or read anything). Fails if it exists: run ids are unique.
pub fn private_run_dir(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o711)
        .create(path)
        .map_err(|e| format!("cannot create the run's directory {}: {e}", path.display()))?;
    // The umask may have taken bits away: set them as meant.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o711))
        .map_err(|e| format!("cannot set the mode of {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_path_components() {
        assert_eq!(sanitize("a/b"), "a_b");
        assert_eq!(sanitize("../../etc"), "______etc");
        assert_eq!(sanitize(""), "unnamed");
        assert_eq!(sanitize(&"x".repeat(300)).len(), 64);
    }

    #[test]
    fn regression_labels_that_sanitise_alike_never_share_a_row_directory() {
        let long = "x".repeat(64);
        let labels = ["a/b", "a_b", "a~1", &format!("{long}1"), &format!("{long}2"), "a-r1", "a", "a b"];
        let mut names = std::collections::BTreeSet::new();
        for rep in 0..2 {
            for (i, l) in labels.iter().enumerate() {
                let n = row_dir_name(l, i, rep);
                assert!(!n.contains('/') && !n.starts_with('.'), "one safe path component: {n}");
                assert!(names.insert(n.clone()), "{l:?} (row {i}, repetition {rep}) shares {n}");
            }
        }
        assert_eq!(row_dir_name("a", 6, 0), "a-r0", "a safe label keeps its name");
    }

    #[test]
    fn run_ids_differ_within_a_second() {
        let a = run_id(&unique_id("20260101-000000"), "s");
        let b = run_id(&unique_id("20260101-000000"), "s");
        assert_ne!(a, b);
        assert!(a.contains(&std::process::id().to_string()));
    }

    #[test]
    fn atomic_write_leaves_no_temporary_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        write_atomic(&p, b"{}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{}");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        let e = write_atomic(&d.path().join("missing/r.json"), b"{}").unwrap_err();
        assert!(e.contains("missing/r.json"), "{e}");
    }

    #[test]
    fn regression_a_result_with_a_query_password_is_redacted_and_its_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        let mut r = RunResult {
            command: vec!["kvbench".into(), "--url".into(), "postgres=postgresql://u:p@h/db?password=SECRET42".into()],
            ..Default::default()
        };
        ResultFile::new(p.clone()).update(&mut r);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(!text.contains("SECRET42") && text.contains("password=***"), "{text}");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&p), 0o600);
        let plain = d.path().join("plain.json");
        write_atomic(&plain, b"{}").unwrap();
        assert_ne!(mode(&plain), 0o600, "a file without a redaction keeps the usual mode");
    }

    #[test]
    fn regression_atomic_write_never_writes_through_a_planted_symlink() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let p = d.path().join("r.json");
        // Where a temporary file of a predictable name would be, and at the result's own name.
        std::os::unix::fs::symlink(&victim, d.path().join(format!(".r.json.{}.tmp", std::process::id()))).unwrap();
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        write_atomic(&p, b"{}").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&p).unwrap().is_file(), "the symlink is replaced, not followed");
        assert_eq!(std::fs::read(&p).unwrap(), b"{}");
    }
}

/// Marks a run directory kept on purpose (`--keep-data`): never swept.
pub const KEEP_MARKER: &str = ".kept";

/// Remove run directories under `data_dir` left by runs that were killed before they could
/// clean up (their process is gone), so killed runs do not pile up data. A directory kept on
/// purpose, or whose process still runs, is left alone. Returns what was removed.
pub fn sweep_stale(data_dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(data_dir) else { return removed };
    for e in entries.flatten() {
        let path = e.path();
        let Some(pid) = run_dir_pid(&e.file_name().to_string_lossy()) else { continue };
        if !path.is_dir() || path.join(KEEP_MARKER).exists() || process_exists(pid) {
            continue;
        }
        if std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// The pid in a run directory's name `YYYYMMDD-HHMMSS-PID-RANDOM`.
fn run_dir_pid(name: &str) -> Option<i32> {
    let parts: Vec<&str> = name.split('-').collect();
    let ok = parts.len() == 4
        && parts[0].len() == 8
        && parts[1].len() == 6
        && parts[3].len() == 8
        && parts[..2].iter().all(|p| p.bytes().all(|b| b.is_ascii_digit()))
        && parts[3].bytes().all(|b| b.is_ascii_hexdigit());
    if ok {
        parts[2].parse().ok()
    } else {
        None
    }
}

fn process_exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(test)]
mod sweep_tests {
    use super::*;

    #[test]
    fn only_dead_runs_not_kept_are_swept() {
        let d = tempfile::tempdir().unwrap();
        // A pid that cannot exist (above the kernel's maximum).
        let dead = d.path().join("20260101-000000-99999999-0000abcd");
        let alive = d.path().join(format!("20260101-000000-{}-0000abcd", std::process::id()));
        let kept = d.path().join("20260101-000000-99999998-0000abcd");
        let other = d.path().join("my-own-dir");
        for p in [&dead, &alive, &kept, &other] {
            std::fs::create_dir(p).unwrap();
        }
        std::fs::write(kept.join(KEEP_MARKER), "").unwrap();
        assert_eq!(sweep_stale(d.path()), vec![dead.clone()]);
        assert!(!dead.exists() && alive.exists() && kept.exists() && other.exists());
    }
}
