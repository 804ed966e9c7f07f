//! `libmdbx`: libmdbx, LMDB's actively developed successor, compiled from the source bundled in
//! the `mdbx-sys` crate (with the machine's C compiler) and called through that crate's
//! generated declarations. The `libmdbx` wrapper crate is not used: it begins and commits every
//! write transaction on a manager thread and takes a mutex around every call, costs that would
//! be measured as libmdbx's (docs/decisions.md).
//!
//! One environment with its unnamed main table. A [`Reader`] holds one read-only transaction
//! for its life (`refresh` resets and renews it); each write batch is one write transaction.
//! `MDBX_NOSTICKYTHREADS` lets a transaction be used from any thread (like LMDB's `MDBX_NOTLS`)
//! and a thread hold a reader while it writes (mixed phases). The file grows on demand up to
//! its upper bound (`max_size`).

use std::collections::BTreeMap;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use kvbench_model::engine::*;
use libc::c_int;
use mdbx_sys::*;

/// Readers kvbench may hold at once; reader threads are bounded by the scenario.
const MAX_READERS: u64 = 1024;

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "libmdbx",
    "libmdbx (bundled C source via mdbx-sys): LMDB's successor, B+tree in a growing memory map",
    crate::ORDERED_STORE,
    &[
        OptionSpec {
            name: "max_size",
            kind: OptionKind::Int,
            default: "",
            doc: "upper bound of the database file in bytes (default: max(1 GiB, 4 x the plan's bytes))",
        },
        OptionSpec {
            name: "no_readahead",
            kind: OptionKind::Bool,
            default: "true",
            doc: "MDBX_NORDAHEAD: no OS read-ahead on the map (on by default, as for lmdb)",
        },
        OptionSpec {
            name: "write_map",
            kind: OptionKind::Bool,
            default: "false",
            doc: "MDBX_WRITEMAP: write through a writable memory map instead of write()",
        },
    ],
    version,
    open,
);

fn version() -> String {
    // SAFETY: a static the library defines and never changes.
    let v = unsafe { &mdbx_version };
    format!("{}.{}.{}", v.major, v.minor, v.patch)
}

/// The one place a libmdbx return code becomes an error.
#[inline]
fn check(rc: c_int, call: &str) -> Result<()> {
    if rc == MDBX_SUCCESS {
        return Ok(());
    }
    Err(failure(rc, call))
}

#[cold]
fn failure(rc: c_int, call: &str) -> EngineError {
    // SAFETY: mdbx_strerror returns a NUL-terminated static (or strerror's) string.
    let msg = unsafe { crate::c_str(mdbx_strerror(rc)) };
    EngineError::Store(format!("libmdbx {call}: {msg} ({rc})"))
}

fn val(bytes: &[u8]) -> MDBX_val {
    MDBX_val { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() }
}

fn empty() -> MDBX_val {
    MDBX_val { iov_base: ptr::null_mut(), iov_len: 0 }
}

/// Warnings and errors only: libmdbx logs notices to stderr otherwise (every open and sync in
/// a debug build, and in any build a line in every child after a fork).
pub fn quiet_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: -1 is MDBX_LOGGER_DONTCHANGE (keep the logger), a value libmdbx compares
        // against and never calls.
        let keep = unsafe { std::mem::transmute::<isize, MDBX_debug_func>(-1) };
        // SAFETY: sets process-wide log settings under libmdbx's own lock.
        unsafe { mdbx_setup_debug(MDBX_LOG_WARN, MDBX_DBG_DONTCHANGE, keep) };
    });
}

/// An open environment and its main table; closed in `close` or Drop.
pub struct Mdbx {
    env: *mut MDBX_env,
    dbi: MDBX_dbi,
    read_only: bool,
    no_sync: bool,
    flags: MDBX_env_flags_t,
    max_size: usize,
    /// Something was written since open: only then does close force data to disk.
    wrote: AtomicBool,
}

// SAFETY: an MDBX_env is thread-safe; under MDBX_NOSTICKYTHREADS transactions are not bound to
// the thread that began them, and a write transaction lives inside one `write` call.
unsafe impl Send for Mdbx {}
// SAFETY: see Send; `&Mdbx` only hands the env pointer to thread-safe libmdbx calls.
unsafe impl Sync for Mdbx {}

impl Mdbx {
    fn open(args: &OpenArgs<'_>) -> Result<Mdbx> {
        let o = args.options;
        if args.mode == OpenMode::Secondary {
            return Err(EngineError::Unsupported("libmdbx has no secondary open".into()));
        }
        let read_only = args.mode == OpenMode::ReadOnly;
        let max_size = match o.int("max_size") {
            Some(n) if n > 0 => n as usize,
            Some(n) => return Err(EngineError::Option(format!("libmdbx max_size must be positive, got {n}"))),
            None => (1usize << 30).max(args.expected_bytes.saturating_mul(4) as usize),
        };
        let no_sync = args.sync == SyncMode::None && !read_only;
        let mut flags = MDBX_NOSTICKYTHREADS;
        if no_sync {
            flags |= MDBX_SAFE_NOSYNC;
        }
        if read_only {
            flags |= MDBX_RDONLY;
        }
        if o.bool("no_readahead") {
            flags |= MDBX_NORDAHEAD;
        }
        if o.bool("write_map") && !read_only {
            flags |= MDBX_WRITEMAP;
        }
        quiet_logs();
        let mut env = ptr::null_mut();
        // SAFETY: writes a fresh handle into `env`.
        check(unsafe { mdbx_env_create(&mut env) }, "mdbx_env_create")?;
        // From here on Drop closes the handle, whatever fails next.
        let mut db = Mdbx { env, dbi: 0, read_only, no_sync, flags, max_size, wrote: AtomicBool::new(false) };
        if !read_only {
            // SAFETY: a live handle not yet opened; -1 keeps libmdbx's default for that field.
            let rc = unsafe { mdbx_env_set_geometry(env, -1, -1, max_size as isize, -1, -1, -1) };
            check(rc, "mdbx_env_set_geometry")?;
        }
        // SAFETY: as above.
        check(unsafe { mdbx_env_set_option(env, MDBX_opt_max_readers, MAX_READERS) }, "mdbx_env_set_option")?;
        let path = crate::c_path(args.dir);
        // SAFETY: `path` is NUL-terminated and outlives the call; `env` is live.
        check(unsafe { mdbx_env_open(env, path.as_ptr(), flags, 0o644) }, "mdbx_env_open")?;
        let txn = Txn::begin(&db, if read_only { MDBX_TXN_RDONLY } else { MDBX_TXN_READWRITE })?;
        let mut dbi = 0;
        // SAFETY: a live txn; a null name is the main table, which always exists.
        check(unsafe { mdbx_dbi_open(txn.ptr, ptr::null(), MDBX_DB_DEFAULTS, &mut dbi) }, "mdbx_dbi_open")?;
        txn.commit()?;
        db.dbi = dbi;
        Ok(db)
    }

    fn shut(&mut self) -> Result<()> {
        if self.env.is_null() {
            return Ok(());
        }
        let mut r = Ok(());
        if self.no_sync && self.wrote.load(Ordering::Relaxed) {
            r = self.sync();
        }
        // SAFETY: every Reader borrows `self`, so none is alive; no transaction is open.
        let rc = unsafe { mdbx_env_close_ex(self.env, false) };
        self.env = ptr::null_mut();
        r.and(check(rc, "mdbx_env_close_ex"))
    }
}

impl Mdbx {
    /// Forces every commit to disk, even under MDBX_SAFE_NOSYNC. MDBX_RESULT_TRUE says there
    /// was nothing to flush, which is success here.
    fn sync(&self) -> Result<()> {
        // SAFETY: the env is open read-write.
        let rc = unsafe { mdbx_env_sync_ex(self.env, true, false) };
        check(if rc == MDBX_RESULT_TRUE { MDBX_SUCCESS } else { rc }, "mdbx_env_sync_ex")
    }
}

impl Drop for Mdbx {
    fn drop(&mut self) {
        let _ = self.shut();
    }
}

/// A transaction that aborts on Drop unless committed.
struct Txn {
    ptr: *mut MDBX_txn,
}

impl Txn {
    fn begin(db: &Mdbx, flags: MDBX_txn_flags_t) -> Result<Txn> {
        let mut ptr = ptr::null_mut();
        // SAFETY: the env is open; no parent, no context.
        let rc = unsafe { mdbx_txn_begin_ex(db.env, ptr::null_mut(), flags, &mut ptr, ptr::null_mut()) };
        check(rc, "mdbx_txn_begin_ex")?;
        Ok(Txn { ptr })
    }

    fn commit(mut self) -> Result<()> {
        let p = std::mem::replace(&mut self.ptr, ptr::null_mut());
        // SAFETY: a live transaction; commit frees it whether it succeeds or not.
        check(unsafe { mdbx_txn_commit_ex(p, ptr::null_mut()) }, "mdbx_txn_commit_ex")
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: a live transaction that was not committed.
            unsafe { mdbx_txn_abort_ex(self.ptr, ptr::null_mut()) };
        }
    }
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    Ok(Box::new(Mdbx::open(args)?))
}

impl Engine for Mdbx {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        if self.read_only {
            return Err(EngineError::store("libmdbx: opened read-only"));
        }
        self.wrote.store(true, Ordering::Relaxed);
        let txn = Txn::begin(self, MDBX_TXN_READWRITE)?;
        for w in batch {
            let k = val(w.key);
            match w.value {
                Some(v) => {
                    let mut d = val(v);
                    // SAFETY: a live write txn; key and data point to slices alive for the call
                    // (libmdbx copies them into its pages).
                    check(unsafe { mdbx_put(txn.ptr, self.dbi, &k, &mut d, MDBX_UPSERT) }, "mdbx_put")?;
                }
                None => {
                    // SAFETY: as above; a null data pointer deletes the key.
                    let rc = unsafe { mdbx_del(txn.ptr, self.dbi, &k, ptr::null()) };
                    if rc != MDBX_NOTFOUND {
                        check(rc, "mdbx_del")?;
                    }
                }
            }
        }
        txn.commit()
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        let txn = Txn::begin(self, MDBX_TXN_RDONLY)?;
        Ok(Box::new(MdbxReader { db: self, txn, cursor: ptr::null_mut() }))
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        self.shut()
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let mut s = BTreeMap::new();
        let sync = if self.read_only {
            "read-only environment (MDBX_RDONLY)"
        } else if self.no_sync {
            "MDBX_SAFE_NOSYNC (no fsync at commit; mdbx_env_sync at close)"
        } else {
            "MDBX_SYNC_DURABLE (data and meta page fsynced at every commit)"
        };
        s.insert("sync".into(), sync.into());
        s.insert("max_size".into(), self.max_size.to_string());
        let mut flags = vec!["MDBX_NOSTICKYTHREADS"];
        for (bit, name) in [
            (MDBX_SAFE_NOSYNC, "MDBX_SAFE_NOSYNC"),
            (MDBX_RDONLY, "MDBX_RDONLY"),
            (MDBX_NORDAHEAD, "MDBX_NORDAHEAD"),
            (MDBX_WRITEMAP, "MDBX_WRITEMAP"),
        ] {
            if self.flags & bit != 0 {
                flags.push(name);
            }
        }
        s.insert("env_flags".into(), flags.join("|"));
        s.insert("max_readers".into(), MAX_READERS.to_string());
        s.insert("write_batch".into(), "one write transaction per batch".into());
        s.insert("reader".into(), "one read-only transaction per reader, reset+renew on refresh".into());
        s
    }

    fn settle(&mut self) -> Result<String> {
        if self.read_only {
            return Ok("read-only environment: nothing to flush; B-tree written in place: nothing to compact".into());
        }
        self.sync()?;
        Ok("synced the environment (mdbx_env_sync); B-tree written in place: nothing to compact".into())
    }
}

/// One read-only transaction (and, after the first scan, one cursor) for the reader's life.
struct MdbxReader<'a> {
    db: &'a Mdbx,
    txn: Txn,
    cursor: *mut MDBX_cursor,
}

impl Reader for MdbxReader<'_> {
    fn refresh(&mut self) -> Result<()> {
        // SAFETY: a live read-only txn; reset drops its snapshot, renew takes a new one. A
        // cursor of a read-only txn is renewed onto the same txn.
        check(unsafe { mdbx_txn_reset(self.txn.ptr) }, "mdbx_txn_reset")?;
        // SAFETY: as above.
        check(unsafe { mdbx_txn_renew(self.txn.ptr) }, "mdbx_txn_renew")?;
        if !self.cursor.is_null() {
            // SAFETY: both live.
            check(unsafe { mdbx_cursor_renew(self.txn.ptr, self.cursor) }, "mdbx_cursor_renew")?;
        }
        Ok(())
    }

    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let Some(v) = self.get_shared(key)? else { return Ok(false) };
        out.extend_from_slice(v);
        Ok(true)
    }

    fn reads_in_place(&self) -> bool {
        true
    }

    fn get_shared(&self, key: &[u8]) -> Result<Option<&[u8]>> {
        let k = val(key);
        let mut d = empty();
        // SAFETY: a live read-only txn used by this thread only (the reader is not Sync); `d`
        // points into the map, valid until the txn is reset or ends, which needs `&mut self`.
        let rc = unsafe { mdbx_get(self.txn.ptr, self.db.dbi, &k, &mut d) };
        if rc == MDBX_NOTFOUND {
            return Ok(None);
        }
        check(rc, "mdbx_get")?;
        // SAFETY: see above.
        Ok(Some(unsafe { slice(&d) }))
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        if limit == 0 {
            return Ok(0);
        }
        if self.cursor.is_null() {
            // SAFETY: a live read txn; the cursor is closed in Drop before the txn ends.
            check(unsafe { mdbx_cursor_open(self.txn.ptr, self.db.dbi, &mut self.cursor) }, "mdbx_cursor_open")?;
        }
        let (mut k, op) = match start {
            Some(s) => (val(s), MDBX_SET_RANGE),
            None => (empty(), MDBX_FIRST),
        };
        let mut d = empty();
        // SAFETY: a live cursor; `k` points to `start` for the call, then libmdbx repoints it.
        let mut rc = unsafe { mdbx_cursor_get(self.cursor, &mut k, &mut d, op) };
        let mut n = 0;
        while rc == MDBX_SUCCESS {
            n += 1;
            // SAFETY: both point into the map, valid while the txn lives (this call).
            if !visit(unsafe { slice(&k) }, unsafe { slice(&d) }) || n >= limit {
                return Ok(n);
            }
            // SAFETY: as above.
            rc = unsafe { mdbx_cursor_get(self.cursor, &mut k, &mut d, MDBX_NEXT) };
        }
        if rc != MDBX_NOTFOUND {
            check(rc, "mdbx_cursor_get")?;
        }
        Ok(n)
    }
}

impl Drop for MdbxReader<'_> {
    fn drop(&mut self) {
        if !self.cursor.is_null() {
            // SAFETY: a cursor of a read-only txn is closed explicitly, before the txn.
            unsafe { mdbx_cursor_close(self.cursor) };
        }
    }
}

/// The bytes a libmdbx value points to.
///
/// # Safety
/// `val` must come from libmdbx within a transaction that is still alive, and `'a` must not
/// outlive that transaction.
unsafe fn slice<'a>(val: &MDBX_val) -> &'a [u8] {
    if val.iov_len == 0 {
        return &[];
    }
    std::slice::from_raw_parts(val.iov_base as *const u8, val.iov_len)
}
