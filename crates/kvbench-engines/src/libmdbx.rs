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
//! its upper bound (`max_size`). `sync = none` is MDBX_UTTERLY_NOSYNC, as `lmdb`'s MDB_NOSYNC
//! (`no_sync = "safe"`: MDBX_SAFE_NOSYNC, which fdatasyncs whenever the file is full).

use std::collections::BTreeMap;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::mdb_family::{self, Flags, Opening, Step};
use kvbench_model::engine::*;
use libc::c_int;
use mdbx_sys::*;

/// Readers kvbench may hold at once; reader threads are bounded by the scenario.
const MAX_READERS: u64 = 1024;

/// `sync = none` by default: libmdbx's own note for LMDB users names MDBX_UTTERLY_NOSYNC as
/// the mode that matches LMDB's MDB_NOSYNC (nothing forced to disk until a sync), which is what
/// the `lmdb` row sets.
const UTTERLY: Flags = Flags {
    threads: (MDBX_NOSTICKYTHREADS, "MDBX_NOSTICKYTHREADS"),
    no_sync: (MDBX_UTTERLY_NOSYNC, "MDBX_UTTERLY_NOSYNC"),
    read_only: (MDBX_RDONLY, "MDBX_RDONLY"),
    no_readahead: (MDBX_NORDAHEAD, "MDBX_NORDAHEAD"),
    write_map: (MDBX_WRITEMAP, "MDBX_WRITEMAP"),
};

/// `no_sync = "safe"`: the last steady (synced) commit is kept, so its pages are not reused; when
/// the file is full libmdbx fdatasyncs a new steady commit rather than grow it.
const SAFE: Flags = Flags { no_sync: (MDBX_SAFE_NOSYNC, "MDBX_SAFE_NOSYNC"), ..UTTERLY };

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
        OptionSpec::one_of(
            "no_sync",
            &["utterly", "safe"],
            "utterly",
            "the mode of sync = none: utterly (MDBX_UTTERLY_NOSYNC, LMDB's MDB_NOSYNC: nothing forced to disk \
                  before close) or safe (MDBX_SAFE_NOSYNC: the last synced commit is kept, and libmdbx fdatasyncs \
                  a new one whenever the file is full rather than grow it)",
        ),
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

/// Errors only: libmdbx logs notices to stderr otherwise (every open and sync in a debug build,
/// and in any build a line in every child after a fork), and under MDBX_UTTERLY_NOSYNC a
/// warning each time it wipes the last synced commit, which is that mode working as chosen.
pub fn quiet_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: -1 is MDBX_LOGGER_DONTCHANGE (keep the logger), a value libmdbx compares
        // against and never calls.
        let keep = unsafe { std::mem::transmute::<isize, MDBX_debug_func>(-1) };
        // SAFETY: sets process-wide log settings under libmdbx's own lock.
        unsafe { mdbx_setup_debug(MDBX_LOG_ERROR, MDBX_DBG_DONTCHANGE, keep) };
    });
}

/// An open environment and its main table; closed in `close` or Drop.
pub struct Mdbx {
    env: *mut MDBX_env,
    dbi: MDBX_dbi,
    /// Read-only or not, sync or not, the flags and the file's upper bound.
    how: Opening,
    /// The flags' names, with the no-sync mode chosen (`no_sync`).
    named: &'static Flags,
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
        let named = if args.options.text("no_sync").as_deref() == Some("safe") { &SAFE } else { &UTTERLY };
        let how = mdb_family::opening::<MdbxApi>(args, "max_size", named)?;
        let Opening { read_only, flags, size: max_size, .. } = how;
        quiet_logs();
        let mut env = ptr::null_mut();
        // SAFETY: writes a fresh handle into `env`.
        check(unsafe { mdbx_env_create(&mut env) }, "env_create")?;
        // From here on Drop closes the handle, whatever fails next.
        let mut db = Mdbx { env, dbi: 0, how, named, wrote: AtomicBool::new(false) };
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
        let no_sync = if std::ptr::eq(self.named, &SAFE) {
            "MDBX_SAFE_NOSYNC (no fsync at commit, but the last synced commit is kept: an fdatasync whenever \
             the file is full rather than grow it; mdbx_env_sync at close)"
        } else {
            "MDBX_UTTERLY_NOSYNC (no fsync at commit, as LMDB's MDB_NOSYNC: one fdatasync when it first reuses \
             pages of the last synced commit; mdbx_env_sync at close)"
        };
        let sync = [
            "read-only environment (MDBX_RDONLY)",
            no_sync,
            "MDBX_SYNC_DURABLE (data and meta page fsynced at every commit)",
        ];
        let mut s = mdb_family::settings(&self.how, sync, self.named, MAX_READERS);
        s.insert("max_size".into(), self.how.size.to_string());
        s.insert("reader".into(), "one read-only transaction per reader, reset+renew on refresh".into());
        s
    }

    /// libmdbx's count of its own disk operations since the environment was first opened
    /// (mdbx_env_info_ex): the syncs it issued tell a no-sync mode that still flushes.
    fn internals(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        // SAFETY: a C struct of integers, for which all zeroes is a valid value.
        let mut info: MDBX_envinfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<MDBX_envinfo>();
        // SAFETY: the env is open; libmdbx fills at most `size` bytes of `info`.
        if unsafe { mdbx_env_info_ex(self.env, ptr::null(), &mut info, size) } != MDBX_SUCCESS {
            return out;
        }
        let ops = &info.mi_pgop_stat;
        out.insert("libmdbx.fsyncs".into(), ops.fsync as f64);
        out.insert("libmdbx.msyncs".into(), ops.msync as f64);
        out.insert("libmdbx.write_ops".into(), ops.wops as f64);
        out.insert("libmdbx.unsynced_bytes".into(), info.mi_unsync_volume as f64);
        out
    }

    fn settle(&mut self) -> Result<String> {
        if self.how.read_only {
            return Ok("read-only environment: nothing to flush; B-tree written in place: nothing to compact".into());
        }
        self.sync()?;
        Ok("synced the environment (mdbx_env_sync); B-tree written in place: nothing to compact".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read-write libmdbx under `sync = none` in `dir`, with the options given.
    fn open_unsynced(dir: &std::path::Path, given: &[(&str, &str)]) -> Mdbx {
        let given = given.iter().map(|(k, v)| (k.to_string(), serde_json::Value::from(*v))).collect();
        let options = Options::parse("libmdbx", DESCRIPTOR.options, &given).unwrap();
        let args = OpenArgs { sync: SyncMode::None, expected_bytes: 1 << 20, ..OpenArgs::new(dir, &options) };
        Mdbx::open(&args).unwrap()
    }

    /// The environment's flags as libmdbx reads them back.
    fn env_flags(db: &Mdbx) -> libc::c_uint {
        let mut flags = 0;
        // SAFETY: the env is open; libmdbx writes one unsigned.
        assert_eq!(unsafe { mdbx_env_get_flags(db.env, &mut flags) }, MDBX_SUCCESS);
        flags
    }

    /// 50 batches of 1 000 new records in random key order, 100-byte values (the default load's
    /// shape): each batch touches leaves all over the tree, and the file fills again and again.
    fn load(db: &Mdbx) {
        let value = [b'v'; 100];
        let key = |i: u32| format!("{:016}", i.wrapping_mul(2_654_435_761) % 1_000_000_007).into_bytes();
        for first in (0..50_000).step_by(1000) {
            let keys: Vec<Vec<u8>> = (first..first + 1000).map(key).collect();
            let batch: Vec<WriteOp<'_>> = keys.iter().map(|k| WriteOp { key: k, value: Some(&value) }).collect();
            db.write(&batch).unwrap();
        }
    }

    #[test]
    fn sync_none_opens_utterly_nosync_the_mode_libmdbx_names_as_lmdbs_mdb_nosync() {
        let tmp = tempfile::tempdir().unwrap();
        let db = open_unsynced(tmp.path(), &[]);
        assert_eq!(env_flags(&db) & MDBX_UTTERLY_NOSYNC, MDBX_UTTERLY_NOSYNC);
        let s = db.settings();
        assert_eq!(s["env_flags"], "MDBX_NOSTICKYTHREADS|MDBX_UTTERLY_NOSYNC|MDBX_NORDAHEAD");
        assert!(s["sync"].starts_with("MDBX_UTTERLY_NOSYNC"), "{s:?}");
    }

    #[test]
    fn no_sync_safe_opens_safe_nosync_and_names_it() {
        let tmp = tempfile::tempdir().unwrap();
        let db = open_unsynced(tmp.path(), &[("no_sync", "safe")]);
        assert_eq!(env_flags(&db) & MDBX_UTTERLY_NOSYNC, MDBX_SAFE_NOSYNC);
        let s = db.settings();
        assert_eq!(s["env_flags"], "MDBX_NOSTICKYTHREADS|MDBX_SAFE_NOSYNC|MDBX_NORDAHEAD");
        assert!(s["sync"].starts_with("MDBX_SAFE_NOSYNC"), "{s:?}");
    }

    /// The device writes behind issue 40: under MDBX_SAFE_NOSYNC libmdbx fdatasyncs during the
    /// load whenever the file is full, so every page written since is written to the device
    /// again. Under `sync = none` the load forces at most one: libmdbx syncs once when it wipes
    /// the synced commit that open left (so that a crash cannot roll back onto pages it reuses).
    #[test]
    fn sync_none_load_syncs_once_at_most_where_safe_nosync_syncs_whenever_the_file_is_full() {
        let fsyncs = |given: &[(&str, &str)]| {
            let tmp = tempfile::tempdir().unwrap();
            let db = open_unsynced(tmp.path(), given);
            let at_open = db.internals()["libmdbx.fsyncs"];
            load(&db);
            db.internals()["libmdbx.fsyncs"] - at_open
        };
        let (utterly, safe) = (fsyncs(&[]), fsyncs(&[("no_sync", "safe")]));
        assert!(utterly <= 1.0, "{utterly} fsyncs during a sync = none load ({safe} under MDBX_SAFE_NOSYNC)");
        assert!(
            safe >= 10.0,
            "MDBX_SAFE_NOSYNC synced {safe} times ({utterly} under utterly): the counter or the load does not show it"
        );
    }
}
