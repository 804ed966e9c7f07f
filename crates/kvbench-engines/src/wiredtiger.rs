//! `wiredtiger`: WiredTiger (MongoDB's storage engine), Debian's libwiredtiger 3.2 through its
//! C API and the shim `csrc/wiredtiger_shim.c` (the API is function pointers in each handle).
//!
//! One connection in the job directory and one row-store table `table:kv` with
//! `key_format=u,value_format=u` (raw bytes). Writes go through one session behind a mutex, one
//! transaction per batch. Each reader opens its own session and cursor; every read is an
//! autocommit read (its own snapshot), so `refresh` has nothing to do.
//!
//! Durable commits: with the log (journal) on, the default, a durable commit is
//! `commit_transaction("sync=on")`, which writes and fsyncs the log before returning. With
//! `log=false` there is no journal and a durable commit is a checkpoint after the commit.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use kvbench_model::engine::*;
use libc::{c_char, c_int, c_void, size_t};

#[allow(non_camel_case_types)]
mod ffi {
    use libc::{c_char, c_int, c_void, size_t};

    opaque!(WT_CONNECTION, WT_SESSION, WT_CURSOR);

    extern "C" {
        pub fn kvb_wt_version() -> *const c_char;
        pub fn kvb_wt_strerror(err: c_int) -> *const c_char;
        pub fn kvb_wt_notfound() -> c_int;
        pub fn kvb_wt_open(home: *const c_char, config: *const c_char, conn: *mut *mut WT_CONNECTION) -> c_int;
        pub fn kvb_wt_close(conn: *mut WT_CONNECTION) -> c_int;
        pub fn kvb_wt_session(conn: *mut WT_CONNECTION, session: *mut *mut WT_SESSION) -> c_int;
        pub fn kvb_wt_session_close(session: *mut WT_SESSION) -> c_int;
        pub fn kvb_wt_create(session: *mut WT_SESSION, uri: *const c_char, config: *const c_char) -> c_int;
        pub fn kvb_wt_cursor(session: *mut WT_SESSION, uri: *const c_char, cursor: *mut *mut WT_CURSOR) -> c_int;
        pub fn kvb_wt_begin(session: *mut WT_SESSION) -> c_int;
        pub fn kvb_wt_commit(session: *mut WT_SESSION, config: *const c_char) -> c_int;
        pub fn kvb_wt_rollback(session: *mut WT_SESSION) -> c_int;
        pub fn kvb_wt_checkpoint(session: *mut WT_SESSION) -> c_int;
        pub fn kvb_wt_put(
            cursor: *mut WT_CURSOR,
            key: *const c_void,
            kl: size_t,
            value: *const c_void,
            vl: size_t,
        ) -> c_int;
        pub fn kvb_wt_del(cursor: *mut WT_CURSOR, key: *const c_void, kl: size_t) -> c_int;
        pub fn kvb_wt_get(
            cursor: *mut WT_CURSOR,
            key: *const c_void,
            kl: size_t,
            value: *mut *const c_void,
            vl: *mut size_t,
        ) -> c_int;
        pub fn kvb_wt_seek(
            cursor: *mut WT_CURSOR,
            start: *const c_void,
            sl: size_t,
            key: *mut *const c_void,
            kl: *mut size_t,
            value: *mut *const c_void,
            vl: *mut size_t,
        ) -> c_int;
        pub fn kvb_wt_next(
            cursor: *mut WT_CURSOR,
            key: *mut *const c_void,
            kl: *mut size_t,
            value: *mut *const c_void,
            vl: *mut size_t,
        ) -> c_int;
        pub fn kvb_wt_reset(cursor: *mut WT_CURSOR) -> c_int;
    }
}

use ffi::*;

const URI: &std::ffi::CStr = c"table:kv";
const TABLE_CONFIG: &std::ffi::CStr = c"key_format=u,value_format=u";
const SYNC_ON: &std::ffi::CStr = c"sync=on";

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "wiredtiger",
    "WiredTiger (libwiredtiger, C API): MongoDB's engine, a row-store B-tree table with a journal",
    crate::ORDERED_STORE,
    &[
        OptionSpec::int(
            "cache_size",
            "",
            "the connection's cache in bytes, e.g. 256m (default: the library's, 100 MB); a transaction \
                  must fit in it",
        ),
        OptionSpec::bool(
            "log",
            "true",
            "the journal (log=(enabled)): a durable commit fsyncs it (commit sync=on); off, a durable \
                  commit is a checkpoint",
        ),
    ],
    || {
        // SAFETY: returns a static NUL-terminated string.
        unsafe { crate::c_str(kvb_wt_version()) }
    },
    open,
);

/// The one place a WiredTiger return code becomes an error.
fn check(rc: c_int, call: &str) -> Result<()> {
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: returns a static (or strerror's) NUL-terminated string.
    let msg = unsafe { crate::c_str(kvb_wt_strerror(rc)) };
    Err(EngineError::Store(format!("wiredtiger {call}: {msg} ({rc})")))
}

/// How a commit is made durable.
#[derive(Clone, Copy, PartialEq)]
enum Durable {
    /// Nothing forced while running (the log is written in the background); close checkpoints.
    No,
    /// `commit_transaction("sync=on")`: the log is fsynced before the commit returns.
    LogSync,
    /// No log: a checkpoint after every commit.
    Checkpoint,
}

/// A session and one cursor on the table, closed together (the cursor with its session).
struct Session {
    s: *mut WT_SESSION,
    c: *mut WT_CURSOR,
}

impl Session {
    fn open(conn: *mut WT_CONNECTION) -> Result<Session> {
        let mut s = ptr::null_mut();
        // SAFETY: a live connection; open_session is thread-safe.
        check(unsafe { kvb_wt_session(conn, &mut s) }, "open_session")?;
        let mut sess = Session { s, c: ptr::null_mut() };
        // SAFETY: a live session; URI is NUL-terminated.
        check(unsafe { kvb_wt_cursor(s, URI.as_ptr(), &mut sess.c) }, "open_cursor")?;
        Ok(sess)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: closing a session closes its cursors and rolls back an open transaction.
        unsafe { kvb_wt_session_close(self.s) };
    }
}

pub struct WiredTiger {
    conn: *mut WT_CONNECTION,
    /// The writing session; `None` when opened read-only.
    writer: Option<Mutex<Session>>,
    durable: Durable,
    settings: BTreeMap<String, String>,
    wrote: AtomicBool,
}

// SAFETY: a WT_CONNECTION is thread-safe; the writer's session is used under its mutex only,
// and each reader's session belongs to that reader alone.
unsafe impl Send for WiredTiger {}
// SAFETY: see Send.
unsafe impl Sync for WiredTiger {}

// SAFETY: a session may move between threads; it is used by one at a time (the mutex).
unsafe impl Send for Session {}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    if args.mode == OpenMode::Secondary {
        return Err(EngineError::Unsupported("wiredtiger has no secondary open".into()));
    }
    let o = args.options;
    let read_only = args.mode == OpenMode::ReadOnly;
    let log = o.bool("log");
    let mut config = vec![if read_only { "readonly=true".to_string() } else { "create".to_string() }];
    let cache = match o.int("cache_size") {
        Some(n) if n > 0 => {
            config.push(format!("cache_size={n}"));
            format!("{n} bytes")
        }
        Some(n) => return Err(EngineError::Option(format!("wiredtiger cache_size must be positive bytes, got {n}"))),
        None => "library default (100 MB)".into(),
    };
    config.push(format!("log=(enabled={log})"));
    let durable = match (args.sync, log) {
        _ if read_only => Durable::No,
        (SyncMode::None, _) => Durable::No,
        (_, true) => Durable::LogSync,
        (_, false) => Durable::Checkpoint,
    };
    let config = config.join(",");
    let mut db = WiredTiger {
        conn: ptr::null_mut(),
        writer: None,
        durable,
        settings: BTreeMap::new(),
        wrote: AtomicBool::new(false),
    };
    let home = crate::c_path(args.dir);
    let c_config = CString::new(config.clone()).map_err(EngineError::store)?;
    // SAFETY: both strings are NUL-terminated and outlive the call.
    check(unsafe { kvb_wt_open(home.as_ptr(), c_config.as_ptr(), &mut db.conn) }, "wiredtiger_open")?;
    if !read_only {
        let mut s = ptr::null_mut();
        // SAFETY: a live connection.
        check(unsafe { kvb_wt_session(db.conn, &mut s) }, "open_session")?;
        // SAFETY: a live session; creating an existing table with the same config is a no-op.
        let rc = unsafe { kvb_wt_create(s, URI.as_ptr(), TABLE_CONFIG.as_ptr()) };
        // SAFETY: the session is closed whatever create said.
        unsafe { kvb_wt_session_close(s) };
        check(rc, "create")?;
        db.writer = Some(Mutex::new(Session::open(db.conn)?));
    }
    db.settings = settings(&config, &cache, durable, read_only);
    Ok(Box::new(db))
}

fn settings(config: &str, cache: &str, durable: Durable, read_only: bool) -> BTreeMap<String, String> {
    let mut s = BTreeMap::new();
    let sync = match durable {
        _ if read_only => "read-only connection (readonly=true)",
        Durable::No => "commit without sync (log written in the background, no fsync); checkpoint at close",
        Durable::LogSync => "commit_transaction(sync=on): the log is written and fsynced at every commit",
        Durable::Checkpoint => "no log: a checkpoint after every commit",
    };
    s.insert("sync".into(), sync.into());
    s.insert("connection".into(), config.into());
    s.insert("table".into(), format!("{} ({})", URI.to_string_lossy(), TABLE_CONFIG.to_string_lossy()));
    s.insert("cache_size".into(), cache.into());
    s.insert("write_batch".into(), "one transaction per batch (snapshot isolation)".into());
    s.insert("reader".into(), "one session and cursor per reader, autocommit reads".into());
    s
}

impl WiredTiger {
    fn writer(&self) -> Result<std::sync::MutexGuard<'_, Session>> {
        let w = self.writer.as_ref().ok_or_else(|| EngineError::store("wiredtiger: opened read-only"))?;
        w.lock().map_err(|_| EngineError::store("wiredtiger: writer lock poisoned"))
    }

    fn apply(session: &Session, batch: &[WriteOp<'_>]) -> Result<()> {
        for op in batch {
            let k = op.key.as_ptr() as *const c_void;
            let rc = match op.value {
                // SAFETY: the writer's cursor inside its open transaction; WiredTiger copies the
                // items before the call returns.
                Some(v) => unsafe { kvb_wt_put(session.c, k, op.key.len(), v.as_ptr() as *const c_void, v.len()) },
                // SAFETY: as above.
                None => unsafe { kvb_wt_del(session.c, k, op.key.len()) },
            };
            check(rc, if op.value.is_some() { "cursor insert" } else { "cursor remove" })?;
        }
        Ok(())
    }
}

impl Engine for WiredTiger {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let w = self.writer()?;
        self.wrote.store(true, Ordering::Relaxed);
        // SAFETY: the writer's session, held under its mutex.
        check(unsafe { kvb_wt_begin(w.s) }, "begin_transaction")?;
        if let Err(e) = WiredTiger::apply(&w, batch) {
            // SAFETY: as above; the transaction is open.
            unsafe { kvb_wt_rollback(w.s) };
            return Err(e);
        }
        let config: *const c_char = if self.durable == Durable::LogSync { SYNC_ON.as_ptr() } else { ptr::null() };
        // SAFETY: as above; commit ends the transaction whatever it returns.
        check(unsafe { kvb_wt_commit(w.s, config) }, "commit_transaction")?;
        if self.durable == Durable::Checkpoint {
            // SAFETY: as above, outside any transaction.
            check(unsafe { kvb_wt_checkpoint(w.s) }, "checkpoint")?;
        }
        Ok(())
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(WtReader { sess: Session::open(self.conn)?, _db: std::marker::PhantomData }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        // Drop closes the writer's session, then the connection (which writes a checkpoint).
        let mut me = self;
        me.shut()
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }

    fn settle(&mut self) -> Result<String> {
        let Ok(w) = self.writer() else {
            return Ok("read-only connection: nothing to checkpoint".into());
        };
        // SAFETY: the writer's session, outside any transaction.
        check(unsafe { kvb_wt_checkpoint(w.s) }, "checkpoint")?;
        Ok("wrote a checkpoint (session checkpoint)".into())
    }
}

impl WiredTiger {
    fn shut(&mut self) -> Result<()> {
        self.writer = None;
        if self.conn.is_null() {
            return Ok(());
        }
        // SAFETY: every reader borrows `self` and the writer's session is closed; closing the
        // connection writes a final checkpoint, which makes every commit durable.
        let rc = unsafe { kvb_wt_close(self.conn) };
        self.conn = ptr::null_mut();
        check(rc, "connection close")
    }
}

impl Drop for WiredTiger {
    fn drop(&mut self) {
        let _ = self.shut();
    }
}

/// A session and cursor of its own.
struct WtReader<'a> {
    sess: Session,
    _db: std::marker::PhantomData<&'a WiredTiger>,
}

impl Reader for WtReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let (mut v, mut vl) = (ptr::null(), 0);
        // SAFETY: this reader's cursor; `v` points into the cursor's memory until its next call,
        // which is the reset below, after the copy.
        let rc = unsafe { kvb_wt_get(self.sess.c, key.as_ptr() as *const c_void, key.len(), &mut v, &mut vl) };
        let found = rc == 0;
        if found {
            // SAFETY: see above.
            out.extend_from_slice(unsafe { bytes(v, vl) });
        }
        // SAFETY: releases the position and the read's snapshot.
        unsafe { kvb_wt_reset(self.sess.c) };
        // SAFETY: a pure function.
        if !found && rc != unsafe { kvb_wt_notfound() } {
            check(rc, "cursor search")?;
        }
        Ok(found)
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        if limit == 0 {
            return Ok(0);
        }
        let c = self.sess.c;
        let (mut k, mut kl, mut v, mut vl) = (ptr::null(), 0, ptr::null(), 0);
        let (sp, sl) = start.map_or((ptr::null(), 0), |s| (s.as_ptr() as *const c_void, s.len()));
        // SAFETY: this reader's cursor; the pointers are valid until its next call.
        let mut rc = unsafe { kvb_wt_seek(c, sp, sl, &mut k, &mut kl, &mut v, &mut vl) };
        let mut n = 0;
        while rc == 0 {
            n += 1;
            // SAFETY: see above.
            if !visit(unsafe { bytes(k, kl) }, unsafe { bytes(v, vl) }) || n >= limit {
                break;
            }
            // SAFETY: as above.
            rc = unsafe { kvb_wt_next(c, &mut k, &mut kl, &mut v, &mut vl) };
        }
        // SAFETY: releases the position and the scan's snapshot.
        unsafe { kvb_wt_reset(c) };
        // SAFETY: a pure function.
        if rc != 0 && rc != unsafe { kvb_wt_notfound() } {
            check(rc, "cursor next")?;
        }
        Ok(n)
    }
}

/// The bytes of a WT_ITEM.
///
/// # Safety
/// `ptr` must point to `len` bytes valid for `'a` (until the cursor's next call).
unsafe fn bytes<'a>(ptr: *const c_void, len: size_t) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    std::slice::from_raw_parts(ptr as *const u8, len)
}
