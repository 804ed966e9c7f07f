//! `qdbm-depot` (QDBM's hash file), `qdbm-curia` (Depot split over several files in a
//! directory) and `qdbm-villa` (QDBM's B+ tree) through the C API (libqdbm, headers in
//! /usr/include/qdbm).
//!
//! QDBM handles are not thread-safe, so each engine keeps its handle behind a Mutex: reads from
//! several threads take turns. Depot and Curia have no transactions, so a batch is applied
//! record by record; Villa's batches are transactions (`vltranbegin`/`vltrancommit`).

use std::collections::BTreeMap;
use std::ptr::NonNull;

use kvbench_model::engine::*;
use libc::{c_char, c_int, c_void};

use crate::batch::{write_each, Records, Transactions};
use crate::locked::{Locked, OneAtATime};

/// Raw declarations; this block owns the linking (build.rs adds `-lqdbm`).
mod ffi {
    use libc::{c_char, c_int, c_void};

    pub type VlCmp = unsafe extern "C" fn(*const c_char, c_int, *const c_char, c_int) -> c_int;

    pub const DP_ENOITEM: c_int = 5;

    // Open modes: the same bits in Depot (DP_), Curia (CR_) and Villa (VL_).
    pub const OREADER: c_int = 1 << 0;
    pub const OWRITER: c_int = 1 << 1;
    pub const OCREAT: c_int = 1 << 2;
    pub const VL_OZCOMP: c_int = 1 << 6;

    // Put modes: overwrite (DP_DOVER, CR_DOVER, VL_DOVER).
    pub const DOVER: c_int = 0;
    pub const VL_JFORWARD: c_int = 0;

    extern "C" {
        pub static dpversion: *const c_char;
        pub fn dpecodeptr() -> *mut c_int;
        pub fn dperrmsg(ecode: c_int) -> *const c_char;

        pub fn dpopen(name: *const c_char, omode: c_int, bnum: c_int) -> *mut c_void;
        pub fn cropen(name: *const c_char, omode: c_int, bnum: c_int, dnum: c_int) -> *mut c_void;

        pub static VL_CMPLEX: VlCmp;
        pub fn vlopen(name: *const c_char, omode: c_int, cmp: VlCmp) -> *mut c_void;
        pub fn vlget(db: *mut c_void, key: *const c_char, ks: c_int, sp: *mut c_int) -> *mut c_char;
        pub fn vlsettuning(db: *mut c_void, lrecmax: c_int, nidxmax: c_int, lcnum: c_int, ncnum: c_int);
        pub fn vltranbegin(db: *mut c_void) -> c_int;
        pub fn vltrancommit(db: *mut c_void) -> c_int;
        pub fn vltranabort(db: *mut c_void) -> c_int;
        pub fn vlcurfirst(db: *mut c_void) -> c_int;
        pub fn vlcurjump(db: *mut c_void, key: *const c_char, ks: c_int, jmode: c_int) -> c_int;
        pub fn vlcurnext(db: *mut c_void) -> c_int;
        pub fn vlcurkeycache(db: *mut c_void, sp: *mut c_int) -> *const c_char;
        pub fn vlcurvalcache(db: *mut c_void, sp: *mut c_int) -> *const c_char;
    }
}

fn version() -> String {
    // SAFETY: dpversion is a static NUL-terminated string of the library.
    unsafe { crate::c_str(ffi::dpversion) }
}

/// QDBM's last error code (a per-thread variable behind a function in thread-enabled builds).
fn ecode() -> c_int {
    // SAFETY: dpecodeptr returns a valid pointer to the error variable.
    unsafe { *ffi::dpecodeptr() }
}

/// The one place a QDBM error becomes an EngineError.
fn err(engine: &str, what: &str) -> EngineError {
    // SAFETY: dperrmsg returns a static string for any code.
    let msg = unsafe { crate::c_str(ffi::dperrmsg(ecode())) };
    EngineError::Store(format!("{engine} {what}: {msg}"))
}

fn len(size: usize) -> Result<c_int> {
    c_int::try_from(size).map_err(|_| EngineError::store("key or value larger than 2 GiB"))
}

const CAPS: Capabilities = Capabilities { ordered_scan: false, batch: false, ..crate::ORDERED_STORE };

static DEPOT_OPTIONS: &[OptionSpec] = &[OptionSpec::int(
    "bnum",
    "0",
    "bucket array size; 0 = twice the records the plan loads (at least QDBM's default 8191)",
)];

static CURIA_OPTIONS: &[OptionSpec] = &[
    OptionSpec::int("bnum", "0", "buckets of each division; 0 = twice the records per division (at least 8191)"),
    OptionSpec::int("dnum", "5", "number of division files (QDBM's 5)"),
];

static VILLA_OPTIONS: &[OptionSpec] = &[
    OptionSpec::int("lrecmax", "0", "records per leaf (0 = QDBM's 49)"),
    OptionSpec::int("nidxmax", "0", "indexes per node (0 = QDBM's 192)"),
    OptionSpec::int("lcnum", "0", "cached leaves (0 = QDBM's 1024)"),
    OptionSpec::int("ncnum", "0", "cached nodes (0 = QDBM's 512)"),
    OptionSpec::one_of("compression", &["none", "zlib"], "none", "leaf compression (VL_OZCOMP)"),
];

kind!(depot: "qdbm-depot", "QDBM Depot hash database, C API",
    CAPS, DEPOT_OPTIONS, |a| open_hash(a, &DEPOT));

kind!(curia: "qdbm-curia", "QDBM Curia: Depot hash databases split over a directory of files, C API",
    CAPS, CURIA_OPTIONS, |a| open_hash(a, &CURIA));

kind!(villa: "qdbm-villa", "QDBM Villa B+ tree database, C API, ordered scans by cursor",
    Capabilities { ordered_scan: true, batch: true, ..CAPS }, VILLA_OPTIONS, open_villa);

type PutFn = unsafe extern "C" fn(*mut c_void, *const c_char, c_int, *const c_char, c_int, c_int) -> c_int;
type OutFn = unsafe extern "C" fn(*mut c_void, *const c_char, c_int) -> c_int;
type GetFn = unsafe extern "C" fn(*mut c_void, *const c_char, c_int, c_int, c_int, *mut c_int) -> *mut c_char;
type HandleFn = unsafe extern "C" fn(*mut c_void) -> c_int;

/// Depot (`dp*`), Curia (`cr*`) and Villa (`vl*`) have the same close, put, out and sync under
/// three prefixes: each API's are declared once, in module `$calls` (linked as `PREFIX` + name,
/// build.rs adds `-lqdbm`), with the items given (Depot's and Curia's get).
macro_rules! calls {
    ($calls:ident, $prefix:literal $(, $more:item)*) => {
        mod $calls {
            use libc::{c_char, c_int, c_void};

            extern "C" {
                #[link_name = concat!($prefix, "close")]
                pub fn close(db: *mut c_void) -> c_int;
                #[link_name = concat!($prefix, "put")]
                pub fn put(
                    db: *mut c_void,
                    key: *const c_char,
                    ks: c_int,
                    value: *const c_char,
                    vs: c_int,
                    dmode: c_int,
                ) -> c_int;
                #[link_name = concat!($prefix, "out")]
                pub fn out(db: *mut c_void, key: *const c_char, ks: c_int) -> c_int;
                #[link_name = concat!($prefix, "sync")]
                pub fn sync(db: *mut c_void) -> c_int;
                $($more)*
            }
        }
    };
}

calls!(vl, "vl");

/// Depot's and Curia's calls (Villa's get has no start and max), gathered in the table `$api`
/// the engine calls through.
macro_rules! hash_api {
    ($api:ident, $calls:ident, $prefix:literal, $name:literal, $file:literal) => {
        calls!(
            $calls,
            $prefix,
            #[link_name = concat!($prefix, "get")]
            pub fn get(
                db: *mut c_void,
                key: *const c_char,
                ks: c_int,
                start: c_int,
                max: c_int,
                sp: *mut c_int,
            ) -> *mut c_char;
        );

        static $api: HashApi = HashApi {
            name: $name,
            file: $file,
            put: $calls::put,
            out: $calls::out,
            get: $calls::get,
            sync: $calls::sync,
            close: $calls::close,
        };
    };
}

hash_api!(DEPOT, dp, "dp", "qdbm-depot", "db.qdbm");
hash_api!(CURIA, cr, "cr", "qdbm-curia", "db.curia");

/// What the engine calls: Depot's functions or Curia's.
struct HashApi {
    name: &'static str,
    file: &'static str,
    put: PutFn,
    out: OutFn,
    get: GetFn,
    sync: HandleFn,
    close: HandleFn,
}

/// An open QDBM handle (Depot, Curia or Villa): the engine's name for its errors, the
/// durability it was opened with, and its database's put and out (the same in all three).
struct Handle {
    h: crate::CHandle<c_void>,
    name: &'static str,
    sync: SyncMode,
    put_call: PutFn,
    out_call: OutFn,
}

// SAFETY: the handle is only used behind the engine's lock (`crate::locked`), one thread at a
// time.
unsafe impl Send for Handle {}

impl Handle {
    fn as_ptr(&self) -> *mut c_void {
        self.h.as_ptr()
    }

    fn check(&self, ok: c_int, what: &str) -> Result<()> {
        check(ok, self.name, what)
    }

    fn close(mut self) -> Result<()> {
        self.h.close()
    }
}

impl Records for Handle {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let (kp, kl, vp, vl) = (key.as_ptr().cast(), len(key.len())?, value.as_ptr().cast(), len(value.len())?);
        // SAFETY: open handle under the lock; the slices are live for the call.
        self.check(unsafe { (self.put_call)(self.as_ptr(), kp, kl, vp, vl, ffi::DOVER) }, "put")
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        // SAFETY: as above.
        let ok = unsafe { (self.out_call)(self.as_ptr(), key.as_ptr().cast(), len(key.len())?) };
        if ok == 0 && ecode() == ffi::DP_ENOITEM {
            return Ok(());
        }
        self.check(ok, "out")
    }
}

/// An open Depot or Curia database: its handle and the API whose functions it calls.
pub struct HashDb {
    db: Handle,
    api: &'static HashApi,
}

fn check(ok: c_int, name: &str, what: &str) -> Result<()> {
    if ok != 0 {
        Ok(())
    } else {
        Err(err(name, what))
    }
}

/// What `sync` means for an engine without atomic batches.
fn sync_note(sync: SyncMode, call: &str) -> String {
    match sync {
        SyncMode::None => "none: no sync calls; data reaches the file on close".into(),
        SyncMode::Commit => format!("commit: {call} after each write call (batches are not atomic)"),
        SyncMode::Always => format!("always: {call} after every single write"),
    }
}

fn open_hash(args: &OpenArgs<'_>, api: &'static HashApi) -> Result<Box<dyn Engine>> {
    crate::refuse_secondary(args)?;
    let o = args.options;
    let curia = std::ptr::eq(api, &CURIA);
    let dnum = if curia { o.int("dnum").unwrap_or(5).clamp(1, 512) as c_int } else { 1 };
    let mut bnum = o.int("bnum").unwrap_or(0).max(0);
    if bnum == 0 {
        bnum = crate::buckets_for(args.expected_records / dnum as u64, 8191);
    }
    let bnum = bnum.min(c_int::MAX as i64) as c_int;
    let omode = match args.mode {
        OpenMode::ReadOnly => ffi::OREADER,
        _ => ffi::OWRITER | ffi::OCREAT,
    };
    let path = crate::c_path(&args.file(api.file));
    // SAFETY: NUL-terminated path; QDBM returns a handle or NULL with the error code set.
    let p = unsafe {
        if curia {
            ffi::cropen(path.as_ptr(), omode, bnum, dnum)
        } else {
            ffi::dpopen(path.as_ptr(), omode, bnum)
        }
    };
    // SAFETY: CHandle releases the open handle once.
    let close = |p: NonNull<c_void>| check(unsafe { (api.close)(p.as_ptr()) }, api.name, "close");
    let h = crate::CHandle::new(p, Box::new(close)).ok_or_else(|| err(api.name, "open"))?;
    let mut settings = BTreeMap::new();
    settings.insert("sync".into(), sync_note(args.sync, if curia { "crsync()" } else { "dpsync()" }));
    settings.insert("bnum".into(), bnum.to_string());
    if curia {
        settings.insert("dnum".into(), dnum.to_string());
    }
    let db = Handle { h, name: api.name, sync: args.sync, put_call: api.put, out_call: api.out };
    let db = HashDb { db, api };
    Ok(Locked::engine(db, settings, "QDBM is not thread-safe"))
}

impl HashDb {
    fn sync(&self) -> Result<()> {
        // SAFETY: open handle under the lock.
        let ok = unsafe { (self.api.sync)(self.db.as_ptr()) };
        self.db.check(ok, "sync")
    }
}

impl OneAtATime for HashDb {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        write_each(&self.db, batch, self.db.sync, || self.sync())
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let mut size: c_int = 0;
        // SAFETY: open handle under the lock; the result is malloc'd and handed to `take`.
        unsafe {
            let p = (self.api.get)(self.db.as_ptr(), key.as_ptr().cast(), len(key.len())?, 0, -1, &mut size);
            take(p, size, out, self.api.name)
        }
    }

    fn close(self) -> Result<()> {
        self.db.close()
    }
}

/// Copy a malloc'd QDBM result into `out` and free it; false when `ptr` is NULL and the error is
/// "no item".
///
/// # Safety
/// `ptr` must be NULL or a malloc'd region of `size` bytes owned by the caller.
unsafe fn take(ptr: *mut c_char, size: c_int, out: &mut Vec<u8>, engine: &str) -> Result<bool> {
    if ptr.is_null() {
        if ecode() == ffi::DP_ENOITEM {
            return Ok(false);
        }
        return Err(err(engine, "get"));
    }
    crate::take_c_buf(ptr.cast(), size as usize, out, libc::free);
    Ok(true)
}

// ---- Villa ----

/// An open Villa database.
pub struct VillaDb(Handle);

impl Records for VillaDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.0.put(key, value)
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.0.delete(key)
    }
}

impl Transactions for VillaDb {
    fn begin(&self) -> Result<()> {
        // SAFETY: open handle under the lock.
        self.0.check(unsafe { ffi::vltranbegin(self.0.as_ptr()) }, "tranbegin")
    }

    fn commit(&self) -> Result<()> {
        // SAFETY: open handle inside a transaction.
        self.0.check(unsafe { ffi::vltrancommit(self.0.as_ptr()) }, "trancommit")
    }

    fn abort(&self) {
        // SAFETY: open handle inside a transaction.
        unsafe { ffi::vltranabort(self.0.as_ptr()) };
    }
}

fn open_villa(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    crate::refuse_secondary(args)?;
    let o = args.options;
    let int = |n: &str| o.int(n).unwrap_or(0).clamp(0, c_int::MAX as i64) as c_int;
    let zlib = o.text("compression").as_deref() == Some("zlib");
    let mut omode = match args.mode {
        OpenMode::ReadOnly => ffi::OREADER,
        _ => ffi::OWRITER | ffi::OCREAT,
    };
    if zlib && args.mode != OpenMode::ReadOnly {
        omode |= ffi::VL_OZCOMP;
    }
    let path = crate::c_path(&args.file("db.qdbv"));
    // SAFETY: NUL-terminated path and the library's own lexical comparator.
    let p = unsafe { ffi::vlopen(path.as_ptr(), omode, ffi::VL_CMPLEX) };
    // SAFETY: CHandle releases the open handle once.
    let close = |p: NonNull<c_void>| check(unsafe { vl::close(p.as_ptr()) }, "qdbm-villa", "close");
    let h = crate::CHandle::new(p, Box::new(close)).ok_or_else(|| err("qdbm-villa", "open"))?;
    let db = VillaDb(Handle { h, name: "qdbm-villa", sync: args.sync, put_call: vl::put, out_call: vl::out });
    let (lrecmax, nidxmax, lcnum, ncnum) = (int("lrecmax"), int("nidxmax"), int("lcnum"), int("ncnum"));
    // SAFETY: open handle; tuning is per open and not stored in the file.
    unsafe { ffi::vlsettuning(db.0.as_ptr(), lrecmax, nidxmax, lcnum, ncnum) };
    let show = |n: c_int, d: &str| if n == 0 { format!("{d} (QDBM default)") } else { n.to_string() };
    let mut settings = BTreeMap::new();
    settings.insert(
        "sync".into(),
        match args.sync {
            SyncMode::None => "none: no sync calls; data reaches the file on close".into(),
            s => format!("{s}: vlsync() after each write call; a batch is one transaction (vltranbegin/vltrancommit)"),
        },
    );
    settings.insert("lrecmax".into(), show(lrecmax, "49"));
    settings.insert("nidxmax".into(), show(nidxmax, "192"));
    settings.insert("lcnum".into(), show(lcnum, "1024"));
    settings.insert("ncnum".into(), show(ncnum, "512"));
    settings.insert("compression".into(), if zlib { "zlib" } else { "none" }.into());
    Ok(Locked::engine(db, settings, "QDBM is not thread-safe"))
}

impl OneAtATime for VillaDb {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        if batch.len() == 1 {
            self.apply(&batch[0])?;
        } else {
            self.in_transaction(batch)?;
        }
        if self.0.sync != SyncMode::None {
            // SAFETY: open handle, no transaction active.
            let ok = unsafe { vl::sync(self.0.as_ptr()) };
            self.0.check(ok, "sync")?;
        }
        Ok(())
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let mut size: c_int = 0;
        // SAFETY: open handle under the lock; the malloc'd result goes to `take`.
        unsafe {
            let p = ffi::vlget(self.0.as_ptr(), key.as_ptr().cast(), len(key.len())?, &mut size);
            take(p, size, out, "qdbm-villa")
        }
    }

    /// The cursor lives in the handle: the caller holds the lock for the whole scan.
    fn scan(&self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        // SAFETY: open handle under the lock.
        let mut on = unsafe {
            match start {
                Some(k) => ffi::vlcurjump(self.0.as_ptr(), k.as_ptr().cast(), len(k.len())?, ffi::VL_JFORWARD),
                None => ffi::vlcurfirst(self.0.as_ptr()),
            }
        };
        let mut n = 0;
        while on != 0 && n < limit {
            let (mut ks, mut vs): (c_int, c_int) = (0, 0);
            // SAFETY: the cache pointers stay valid until the next operation on the handle,
            // which cannot happen while we hold the lock and before visit returns.
            let go = unsafe {
                let kp = ffi::vlcurkeycache(self.0.as_ptr(), &mut ks);
                let vp = ffi::vlcurvalcache(self.0.as_ptr(), &mut vs);
                if kp.is_null() || vp.is_null() {
                    return Err(err("qdbm-villa", "cursor"));
                }
                n += 1;
                visit(
                    std::slice::from_raw_parts(kp.cast(), ks as usize),
                    std::slice::from_raw_parts(vp.cast(), vs as usize),
                )
            };
            if !go {
                break;
            }
            // SAFETY: open handle under the lock.
            on = unsafe { ffi::vlcurnext(self.0.as_ptr()) };
        }
        if on == 0 && ecode() != ffi::DP_ENOITEM {
            return Err(err("qdbm-villa", "cursor"));
        }
        Ok(n)
    }

    fn close(self) -> Result<()> {
        self.0.close()
    }
}
