//! `libmdbx`: libmdbx, LMDB's actively developed successor, compiled from the source bundled in
//! the `mdbx-sys` crate (with the machine's C compiler) and called through that crate's
//! generated declarations. The `libmdbx` wrapper crate is not used: it begins and commits every
//! write transaction on a manager thread and takes a mutex around every call, costs that would
//! be measured as libmdbx's (docs/decisions.md).
//!
//! One environment with its unnamed main table. Transactions, the write of a batch and the
//! reader are [`mdb_family`]'s, shared with lmdb: a reader holds one read-only transaction for
//! its life (`refresh` resets and renews it); each write batch is one write transaction.
//! `MDBX_NOSTICKYTHREADS` lets a transaction be used from any thread (like LMDB's `MDBX_NOTLS`)
//! and a thread hold a reader while it writes (mixed phases). The file grows on demand up to
//! its upper bound (`max_size`).

use std::collections::BTreeMap;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::mdb_family::{self, Flags, Opening, Step};
use kvbench_model::engine::*;
use libc::c_int;
use mdbx_sys::*;

/// Readers kvbench may hold at once; reader threads are bounded by the scenario.
const MAX_READERS: u64 = 1024;

const FLAGS: Flags = Flags {
    threads: (MDBX_NOSTICKYTHREADS, "MDBX_NOSTICKYTHREADS"),
    no_sync: (MDBX_SAFE_NOSYNC, "MDBX_SAFE_NOSYNC"),
    read_only: (MDBX_RDONLY, "MDBX_RDONLY"),
    no_readahead: (MDBX_NORDAHEAD, "MDBX_NORDAHEAD"),
    write_map: (MDBX_WRITEMAP, "MDBX_WRITEMAP"),
};

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "libmdbx",
    "libmdbx (bundled C source via mdbx-sys): LMDB's successor, B+tree in a growing memory map",
    crate::ORDERED_STORE,
    &[
        OptionSpec::int(
            "max_size",
            "",
            "upper bound of the database file in bytes (default: max(1 GiB, 4 x the plan's bytes))",
        ),
        OptionSpec::bool(
            "no_readahead",
            "true",
            "MDBX_NORDAHEAD: no OS read-ahead on the map (on by default, as for lmdb)",
        ),
        OptionSpec::bool("write_map", "false", "MDBX_WRITEMAP: write through a writable memory map instead of write()"),
    ],
    version,
    open,
);

fn version() -> String {
    // SAFETY: a static the library defines and never changes.
    let v = unsafe { &mdbx_version };
    format!("{}.{}.{}", v.major, v.minor, v.patch)
}

/// libmdbx's names for the calls that [`mdb_family`] makes.
pub(crate) enum MdbxApi {}

impl mdb_family::Api for MdbxApi {
    type Env = MDBX_env;
    type Txn = MDBX_txn;
    type Cursor = MDBX_cursor;
    type Dbi = MDBX_dbi;
    type Val = MDBX_val;
    const ENGINE: &'static str = "libmdbx";
    const PREFIX: &'static str = "mdbx_";
    const SUCCESS: c_int = MDBX_SUCCESS;
    const NOTFOUND: c_int = MDBX_NOTFOUND;

    fn val(bytes: &[u8]) -> MDBX_val {
        MDBX_val { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() }
    }
    fn empty() -> MDBX_val {
        MDBX_val { iov_base: ptr::null_mut(), iov_len: 0 }
    }
    unsafe fn bytes<'a>(val: &MDBX_val) -> &'a [u8] {
        if val.iov_len == 0 {
            return &[];
        }
        std::slice::from_raw_parts(val.iov_base as *const u8, val.iov_len)
    }
    unsafe fn strerror(rc: c_int) -> *const libc::c_char {
        mdbx_strerror(rc)
    }
    unsafe fn txn_begin(env: *mut MDBX_env, read_only: bool, txn: *mut *mut MDBX_txn) -> c_int {
        let flags = if read_only { MDBX_TXN_RDONLY } else { MDBX_TXN_READWRITE };
        mdbx_txn_begin_ex(env, ptr::null_mut(), flags, txn, ptr::null_mut())
    }
    unsafe fn txn_commit(txn: *mut MDBX_txn) -> c_int {
        mdbx_txn_commit_ex(txn, ptr::null_mut())
    }
    unsafe fn txn_abort(txn: *mut MDBX_txn) {
        mdbx_txn_abort_ex(txn, ptr::null_mut());
    }
    unsafe fn txn_reset(txn: *mut MDBX_txn) -> c_int {
        mdbx_txn_reset(txn)
    }
    unsafe fn txn_renew(txn: *mut MDBX_txn) -> c_int {
        mdbx_txn_renew(txn)
    }
    unsafe fn dbi_open(txn: *mut MDBX_txn, dbi: *mut MDBX_dbi) -> c_int {
        mdbx_dbi_open(txn, ptr::null(), MDBX_DB_DEFAULTS, dbi)
    }
    unsafe fn get(txn: *mut MDBX_txn, dbi: MDBX_dbi, key: &mut MDBX_val, data: &mut MDBX_val) -> c_int {
        mdbx_get(txn, dbi, key, data)
    }
    unsafe fn put(txn: *mut MDBX_txn, dbi: MDBX_dbi, key: &mut MDBX_val, data: &mut MDBX_val) -> c_int {
        mdbx_put(txn, dbi, key, data, MDBX_UPSERT)
    }
    unsafe fn del(txn: *mut MDBX_txn, dbi: MDBX_dbi, key: &mut MDBX_val) -> c_int {
        mdbx_del(txn, dbi, key, ptr::null())
    }
    unsafe fn cursor_open(txn: *mut MDBX_txn, dbi: MDBX_dbi, cursor: *mut *mut MDBX_cursor) -> c_int {
        mdbx_cursor_open(txn, dbi, cursor)
    }
    unsafe fn cursor_close(cursor: *mut MDBX_cursor) {
        mdbx_cursor_close(cursor)
    }
    unsafe fn cursor_renew(txn: *mut MDBX_txn, cursor: *mut MDBX_cursor) -> c_int {
        mdbx_cursor_renew(txn, cursor)
    }
    unsafe fn cursor_get(cursor: *mut MDBX_cursor, key: &mut MDBX_val, data: &mut MDBX_val, step: Step) -> c_int {
        let op = match step {
            Step::First => MDBX_FIRST,
            Step::SetRange => MDBX_SET_RANGE,
            Step::Next => MDBX_NEXT,
        };
        mdbx_cursor_get(cursor, key, data, op)
    }
}

/// A libmdbx return code checked; `call` is the function's name without `mdbx_`.
fn check(rc: c_int, call: &str) -> Result<()> {
    mdb_family::check::<MdbxApi>(rc, call)
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
    /// Read-only or not, sync or not, the flags and the file's upper bound.
    how: Opening,
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
        if args.mode == OpenMode::Secondary {
            return Err(EngineError::Unsupported("libmdbx has no secondary open".into()));
        }
        let how = mdb_family::opening::<MdbxApi>(args, "max_size", &FLAGS)?;
        let Opening { read_only, flags, size: max_size, .. } = how;
        quiet_logs();
        let mut env = ptr::null_mut();
        // SAFETY: writes a fresh handle into `env`.
        check(unsafe { mdbx_env_create(&mut env) }, "env_create")?;
        // From here on Drop closes the handle, whatever fails next.
        let mut db = Mdbx { env, dbi: 0, how, wrote: AtomicBool::new(false) };
        if !read_only {
            // SAFETY: a live handle not yet opened; -1 keeps libmdbx's default for that field.
            let rc = unsafe { mdbx_env_set_geometry(env, -1, -1, max_size as isize, -1, -1, -1) };
            check(rc, "env_set_geometry")?;
        }
        // SAFETY: as above.
        check(unsafe { mdbx_env_set_option(env, MDBX_opt_max_readers, MAX_READERS) }, "env_set_option")?;
        let path = crate::c_path(args.dir);
        // SAFETY: `path` is NUL-terminated and outlives the call; `env` is live.
        check(unsafe { mdbx_env_open(env, path.as_ptr(), flags, 0o644) }, "env_open")?;
        db.dbi = mdb_family::main_dbi::<MdbxApi>(env, read_only)?;
        Ok(db)
    }

    fn shut(&mut self) -> Result<()> {
        if self.env.is_null() {
            return Ok(());
        }
        let mut r = Ok(());
        if self.how.no_sync && self.wrote.load(Ordering::Relaxed) {
            r = self.sync();
        }
        // SAFETY: every Reader borrows `self`, so none is alive; no transaction is open.
        let rc = unsafe { mdbx_env_close_ex(self.env, false) };
        self.env = ptr::null_mut();
        r.and(check(rc, "env_close_ex"))
    }
}

impl Mdbx {
    /// Forces every commit to disk, even under MDBX_SAFE_NOSYNC. MDBX_RESULT_TRUE says there
    /// was nothing to flush, which is success here.
    fn sync(&self) -> Result<()> {
        // SAFETY: the env is open read-write.
        let rc = unsafe { mdbx_env_sync_ex(self.env, true, false) };
        check(if rc == MDBX_RESULT_TRUE { MDBX_SUCCESS } else { rc }, "env_sync_ex")
    }
}

impl Drop for Mdbx {
    fn drop(&mut self) {
        let _ = self.shut();
    }
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    Ok(Box::new(Mdbx::open(args)?))
}

impl Engine for Mdbx {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        if self.how.read_only {
            return Err(EngineError::store("libmdbx: opened read-only"));
        }
        self.wrote.store(true, Ordering::Relaxed);
        mdb_family::write::<MdbxApi>(self.env, self.dbi, batch)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        mdb_family::reader::<MdbxApi>(self, self.env, self.dbi)
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        self.shut()
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let sync = [
            "read-only environment (MDBX_RDONLY)",
            "MDBX_SAFE_NOSYNC (no fsync at commit; mdbx_env_sync at close)",
            "MDBX_SYNC_DURABLE (data and meta page fsynced at every commit)",
        ];
        let mut s = mdb_family::settings(&self.how, sync, &FLAGS, MAX_READERS);
        s.insert("max_size".into(), self.how.size.to_string());
        s.insert("reader".into(), "one read-only transaction per reader, reset+renew on refresh".into());
        s
    }

    fn settle(&mut self) -> Result<String> {
        if self.how.read_only {
            return Ok("read-only environment: nothing to flush; B-tree written in place: nothing to compact".into());
        }
        self.sync()?;
        Ok("synced the environment (mdbx_env_sync); B-tree written in place: nothing to compact".into())
    }
}
