//! `bdb-btree` and `bdb-hash`: Berkeley DB 5.3 (libdb) access methods, through the shim
//! csrc/bdb_shim.c (Berkeley DB's API is function pointers inside its handles).
//!
//! The database is opened without an environment, so there are no transactions and the cache
//! is private to the handle. The handle is not opened with DB_THREAD, so it sits behind a Mutex
//! and values are copied out while the lock is held. `sync` maps to `DB->sync` after each write
//! call (commit) or after every write (always); batches are not atomic.

use std::collections::BTreeMap;
use std::ptr::NonNull;

use kvbench_model::engine::*;

use crate::batch::{write_each, Records};
use crate::locked::{Locked, OneAtATime};

/// Raw declarations of the shim; build.rs compiles it and links `-ldb`.
mod ffi {
    use libc::{c_char, c_int, c_uint, c_ulonglong, c_void};

    opaque!(Db, Dbc);

    pub const CUR_FIRST: c_int = 0;
    pub const CUR_SET_RANGE: c_int = 1;
    pub const CUR_NEXT: c_int = 2;

    extern "C" {
        pub fn kvb_bdb_version() -> *const c_char;
        pub fn kvb_bdb_strerror(err: c_int) -> *const c_char;
        pub fn kvb_bdb_notfound() -> c_int;
        pub fn kvb_bdb_open(
            path: *const c_char,
            hash: c_int,
            read_only: c_int,
            cache_bytes: c_ulonglong,
            pagesize: c_uint,
            err: *mut c_int,
        ) -> *mut Db;
        pub fn kvb_bdb_close(db: *mut Db) -> c_int;
        pub fn kvb_bdb_put(db: *mut Db, key: *const c_void, kl: u32, value: *const c_void, vl: u32) -> c_int;
        pub fn kvb_bdb_get(db: *mut Db, key: *const c_void, kl: u32, value: *mut *const c_void, vl: *mut u32) -> c_int;
        pub fn kvb_bdb_del(db: *mut Db, key: *const c_void, kl: u32) -> c_int;
        pub fn kvb_bdb_sync(db: *mut Db) -> c_int;
        pub fn kvb_bdb_cursor(db: *mut Db, err: *mut c_int) -> *mut Dbc;
        pub fn kvb_bdb_cursor_get(
            cursor: *mut Dbc,
            op: c_int,
            key: *const c_void,
            kl: u32,
            ko: *mut *const c_void,
            kol: *mut u32,
            vo: *mut *const c_void,
            vol: *mut u32,
        ) -> c_int;
        pub fn kvb_bdb_cursor_close(cursor: *mut Dbc) -> c_int;
    }
}

fn version() -> String {
    // SAFETY: db_version returns a static string.
    unsafe { crate::c_str(ffi::kvb_bdb_version()) }
}

static OPTIONS: &[OptionSpec] = &[
    OptionSpec::int("cache_size", "64m", "the handle's private cache (Berkeley DB's own default is 256k)"),
    OptionSpec::int("pagesize", "0", "page size (0 = chosen by Berkeley DB)"),
];

const CAPS: Capabilities = Capabilities { ordered_scan: false, batch: false, ..crate::ORDERED_STORE };

kind!(btree: "bdb-btree", "Berkeley DB 5.3 B+ tree access method (DB_BTREE), no environment",
    Capabilities { ordered_scan: true, ..CAPS }, OPTIONS, |a| open(a, false));

kind!(hash: "bdb-hash", "Berkeley DB 5.3 hash access method (DB_HASH), no environment",
    CAPS, OPTIONS, |a| open(a, true));

/// The one place a Berkeley DB error code becomes an EngineError.
fn err(code: libc::c_int, what: &str) -> EngineError {
    // SAFETY: db_strerror returns a static string (or a per-call buffer for unknown codes).
    let msg = unsafe { crate::c_str(ffi::kvb_bdb_strerror(code)) };
    EngineError::Store(format!("berkeley db {what}: {msg}"))
}

fn check(code: libc::c_int, what: &str) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(err(code, what))
    }
}

fn notfound() -> libc::c_int {
    // SAFETY: returns a constant.
    unsafe { ffi::kvb_bdb_notfound() }
}

fn len(size: usize) -> Result<u32> {
    u32::try_from(size).map_err(|_| EngineError::store("berkeley db: key or value larger than 4 GiB"))
}

/// An open DB handle.
type Handle = crate::CHandle<ffi::Db>;

// SAFETY: only used behind the engine's Mutex, one thread at a time.
unsafe impl Send for Handle {}

impl Handle {
    fn sync(&self) -> Result<()> {
        // SAFETY: open handle (caller holds the lock).
        check(unsafe { ffi::kvb_bdb_sync(self.as_ptr()) }, "sync")
    }
}

/// The open handle and the durability it was opened with.
pub struct Bdb {
    db: Handle,
    sync: SyncMode,
}

fn open(args: &OpenArgs<'_>, hash: bool) -> Result<Box<dyn Engine>> {
    crate::refuse_secondary(args)?;
    let o = args.options;
    let cache = o.int("cache_size").unwrap_or(64 << 20).max(0) as u64;
    let pagesize = o.int("pagesize").unwrap_or(0).clamp(0, 65536) as u32;
    let path = crate::c_path(&args.file(if hash { "db.bdbh" } else { "db.bdb" }));
    let mut code = 0;
    // SAFETY: NUL-terminated path; the shim sets `code` when it returns NULL.
    let p = unsafe {
        ffi::kvb_bdb_open(
            path.as_ptr(),
            hash as i32,
            (args.mode == OpenMode::ReadOnly) as i32,
            cache,
            pagesize,
            &mut code,
        )
    };
    // SAFETY: CHandle releases the open handle once.
    let close = |p: NonNull<_>| check(unsafe { ffi::kvb_bdb_close(p.as_ptr()) }, "close");
    let db = Handle::new(p, Box::new(close)).ok_or_else(|| err(code, "open"))?;
    let mut settings = BTreeMap::new();
    settings.insert(
        "sync".into(),
        match args.sync {
            SyncMode::None => "none: no sync calls; the cache is written on close".into(),
            SyncMode::Commit => {
                "commit: DB->sync() after each write call (no environment: batches are not atomic)".into()
            }
            SyncMode::Always => "always: DB->sync() after every write".into(),
        },
    );
    settings.insert("cache_size".into(), cache.to_string());
    settings
        .insert("pagesize".into(), if pagesize == 0 { "Berkeley DB's choice".into() } else { pagesize.to_string() });
    settings.insert("environment".into(), "none (private cache, no transactions, no logging)".into());
    Ok(Locked::engine(Bdb { db, sync: args.sync }, settings, "opened without DB_THREAD"))
}

impl Records for Bdb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let (kp, kl, vp, vl) = (key.as_ptr().cast(), len(key.len())?, value.as_ptr().cast(), len(value.len())?);
        // SAFETY: open handle under the lock; the slices are live for the call.
        check(unsafe { ffi::kvb_bdb_put(self.db.as_ptr(), kp, kl, vp, vl) }, "put")
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        // SAFETY: as above.
        let r = unsafe { ffi::kvb_bdb_del(self.db.as_ptr(), key.as_ptr().cast(), len(key.len())?) };
        if r == notfound() {
            return Ok(());
        }
        check(r, "del")
    }
}

impl OneAtATime for Bdb {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        write_each(self, batch, self.sync, || self.db.sync())
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let mut vp: *const libc::c_void = std::ptr::null();
        let mut vl = 0u32;
        // SAFETY: open handle under the lock; the value is owned by the handle until its next
        // call, and we copy it before releasing the lock.
        let r = unsafe { ffi::kvb_bdb_get(self.db.as_ptr(), key.as_ptr().cast(), len(key.len())?, &mut vp, &mut vl) };
        if r == notfound() {
            return Ok(false);
        }
        check(r, "get")?;
        if vl > 0 {
            // SAFETY: see above.
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(vp.cast::<u8>(), vl as usize) });
        }
        Ok(true)
    }

    fn scan(&self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        let mut code = 0;
        // SAFETY: open handle under the lock; the cursor is made for kvb_bdb_cursor_close, which
        // its guard calls before scan() returns, so while the lock is still held.
        let cur =
            unsafe { crate::Owned::new(ffi::kvb_bdb_cursor(self.db.as_ptr(), &mut code), ffi::kvb_bdb_cursor_close) }
                .ok_or_else(|| err(code, "cursor"))?;
        let (mut op, k) = match start {
            Some(k) => (ffi::CUR_SET_RANGE, k),
            None => (ffi::CUR_FIRST, &[][..]),
        };
        let mut n = 0;
        while n < limit {
            let (mut kp, mut vp): (*const libc::c_void, *const libc::c_void) = (std::ptr::null(), std::ptr::null());
            let (mut kl, mut vl) = (0u32, 0u32);
            // SAFETY: a live cursor under the handle's lock; on success the record's bytes are
            // owned by the cursor until its next call, after `visit` returns.
            let r = unsafe {
                ffi::kvb_bdb_cursor_get(
                    cur.as_ptr(),
                    op,
                    k.as_ptr().cast(),
                    len(k.len())?,
                    &mut kp,
                    &mut kl,
                    &mut vp,
                    &mut vl,
                )
            };
            if r == notfound() {
                break;
            }
            check(r, "cursor get")?;
            op = ffi::CUR_NEXT;
            n += 1;
            let slice = |p: *const libc::c_void, l: u32| -> &[u8] {
                if l == 0 {
                    &[]
                } else {
                    // SAFETY: see above.
                    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), l as usize) }
                }
            };
            if !visit(slice(kp, kl), slice(vp, vl)) {
                break;
            }
        }
        Ok(n)
    }

    fn close(mut self) -> Result<()> {
        self.db.close()
    }
}
