//! `gdbm`: GNU dbm through its C API (libgdbm).
//!
//! A GDBM handle is not thread-safe, so it sits behind a Mutex. GDBM has no transactions: a
//! batch is applied record by record. `sync` = always opens with `GDBM_SYNC` (GDBM syncs after
//! every store and delete); `sync` = commit calls `gdbm_sync` after each write call.

use std::collections::BTreeMap;
use std::ptr::NonNull;

use kvbench_model::engine::*;
use libc::c_int;

use crate::locked::{Locked, OneAtATime};

/// Raw declarations; this block owns the linking (build.rs adds `-lgdbm`).
mod ffi {
    use libc::{c_char, c_int, c_void};

    opaque!(GdbmFileInfo);
    pub type GdbmFile = *mut GdbmFileInfo;

    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Datum {
        pub dptr: *mut c_char,
        pub dsize: c_int,
    }

    pub const GDBM_READER: c_int = 0;
    pub const GDBM_WRCREAT: c_int = 2;
    pub const GDBM_SYNC: c_int = 0x0020;
    pub const GDBM_NOMMAP: c_int = 0x0080;
    pub const GDBM_REPLACE: c_int = 1;
    pub const GDBM_SETCACHESIZE: c_int = 1;
    pub const GDBM_ITEM_NOT_FOUND: c_int = 15;

    extern "C" {
        pub static gdbm_version: *const c_char;
        pub fn gdbm_open(
            name: *const c_char,
            block_size: c_int,
            flags: c_int,
            mode: c_int,
            fatal: Option<unsafe extern "C" fn(*const c_char)>,
        ) -> GdbmFile;
        pub fn gdbm_close(dbf: GdbmFile) -> c_int;
        pub fn gdbm_store(dbf: GdbmFile, key: Datum, content: Datum, flag: c_int) -> c_int;
        pub fn gdbm_fetch(dbf: GdbmFile, key: Datum) -> Datum;
        pub fn gdbm_delete(dbf: GdbmFile, key: Datum) -> c_int;
        pub fn gdbm_sync(dbf: GdbmFile) -> c_int;
        pub fn gdbm_setopt(dbf: GdbmFile, option: c_int, value: *mut c_void, size: c_int) -> c_int;
        pub fn gdbm_errno_location() -> *mut c_int;
        pub fn gdbm_last_errno(dbf: GdbmFile) -> c_int;
        pub fn gdbm_strerror(code: c_int) -> *const c_char;
    }
}

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "gdbm",
    "GNU dbm hash database, C API",
    Capabilities { ordered_scan: false, batch: false, ..crate::ORDERED_STORE },
    &[
        OptionSpec::int("block_size", "0", "block size (0 = the file system's)"),
        OptionSpec::int("cache_size", "0", "bucket cache entries (0 = GDBM's automatic sizing)"),
        OptionSpec::bool("mmap", "true", "memory-map the file (GDBM's default)"),
    ],
    version,
    open,
);

fn version() -> String {
    // SAFETY: gdbm_version is a static NUL-terminated string of the library.
    unsafe { crate::c_str(ffi::gdbm_version) }
}

fn message(code: c_int) -> String {
    // SAFETY: gdbm_strerror returns a static string for any code.
    unsafe { crate::c_str(ffi::gdbm_strerror(code)) }
}

fn datum(bytes: &[u8]) -> Result<ffi::Datum> {
    let dsize = c_int::try_from(bytes.len()).map_err(|_| EngineError::store("gdbm: key or value larger than 2 GiB"))?;
    // GDBM never writes through a key or content datum.
    Ok(ffi::Datum { dptr: bytes.as_ptr() as *mut libc::c_char, dsize })
}

/// An open GDBM file.
type Db = crate::CHandle<ffi::GdbmFileInfo>;

// SAFETY: only used behind the engine's Mutex, one thread at a time.
unsafe impl Send for Db {}

impl Db {
    fn last(&self) -> c_int {
        // SAFETY: open handle.
        unsafe { ffi::gdbm_last_errno(self.as_ptr()) }
    }

    /// The one place a GDBM error becomes an EngineError.
    fn err(&self, what: &str) -> EngineError {
        EngineError::Store(format!("gdbm {what}: {}", message(self.last())))
    }
}

/// The last error of the calling thread's GDBM calls (the handle is gone or was never made).
fn errno(what: &str) -> EngineError {
    // SAFETY: gdbm_errno_location returns a valid pointer.
    let code = unsafe { *ffi::gdbm_errno_location() };
    EngineError::Store(format!("gdbm {what}: {}", message(code)))
}

fn close(db: NonNull<ffi::GdbmFileInfo>) -> Result<()> {
    // SAFETY: CHandle's release: the open handle, closed once.
    if unsafe { ffi::gdbm_close(db.as_ptr()) } != 0 {
        return Err(errno("close"));
    }
    Ok(())
}

/// The open file and the durability it was opened with.
pub struct Gdbm {
    db: Db,
    sync: SyncMode,
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    crate::refuse_secondary(args)?;
    let o = args.options;
    let block = o.int("block_size").unwrap_or(0).clamp(0, c_int::MAX as i64) as c_int;
    let mut flags = match args.mode {
        OpenMode::ReadOnly => ffi::GDBM_READER,
        _ => ffi::GDBM_WRCREAT,
    };
    if args.sync == SyncMode::Always && args.mode != OpenMode::ReadOnly {
        flags |= ffi::GDBM_SYNC;
    }
    let mmap = o.bool("mmap");
    if !mmap {
        flags |= ffi::GDBM_NOMMAP;
    }
    let path = crate::c_path(&args.file("db.gdbm"));
    // SAFETY: NUL-terminated path; no fatal callback (GDBM then reports errors by return value).
    let p = unsafe { ffi::gdbm_open(path.as_ptr(), block, flags, 0o644, None) };
    let db = Db::new(p, Box::new(close)).ok_or_else(|| errno("open"))?;
    let cache = o.int("cache_size").unwrap_or(0).max(0) as libc::size_t;
    if cache > 0 {
        let mut v = cache;
        // SAFETY: open handle; GDBM reads a size_t from the pointer.
        let r = unsafe {
            ffi::gdbm_setopt(
                db.as_ptr(),
                ffi::GDBM_SETCACHESIZE,
                (&mut v as *mut libc::size_t).cast(),
                std::mem::size_of::<libc::size_t>() as c_int,
            )
        };
        if r != 0 {
            return Err(db.err("setopt cache_size"));
        }
    }
    let mut settings = BTreeMap::new();
    settings.insert(
        "sync".into(),
        match args.sync {
            SyncMode::None => "none: no sync calls; data reaches the file on close".into(),
            SyncMode::Commit => "commit: gdbm_sync() after each write call (batches are not atomic)".into(),
            SyncMode::Always => "always: opened with GDBM_SYNC (a sync after every store/delete)".into(),
        },
    );
    settings.insert("block_size".into(), if block == 0 { "file system's".into() } else { block.to_string() });
    settings.insert("cache_size".into(), if cache == 0 { "automatic".into() } else { cache.to_string() });
    settings.insert("mmap".into(), mmap.to_string());
    Ok(Locked::engine(Gdbm { db, sync: args.sync }, settings, "GDBM is not thread-safe"))
}

impl OneAtATime for Gdbm {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        for w in batch {
            let k = datum(w.key)?;
            match w.value {
                Some(v) => {
                    // SAFETY: open handle under the lock; datums point into live slices.
                    if unsafe { ffi::gdbm_store(self.db.as_ptr(), k, datum(v)?, ffi::GDBM_REPLACE) } != 0 {
                        return Err(self.db.err("store"));
                    }
                }
                None => {
                    // SAFETY: as above.
                    if unsafe { ffi::gdbm_delete(self.db.as_ptr(), k) } != 0
                        && self.db.last() != ffi::GDBM_ITEM_NOT_FOUND
                    {
                        return Err(self.db.err("delete"));
                    }
                }
            }
        }
        if self.sync == SyncMode::Commit {
            // SAFETY: open handle under the lock.
            if unsafe { ffi::gdbm_sync(self.db.as_ptr()) } != 0 {
                return Err(self.db.err("sync"));
            }
        }
        Ok(())
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        // SAFETY: open handle under the lock; the returned dptr is malloc'd and ours to free.
        let d = unsafe { ffi::gdbm_fetch(self.db.as_ptr(), datum(key)?) };
        if d.dptr.is_null() {
            if self.db.last() == ffi::GDBM_ITEM_NOT_FOUND {
                return Ok(false);
            }
            return Err(self.db.err("fetch"));
        }
        // SAFETY: `dsize` readable bytes at dptr, malloc'd by gdbm.
        unsafe { crate::take_c_buf(d.dptr.cast(), d.dsize as usize, out, libc::free) };
        Ok(true)
    }

    fn close(mut self) -> Result<()> {
        self.db.close()
    }
}
