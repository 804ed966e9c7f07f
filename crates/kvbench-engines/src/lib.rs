//! The engines kvbench measures. One module per engine, one line in [`registry`].
//! Adapters translate calls; they never time anything.

pub mod cluster;
pub mod conformance;
pub mod etcdcluster;
pub mod http;
pub mod memory;
pub mod registry;
pub mod server;

#[cfg(all(feature = "bdb", kvb_bdb))]
pub mod bdb;
#[cfg(all(feature = "gdbm", kvb_gdbm))]
pub mod gdbm;
#[cfg(all(feature = "kyotocabinet", kvb_kyotocabinet))]
pub mod kyotocabinet;
#[cfg(all(feature = "leveldb", kvb_leveldb))]
pub mod leveldb;
#[cfg(all(feature = "lmdb", kvb_lmdb))]
pub mod lmdb;
#[cfg(feature = "memcached")]
pub mod memcached;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(all(feature = "qdbm", kvb_qdbm))]
pub mod qdbm;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "redis-cluster")]
pub mod rediscluster;
#[cfg(all(feature = "rocksdb", kvb_rocksdb))]
pub mod rocksdb;
#[cfg(all(feature = "sqlite", kvb_sqlite))]
pub mod sqlite;
#[cfg(all(feature = "tinycdb", kvb_tinycdb))]
pub mod tinycdb;
#[cfg(all(feature = "tkrzw", kvb_tkrzw))]
pub mod tkrzw;
#[cfg(all(feature = "tokyocabinet", kvb_tokyocabinet))]
pub mod tokyocabinet;

pub use registry::{entries, find, server_for, Entry};

/// Turn a C string owned by a library into a Rust string (for error messages and versions).
///
/// # Safety
/// `p` must be null or point to a NUL-terminated string.
pub unsafe fn c_str(p: *const libc::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
}

/// Copy `len` bytes that a C library allocated at `p` into `out`, then release `p` with `free`
/// (the library's own deallocator, or `libc::free`).
///
/// # Safety
/// `p` must point to `len` readable bytes allocated for `free`; it must not be used afterwards.
pub unsafe fn take_c_buf(
    p: *mut libc::c_void,
    len: usize,
    out: &mut Vec<u8>,
    free: unsafe extern "C" fn(*mut libc::c_void),
) {
    out.extend_from_slice(std::slice::from_raw_parts(p.cast::<u8>(), len));
    free(p);
}

/// A path as a C string (database paths never contain NUL here: they are built by kvbench).
pub fn c_path(p: &std::path::Path) -> std::ffi::CString {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes()).expect("paths from kvbench have no NUL")
}
