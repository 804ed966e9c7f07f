//! `kyotocabinet-hash` (a `.kch` file hash database) and `kyotocabinet-tree` (a `.kct` file
//! B+ tree) through Kyoto Cabinet's C API (`kclangc.h`, libkyotocabinet).
//!
//! A Kyoto Cabinet database object is thread-safe (it locks internally and keeps error codes
//! per thread), so one handle is shared by all readers. A batch of more than one write is one
//! transaction (`kcdbbegintran`, hard when `sync` is not `none`); a single write under
//! `sync` = commit/always is followed by `kcdbsync(hard)`.

use std::collections::BTreeMap;
use std::ptr::NonNull;

use kvbench_model::engine::*;

use crate::batch::{Records, Transactions};
use crate::shared::{Shared, ThreadSafe};

/// Raw declarations; this block owns the linking (build.rs adds `-lkyotocabinet`).
mod ffi {
    use libc::{c_char, c_void, size_t};

    opaque!(KcDb, KcCur);

    pub const KCENOREC: i32 = 7;

    pub const KCOREADER: u32 = 1 << 0;
    pub const KCOWRITER: u32 = 1 << 1;
    pub const KCOCREATE: u32 = 1 << 2;

    extern "C" {
        pub static KCVERSION: *const c_char;
        pub fn kcfree(ptr: *mut c_void);
        pub fn kcdbnew() -> *mut KcDb;
        pub fn kcdbdel(db: *mut KcDb);
        pub fn kcdbopen(db: *mut KcDb, path: *const c_char, mode: u32) -> i32;
        pub fn kcdbclose(db: *mut KcDb) -> i32;
        pub fn kcdbecode(db: *mut KcDb) -> i32;
        pub fn kcdbemsg(db: *mut KcDb) -> *const c_char;
        pub fn kcdbset(db: *mut KcDb, key: *const c_char, ks: size_t, value: *const c_char, vs: size_t) -> i32;
        pub fn kcdbremove(db: *mut KcDb, key: *const c_char, ks: size_t) -> i32;
        pub fn kcdbget(db: *mut KcDb, key: *const c_char, ks: size_t, sp: *mut size_t) -> *mut c_char;
        pub fn kcdbsync(db: *mut KcDb, hard: i32, proc_: *const c_void, opq: *mut c_void) -> i32;
        pub fn kcdbbegintran(db: *mut KcDb, hard: i32) -> i32;
        pub fn kcdbendtran(db: *mut KcDb, commit: i32) -> i32;
        pub fn kcdbcursor(db: *mut KcDb) -> *mut KcCur;
        pub fn kccurdel(cur: *mut KcCur);
        pub fn kccurjump(cur: *mut KcCur) -> i32;
        pub fn kccurjumpkey(cur: *mut KcCur, key: *const c_char, ks: size_t) -> i32;
        pub fn kccurget(
            cur: *mut KcCur,
            ksp: *mut size_t,
            vbp: *mut *const c_char,
            vsp: *mut size_t,
            step: i32,
        ) -> *mut c_char;
    }
}

fn version() -> String {
    // SAFETY: KCVERSION is a static NUL-terminated string of the library.
    unsafe { crate::c_str(ffi::KCVERSION) }
}

const COMPRESSION: &[&str] = &["none", "zlib", "def", "gz"];

static HASH_OPTIONS: &[OptionSpec] = &[
    OptionSpec::int("bnum", "0", "bucket count; 0 = twice the records the plan loads (at least KC's default 1048583)"),
    OptionSpec::int("msiz", "64m", "mapped memory (KC's default 64m)"),
    OptionSpec::one_of("compression", COMPRESSION, "none", "record compression (opts=c, zcomp=...)"),
];

static TREE_OPTIONS: &[OptionSpec] = &[
    OptionSpec::int("bnum", "0", "page hash buckets (0 = KC's default)"),
    OptionSpec::int("msiz", "64m", "mapped memory (KC's default 64m)"),
    OptionSpec::int("psiz", "0", "page size (0 = KC's 8192)"),
    OptionSpec::int("pccap", "0", "page cache capacity (0 = KC's 64m)"),
    OptionSpec::one_of("compression", COMPRESSION, "none", "page compression (opts=c, zcomp=...)"),
];

const CAPS: Capabilities = Capabilities { ordered_scan: false, ..crate::ORDERED_STORE };

kind!(hash: "kyotocabinet-hash",
    "Kyoto Cabinet file hash database (.kch), C API",
    CAPS, HASH_OPTIONS, |a| open(a, Kind::Hash));

kind!(tree: "kyotocabinet-tree",
    "Kyoto Cabinet file B+ tree database (.kct), C API, ordered scans by cursor",
    Capabilities { ordered_scan: true, ..CAPS }, TREE_OPTIONS, |a| open(a, Kind::Tree));

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Hash,
    Tree,
}

/// An empty slice with a real address. Kyoto Cabinet's visitor protocol reserves the pointers
/// 0 and 1 (NOP and REMOVE), and an empty Rust slice points at 1: storing an empty value
/// through it would delete the record instead.
fn nonnull(value: &[u8]) -> &[u8] {
    static EMPTY: [u8; 1] = [0];
    if value.is_empty() {
        &EMPTY[..0]
    } else {
        value
    }
}

/// An open KC database object; closed and deleted in Drop.
struct Db(NonNull<ffi::KcDb>);

// SAFETY: Kyoto Cabinet database objects are thread-safe (internal locks, per-thread errors).
unsafe impl Send for Db {}
// SAFETY: as above.
unsafe impl Sync for Db {}

impl Db {
    fn as_ptr(&self) -> *mut ffi::KcDb {
        self.0.as_ptr()
    }

    fn ecode(&self) -> i32 {
        // SAFETY: valid handle.
        unsafe { ffi::kcdbecode(self.as_ptr()) }
    }

    /// The one place a KC error becomes an EngineError.
    fn err(&self, what: &str) -> EngineError {
        // SAFETY: valid handle; the message is owned by the library (per thread).
        let msg = unsafe { crate::c_str(ffi::kcdbemsg(self.as_ptr())) };
        EngineError::Store(format!("kyotocabinet {what}: {msg}"))
    }

    fn check(&self, ok: i32, what: &str) -> Result<()> {
        if ok != 0 {
            Ok(())
        } else {
            Err(self.err(what))
        }
    }
}

impl Records for Kyoto {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let (key, value) = (nonnull(key), nonnull(value));
        // SAFETY: pointers and lengths come from live slices.
        let ok = unsafe {
            ffi::kcdbset(self.db.as_ptr(), key.as_ptr().cast(), key.len(), value.as_ptr().cast(), value.len())
        };
        self.db.check(ok, "set")
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        let key = nonnull(key);
        // SAFETY: as above.
        let ok = unsafe { ffi::kcdbremove(self.db.as_ptr(), key.as_ptr().cast(), key.len()) };
        if ok == 0 && self.db.ecode() == ffi::KCENOREC {
            return Ok(());
        }
        self.db.check(ok, "remove")
    }
}

/// Hard transactions (synced at commit) unless `sync = none`.
impl Transactions for Kyoto {
    fn begin(&self) -> Result<()> {
        let hard = (self.sync != SyncMode::None) as i32;
        // SAFETY: valid handle.
        self.db.check(unsafe { ffi::kcdbbegintran(self.db.as_ptr(), hard) }, "begintran")
    }

    fn commit(&self) -> Result<()> {
        // SAFETY: valid handle inside a transaction.
        self.db.check(unsafe { ffi::kcdbendtran(self.db.as_ptr(), 1) }, "endtran")
    }

    fn abort(&self) {
        // SAFETY: valid handle inside a transaction.
        unsafe { ffi::kcdbendtran(self.db.as_ptr(), 0) };
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: we own the object; kcdbdel closes it if it is still open.
        unsafe { ffi::kcdbdel(self.as_ptr()) }
    }
}

/// The open database and the durability it was opened with.
pub struct Kyoto {
    db: Db,
    sync: SyncMode,
}

fn open(args: &OpenArgs<'_>, kind: Kind) -> Result<Box<dyn Engine>> {
    crate::refuse_secondary(args)?;
    let o = args.options;
    let int = |n: &str| o.int(n).unwrap_or(0).max(0);
    let mut tune = Vec::new();
    let mut bnum = int("bnum");
    if kind == Kind::Hash && bnum == 0 {
        bnum = crate::buckets_for(args.expected_records, 1_048_583);
    }
    if bnum > 0 {
        tune.push(format!("bnum={bnum}"));
    }
    tune.push(format!("msiz={}", o.int("msiz").unwrap_or(64 << 20).max(0)));
    if kind == Kind::Tree {
        for n in ["psiz", "pccap"] {
            if int(n) > 0 {
                tune.push(format!("{n}={}", int(n)));
            }
        }
    }
    let comp = o.text("compression").unwrap_or_else(|| "none".into());
    if comp != "none" {
        tune.push("opts=c".into());
        tune.push(format!("zcomp={comp}"));
    }
    let file = args.file(if kind == Kind::Hash { "db.kch" } else { "db.kct" });
    let spec = format!("{}#{}", file.display(), tune.join("#"));
    let path = std::ffi::CString::new(spec.clone()).map_err(|_| EngineError::store("path contains NUL"))?;
    let mode = match args.mode {
        OpenMode::ReadOnly => ffi::KCOREADER,
        _ => ffi::KCOWRITER | ffi::KCOCREATE,
    };
    // SAFETY: kcdbnew returns a fresh object (or NULL on allocation failure).
    let db = Db(NonNull::new(unsafe { ffi::kcdbnew() }).ok_or_else(|| EngineError::store("kcdbnew failed"))?);
    // SAFETY: valid object and NUL-terminated path.
    let ok = unsafe { ffi::kcdbopen(db.as_ptr(), path.as_ptr(), mode) };
    db.check(ok, "open")?;
    let mut settings = BTreeMap::new();
    settings.insert("tuning".into(), tune.join("#"));
    settings.insert(
        "sync".into(),
        match args.sync {
            SyncMode::None => "none: no sync calls; data reaches the file on close".into(),
            s => format!("{s}: batches are hard transactions (kcdbbegintran hard=1); a single write is followed by kcdbsync(hard=1)"),
        },
    );
    Ok(Shared::engine(Kyoto { db, sync: args.sync }, settings, "Kyoto Cabinet locks internally"))
}

impl ThreadSafe for Kyoto {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        if batch.len() != 1 {
            return self.in_transaction(batch);
        }
        self.apply(&batch[0])?;
        if self.sync != SyncMode::None {
            // SAFETY: valid handle; no file callback.
            let ok = unsafe { ffi::kcdbsync(self.db.as_ptr(), 1, std::ptr::null(), std::ptr::null_mut()) };
            self.db.check(ok, "sync")?;
        }
        Ok(())
    }

    fn close(self) -> Result<()> {
        // SAFETY: valid open handle; Drop then only deletes the object.
        let ok = unsafe { ffi::kcdbclose(self.db.as_ptr()) };
        self.db.check(ok, "close")
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let mut size = 0usize;
        // SAFETY: valid handle and key; the result is kcmalloc'd, copied, then freed once.
        let p = unsafe { ffi::kcdbget(self.db.as_ptr(), key.as_ptr().cast(), key.len(), &mut size) };
        if p.is_null() {
            if self.db.ecode() == ffi::KCENOREC {
                return Ok(false);
            }
            return Err(self.db.err("get"));
        }
        // SAFETY: `size` readable bytes at `p`, allocated for kcfree.
        unsafe { crate::take_c_buf(p.cast(), size, out, ffi::kcfree) };
        Ok(true)
    }

    fn scan(&self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        // SAFETY: valid handle; the cursor is made for kccurdel, which its guard calls.
        let cur = unsafe { crate::Owned::new(ffi::kcdbcursor(self.db.as_ptr()), ffi::kccurdel) }
            .ok_or_else(|| self.db.err("cursor"))?;
        // SAFETY: valid cursor and key slice.
        let ok = unsafe {
            match start {
                Some(k) => ffi::kccurjumpkey(cur.as_ptr(), k.as_ptr().cast(), k.len()),
                None => ffi::kccurjump(cur.as_ptr()),
            }
        };
        if ok == 0 {
            if self.db.ecode() == ffi::KCENOREC {
                return Ok(0);
            }
            return Err(self.db.err("cursor jump"));
        }
        let mut n = 0;
        while n < limit {
            let (mut ks, mut vs) = (0usize, 0usize);
            let mut vp: *const libc::c_char = std::ptr::null();
            // SAFETY: valid cursor; KC returns one kcmalloc'd region holding key and value.
            let kp = unsafe { ffi::kccurget(cur.as_ptr(), &mut ks, &mut vp, &mut vs, 1) };
            if kp.is_null() {
                if self.db.ecode() == ffi::KCENOREC {
                    break;
                }
                return Err(self.db.err("cursor get"));
            }
            n += 1;
            // SAFETY: the region holds `ks` key bytes at kp and `vs` value bytes at vp; it is
            // freed once after the visit.
            let go = unsafe {
                let go = visit(
                    std::slice::from_raw_parts(kp.cast::<u8>(), ks),
                    std::slice::from_raw_parts(vp.cast::<u8>(), vs),
                );
                ffi::kcfree(kp.cast());
                go
            };
            if !go {
                break;
            }
        }
        Ok(n)
    }
}
