//! `tinycdb`: TinyCDB, a constant database (libcdb, through the shim csrc/cdb_shim.c).
//!
//! The database is built once: the load phase writes records into `db.cdb.tmp` with
//! `cdb_make_put`, and `finish_load` writes the hash index and renames the file to `db.cdb`.
//! After that the file is only read (memory-mapped); updates and deletes are not possible, and
//! the capability `build_once` makes the runner report those phases N/A. Opening a directory
//! that already holds `db.cdb` opens it for reading.
//!
//! A CDB file may hold a key several times and a lookup returns the first. kvbench's plans
//! expect the last loaded value of a repeated key, so by default a repeated key replaces the
//! earlier record in the index (`CDB_PUT_REPLACE0`, the old copy zero-filled where it lies);
//! option `put = "add"` keeps every copy as
//! `cdb_make_add`/Perl's `put_add` do (see docs/engines/tinycdb.md).

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};

use kvbench_model::engine::*;

/// Raw declarations of the shim; build.rs compiles it and links `-lcdb`.
mod ffi {
    use libc::{c_char, c_int, c_uint, c_void};

    opaque!(CdbMake, Cdb);

    pub const PUT_ADD: c_int = 0;
    pub const PUT_INSERT: c_int = 2;
    pub const PUT_REPLACE0: c_int = 4;

    extern "C" {
        pub fn kvb_cdb_version() -> *const c_char;
        pub fn kvb_cdb_make_new(fd: c_int) -> *mut CdbMake;
        pub fn kvb_cdb_make_put(
            maker: *mut CdbMake,
            key: *const c_void,
            kl: c_uint,
            value: *const c_void,
            vl: c_uint,
            mode: c_int,
        ) -> c_int;
        pub fn kvb_cdb_make_finish(maker: *mut CdbMake) -> c_int;
        pub fn kvb_cdb_open(fd: c_int) -> *mut Cdb;
        pub fn kvb_cdb_get(
            cdb: *const Cdb,
            key: *const c_void,
            kl: c_uint,
            value: *mut *const c_void,
            vl: *mut c_uint,
        ) -> c_int;
        pub fn kvb_cdb_close(cdb: *mut Cdb);
    }
}

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "tinycdb",
    "TinyCDB constant database: built once in one pass, then read-only (memory-mapped)",
    Capabilities { ordered_scan: false, batch: false, build_once: true, delete: false, ..crate::ORDERED_STORE },
    &[OptionSpec::one_of(
        "put",
        &["replace", "add", "insert"],
        "replace",
        "a repeated key in the load: replace (last wins, as plans expect), add (keep every copy; \
              lookups return the first), insert (first wins)",
    )],
    version,
    open,
);

fn version() -> String {
    // SAFETY: the shim returns a static string.
    unsafe { crate::c_str(ffi::kvb_cdb_version()) }
}

/// The one place a TinyCDB failure (reported through errno) becomes an EngineError.
fn os_err(what: &str) -> EngineError {
    EngineError::Store(format!("tinycdb {what}: {}", std::io::Error::last_os_error()))
}

fn len(size: usize) -> Result<libc::c_uint> {
    libc::c_uint::try_from(size).map_err(|_| EngineError::store("key or value larger than 4 GiB (CDB's limit)"))
}

/// A database being built; finished (index written) by `finish`, abandoned in Drop.
struct Builder {
    make: Option<NonNull<ffi::CdbMake>>,
    file: File,
    tmp: PathBuf,
    mode: libc::c_int,
    /// Hashes of the keys added so far: a key seen for the first time is appended without the
    /// library's duplicate search; only a possible repeat pays for `CDB_PUT_REPLACE0`.
    seen: HashSet<u64>,
    records: u64,
    repeats: u64,
}

// SAFETY: the builder is only used behind the engine's Mutex.
unsafe impl Send for Builder {}

impl Builder {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let make = self.make.ok_or_else(|| EngineError::store("tinycdb: the build is finished"))?.as_ptr();
        let mode = if self.mode == ffi::PUT_ADD {
            ffi::PUT_ADD
        } else {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            key.hash(&mut h);
            if self.seen.insert(h.finish()) {
                ffi::PUT_ADD
            } else {
                self.mode
            }
        };
        // SAFETY: `make` is a live builder; slices are live for the call.
        let r = unsafe {
            ffi::kvb_cdb_make_put(
                make,
                key.as_ptr().cast(),
                len(key.len())?,
                value.as_ptr().cast(),
                len(value.len())?,
                mode,
            )
        };
        if r < 0 {
            return Err(os_err("cdb_make_put"));
        }
        self.records += 1;
        if r > 0 {
            self.repeats += 1;
        }
        Ok(())
    }

    /// Write the index; the builder's memory is released whatever happens.
    fn finish(&mut self) -> Result<()> {
        match self.make.take() {
            Some(m) => {
                // SAFETY: a live builder, finished (and freed by the shim) exactly once.
                if unsafe { ffi::kvb_cdb_make_finish(m.as_ptr()) } != 0 {
                    return Err(os_err("cdb_make_finish"));
                }
                Ok(())
            }
            None => Ok(()),
        }
    }
}

impl Drop for Builder {
    fn drop(&mut self) {
        if self.make.is_some() {
            // An unfinished build is abandoned: release its memory and remove the partial file.
            let _ = self.finish();
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// A built database, mapped for reading; unmapped in Drop (the File closes itself after).
struct CdbFile {
    cdb: NonNull<ffi::Cdb>,
    _file: File,
}

// SAFETY: lookups go through kvb_cdb_get, which never writes to the shared handle (it searches
// on a private copy); the mapping is read-only and lives until Drop.
unsafe impl Send for CdbFile {}
// SAFETY: as above.
unsafe impl Sync for CdbFile {}

impl CdbFile {
    fn open(path: &std::path::Path) -> Result<CdbFile> {
        let file = File::open(path).map_err(|e| EngineError::Store(format!("tinycdb open {}: {e}", path.display())))?;
        // SAFETY: a valid open descriptor that outlives the handle (both live in CdbFile).
        let cdb = NonNull::new(unsafe { ffi::kvb_cdb_open(file.as_raw_fd()) }).ok_or_else(|| os_err("cdb_init"))?;
        Ok(CdbFile { cdb, _file: file })
    }
}

impl Drop for CdbFile {
    fn drop(&mut self) {
        // SAFETY: opened by kvb_cdb_open, closed once.
        unsafe { ffi::kvb_cdb_close(self.cdb.as_ptr()) }
    }
}

pub struct TinyCdb {
    path: PathBuf,
    sync: SyncMode,
    builder: Mutex<Option<Builder>>,
    built: OnceLock<CdbFile>,
    settings: BTreeMap<String, String>,
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    crate::refuse_secondary(args)?;
    let path = args.file("db.cdb");
    let put = args.options.text("put").unwrap_or_else(|| "replace".into());
    let mode = match put.as_str() {
        "add" => ffi::PUT_ADD,
        "insert" => ffi::PUT_INSERT,
        // CDB_PUT_REPLACE would move every later byte of the file down over the old copy (a
        // quadratic build when a load repeats keys); REPLACE0 zero-fills the old copy in place.
        _ => ffi::PUT_REPLACE0,
    };
    let mut settings = BTreeMap::new();
    settings.insert(
        "put".into(),
        match mode {
            ffi::PUT_ADD => "add: repeated keys are all stored; a lookup returns the first".into(),
            ffi::PUT_INSERT => "insert (CDB_PUT_INSERT): the first value of a repeated key is kept".into(),
            _ => "replace (CDB_PUT_REPLACE0 for a repeated key): the last value wins; the old copy stays in the file, zero-filled".to_string(),
        },
    );
    settings.insert(
        "sync".into(),
        match args.sync {
            SyncMode::None => "none: the built file is not fsynced".into(),
            s => format!("{s}: the build is one commit: finish_load fsyncs the file, renames it, fsyncs the directory"),
        },
    );
    let engine =
        TinyCdb { path: path.clone(), sync: args.sync, builder: Mutex::new(None), built: OnceLock::new(), settings };
    if path.exists() {
        let _ = engine.built.set(CdbFile::open(&path)?);
        return Ok(Box::new(engine));
    }
    if args.mode == OpenMode::ReadOnly {
        return Err(EngineError::Store(format!("tinycdb: {} does not exist (nothing was built)", path.display())));
    }
    let tmp = args.file("db.cdb.tmp");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| EngineError::Store(format!("tinycdb create {}: {e}", tmp.display())))?;
    // SAFETY: a valid descriptor open for writing that outlives the builder (both in Builder).
    let make =
        NonNull::new(unsafe { ffi::kvb_cdb_make_new(file.as_raw_fd()) }).ok_or_else(|| os_err("cdb_make_start"))?;
    let builder = Builder { make: Some(make), file, tmp, mode, seen: HashSet::new(), records: 0, repeats: 0 };
    *engine.builder.lock().map_err(|_| EngineError::store("lock poisoned"))? = Some(builder);
    Ok(Box::new(engine))
}

const BUILT_ONCE: &str = "tinycdb is a constant database: it is built once by the load phase and never updated";

impl Engine for TinyCdb {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let mut guard = self.builder.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        let Some(b) = guard.as_mut() else {
            return Err(EngineError::Unsupported(BUILT_ONCE.into()));
        };
        for w in batch {
            match w.value {
                Some(v) => b.put(w.key, v)?,
                None => return Err(EngineError::Unsupported(BUILT_ONCE.into())),
            }
        }
        Ok(())
    }

    fn finish_load(&mut self) -> Result<()> {
        let Some(mut b) = self.builder.get_mut().map_err(|_| EngineError::store("lock poisoned"))?.take() else {
            return Ok(());
        };
        b.finish()?;
        if self.sync != SyncMode::None {
            b.file.sync_all()?;
        }
        std::fs::rename(&b.tmp, &self.path)?;
        if self.sync != SyncMode::None {
            if let Some(dir) = self.path.parent() {
                File::open(dir)?.sync_all()?;
            }
        }
        self.settings.insert("records written".into(), b.records.to_string());
        self.settings.insert("repeated keys in the load".into(), b.repeats.to_string());
        drop(b);
        let _ = self.built.set(CdbFile::open(&self.path)?);
        Ok(())
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(CdbReader { db: self }))
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }
}

struct CdbReader<'a> {
    db: &'a TinyCdb,
}

impl Reader for CdbReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let Some(f) = self.db.built.get() else {
            return Err(EngineError::store("tinycdb: reads come after the load has finished (finish_load)"));
        };
        let mut vp: *const libc::c_void = std::ptr::null();
        let mut vl: libc::c_uint = 0;
        // SAFETY: a live handle; on success vp/vl describe bytes inside the read-only map, which
        // lives as long as `f`.
        let r = unsafe { ffi::kvb_cdb_get(f.cdb.as_ptr(), key.as_ptr().cast(), len(key.len())?, &mut vp, &mut vl) };
        match r {
            0 => Ok(false),
            r if r < 0 => Err(os_err("cdb_find")),
            _ => {
                // SAFETY: see above.
                out.extend_from_slice(unsafe { std::slice::from_raw_parts(vp.cast::<u8>(), vl as usize) });
                Ok(true)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Build `records` with put = `mode` in `dir` and return the open engine.
    fn build(dir: &std::path::Path, mode: &str, records: &[(&[u8], &[u8])]) -> Box<dyn Engine> {
        let given = BTreeMap::from([("put".to_string(), serde_json::json!(mode))]);
        let options = Options::parse("tinycdb", DESCRIPTOR.options, &given).unwrap();
        let args = OpenArgs { expected_records: 3, expected_bytes: 10, ..OpenArgs::new(dir, &options) };
        let mut e = (DESCRIPTOR.open)(&args).unwrap();
        for (key, value) in records {
            e.write(&[WriteOp { key, value: Some(value) }]).unwrap();
        }
        e.finish_load().unwrap();
        e
    }

    fn get(engine: &dyn Engine, key: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(engine.reader().unwrap().get(key, &mut out).unwrap());
        out
    }

    /// Load "k" three times with put = `mode` and return what a lookup finds.
    fn repeated(mode: &str) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let e = build(dir.path(), mode, &[(b"k", b"1"), (b"k", b"2"), (b"k", b"3")]);
        assert!(matches!(e.write(&[WriteOp { key: b"k", value: Some(b"4") }]), Err(EngineError::Unsupported(_))));
        get(e.as_ref(), b"k")
    }

    #[test]
    fn a_repeated_key_follows_the_put_mode() {
        assert_eq!(repeated("replace"), b"3", "replace: the last value wins, as plans expect");
        assert_eq!(repeated("add"), b"1", "add: every copy is stored and a lookup finds the first");
        assert_eq!(repeated("insert"), b"1", "insert: the first value is kept");
    }

    /// Guards the load's cost when it repeats keys (article 003 writes its dictionary 100 times):
    /// the old copy is zero-filled where it lies (CDB_PUT_REPLACE0), so the file keeps every
    /// copy's bytes as `add` does, instead of moving every later byte down over it.
    #[test]
    fn replace_zero_fills_the_old_copy_in_place_instead_of_moving_the_file() {
        let records: [(&[u8], &[u8]); 3] = [(b"k", b"old-value"), (b"z", b"after"), (b"k", b"new-value")];
        let (replace, add) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let e = build(replace.path(), "replace", &records);
        drop(build(add.path(), "add", &records));
        assert_eq!(get(e.as_ref(), b"k"), b"new-value");
        assert_eq!(get(e.as_ref(), b"z"), b"after");
        let file = |d: &tempfile::TempDir| std::fs::read(d.path().join("db.cdb")).unwrap();
        let (replaced, added) = (file(&replace), file(&add));
        let at = |f: &[u8]| f.windows(5).position(|w| w == b"after");
        assert_eq!(at(&replaced), at(&added), "the record after the old copy stays where add puts it");
        assert!(!replaced.windows(9).any(|w| w == b"old-value"), "the old copy is zero-filled");
        assert!(added.windows(9).any(|w| w == b"old-value"));
    }
}
