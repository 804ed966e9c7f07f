//! The Go and Python workers' `--list` answers, kept per fingerprint of what they depend on
//! (the program, its sources and libraries: paths, sizes, modification times), so `kvbench
//! list` and every run read them without starting an interpreter when nothing changed.
//! The cache lives in `$XDG_CACHE_HOME/kvbench` (or `~/.cache/kvbench`), a 0700 directory; a
//! cache that cannot be read or written costs only the worker's start.

use std::hash::{Hash, Hasher};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Largest `--list` answer kept or read.
const LIMIT: u64 = 16 << 20;

/// What a cached answer depends on: files by size and mtime, directories by their own mtime
/// (entries added or removed) or, when `recursive`, every file under them.
pub struct Deps {
    pub files: Vec<PathBuf>,
    pub dirs: Vec<PathBuf>,
    pub trees: Vec<PathBuf>,
}

/// `cmd`'s stdout from the cache when `deps` are unchanged, else from running it (a
/// successful run's answer is kept). Errors as `run` gives them.
pub fn output(
    cmd: &mut Command,
    deps: &Deps,
    run: impl FnOnce(&mut Command) -> Result<Vec<u8>, String>,
) -> Result<Vec<u8>, String> {
    let Some(file) = cache_dir().map(|d| d.join(format!("list-{:016x}.json", fingerprint(cmd, deps)))) else {
        return run(cmd);
    };
    if let Ok(text) = kvbench_model::input::read_regular_text(&file, "list cache", LIMIT) {
        return Ok(text.into_bytes());
    }
    let out = run(cmd)?;
    keep(&file, &out);
    Ok(out)
}

fn cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let dir = base.join("kvbench");
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).ok()?;
    Some(dir)
}

/// Written under a temporary name and renamed, so a reader never sees half an answer.
fn keep(file: &Path, out: &[u8]) {
    if out.len() as u64 > LIMIT {
        return;
    }
    let Some(dir) = file.parent() else { return };
    let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) else { return };
    if std::io::Write::write_all(&mut tmp, out).is_ok() {
        // A failed rename leaves no file: the next call runs the worker again.
        let _kept = tmp.persist(file);
    }
}

fn fingerprint(cmd: &Command, deps: &Deps) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    cmd.get_program().hash(&mut h);
    cmd.get_args().for_each(|a| a.hash(&mut h));
    for (k, v) in cmd.get_envs() {
        (k, v).hash(&mut h);
    }
    for var in ["KVBENCH_FFI_LIB", "KVBENCH_HOME", "PYTHONPATH", "LD_LIBRARY_PATH"] {
        std::env::var_os(var).hash(&mut h);
    }
    deps.files.iter().chain(&deps.dirs).for_each(|p| stamp(p, &mut h));
    for root in &deps.trees {
        walk(root, &mut |p| stamp(p, &mut h));
    }
    h.finish()
}

fn stamp(path: &Path, hasher: &mut impl Hasher) {
    path.hash(hasher);
    if let Ok(m) = std::fs::metadata(path) {
        (m.len(), m.mtime(), m.mtime_nsec(), m.ino()).hash(hasher);
    }
}

/// Every file under `dir`, in name order (a bounded depth: sources, not a whole disk).
fn walk(dir: &Path, visit_file: &mut impl FnMut(&Path)) {
    fn go(dir: &Path, depth: u32, visit_file: &mut impl FnMut(&Path)) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() && depth < 6 => go(&p, depth + 1, visit_file),
                Ok(m) if m.is_file() => visit_file(&p),
                _ => {}
            }
        }
    }
    go(dir, 0, visit_file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_answer_is_reused_until_a_dependency_changes() {
        let home = tempfile::tempdir().unwrap();
        std::env::set_var("XDG_CACHE_HOME", home.path());
        let src = home.path().join("src");
        std::fs::create_dir(&src).unwrap();
        std::fs::write(src.join("engine.py"), "v1").unwrap();
        let deps = Deps { files: vec![], dirs: vec![], trees: vec![src.clone()] };
        let mut cmd = Command::new("kvbench-list-cache-test");
        let runs = std::cell::Cell::new(0);
        let answer = |_: &mut Command| {
            runs.set(runs.get() + 1);
            Ok(format!("[{}]", runs.get()).into_bytes())
        };
        assert_eq!(output(&mut cmd, &deps, answer).unwrap(), b"[1]");
        assert_eq!(output(&mut cmd, &deps, answer).unwrap(), b"[1]", "unchanged: from the cache");
        std::fs::write(src.join("engine.py"), "version 2").unwrap();
        assert_eq!(output(&mut cmd, &deps, answer).unwrap(), b"[2]", "a source changed: the worker ran");
        assert!(output(&mut cmd, &Deps { trees: vec![src.join("x")], ..deps }, |_| Err("no".into())).is_err());
        assert_eq!(runs.get(), 2);
    }
}
