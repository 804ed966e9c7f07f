//! What `lmdb` and `libmdbx` share. libmdbx is a fork of LMDB: the same transactions, cursors,
//! put, get and scan under other C names and types. [`Api`] names one library's types and
//! calls; the transaction, the write of a batch and the reader are written once here over it.
//! Each engine's own file keeps what differs: its options, environment flags, open, sync, close,
//! settings, internals and version.
//!
//! A [`MdbReader`] holds one read-only transaction for its whole life (`refresh` resets and
//! renews it) and, after its first scan, one cursor; each write batch is one write transaction.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::ptr;

use kvbench_model::engine::*;
use libc::{c_char, c_int, c_uint};

/// Where a cursor read moves.
pub(crate) enum Step {
    First,
    /// To the first key at or after the one given.
    SetRange,
    Next,
}

/// One library of the family: its C types and the calls kvbench makes through this module, each
/// returning the C return code (a call that returns nothing in C returns `SUCCESS`).
///
/// # Safety
/// Every call is the library's C function of that name: the caller passes live handles of this
/// library, as its C documentation requires.
pub(crate) trait Api: 'static {
    type Env;
    type Txn;
    type Cursor;
    type Dbi: Copy + Default;
    /// A key or value: a pointer and a size, in the library's own layout.
    type Val;
    /// Leads every error message ("lmdb", "libmdbx").
    const ENGINE: &'static str;
    /// The C functions' prefix ("mdb_", "mdbx_"): a failed call is named by it and its rest.
    const PREFIX: &'static str;
    const SUCCESS: c_int;
    const NOTFOUND: c_int;

    /// A view of `bytes` to pass in (the library does not write through a key it is given).
    fn val(bytes: &[u8]) -> Self::Val;
    /// A value for the library to fill in.
    fn empty() -> Self::Val;
    /// The bytes a value points to (its pointer is not read when its size is 0).
    ///
    /// # Safety
    /// `val` comes from the library within a transaction still alive, which `'a` must not outlive.
    unsafe fn bytes<'a>(val: &Self::Val) -> &'a [u8];
    unsafe fn strerror(rc: c_int) -> *const c_char;
    unsafe fn txn_begin(env: *mut Self::Env, read_only: bool, txn: *mut *mut Self::Txn) -> c_int;
    unsafe fn txn_commit(txn: *mut Self::Txn) -> c_int;
    unsafe fn txn_abort(txn: *mut Self::Txn);
    unsafe fn txn_reset(txn: *mut Self::Txn) -> c_int;
    unsafe fn txn_renew(txn: *mut Self::Txn) -> c_int;
    /// Opens the unnamed main database, which always exists.
    unsafe fn dbi_open(txn: *mut Self::Txn, dbi: *mut Self::Dbi) -> c_int;
    unsafe fn get(txn: *mut Self::Txn, dbi: Self::Dbi, key: &mut Self::Val, data: &mut Self::Val) -> c_int;
    /// Inserts or replaces.
    unsafe fn put(txn: *mut Self::Txn, dbi: Self::Dbi, key: &mut Self::Val, data: &mut Self::Val) -> c_int;
    /// Deletes the key (a null data pointer: every value of it).
    unsafe fn del(txn: *mut Self::Txn, dbi: Self::Dbi, key: &mut Self::Val) -> c_int;
    unsafe fn cursor_open(txn: *mut Self::Txn, dbi: Self::Dbi, cursor: *mut *mut Self::Cursor) -> c_int;
    unsafe fn cursor_close(cursor: *mut Self::Cursor);
    unsafe fn cursor_renew(txn: *mut Self::Txn, cursor: *mut Self::Cursor) -> c_int;
    unsafe fn cursor_get(cursor: *mut Self::Cursor, key: &mut Self::Val, data: &mut Self::Val, step: Step) -> c_int;
}

/// The one place a return code becomes an error; `call` is the C function's name without the
/// library's prefix.
#[inline]
pub(crate) fn check<A: Api>(rc: c_int, call: &str) -> Result<()> {
    if rc == A::SUCCESS {
        return Ok(());
    }
    Err(failure::<A>(rc, call))
}

/// The error of a failed call (out of line: `check` runs on every get).
#[cold]
fn failure<A: Api>(rc: c_int, call: &str) -> EngineError {
    // SAFETY: strerror returns a pointer to a static (or strerror's) NUL-terminated string.
    let msg = unsafe { crate::c_str(A::strerror(rc)) };
    EngineError::Store(format!("{} {}{call}: {msg} ({rc})", A::ENGINE, A::PREFIX))
}

/// One library's environment flags that kvbench sets, each with its C name.
pub(crate) struct Flags {
    /// Always set: transactions are not bound to the thread that began them, so a thread may
    /// hold a reader while it writes (mixed phases).
    pub(crate) threads: (c_uint, &'static str),
    /// No fsync at commit (`sync = none`); close forces the data to disk. May be several bits.
    pub(crate) no_sync: (c_uint, &'static str),
    pub(crate) read_only: (c_uint, &'static str),
    pub(crate) no_readahead: (c_uint, &'static str),
    pub(crate) write_map: (c_uint, &'static str),
}

/// How an environment is opened: what both engines take alike from the open arguments.
#[derive(Clone, Copy)]
pub(crate) struct Opening {
    pub(crate) read_only: bool,
    pub(crate) no_sync: bool,
    pub(crate) flags: c_uint,
    /// The map's size (`size_option`): by default max(1 GiB, 4 x the plan's bytes).
    pub(crate) size: usize,
}

/// The [`Opening`] of `args`, with the library's `flags` and the name of its size option.
pub(crate) fn opening<A: Api>(args: &OpenArgs<'_>, size_option: &str, flags: &Flags) -> Result<Opening> {
    let o = args.options;
    let read_only = args.mode == OpenMode::ReadOnly;
    let size = match o.int(size_option) {
        Some(n) if n > 0 => n as usize,
        Some(n) => return Err(EngineError::Option(format!("{} {size_option} must be positive, got {n}", A::ENGINE))),
        None => (1usize << 30).max(args.expected_bytes.saturating_mul(4) as usize),
    };
    let no_sync = args.sync == SyncMode::None && !read_only;
    let set = [
        (true, flags.threads),
        (no_sync, flags.no_sync),
        (read_only, flags.read_only),
        (o.bool("no_readahead"), flags.no_readahead),
        (o.bool("write_map") && !read_only, flags.write_map),
    ];
    let flags = set.iter().filter(|(on, _)| *on).fold(0, |all, (_, (bit, _))| all | bit);
    Ok(Opening { read_only, no_sync, flags, size })
}

/// The settings both engines report alike: how commits reach the disk (`sync` names it read-only,
/// without sync, durable), the environment flags set (in the order of [`Flags`]), the reader
/// limit and the write of a batch.
pub(crate) fn settings(opened: &Opening, sync: [&str; 3], named: &Flags, max_readers: u64) -> BTreeMap<String, String> {
    let mut s = BTreeMap::new();
    let sync = if opened.read_only {
        sync[0]
    } else if opened.no_sync {
        sync[1]
    } else {
        sync[2]
    };
    s.insert("sync".into(), sync.into());
    let named = [named.threads, named.no_sync, named.read_only, named.no_readahead, named.write_map];
    // All of a flag's bits: MDBX_UTTERLY_NOSYNC is MDBX_SAFE_NOSYNC and one bit more.
    let set: Vec<&str> = named.iter().filter(|(bits, _)| opened.flags & bits == *bits).map(|(_, name)| *name).collect();
    s.insert("env_flags".into(), set.join("|"));
    s.insert("max_readers".into(), max_readers.to_string());
    s.insert("write_batch".into(), "one write transaction per batch".into());
    s
}

/// A transaction that aborts on Drop unless committed.
pub(crate) struct Txn<A: Api> {
    ptr: *mut A::Txn,
}

impl<A: Api> Txn<A> {
    /// Begins a transaction (no parent) in `env`, which must be open.
    pub(crate) fn begin(env: *mut A::Env, read_only: bool) -> Result<Txn<A>> {
        let mut ptr = ptr::null_mut();
        // SAFETY: the env is open; the library writes the new transaction into `ptr`.
        check::<A>(unsafe { A::txn_begin(env, read_only, &mut ptr) }, "txn_begin")?;
        Ok(Txn { ptr })
    }

    pub(crate) fn commit(mut self) -> Result<()> {
        let p = std::mem::replace(&mut self.ptr, ptr::null_mut());
        // SAFETY: `p` is a live transaction; commit frees it whether it succeeds or not.
        check::<A>(unsafe { A::txn_commit(p) }, "txn_commit")
    }
}

impl<A: Api> Drop for Txn<A> {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: a live transaction that was not committed.
            unsafe { A::txn_abort(self.ptr) };
        }
    }
}

/// The main database of a just-opened environment, opened in a transaction of its own.
pub(crate) fn main_dbi<A: Api>(env: *mut A::Env, read_only: bool) -> Result<A::Dbi> {
    let txn = Txn::<A>::begin(env, read_only)?;
    let mut dbi = A::Dbi::default();
    // SAFETY: `txn` is live.
    check::<A>(unsafe { A::dbi_open(txn.ptr, &mut dbi) }, "dbi_open")?;
    txn.commit()?;
    Ok(dbi)
}

/// One batch in one write transaction of the open read-write `env`; deleting an absent key is no
/// error.
pub(crate) fn write<A: Api>(env: *mut A::Env, dbi: A::Dbi, batch: &[WriteOp<'_>]) -> Result<()> {
    let txn = Txn::<A>::begin(env, false)?;
    for w in batch {
        let mut k = A::val(w.key);
        let Some(v) = w.value else {
            // SAFETY: a live write txn; the key points to a slice alive for the call.
            let rc = unsafe { A::del(txn.ptr, dbi, &mut k) };
            if rc != A::NOTFOUND {
                check::<A>(rc, "del")?;
            }
            continue;
        };
        // SAFETY: as above; the library copies key and data into its pages.
        check::<A>(unsafe { A::put(txn.ptr, dbi, &mut k, &mut A::val(v)) }, "put")?;
    }
    txn.commit()
}

/// One read-only transaction (and, after the first scan, one cursor) for the reader's life.
pub(crate) struct MdbReader<'a, A: Api> {
    dbi: A::Dbi,
    txn: Txn<A>,
    cursor: *mut A::Cursor,
    /// The engine that owns the environment, borrowed: it is not closed while the reader lives.
    owner: PhantomData<&'a ()>,
}

/// A reader of `env`, which `_owner` opened and closes: the borrow keeps it open.
pub(crate) fn reader<'a, A: Api>(
    _owner: &'a impl Sized,
    env: *mut A::Env,
    dbi: A::Dbi,
) -> Result<Box<dyn Reader + 'a>> {
    let txn = Txn::<A>::begin(env, true)?;
    Ok(Box::new(MdbReader::<A> { dbi, txn, cursor: ptr::null_mut(), owner: PhantomData }))
}

impl<A: Api> Reader for MdbReader<'_, A> {
    fn refresh(&mut self) -> Result<()> {
        // SAFETY: `txn` is a live read-only txn; reset releases its snapshot and renew takes a
        // new one. A cursor of a read-only txn survives reset and is renewed onto the same txn.
        check::<A>(unsafe { A::txn_reset(self.txn.ptr) }, "txn_reset")?;
        // SAFETY: as above.
        check::<A>(unsafe { A::txn_renew(self.txn.ptr) }, "txn_renew")?;
        if !self.cursor.is_null() {
            // SAFETY: both live; see above.
            check::<A>(unsafe { A::cursor_renew(self.txn.ptr, self.cursor) }, "cursor_renew")?;
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
        let mut k = A::val(key);
        let mut d = A::empty();
        // SAFETY: a live read-only txn, used by this thread only (the reader is not Sync); on
        // success `d` points into the map and stays valid until the txn is reset or ends, which
        // needs `&mut self`: the returned borrows hold it off.
        let rc = unsafe { A::get(self.txn.ptr, self.dbi, &mut k, &mut d) };
        if rc == A::NOTFOUND {
            return Ok(None);
        }
        check::<A>(rc, "get")?;
        // SAFETY: see above.
        Ok(Some(unsafe { A::bytes(&d) }))
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        if limit == 0 {
            return Ok(0);
        }
        if self.cursor.is_null() {
            // SAFETY: a live read txn; the cursor is closed in Drop before the txn ends.
            check::<A>(unsafe { A::cursor_open(self.txn.ptr, self.dbi, &mut self.cursor) }, "cursor_open")?;
        }
        let (mut k, step) = match start {
            Some(s) => (A::val(s), Step::SetRange),
            None => (A::empty(), Step::First),
        };
        let mut d = A::empty();
        // SAFETY: a live cursor; `k` points to `start` for the call, then the library repoints it.
        let mut rc = unsafe { A::cursor_get(self.cursor, &mut k, &mut d, step) };
        let mut n = 0;
        while rc == A::SUCCESS {
            n += 1;
            // SAFETY: both point into the map, valid while the txn lives (this call).
            let go_on = visit(unsafe { A::bytes(&k) }, unsafe { A::bytes(&d) });
            if !go_on || n >= limit {
                return Ok(n);
            }
            // SAFETY: as above.
            rc = unsafe { A::cursor_get(self.cursor, &mut k, &mut d, Step::Next) };
        }
        if rc != A::NOTFOUND {
            check::<A>(rc, "cursor_get")?;
        }
        Ok(n)
    }
}

impl<A: Api> Drop for MdbReader<'_, A> {
    fn drop(&mut self) {
        if !self.cursor.is_null() {
            // SAFETY: a cursor of a read-only txn must be closed explicitly, before the txn.
            unsafe { A::cursor_close(self.cursor) };
        }
        // `txn` aborts in its own Drop.
    }
}
