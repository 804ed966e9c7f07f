//! `lmdb`: the Lightning Memory-Mapped Database, called through liblmdb's C API directly (a
//! hand-written `extern "C"` block in [`ffi`], no binding crate in between).
//!
//! One environment with its unnamed main database. Transactions, the write of a batch and the
//! reader are [`mdb_family`]'s, shared with libmdbx: a reader holds one read-only transaction
//! for its whole life (`refresh` resets and renews it); each write batch is one write
//! transaction. The environment is opened with `MDB_NOTLS` so read transactions are not
//! tied to a thread slot: a thread may hold a reader while it writes (mixed phases).

use std::collections::BTreeMap;
use std::ptr;

use crate::mdb_family::{self, Flags, Opening, Step};
use kvbench_model::engine::*;
use libc::{c_int, c_uint};

/// The few liblmdb declarations kvbench uses, transcribed from `lmdb.h` (0.9.x).
#[allow(non_camel_case_types)]
pub mod ffi {
    use libc::{c_char, c_int, c_uint, c_void, size_t};

    opaque!(MDB_env, MDB_txn, MDB_cursor);
    pub type MDB_dbi = c_uint;

    /// A key or value: a size and a pointer (into the memory map for values read).
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct MDB_val {
        pub mv_size: size_t,
        pub mv_data: *mut c_void,
    }

    impl MDB_val {
        /// A view of `bytes` for passing to LMDB (LMDB does not write through key pointers).
        pub fn of(bytes: &[u8]) -> MDB_val {
            MDB_val { mv_size: bytes.len(), mv_data: bytes.as_ptr() as *mut c_void }
        }
        pub fn empty() -> MDB_val {
            MDB_val { mv_size: 0, mv_data: std::ptr::null_mut() }
        }
    }

    #[repr(C)]
    #[derive(Default)]
    pub struct MDB_stat {
        pub ms_psize: c_uint,
        pub ms_depth: c_uint,
        pub ms_branch_pages: size_t,
        pub ms_leaf_pages: size_t,
        pub ms_overflow_pages: size_t,
        pub ms_entries: size_t,
    }

    #[repr(C)]
    pub struct MDB_envinfo {
        pub me_mapaddr: *mut c_void,
        pub me_mapsize: size_t,
        pub me_last_pgno: size_t,
        pub me_last_txnid: size_t,
        pub me_maxreaders: c_uint,
        pub me_numreaders: c_uint,
    }

    // Environment flags.
    pub const MDB_NOSYNC: c_uint = 0x10000;
    pub const MDB_RDONLY: c_uint = 0x20000;
    pub const MDB_WRITEMAP: c_uint = 0x80000;
    pub const MDB_NOTLS: c_uint = 0x200000;
    pub const MDB_NORDAHEAD: c_uint = 0x800000;

    // mdb_env_copy2 flags.
    pub const MDB_CP_COMPACT: c_uint = 0x01;

    // Return codes.
    pub const MDB_SUCCESS: c_int = 0;
    pub const MDB_NOTFOUND: c_int = -30798;

    // Cursor operations (enum MDB_cursor_op).
    pub const MDB_FIRST: c_int = 0;
    pub const MDB_NEXT: c_int = 8;
    pub const MDB_SET_RANGE: c_int = 17;

    extern "C" {
        pub fn mdb_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int) -> *mut c_char;
        pub fn mdb_strerror(err: c_int) -> *mut c_char;
        pub fn mdb_env_create(env: *mut *mut MDB_env) -> c_int;
        pub fn mdb_env_open(env: *mut MDB_env, path: *const c_char, flags: c_uint, mode: libc::mode_t) -> c_int;
        pub fn mdb_env_sync(env: *mut MDB_env, force: c_int) -> c_int;
        pub fn mdb_env_copy2(env: *mut MDB_env, path: *const c_char, flags: c_uint) -> c_int;
        pub fn mdb_env_stat(env: *mut MDB_env, stat: *mut MDB_stat) -> c_int;
        pub fn mdb_env_info(env: *mut MDB_env, info: *mut MDB_envinfo) -> c_int;
        pub fn mdb_env_close(env: *mut MDB_env);
        pub fn mdb_env_set_mapsize(env: *mut MDB_env, size: size_t) -> c_int;
        pub fn mdb_env_set_maxreaders(env: *mut MDB_env, readers: c_uint) -> c_int;
        pub fn mdb_txn_begin(env: *mut MDB_env, parent: *mut MDB_txn, flags: c_uint, txn: *mut *mut MDB_txn) -> c_int;
        pub fn mdb_txn_commit(txn: *mut MDB_txn) -> c_int;
        pub fn mdb_txn_abort(txn: *mut MDB_txn);
        pub fn mdb_txn_reset(txn: *mut MDB_txn);
        pub fn mdb_txn_renew(txn: *mut MDB_txn) -> c_int;
        pub fn mdb_dbi_open(txn: *mut MDB_txn, name: *const c_char, flags: c_uint, dbi: *mut MDB_dbi) -> c_int;
        pub fn mdb_get(txn: *mut MDB_txn, dbi: MDB_dbi, key: *mut MDB_val, data: *mut MDB_val) -> c_int;
        pub fn mdb_put(txn: *mut MDB_txn, dbi: MDB_dbi, key: *mut MDB_val, data: *mut MDB_val, flags: c_uint) -> c_int;
        pub fn mdb_del(txn: *mut MDB_txn, dbi: MDB_dbi, key: *mut MDB_val, data: *mut MDB_val) -> c_int;
        pub fn mdb_cursor_open(txn: *mut MDB_txn, dbi: MDB_dbi, cursor: *mut *mut MDB_cursor) -> c_int;
        pub fn mdb_cursor_close(cursor: *mut MDB_cursor);
        pub fn mdb_cursor_renew(txn: *mut MDB_txn, cursor: *mut MDB_cursor) -> c_int;
        pub fn mdb_cursor_get(cursor: *mut MDB_cursor, key: *mut MDB_val, data: *mut MDB_val, op: c_int) -> c_int;
    }
}

use ffi::*;

/// Maximum concurrent read transactions (LMDB's default is 126; reader threads are bounded by
/// the scenario, so this only has to be comfortably larger).
const MAX_READERS: c_uint = 1024;

const FLAGS: Flags = Flags {
    threads: (MDB_NOTLS, "MDB_NOTLS"),
    no_sync: (MDB_NOSYNC, "MDB_NOSYNC"),
    read_only: (MDB_RDONLY, "MDB_RDONLY"),
    no_readahead: (MDB_NORDAHEAD, "MDB_NORDAHEAD"),
    write_map: (MDB_WRITEMAP, "MDB_WRITEMAP"),
};

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "lmdb",
    "LMDB (liblmdb, C API): B+tree in a memory map, MVCC read transactions",
    crate::ORDERED_STORE,
    &[
        OptionSpec::int("map_size", "", "memory map size in bytes (default: max(1 GiB, 4 x the plan's bytes))"),
        OptionSpec::bool(
            "no_readahead",
            "true",
            "MDB_NORDAHEAD: no OS read-ahead on the map (on by default here: with it off, a database larger \
                  than memory reads the device's whole read-ahead window per page miss)",
        ),
        OptionSpec::bool("write_map", "false", "MDB_WRITEMAP: write through a writable memory map instead of write()"),
        OptionSpec::one_of(
            "compaction",
            &["sync", "copy"],
            "sync",
            "what a settle step does: sync (mdb_env_sync; the B-tree is written in place) or copy (a \
                  compacting copy, mdb_env_copy2 with MDB_CP_COMPACT, replacing data.mdb, then reopened: redb's \
                  benchmark harness's LMDB compaction)",
        ),
    ],
    version,
    open,
);

fn version() -> String {
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    // SAFETY: mdb_version only writes the three ints and returns a static string we ignore.
    unsafe { mdb_version(&mut major, &mut minor, &mut patch) };
    format!("{major}.{minor}.{patch}")
}

/// liblmdb's names for the calls that [`mdb_family`] makes.
pub(crate) enum LmdbApi {}

impl mdb_family::Api for LmdbApi {
    type Env = MDB_env;
    type Txn = MDB_txn;
    type Cursor = MDB_cursor;
    type Dbi = MDB_dbi;
    type Val = MDB_val;
    const ENGINE: &'static str = "lmdb";
    const PREFIX: &'static str = "mdb_";
    const SUCCESS: c_int = MDB_SUCCESS;
    const NOTFOUND: c_int = MDB_NOTFOUND;

    fn val(bytes: &[u8]) -> MDB_val {
        MDB_val::of(bytes)
    }
    fn empty() -> MDB_val {
        MDB_val::empty()
    }
    unsafe fn bytes<'a>(val: &MDB_val) -> &'a [u8] {
        if val.mv_size == 0 {
            return &[];
        }
        std::slice::from_raw_parts(val.mv_data as *const u8, val.mv_size)
    }
    unsafe fn strerror(rc: c_int) -> *const libc::c_char {
        mdb_strerror(rc)
    }
    unsafe fn txn_begin(env: *mut MDB_env, read_only: bool, txn: *mut *mut MDB_txn) -> c_int {
        mdb_txn_begin(env, ptr::null_mut(), if read_only { MDB_RDONLY } else { 0 }, txn)
    }
    unsafe fn txn_commit(txn: *mut MDB_txn) -> c_int {
        mdb_txn_commit(txn)
    }
    unsafe fn txn_abort(txn: *mut MDB_txn) {
        mdb_txn_abort(txn)
    }
    unsafe fn txn_reset(txn: *mut MDB_txn) -> c_int {
        mdb_txn_reset(txn);
        MDB_SUCCESS
    }
    unsafe fn txn_renew(txn: *mut MDB_txn) -> c_int {
        mdb_txn_renew(txn)
    }
    unsafe fn dbi_open(txn: *mut MDB_txn, dbi: *mut MDB_dbi) -> c_int {
        mdb_dbi_open(txn, ptr::null(), 0, dbi)
    }
    unsafe fn get(txn: *mut MDB_txn, dbi: MDB_dbi, key: &mut MDB_val, data: &mut MDB_val) -> c_int {
        mdb_get(txn, dbi, key, data)
    }
    unsafe fn put(txn: *mut MDB_txn, dbi: MDB_dbi, key: &mut MDB_val, data: &mut MDB_val) -> c_int {
        mdb_put(txn, dbi, key, data, 0)
    }
    unsafe fn del(txn: *mut MDB_txn, dbi: MDB_dbi, key: &mut MDB_val) -> c_int {
        mdb_del(txn, dbi, key, ptr::null_mut())
    }
    unsafe fn cursor_open(txn: *mut MDB_txn, dbi: MDB_dbi, cursor: *mut *mut MDB_cursor) -> c_int {
        mdb_cursor_open(txn, dbi, cursor)
    }
    unsafe fn cursor_close(cursor: *mut MDB_cursor) {
        mdb_cursor_close(cursor)
    }
    unsafe fn cursor_renew(txn: *mut MDB_txn, cursor: *mut MDB_cursor) -> c_int {
        mdb_cursor_renew(txn, cursor)
    }
    unsafe fn cursor_get(cursor: *mut MDB_cursor, key: &mut MDB_val, data: &mut MDB_val, step: Step) -> c_int {
        let op = match step {
            Step::First => MDB_FIRST,
            Step::SetRange => MDB_SET_RANGE,
            Step::Next => MDB_NEXT,
        };
        mdb_cursor_get(cursor, key, data, op)
    }
}

/// An LMDB return code checked; `call` is the function's name without `mdb_`.
fn check(rc: c_int, call: &str) -> Result<()> {
    mdb_family::check::<LmdbApi>(rc, call)
}

/// An open environment and its main database; closed in `close` or Drop.
pub struct Lmdb {
    env: *mut MDB_env,
    dbi: MDB_dbi,
    /// mdb_env_open succeeded (before that only mdb_env_close is allowed).
    opened: bool,
    /// Read-only or not, sync or not, the flags and the map's size.
    how: Opening,
    /// The environment's directory (a compacting copy replaces its data.mdb and reopens it).
    dir: std::path::PathBuf,
    /// A settle step is a compacting copy (`compaction = "copy"`), not a sync.
    compact_copy: bool,
    /// Something was written since open: only then does close force data to disk (an
    /// open-per-operation read must not pay an fsync at every close).
    wrote: std::sync::atomic::AtomicBool,
}

// SAFETY: an MDB_env is thread-safe (LMDB serialises writers with its own lock). Read
// transactions are created under MDB_NOTLS, so they are not bound to the creating thread, and a
// write transaction is begun and ended inside one `write` call on one thread.
unsafe impl Send for Lmdb {}
// SAFETY: see Send; `&Lmdb` only hands out the env pointer to LMDB calls that are thread-safe.
unsafe impl Sync for Lmdb {}

impl Lmdb {
    fn open(args: &OpenArgs<'_>) -> Result<Lmdb> {
        crate::refuse_secondary(args)?;
        let how = mdb_family::opening::<LmdbApi>(args, "map_size", &FLAGS)?;
        let o = args.options;
        let compact_copy = o.text("compaction").as_deref() == Some("copy");
        let dir = args.dir.to_path_buf();
        let db =
            Lmdb { env: ptr::null_mut(), dbi: 0, opened: false, how, dir, compact_copy, wrote: Default::default() };
        db.start()
    }

    /// Creates and opens the environment of a closed `self` (fields set) and its main database.
    fn start(mut self) -> Result<Lmdb> {
        let Opening { read_only, flags, size: map_size, .. } = self.how;
        let mut env = ptr::null_mut();
        // SAFETY: mdb_env_create writes a fresh handle into `env`.
        check(unsafe { mdb_env_create(&mut env) }, "env_create")?;
        // From here on Drop closes the handle, whatever fails next.
        self.env = env;
        self.opened = false;
        let mut db = self;
        // SAFETY: `env` is a live handle not yet opened, which is when these setters are allowed.
        check(unsafe { mdb_env_set_mapsize(env, map_size) }, "env_set_mapsize")?;
        // SAFETY: as above.
        check(unsafe { mdb_env_set_maxreaders(env, MAX_READERS) }, "env_set_maxreaders")?;
        let path = crate::c_path(&db.dir);
        // SAFETY: `path` is a NUL-terminated string that outlives the call; `env` is live.
        check(unsafe { mdb_env_open(env, path.as_ptr(), flags, 0o644) }, "env_open")?;
        db.opened = true;

        db.dbi = mdb_family::main_dbi::<LmdbApi>(env, read_only)?;
        Ok(db)
    }

    fn shut(&mut self) -> Result<()> {
        if self.env.is_null() {
            return Ok(());
        }
        let mut r = Ok(());
        if self.opened && self.how.no_sync && self.wrote.load(std::sync::atomic::Ordering::Relaxed) {
            // SAFETY: the env is open and read-write; force = 1 flushes despite MDB_NOSYNC.
            r = check(unsafe { mdb_env_sync(self.env, 1) }, "env_sync");
        }
        // SAFETY: every Reader borrows `self`, so none is alive here; no transaction is open.
        unsafe { mdb_env_close(self.env) };
        self.env = ptr::null_mut();
        r
    }
}

impl Drop for Lmdb {
    fn drop(&mut self) {
        let _ = self.shut();
    }
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    Ok(Box::new(Lmdb::open(args)?))
}

impl Engine for Lmdb {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        if self.how.read_only {
            return Err(EngineError::store("lmdb: opened read-only"));
        }
        self.wrote.store(true, std::sync::atomic::Ordering::Relaxed);
        mdb_family::write::<LmdbApi>(self.env, self.dbi, batch)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        mdb_family::reader::<LmdbApi>(self, self.env, self.dbi)
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        self.shut()
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let sync = [
            "read-only environment (MDB_RDONLY)",
            "MDB_NOSYNC (no fsync at commit; mdb_env_sync at close)",
            "fsync at commit (durable commits)",
        ];
        let mut s = mdb_family::settings(&self.how, sync, &FLAGS, MAX_READERS.into());
        s.insert("map_size".into(), self.how.size.to_string());
        let settle = if self.compact_copy {
            "compacting copy: mdb_env_copy2(MDB_CP_COMPACT) over data.mdb, then reopened"
        } else {
            "mdb_env_sync"
        };
        s.insert("settle".into(), settle.into());
        s.insert("reader".into(), "one MDB_RDONLY transaction per reader, reset+renew on refresh".into());
        s
    }

    /// The main database's B-tree (mdb_env_stat) and the environment (mdb_env_info), as of the
    /// last committed transaction.
    fn internals(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        let mut st = MDB_stat::default();
        // SAFETY: the env is open; LMDB fills the struct.
        if unsafe { mdb_env_stat(self.env, &mut st) } == MDB_SUCCESS {
            out.insert("lmdb.page_size".into(), st.ms_psize as f64);
            out.insert("lmdb.depth".into(), st.ms_depth as f64);
            out.insert("lmdb.branch_pages".into(), st.ms_branch_pages as f64);
            out.insert("lmdb.leaf_pages".into(), st.ms_leaf_pages as f64);
            out.insert("lmdb.overflow_pages".into(), st.ms_overflow_pages as f64);
            out.insert("lmdb.entries".into(), st.ms_entries as f64);
        }
        let mut info = MDB_envinfo {
            me_mapaddr: ptr::null_mut(),
            me_mapsize: 0,
            me_last_pgno: 0,
            me_last_txnid: 0,
            me_maxreaders: 0,
            me_numreaders: 0,
        };
        // SAFETY: as above.
        if unsafe { mdb_env_info(self.env, &mut info) } == MDB_SUCCESS {
            out.insert("lmdb.map_size".into(), info.me_mapsize as f64);
            out.insert("lmdb.last_page".into(), info.me_last_pgno as f64);
            out.insert("lmdb.last_txn".into(), info.me_last_txnid as f64);
            out.insert("lmdb.readers".into(), info.me_numreaders as f64);
        }
        out
    }

    fn settle(&mut self) -> Result<String> {
        if self.how.read_only {
            return Ok("read-only environment: nothing to flush; B-tree written in place: nothing to compact".into());
        }
        // SAFETY: the env is open and read-write; force = 1 flushes even under MDB_NOSYNC.
        check(unsafe { mdb_env_sync(self.env, 1) }, "env_sync")?;
        if self.compact_copy {
            return self.compact_by_copy();
        }
        Ok("synced the environment (mdb_env_sync); B-tree written in place: nothing to compact".into())
    }
}

impl Lmdb {
    /// redb's harness's LMDB compaction: a compacting copy (free pages left out, the B-tree
    /// rewritten in key order) into a fresh directory, the environment closed, the copy's
    /// data.mdb moved over the old one, and the environment opened again.
    fn compact_by_copy(&mut self) -> Result<String> {
        let copy = self.dir.join("compact.tmp");
        let io = |what: &str, e: std::io::Error| EngineError::Store(format!("lmdb compacting copy: {what}: {e}"));
        let _ = std::fs::remove_dir_all(&copy);
        std::fs::create_dir(&copy).map_err(|e| io("create the copy's directory", e))?;
        let path = crate::c_path(&copy);
        // SAFETY: the env is open, no write transaction is live (settle has `&mut self`); `path`
        // is a NUL-terminated string naming an empty directory, as mdb_env_copy2 requires.
        check(unsafe { mdb_env_copy2(self.env, path.as_ptr(), MDB_CP_COMPACT) }, "env_copy2")?;
        let before = std::fs::metadata(self.dir.join("data.mdb")).map(|m| m.len()).unwrap_or(0);
        self.shut()?;
        std::fs::rename(copy.join("data.mdb"), self.dir.join("data.mdb")).map_err(|e| io("replace data.mdb", e))?;
        std::fs::remove_dir_all(&copy).map_err(|e| io("remove the copy's directory", e))?;
        let closed = std::mem::replace(&mut self.dir, std::path::PathBuf::new());
        let again = Lmdb { env: ptr::null_mut(), dir: closed, wrote: Default::default(), ..*self };
        *self = again.start()?;
        let after = std::fs::metadata(self.dir.join("data.mdb")).map(|m| m.len()).unwrap_or(0);
        Ok(format!(
            "compacting copy (mdb_env_copy2, MDB_CP_COMPACT) over data.mdb, reopened: {before} bytes before, {after} after"
        ))
    }
}
