//! `tokyocabinet-hash` (TCHDB, a `.tch` file) and `tokyocabinet-btree` (TCBDB, a `.tcb` file)
//! through Tokyo Cabinet's C API (libtokyocabinet).
//!
//! Both handles are opened with `tcXdbsetmutex`, which makes Tokyo Cabinet lock internally (a
//! reader-writer lock per database, error codes per thread), so the engines are shared between
//! threads without a lock of ours. A batch is a loop of puts unless the option
//! `transaction = "batch"` makes a batch of more than one write one Tokyo Cabinet transaction
//! (article 004 looped, so the loop is the default). `sync` maps to `tcXdbsync` after a batch
//! (`commit`) or after every write (`always`); in transaction mode to `HDBOTSYNC`/`BDBOTSYNC`
//! (the commit syncs) plus `tcXdbsync` after a single write.

use std::collections::BTreeMap;
use std::ptr::NonNull;

use kvbench_model::engine::*;

use crate::batch::{write_each, Records, Transactions};

/// Raw declarations; this block owns the linking (build.rs adds `-ltokyocabinet`).
mod ffi {
    use libc::{c_char, c_int, c_void};

    opaque!(Tchdb, Tcbdb, BdbCur, TcXstr);

    pub const TCENOREC: c_int = 22;

    pub const OREADER: c_int = 1 << 0;
    pub const OWRITER: c_int = 1 << 1;
    pub const OCREAT: c_int = 1 << 2;
    pub const OTSYNC: c_int = 1 << 6;

    pub const TLARGE: u8 = 1 << 0;
    pub const TDEFLATE: u8 = 1 << 1;
    pub const TBZIP: u8 = 1 << 2;
    pub const TTCBS: u8 = 1 << 3;

    extern "C" {
        pub static tcversion: *const c_char;
        pub fn tcfree(ptr: *mut c_void);
        pub fn tcxstrnew() -> *mut TcXstr;
        pub fn tcxstrdel(xstr: *mut TcXstr);
        pub fn tcxstrptr(xstr: *const TcXstr) -> *const c_void;
        pub fn tcxstrsize(xstr: *const TcXstr) -> c_int;
        pub fn tcxstrclear(xstr: *mut TcXstr);

        pub fn tchdbtune(hdb: *mut Tchdb, bnum: i64, apow: i8, fpow: i8, opts: u8) -> bool;
        pub fn tchdbsetcache(hdb: *mut Tchdb, rcnum: i32) -> bool;
        pub fn tchdbsetxmsiz(hdb: *mut Tchdb, xmsiz: i64) -> bool;

        pub fn tcbdbtune(bdb: *mut Tcbdb, lmemb: i32, nmemb: i32, bnum: i64, apow: i8, fpow: i8, opts: u8) -> bool;
        pub fn tcbdbsetcache(bdb: *mut Tcbdb, lcnum: i32, ncnum: i32) -> bool;
        pub fn tcbdbcurnew(bdb: *mut Tcbdb) -> *mut BdbCur;
        pub fn tcbdbcurdel(cur: *mut BdbCur);
        pub fn tcbdbcurfirst(cur: *mut BdbCur) -> bool;
        pub fn tcbdbcurjump(cur: *mut BdbCur, key: *const c_void, ks: c_int) -> bool;
        pub fn tcbdbcurnext(cur: *mut BdbCur) -> bool;
        pub fn tcbdbcurrec(cur: *mut BdbCur, key_xstr: *mut TcXstr, value_xstr: *mut TcXstr) -> bool;
    }
}

fn version() -> String {
    // SAFETY: `tcversion` is a static NUL-terminated string of the library.
    unsafe { crate::c_str(ffi::tcversion) }
}

const COMPRESSION: &[&str] = &["none", "deflate", "bzip", "tcbs"];

const TRANSACTION: OptionSpec = OptionSpec::one_of(
    "transaction",
    &["none", "batch"],
    "none",
    "none: a batch is a loop of puts (article 004's method); batch: a batch of more than one write is one transaction",
);

const LARGE: OptionSpec = OptionSpec::bool("large", "false", "64-bit bucket array (files over 2 GB)");

static HASH_OPTIONS: &[OptionSpec] = &[
    OptionSpec::int(
        "bnum",
        "0",
        "bucket array size; 0 = twice the records the plan loads (at least 131071, TC's default)",
    ),
    OptionSpec::one_of("compression", COMPRESSION, "none", "per-record compression"),
    OptionSpec::int("rcnum", "0", "records kept in the record cache (0 = off)"),
    OptionSpec::int("xmsiz", "64m", "extra mapped memory (TC's default 64m)"),
    LARGE,
    TRANSACTION,
];

static BTREE_OPTIONS: &[OptionSpec] = &[
    OptionSpec::int("lmemb", "0", "records per leaf page (0 = TC's 128)"),
    OptionSpec::int("nmemb", "0", "keys per non-leaf page (0 = TC's 256)"),
    OptionSpec::int("bnum", "0", "page hash buckets (0 = TC's 32749)"),
    OptionSpec::one_of("compression", COMPRESSION, "none", "per-page compression"),
    OptionSpec::int("lcnum", "0", "cached leaf pages (0 = TC's 1024)"),
    OptionSpec::int("ncnum", "0", "cached non-leaf pages (0 = TC's 512)"),
    LARGE,
    TRANSACTION,
];

const CAPS: Capabilities = Capabilities { ordered_scan: false, ..crate::ORDERED_STORE };

kind!(hash: "tokyocabinet-hash",
    "Tokyo Cabinet hash database (Tchdb), C API",
    CAPS, HASH_OPTIONS, open_hash);

kind!(btree: "tokyocabinet-btree",
    "Tokyo Cabinet B+ tree database (Tcbdb), C API, ordered scans by cursor",
    Capabilities { ordered_scan: true, ..CAPS }, BTREE_OPTIONS, open_btree);

fn compression_flag(opts: &Options) -> Result<u8> {
    Ok(match opts.text("compression").as_deref() {
        None | Some("none") => 0,
        Some("deflate") => ffi::TDEFLATE,
        Some("bzip") => ffi::TBZIP,
        Some("tcbs") => ffi::TTCBS,
        Some(other) => return Err(EngineError::Option(format!("compression = {other}"))),
    })
}

fn int_opt(opts: &Options, name: &str) -> i64 {
    opts.int(name).unwrap_or(0).max(0)
}

fn len(size: usize) -> Result<libc::c_int> {
    libc::c_int::try_from(size).map_err(|_| EngineError::store("key or value larger than 2 GiB"))
}

/// What `sync` means here, for settings().
fn sync_note(sync: SyncMode, transaction: bool, call: &str) -> String {
    match (sync, transaction) {
        (SyncMode::None, _) => "none: no sync calls; data reaches the file on close".into(),
        (_, true) => format!(
            "{sync}: batches are transactions opened with OTSYNC (commit syncs); a single write is followed by {call}"
        ),
        (SyncMode::Commit, false) => format!("commit: {call} after every batch (a loop of puts)"),
        (SyncMode::Always, false) => format!("always: {call} after every write"),
    }
}

/// The `transaction` option: true when a batch of more than one write is one transaction.
fn transaction_opt(opts: &Options, settings: &mut BTreeMap<String, String>) -> bool {
    let on = opts.text("transaction").as_deref() == Some("batch");
    let note = if on {
        "batch: a batch of more than one write is one transaction (tranbegin/trancommit)"
    } else {
        "none: a batch is a loop of put/out, no transaction"
    };
    settings.insert("transaction".into(), note.into());
    on
}

/// The operations both database kinds share (beside their writes and transactions), so the
/// engine is written once ([`TcEngine`]).
trait Db: Transactions + Send + Sync {
    fn reader(&self) -> Result<Box<dyn Reader + '_>>;
    fn close(&self) -> Result<()>;
    fn sync(&self) -> Result<()>;
}

/// How write() applies a batch: the engine's sync mode and transaction option.
#[derive(Clone, Copy)]
struct WriteMode {
    sync: SyncMode,
    transaction: bool,
}

fn write_batch(db: &impl Db, mode: WriteMode, batch: &[WriteOp<'_>]) -> Result<()> {
    if mode.transaction && batch.len() > 1 {
        return db.in_transaction(batch);
    }
    write_each(db, batch, mode.sync, || db.sync())
}

/// The tuning flags both kinds take: compression, and the 64-bit bucket array when asked for or
/// when the plan loads more than 1 GiB; the flags and whether the array is large.
fn tuning_opts(args: &OpenArgs<'_>) -> Result<(u8, bool)> {
    let mut opts = compression_flag(args.options)?;
    let large = args.options.bool("large") || args.expected_bytes > (1 << 30);
    if large {
        opts |= ffi::TLARGE;
    }
    Ok((opts, large))
}

fn open_mode(args: &OpenArgs<'_>) -> libc::c_int {
    match args.mode {
        OpenMode::ReadOnly => ffi::OREADER,
        _ if args.sync == SyncMode::None => ffi::OWRITER | ffi::OCREAT,
        _ => ffi::OWRITER | ffi::OCREAT | ffi::OTSYNC,
    }
}

/// Either kind of database as an engine: one handle shared by every thread (TC locks inside).
pub struct TcEngine<D> {
    db: D,
    mode: WriteMode,
    settings: BTreeMap<String, String>,
}

/// The engine over the open handle `db`, with the settings both kinds report beside `settings`;
/// `prefix` names the kind's calls (`tchdb`, `tcbdb`).
fn engine<D: Db + 'static>(
    db: D,
    args: &OpenArgs<'_>,
    large: bool,
    prefix: &str,
    mut settings: BTreeMap<String, String>,
) -> Result<Box<dyn Engine>> {
    let transaction = transaction_opt(args.options, &mut settings);
    settings.insert("sync".into(), sync_note(args.sync, transaction, &format!("{prefix}sync()")));
    settings.insert("compression".into(), args.options.text("compression").unwrap_or_default());
    settings.insert("large".into(), large.to_string());
    settings.insert("threads".into(), format!("{prefix}setmutex (TC's internal rwlock)"));
    Ok(Box::new(TcEngine { db, mode: WriteMode { sync: args.sync, transaction }, settings }))
}

impl<D: Db> Engine for TcEngine<D> {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        write_batch(&self.db, self.mode, batch)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        self.db.reader()
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }
}

// ---- hash ----

/// One Tokyo Cabinet handle type: the hash (`tchdb*`) and B+ tree (`tcbdb*`) APIs are the same
/// calls under two prefixes, so one definition serves both: the calls, declared in module
/// `$calls` under their own names, and the handle `$name` that wraps them.
macro_rules! tc_handle {
    ($name:ident, $raw:ident, $label:literal, $calls:ident, $prefix:literal) => {
        /// The calls both APIs have, linked (by build.rs) as `PREFIX` + the function's name.
        mod $calls {
            use super::ffi::$raw;
            use libc::{c_char, c_int, c_void};

            extern "C" {
                #[link_name = concat!($prefix, "new")]
                pub fn new() -> *mut $raw;
                #[link_name = concat!($prefix, "del")]
                pub fn del(db: *mut $raw);
                #[link_name = concat!($prefix, "errmsg")]
                pub fn errmsg(ecode: c_int) -> *const c_char;
                #[link_name = concat!($prefix, "ecode")]
                pub fn ecode(db: *mut $raw) -> c_int;
                #[link_name = concat!($prefix, "setmutex")]
                pub fn setmutex(db: *mut $raw) -> bool;
                #[link_name = concat!($prefix, "open")]
                pub fn open(db: *mut $raw, path: *const c_char, omode: c_int) -> bool;
                #[link_name = concat!($prefix, "close")]
                pub fn close(db: *mut $raw) -> bool;
                #[link_name = concat!($prefix, "put")]
                pub fn put(db: *mut $raw, key: *const c_void, ks: c_int, value: *const c_void, vs: c_int) -> bool;
                #[link_name = concat!($prefix, "out")]
                pub fn out(db: *mut $raw, key: *const c_void, ks: c_int) -> bool;
                #[link_name = concat!($prefix, "get")]
                pub fn get(db: *mut $raw, key: *const c_void, ks: c_int, sp: *mut c_int) -> *mut c_void;
                #[link_name = concat!($prefix, "sync")]
                pub fn sync(db: *mut $raw) -> bool;
                #[link_name = concat!($prefix, "tranbegin")]
                pub fn tranbegin(db: *mut $raw) -> bool;
                #[link_name = concat!($prefix, "trancommit")]
                pub fn trancommit(db: *mut $raw) -> bool;
                #[link_name = concat!($prefix, "tranabort")]
                pub fn tranabort(db: *mut $raw) -> bool;
            }
        }

        /// An open handle; deleted (and so closed) in Drop.
        struct $name(NonNull<ffi::$raw>);

        // SAFETY: the handle was given tc*setmutex before open, so Tokyo Cabinet serialises
        // access to it internally and keeps error codes per thread; B+ tree cursors are owned by
        // one reader each.
        unsafe impl Send for $name {}
        // SAFETY: as above.
        unsafe impl Sync for $name {}

        impl $name {
            fn as_ptr(&self) -> *mut ffi::$raw {
                self.0.as_ptr()
            }

            /// The one place an error of this handle becomes an EngineError.
            fn err(&self, what: &str) -> EngineError {
                // SAFETY: the handle is valid; the message is a static string.
                let msg = unsafe { crate::c_str($calls::errmsg($calls::ecode(self.as_ptr()))) };
                EngineError::Store(format!("{} {what}: {msg}", $label))
            }

            fn check(&self, ok: bool, what: &str) -> Result<()> {
                if ok {
                    Ok(())
                } else {
                    Err(self.err(what))
                }
            }

            fn ecode(&self) -> libc::c_int {
                // SAFETY: valid handle.
                unsafe { $calls::ecode(self.as_ptr()) }
            }

            /// The value of `key` into `out`; false when there is none.
            fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
                out.clear();
                let mut size: libc::c_int = 0;
                // SAFETY: valid handle, live key slice; the result is malloc'd by TC and freed below.
                let p = unsafe { $calls::get(self.as_ptr(), key.as_ptr().cast(), len(key.len())?, &mut size) };
                if p.is_null() {
                    if self.ecode() == ffi::TCENOREC {
                        return Ok(false);
                    }
                    return Err(self.err("get"));
                }
                // SAFETY: TC returned `size` readable bytes at `p`, allocated for tcfree.
                unsafe { crate::take_c_buf(p, size as usize, out, ffi::tcfree) };
                Ok(true)
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: we own the handle; deleting closes it first if it is still open.
                unsafe { $calls::del(self.as_ptr()) }
            }
        }

        impl Db for $name {
            fn reader(&self) -> Result<Box<dyn Reader + '_>> {
                self.new_reader()
            }
            fn close(&self) -> Result<()> {
                // SAFETY: valid open handle; Drop then only deletes the object.
                self.check(unsafe { $calls::close(self.as_ptr()) }, "close")
            }
            fn sync(&self) -> Result<()> {
                // SAFETY: valid handle.
                self.check(unsafe { $calls::sync(self.as_ptr()) }, "sync")
            }
        }

        impl Records for $name {
            fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
                let (kp, kl, vp, vl) = (key.as_ptr().cast(), len(key.len())?, value.as_ptr().cast(), len(value.len())?);
                // SAFETY: pointers and lengths come from live slices.
                let ok = unsafe { $calls::put(self.as_ptr(), kp, kl, vp, vl) };
                self.check(ok, "put")
            }
            fn delete(&self, key: &[u8]) -> Result<()> {
                // SAFETY: as above.
                let ok = unsafe { $calls::out(self.as_ptr(), key.as_ptr().cast(), len(key.len())?) };
                if !ok && self.ecode() == ffi::TCENOREC {
                    return Ok(());
                }
                self.check(ok, "out")
            }
        }

        impl Transactions for $name {
            fn begin(&self) -> Result<()> {
                // SAFETY: valid handle.
                self.check(unsafe { $calls::tranbegin(self.as_ptr()) }, "tranbegin")
            }
            fn commit(&self) -> Result<()> {
                // SAFETY: valid handle.
                self.check(unsafe { $calls::trancommit(self.as_ptr()) }, "trancommit")
            }
            fn abort(&self) {
                // SAFETY: valid handle.
                unsafe { $calls::tranabort(self.as_ptr()) };
            }
        }
    };
}

tc_handle!(Hdb, Tchdb, "tokyocabinet-hash", hdb, "tchdb");

fn open_hash(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    crate::refuse_secondary(args)?;
    let o = args.options;
    let mut bnum = int_opt(o, "bnum");
    if bnum == 0 {
        bnum = crate::buckets_for(args.expected_records, 131_071);
    }
    let (opts, large) = tuning_opts(args)?;
    let rcnum = int_opt(o, "rcnum").min(i32::MAX as i64) as i32;
    let xmsiz = o.int("xmsiz").unwrap_or(64 << 20).max(0);
    // SAFETY: tchdbnew returns a fresh handle or NULL.
    let db = Hdb(NonNull::new(unsafe { hdb::new() }).ok_or_else(|| EngineError::store("tchdbnew failed"))?);
    // SAFETY: valid, not yet opened handle; tuning calls must precede open.
    unsafe {
        let ok = hdb::setmutex(db.as_ptr());
        db.check(ok, "setmutex")?;
        let ok = ffi::tchdbtune(db.as_ptr(), bnum, -1, -1, opts);
        db.check(ok, "tune")?;
        let ok = ffi::tchdbsetcache(db.as_ptr(), rcnum);
        db.check(ok, "setcache")?;
        let ok = ffi::tchdbsetxmsiz(db.as_ptr(), xmsiz);
        db.check(ok, "setxmsiz")?;
    }
    let path = crate::c_path(&args.file("db.tch"));
    // SAFETY: valid handle and NUL-terminated path.
    let ok = unsafe { hdb::open(db.as_ptr(), path.as_ptr(), open_mode(args)) };
    db.check(ok, "open")?;
    let settings = BTreeMap::from([
        ("bnum".to_string(), bnum.to_string()),
        ("rcnum".to_string(), rcnum.to_string()),
        ("xmsiz".to_string(), xmsiz.to_string()),
    ]);
    engine(db, args, large, "tchdb", settings)
}

impl Hdb {
    fn new_reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(HashReader { db: self }))
    }
}

struct HashReader<'a> {
    db: &'a Hdb,
}

impl Reader for HashReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.db.get(key, out)
    }
}

// ---- B+ tree ----

tc_handle!(Bdb, Tcbdb, "tokyocabinet-btree", bdb, "tcbdb");

fn open_btree(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    crate::refuse_secondary(args)?;
    let o = args.options;
    let clamp = |n: i64| n.min(i32::MAX as i64) as i32;
    let (lmemb, nmemb, bnum) = (clamp(int_opt(o, "lmemb")), clamp(int_opt(o, "nmemb")), int_opt(o, "bnum"));
    let (lcnum, ncnum) = (clamp(int_opt(o, "lcnum")), clamp(int_opt(o, "ncnum")));
    let (opts, large) = tuning_opts(args)?;
    // SAFETY: tcbdbnew returns a fresh handle or NULL.
    let db = Bdb(NonNull::new(unsafe { bdb::new() }).ok_or_else(|| EngineError::store("tcbdbnew failed"))?);
    // SAFETY: valid, not yet opened handle; tuning precedes open.
    unsafe {
        let ok = bdb::setmutex(db.as_ptr());
        db.check(ok, "setmutex")?;
        let ok = ffi::tcbdbtune(db.as_ptr(), lmemb, nmemb, bnum, -1, -1, opts);
        db.check(ok, "tune")?;
        let ok = ffi::tcbdbsetcache(db.as_ptr(), lcnum, ncnum);
        db.check(ok, "setcache")?;
    }
    let path = crate::c_path(&args.file("db.tcb"));
    // SAFETY: valid handle and path.
    let ok = unsafe { bdb::open(db.as_ptr(), path.as_ptr(), open_mode(args)) };
    db.check(ok, "open")?;
    let show = |n: i64, default: &str| if n == 0 { format!("{default} (TC default)") } else { n.to_string() };
    let settings = BTreeMap::from([
        ("lmemb".to_string(), show(lmemb as i64, "128")),
        ("nmemb".to_string(), show(nmemb as i64, "256")),
        ("bnum".to_string(), show(bnum, "32749")),
        ("lcnum".to_string(), show(lcnum as i64, "1024")),
        ("ncnum".to_string(), show(ncnum as i64, "512")),
    ]);
    engine(db, args, large, "tcbdb", settings)
}

impl Bdb {
    fn new_reader(&self) -> Result<Box<dyn Reader + '_>> {
        // SAFETY: tcxstrnew allocates (aborting on failure, as TC does everywhere).
        let (k, v) = unsafe { (ffi::tcxstrnew(), ffi::tcxstrnew()) };
        Ok(Box::new(BtreeReader { db: self, k, v }))
    }
}

/// A reader with two reusable buffers for cursor records.
struct BtreeReader<'a> {
    db: &'a Bdb,
    k: *mut ffi::TcXstr,
    v: *mut ffi::TcXstr,
}

impl Drop for BtreeReader<'_> {
    fn drop(&mut self) {
        // SAFETY: both buffers were made by tcxstrnew in reader() and are freed once here.
        unsafe {
            ffi::tcxstrdel(self.k);
            ffi::tcxstrdel(self.v);
        }
    }
}

/// View of a TcXstr's bytes.
///
/// # Safety
/// `ptr` must be a live TcXstr not modified while the slice lives.
unsafe fn xstr<'a>(ptr: *const ffi::TcXstr) -> &'a [u8] {
    std::slice::from_raw_parts(ffi::tcxstrptr(ptr).cast::<u8>(), ffi::tcxstrsize(ptr) as usize)
}

impl Reader for BtreeReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.db.get(key, out)
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        // SAFETY: valid handle; the cursor is made for tcbdbcurdel, which its guard calls.
        let cur = unsafe { crate::Owned::new(ffi::tcbdbcurnew(self.db.as_ptr()), ffi::tcbdbcurdel) }
            .ok_or_else(|| self.db.err("curnew"))?;
        // SAFETY: valid cursor and key slice.
        let mut on = unsafe {
            match start {
                Some(k) => ffi::tcbdbcurjump(cur.as_ptr(), k.as_ptr().cast(), len(k.len())?),
                None => ffi::tcbdbcurfirst(cur.as_ptr()),
            }
        };
        let mut n = 0;
        while on && n < limit {
            // SAFETY: the cursor copies the record into our two buffers under TC's lock; the
            // slices are dropped before the buffers are touched again.
            let go = unsafe {
                ffi::tcxstrclear(self.k);
                ffi::tcxstrclear(self.v);
                if !ffi::tcbdbcurrec(cur.as_ptr(), self.k, self.v) {
                    break;
                }
                n += 1;
                visit(xstr(self.k), xstr(self.v))
            };
            if !go {
                break;
            }
            // SAFETY: valid cursor.
            on = unsafe { ffi::tcbdbcurnext(cur.as_ptr()) };
        }
        if !on && self.db.ecode() != ffi::TCENOREC && self.db.ecode() != 0 {
            return Err(self.db.err("cursor"));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opens `desc` with `transaction` (None = the default), writes a 3-record batch and one
    /// single write, and reports the settings' `transaction` line and whether Tokyo Cabinet's
    /// write-ahead log file (made by a transaction) exists while the database is open.
    fn batch_then_look(desc: &EngineDescriptor, file: &str, transaction: Option<&str>) -> (String, bool) {
        let dir = tempfile::tempdir().unwrap();
        let given: BTreeMap<_, _> =
            transaction.map(|t| ("transaction".to_string(), serde_json::json!(t))).into_iter().collect();
        let options = Options::parse(desc.name, desc.options, &given).unwrap();
        let (sync, expected_records, expected_bytes) = (SyncMode::Commit, 4, 40);
        let args = OpenArgs { sync, expected_records, expected_bytes, ..OpenArgs::new(dir.path(), &options) };
        let e = (desc.open)(&args).unwrap();
        let batch = [b"a", b"b", b"c"].map(|k| WriteOp { key: k, value: Some(b"v1") });
        e.write(&batch).unwrap();
        e.write(&[WriteOp { key: b"a", value: None }]).unwrap();
        let wal = dir.path().join(format!("{file}.wal")).exists();
        let mut out = Vec::new();
        let mut r = e.reader().unwrap();
        assert!(!r.get(b"a", &mut out).unwrap(), "{}: deleted key found", desc.name);
        assert!(r.get(b"c", &mut out).unwrap() && out == b"v1", "{}: c lost", desc.name);
        drop(r);
        let note = e.settings()["transaction"].clone();
        e.close().unwrap();
        (note, wal)
    }

    /// Article 004 looped over Tokyo Cabinet's puts: that is the default, and a transaction per
    /// batch happens only when asked for; the settings say which, for both database kinds.
    #[test]
    fn a_batch_is_a_transaction_only_when_asked() {
        for (desc, file) in [(&hash::DESCRIPTOR, "db.tch"), (&btree::DESCRIPTOR, "db.tcb")] {
            for (given, wal, note) in [
                (None, false, "none: a batch is a loop"),
                (Some("none"), false, "none:"),
                (Some("batch"), true, "batch:"),
            ] {
                let (got_note, got_wal) = batch_then_look(desc, file, given);
                assert_eq!(got_wal, wal, "{} transaction {given:?}: write-ahead log present", desc.name);
                assert!(got_note.starts_with(note), "{} transaction {given:?}: settings say {got_note}", desc.name);
            }
        }
    }

    #[test]
    fn an_unknown_transaction_mode_is_refused() {
        let given = BTreeMap::from([("transaction".to_string(), serde_json::json!("always"))]);
        let err = Options::parse("tokyocabinet-hash", hash::DESCRIPTOR.options, &given).unwrap_err();
        assert!(err.contains("transaction") && err.contains("batch"), "{err}");
    }
}
