//! `tkrzw-hash` (HashDBM, a `.tkh` file) and `tkrzw-tree` (TreeDBM, a `.tkt` file) through
//! Tkrzw's C API (`tkrzw_langc.h`, libtkrzw).
//!
//! Tkrzw's DBM objects are thread-safe, so one handle is shared by all readers; status codes
//! are per thread. The C API has no transactions, so batches are applied record by record.
//! `sync` maps to `tkrzw_dbm_synchronize(hard=true)` after each write call (commit) or after
//! every write (always).

use std::collections::BTreeMap;
use std::ptr::NonNull;

use kvbench_model::engine::*;

use crate::batch::{write_each, Records};
use crate::shared::{Shared, ThreadSafe};

/// Raw declarations; this block owns the linking (build.rs adds `-ltkrzw`).
mod ffi {
    use libc::{c_char, c_void};

    opaque!(TkrzwDbm, TkrzwDbmIter);

    pub const STATUS_NOT_FOUND_ERROR: i32 = 7;

    extern "C" {
        pub static TKRZW_PACKAGE_VERSION: *const c_char;
        pub fn tkrzw_get_last_status_code() -> i32;
        pub fn tkrzw_get_last_status_message() -> *const c_char;
        pub fn tkrzw_dbm_open(path: *const c_char, writable: bool, params: *const c_char) -> *mut TkrzwDbm;
        pub fn tkrzw_dbm_close(dbm: *mut TkrzwDbm) -> bool;
        pub fn tkrzw_dbm_get(dbm: *mut TkrzwDbm, key: *const c_char, ks: i32, vs: *mut i32) -> *mut c_char;
        pub fn tkrzw_dbm_set(
            dbm: *mut TkrzwDbm,
            key: *const c_char,
            ks: i32,
            value: *const c_char,
            vs: i32,
            overwrite: bool,
        ) -> bool;
        pub fn tkrzw_dbm_remove(dbm: *mut TkrzwDbm, key: *const c_char, ks: i32) -> bool;
        pub fn tkrzw_dbm_synchronize(
            dbm: *mut TkrzwDbm,
            hard: bool,
            proc_: *const c_void,
            arg: *mut c_void,
            params: *const c_char,
        ) -> bool;
        pub fn tkrzw_dbm_count(dbm: *mut TkrzwDbm) -> i64;
        pub fn tkrzw_dbm_get_file_size(dbm: *mut TkrzwDbm) -> i64;
        pub fn tkrzw_dbm_should_be_rebuilt(dbm: *mut TkrzwDbm) -> bool;
        pub fn tkrzw_dbm_rebuild(dbm: *mut TkrzwDbm, params: *const c_char) -> bool;
        pub fn tkrzw_dbm_make_iterator(dbm: *mut TkrzwDbm) -> *mut TkrzwDbmIter;
        pub fn tkrzw_dbm_iter_free(iter: *mut TkrzwDbmIter);
        pub fn tkrzw_dbm_iter_first(iter: *mut TkrzwDbmIter) -> bool;
        pub fn tkrzw_dbm_iter_jump(iter: *mut TkrzwDbmIter, key: *const c_char, ks: i32) -> bool;
        pub fn tkrzw_dbm_iter_next(iter: *mut TkrzwDbmIter) -> bool;
        pub fn tkrzw_dbm_iter_get(
            iter: *mut TkrzwDbmIter,
            key: *mut *mut c_char,
            ks: *mut i32,
            value: *mut *mut c_char,
            vs: *mut i32,
        ) -> bool;
    }
}

fn version() -> String {
    // SAFETY: a static NUL-terminated string of the library.
    unsafe { crate::c_str(ffi::TKRZW_PACKAGE_VERSION) }
}

/// The one place a Tkrzw status becomes an EngineError.
fn err(what: &str) -> EngineError {
    // SAFETY: the thread's last status; the message stays valid until the next status call on
    // this thread, and we copy it at once.
    let (code, msg) =
        unsafe { (ffi::tkrzw_get_last_status_code(), crate::c_str(ffi::tkrzw_get_last_status_message())) };
    EngineError::Store(format!("tkrzw {what}: status {code}: {msg}"))
}

fn status() -> i32 {
    // SAFETY: reads the thread's last status code.
    unsafe { ffi::tkrzw_get_last_status_code() }
}

fn check(ok: bool, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(err(what))
    }
}

fn len(size: usize) -> Result<i32> {
    i32::try_from(size).map_err(|_| EngineError::store("tkrzw: key or value larger than 2 GiB"))
}

const COMPRESSION: &[&str] = &["none", "zlib", "zstd", "lz4", "lzma"];

static HASH_OPTIONS: &[OptionSpec] = &[
    OptionSpec::int(
        "num_buckets",
        "0",
        "hash buckets; 0 = twice the records the plan loads (at least Tkrzw's default 1048583)",
    ),
    OptionSpec::one_of(
        "update_mode",
        &["in_place", "appending"],
        "in_place",
        "overwrite records in place or append new versions",
    ),
    OptionSpec::one_of("compression", COMPRESSION, "none", "record compression"),
];

static TREE_OPTIONS: &[OptionSpec] = &[
    OptionSpec::int("max_page_size", "0", "page size (0 = Tkrzw's 8130)"),
    OptionSpec::int("max_cached_pages", "0", "cached pages (0 = Tkrzw's 10000)"),
    OptionSpec::int("num_buckets", "0", "page buckets (0 = Tkrzw's 131101)"),
    OptionSpec::one_of("compression", COMPRESSION, "none", "record compression"),
];

const CAPS: Capabilities = Capabilities { ordered_scan: false, batch: false, ..crate::ORDERED_STORE };

kind!(hash: "tkrzw-hash", "Tkrzw HashDBM (.tkh), C API",
    CAPS, HASH_OPTIONS, |a| open(a, false));

kind!(tree: "tkrzw-tree", "Tkrzw TreeDBM (.tkt), C API, ordered scans by iterator",
    Capabilities { ordered_scan: true, ..CAPS }, TREE_OPTIONS, |a| open(a, true));

/// An open DBM.
type Dbm = crate::CHandle<ffi::TkrzwDbm>;

// SAFETY: Tkrzw's HashDBM and TreeDBM are thread-safe (internal locks; per-thread status).
unsafe impl Send for Dbm {}
// SAFETY: as above.
unsafe impl Sync for Dbm {}

impl Dbm {
    fn sync(&self) -> Result<()> {
        let (db, none) = (self.as_ptr(), std::ptr::null_mut());
        // SAFETY: open handle; no file callback, no parameters.
        let ok = unsafe { ffi::tkrzw_dbm_synchronize(db, true, none, none, c"".as_ptr()) };
        check(ok, "synchronize")
    }
}

/// The open DBM, whether it may be written, and the durability it was opened with.
pub struct Tkrzw {
    db: Dbm,
    writable: bool,
    sync: SyncMode,
}

fn open(args: &OpenArgs<'_>, tree: bool) -> Result<Box<dyn Engine>> {
    crate::refuse_secondary(args)?;
    let o = args.options;
    let int = |n: &str| o.int(n).unwrap_or(0).max(0);
    let mut params = vec![format!("dbm={}", if tree { "TreeDBM" } else { "HashDBM" })];
    let mut buckets = int("num_buckets");
    if !tree && buckets == 0 {
        buckets = crate::buckets_for(args.expected_records, 1_048_583);
    }
    if buckets > 0 {
        params.push(format!("num_buckets={buckets}"));
    }
    if tree {
        for n in ["max_page_size", "max_cached_pages"] {
            if int(n) > 0 {
                params.push(format!("{n}={}", int(n)));
            }
        }
    } else if o.text("update_mode").as_deref() == Some("appending") {
        params.push("update_mode=UPDATE_APPENDING".into());
    } else {
        params.push("update_mode=UPDATE_IN_PLACE".into());
    }
    let comp = o.text("compression").unwrap_or_else(|| "none".into());
    if comp != "none" {
        params.push(format!("record_comp_mode=RECORD_COMP_{}", comp.to_uppercase()));
    }
    let joined = params.join(",");
    let cparams = std::ffi::CString::new(joined.clone()).map_err(|_| EngineError::store("params contain NUL"))?;
    let path = crate::c_path(&args.file(if tree { "db.tkt" } else { "db.tkh" }));
    let writable = args.mode != OpenMode::ReadOnly;
    // SAFETY: NUL-terminated path and parameters; NULL on failure with the status set.
    let p = unsafe { ffi::tkrzw_dbm_open(path.as_ptr(), writable, cparams.as_ptr()) };
    // SAFETY: CHandle releases the open handle once (closed and freed).
    let close = |p: NonNull<_>| check(unsafe { ffi::tkrzw_dbm_close(p.as_ptr()) }, "close");
    let db = Dbm::new(p, Box::new(close)).ok_or_else(|| err("open"))?;
    let mut settings = BTreeMap::new();
    settings.insert("params".into(), joined);
    settings.insert(
        "sync".into(),
        match args.sync {
            SyncMode::None => "none: no sync calls; data reaches the file on close".into(),
            SyncMode::Commit => {
                "commit: tkrzw_dbm_synchronize(hard) after each write call (batches are not atomic)".into()
            }
            SyncMode::Always => "always: tkrzw_dbm_synchronize(hard) after every write".into(),
        },
    );
    Ok(Shared::engine(Tkrzw { db, writable, sync: args.sync }, settings, "Tkrzw locks internally"))
}

impl Records for Tkrzw {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let (kp, kl, vp, vl) = (key.as_ptr().cast(), len(key.len())?, value.as_ptr().cast(), len(value.len())?);
        // SAFETY: open handle; the slices are live for the call.
        check(unsafe { ffi::tkrzw_dbm_set(self.db.as_ptr(), kp, kl, vp, vl, true) }, "set")
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        // SAFETY: as above.
        let ok = unsafe { ffi::tkrzw_dbm_remove(self.db.as_ptr(), key.as_ptr().cast(), len(key.len())?) };
        if !ok && status() != ffi::STATUS_NOT_FOUND_ERROR {
            return Err(err("remove"));
        }
        Ok(())
    }
}

impl ThreadSafe for Tkrzw {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        write_each(self, batch, self.sync, || self.db.sync())
    }

    fn close(mut self) -> Result<()> {
        self.db.close()
    }

    fn internals(&self) -> BTreeMap<String, f64> {
        // SAFETY: open handle; plain getters (-1 on failure, dropped below).
        let (count, size, rebuild) = unsafe {
            (
                ffi::tkrzw_dbm_count(self.db.as_ptr()),
                ffi::tkrzw_dbm_get_file_size(self.db.as_ptr()),
                ffi::tkrzw_dbm_should_be_rebuilt(self.db.as_ptr()),
            )
        };
        let mut out = BTreeMap::new();
        for (name, n) in [("tkrzw.records", count), ("tkrzw.file_bytes", size)] {
            if n >= 0 {
                out.insert(name.to_string(), n as f64);
            }
        }
        out.insert("tkrzw.should_be_rebuilt".into(), if rebuild { 1.0 } else { 0.0 });
        out
    }

    /// Rebuild (Tkrzw's compaction) when Tkrzw says the file should be, then synchronize.
    fn settle(&mut self) -> Result<String> {
        if !self.writable {
            return Ok("opened read-only: nothing to rebuild or synchronize".into());
        }
        // SAFETY: open, writable handle; empty parameters keep the database's own.
        let rebuilt = unsafe { ffi::tkrzw_dbm_should_be_rebuilt(self.db.as_ptr()) };
        if rebuilt {
            // SAFETY: as above.
            check(unsafe { ffi::tkrzw_dbm_rebuild(self.db.as_ptr(), c"".as_ptr()) }, "rebuild")?;
        }
        self.db.sync()?;
        Ok(if rebuilt {
            "rebuilt the file (tkrzw_dbm_rebuild: Tkrzw said it should be) and synchronized it".into()
        } else {
            "synchronized the file (tkrzw_dbm_synchronize, hard); Tkrzw saw no need to rebuild".into()
        })
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let mut size = 0i32;
        // SAFETY: open handle and live key; the result is malloc'd, copied, then freed once.
        let p = unsafe { ffi::tkrzw_dbm_get(self.db.as_ptr(), key.as_ptr().cast(), len(key.len())?, &mut size) };
        if p.is_null() {
            if status() == ffi::STATUS_NOT_FOUND_ERROR {
                return Ok(false);
            }
            return Err(err("get"));
        }
        // SAFETY: `size` readable bytes at p, malloc'd by Tkrzw.
        unsafe { crate::take_c_buf(p.cast(), size as usize, out, libc::free) };
        Ok(true)
    }

    fn scan(&self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        // SAFETY: open handle; the iterator is made for tkrzw_dbm_iter_free, which its guard calls.
        let it = unsafe { crate::Owned::new(ffi::tkrzw_dbm_make_iterator(self.db.as_ptr()), ffi::tkrzw_dbm_iter_free) }
            .ok_or_else(|| err("iterator"))?;
        // SAFETY: live iterator and key slice.
        let ok = unsafe {
            match start {
                Some(k) => ffi::tkrzw_dbm_iter_jump(it.as_ptr(), k.as_ptr().cast(), len(k.len())?),
                None => ffi::tkrzw_dbm_iter_first(it.as_ptr()),
            }
        };
        if !ok {
            if status() == ffi::STATUS_NOT_FOUND_ERROR {
                return Ok(0);
            }
            return Err(err("iterator jump"));
        }
        let mut n = 0;
        while n < limit {
            let (mut kp, mut vp): (*mut libc::c_char, *mut libc::c_char) = (std::ptr::null_mut(), std::ptr::null_mut());
            let (mut ks, mut vs) = (0i32, 0i32);
            // SAFETY: live iterator; on success both regions are malloc'd and ours to free.
            let ok = unsafe { ffi::tkrzw_dbm_iter_get(it.as_ptr(), &mut kp, &mut ks, &mut vp, &mut vs) };
            if !ok {
                if status() == ffi::STATUS_NOT_FOUND_ERROR {
                    break;
                }
                return Err(err("iterator get"));
            }
            n += 1;
            // SAFETY: the two regions hold ks and vs bytes; each is freed once after the visit.
            let go = unsafe {
                let go = visit(
                    std::slice::from_raw_parts(kp.cast::<u8>(), ks as usize),
                    std::slice::from_raw_parts(vp.cast::<u8>(), vs as usize),
                );
                libc::free(kp.cast());
                libc::free(vp.cast());
                go
            };
            if !go {
                break;
            }
            // SAFETY: live iterator.
            if !unsafe { ffi::tkrzw_dbm_iter_next(it.as_ptr()) } {
                if status() == ffi::STATUS_NOT_FOUND_ERROR {
                    break;
                }
                return Err(err("iterator next"));
            }
        }
        Ok(n)
    }
}
