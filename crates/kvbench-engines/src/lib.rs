//! The engines kvbench measures. One module per engine, one line in engines.toml.
//! Adapters translate calls; they never time anything.
//!
//! Each engine is an [`EngineDescriptor`](kvbench_model::engine::EngineDescriptor): its name,
//! options, capabilities and `open`, which gives a [`kvbench_model::engine::Engine`] to write
//! batches to and take readers from. The [`registry`] lists every engine of engines.toml as
//! an [`Entry`]: ready, or missing with the reason (a library not found at build time).
//! Server engines (memcached, Redis, PostgreSQL, etcd) live in [`servers`], which also starts
//! and stops the servers kvbench runs itself; [`http`] is the client of `kvbench serve`;
//! [`conformance`] is the suite every engine passes against the [`memory`] oracle.
//!
//! Opening an engine by name, writing a batch and reading it back:
//!
//! ```
//! use kvbench_engines::{find, Entry};
//! use kvbench_model::engine::{OpenArgs, Options, WriteOp};
//!
//! let Some(Entry::Ready(memory)) = find("memory") else { panic!("memory is always built") };
//! let dir = std::env::temp_dir().join(format!("kvbench-engines-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let options = Options::default();
//! let engine = (memory.open)(&OpenArgs::new(&dir, &options))?;
//! engine.write(&[WriteOp { key: b"k1", value: Some(b"v1") }, WriteOp { key: b"k2", value: Some(b"v2") }])?;
//! engine.write(&[WriteOp { key: b"k2", value: None }])?; // a delete
//!
//! let mut reader = engine.reader()?;
//! let mut value = Vec::new();
//! assert!(reader.get(b"k1", &mut value)?);
//! assert_eq!(value, b"v1");
//! assert!(!reader.get(b"k2", &mut value)?);
//! drop(reader);
//! engine.close()?;
//!
//! // Every engine behaves as this one does: the conformance suite, run here on `memory` itself.
//! kvbench_engines::conformance::run_on(memory, &dir.join("suite"), Default::default())?;
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod batch;
pub mod conformance;
pub mod http;
pub mod locked;
mod mdb_family;
pub mod memory;
pub mod registry;
pub mod servers;
pub mod shared;

/// Declares C types that Rust only sees behind pointers (`opaque!(Db, Cursor);`): zero-sized,
/// `repr(C)`, never built on the Rust side.
macro_rules! opaque {
    ($($name:ident),+ $(,)?) => {
        $(
            #[repr(C)]
            pub struct $name {
                _opaque: [u8; 0],
            }
        )+
    };
}

/// Declares one of a file's several engines (`kind!(tree: "x-tree", "doc", caps, options,
/// open);`): `pub mod tree` with the `DESCRIPTOR` the registry finds as `x::tree::DESCRIPTOR`,
/// with the file's `version`. The module sees the file's items, so the arguments name them as
/// the file does.
macro_rules! kind {
    ($kind:ident: $name:literal, $description:literal, $caps:expr, $options:expr, $open:expr $(,)?) => {
        pub mod $kind {
            use super::*;
            pub static DESCRIPTOR: kvbench_model::engine::EngineDescriptor =
                crate::embedded($name, $description, $caps, $options, version, $open);
        }
    };
}

// The engine modules of engines.toml (memory, http and servers are declared above), each behind
// the cfg build.rs sets when its library was found.
include!(concat!(env!("OUT_DIR"), "/engine_modules.rs"));

pub use registry::{entries, find, server_for, shaped_server, Entry, ShapedStart};

/// Turn a C string owned by a library into a Rust string (for error messages and versions).
///
/// # Safety
/// `ptr` must be null or point to a NUL-terminated string.
pub unsafe fn c_str(ptr: *const libc::c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    std::ffi::CStr::from_ptr(ptr).to_string_lossy().into_owned()
}

/// Copy `len` bytes that a C library allocated at `ptr` into `out`, then release `ptr` with `free`
/// (the library's own deallocator, or `libc::free`).
///
/// # Safety
/// `ptr` must point to `len` readable bytes allocated for `free`; it must not be used afterwards.
pub unsafe fn take_c_buf(
    ptr: *mut libc::c_void,
    len: usize,
    out: &mut Vec<u8>,
    free: unsafe extern "C" fn(*mut libc::c_void),
) {
    out.extend_from_slice(std::slice::from_raw_parts(ptr.cast::<u8>(), len));
    free(ptr);
}

/// A path as a C string (database paths never contain NUL here: they are built by kvbench).
pub fn c_path(path: &std::path::Path) -> std::ffi::CString {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes()).expect("paths from kvbench have no NUL")
}

/// Releases a C handle; called once, with the handle, by [`CHandle`].
pub type Release<T> = Box<dyn Fn(std::ptr::NonNull<T>) -> kvbench_model::engine::Result<()> + Send + Sync>;

/// A handle a C library gave out, released exactly once: by `close`, which reports the
/// library's error, or by Drop when the engine was not closed (the error is then lost). Whether
/// it may cross or be shared between threads is the library's property: the engine's wrapper
/// states it (`unsafe impl Send`) with its reason.
pub struct CHandle<T> {
    p: Option<std::ptr::NonNull<T>>,
    release: Release<T>,
}

impl<T> CHandle<T> {
    /// `None` when the library returned null (its error is the caller's to fetch).
    pub fn new(ptr: *mut T, release: Release<T>) -> Option<CHandle<T>> {
        std::ptr::NonNull::new(ptr).map(|p| CHandle { p: Some(p), release })
    }

    /// The open handle. Panics after `close`: the engine's close consumes it, so a call after
    /// it is a bug in the adapter.
    pub fn as_ptr(&self) -> *mut T {
        self.p.expect("a C handle used after close").as_ptr()
    }

    pub fn close(&mut self) -> kvbench_model::engine::Result<()> {
        self.p.take().map_or(Ok(()), |p| (self.release)(p))
    }
}

impl<T> Drop for CHandle<T> {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// A C object a call makes for the caller to free (a cursor, an iterator), freed once by Drop.
pub struct Owned<T, R = ()> {
    p: std::ptr::NonNull<T>,
    free: unsafe extern "C" fn(*mut T) -> R,
}

impl<T, R> Owned<T, R> {
    /// `None` when the library returned null (its error is the caller's to fetch).
    ///
    /// # Safety
    /// `ptr` must be null or an object that `free` releases, used by nothing once the guard drops.
    pub unsafe fn new(ptr: *mut T, free: unsafe extern "C" fn(*mut T) -> R) -> Option<Owned<T, R>> {
        std::ptr::NonNull::new(ptr).map(|p| Owned { p, free })
    }

    pub fn as_ptr(&self) -> *mut T {
        self.p.as_ptr()
    }
}

impl<T, R> Drop for Owned<T, R> {
    fn drop(&mut self) {
        // SAFETY: by `new`'s contract the object is `free`'s to release, and only here.
        unsafe { (self.free)(self.p.as_ptr()) };
    }
}

/// What most embedded engines can do: an ordered store with atomic write batches and deletes,
/// persistent, that opens read-only too. A descriptor states only how its engine differs
/// (`Capabilities { ordered_scan: false, ..ORDERED_STORE }`).
pub const ORDERED_STORE: kvbench_model::engine::Capabilities = kvbench_model::engine::Capabilities {
    ordered_scan: true,
    multi_get: false,
    batch: true,
    read_only_open: true,
    secondary_open: false,
    persistent: true,
    build_once: false,
    delete: true,
    field_update: false,
};

/// What `Reader::scan` calls for each pair, in key order, until it returns false.
pub type Visit<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> bool;

/// Append `bytes` in lowercase hex, two digits a byte (on timed paths: no allocation).
pub(crate) fn push_hex(buf: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        buf.push(DIGITS[(b >> 4) as usize]);
        buf.push(DIGITS[(b & 15) as usize]);
    }
}

/// `Reader::get`'s answer from a store that hands back the value it found: the value copied into
/// `out` (cleared first); false when there is none.
pub fn copy_found(found: Option<impl AsRef<[u8]>>, out: &mut Vec<u8>) -> bool {
    out.clear();
    if let Some(v) = &found {
        out.extend_from_slice(v.as_ref());
    }
    found.is_some()
}

/// `Reader::scan` over the pairs a store yields in key order: `visit` each of the first `limit`
/// until it returns false; the count of pairs visited.
pub fn visit_pairs<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    pairs: impl Iterator<Item = kvbench_model::engine::Result<(K, V)>>,
    limit: usize,
    visit: Visit<'_>,
) -> kvbench_model::engine::Result<usize> {
    let mut n = 0;
    for pair in pairs.take(limit) {
        let (k, v) = pair?;
        n += 1;
        if !visit(k.as_ref(), v.as_ref()) {
            break;
        }
    }
    Ok(n)
}

/// The open of an engine without secondary opens (most: `Capabilities::secondary_open` false)
/// refuses one.
pub fn refuse_secondary(args: &kvbench_model::engine::OpenArgs<'_>) -> kvbench_model::engine::Result<()> {
    if args.mode == kvbench_model::engine::OpenMode::Secondary {
        return Err(kvbench_model::engine::EngineError::Unsupported("secondary open".into()));
    }
    Ok(())
}

/// The bucket count a hash database gets when its option is 0: twice the records the plan
/// loads (a load factor of one half), and at least `floor` (the library's default).
pub fn buckets_for(records: u64, floor: i64) -> i64 {
    (records.saturating_mul(2).min(i64::MAX as u64) as i64).max(floor)
}

/// An engine's open: its descriptor's `open`.
pub type OpenFn =
    fn(&kvbench_model::engine::OpenArgs<'_>) -> kvbench_model::engine::Result<Box<dyn kvbench_model::engine::Engine>>;

/// The descriptor of an embedded engine: available wherever it was built, no server to start.
pub const fn embedded(
    name: &'static str,
    description: &'static str,
    capabilities: kvbench_model::engine::Capabilities,
    options: &'static [kvbench_model::engine::OptionSpec],
    version: fn() -> String,
    open: OpenFn,
) -> kvbench_model::engine::EngineDescriptor {
    kvbench_model::engine::EngineDescriptor {
        name,
        description,
        capabilities,
        options,
        version,
        available: always_available,
        open,
        start_server: None,
    }
}

fn always_available() -> Result<(), String> {
    Ok(())
}
