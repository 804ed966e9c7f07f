//! The engines kvbench measures. One module per engine, one line in engines.toml.
//! Adapters translate calls; they never time anything.

pub mod conformance;
pub mod http;
pub mod memory;
pub mod registry;
pub mod servers;

// The engine modules of engines.toml (memory, http and servers are declared above), each behind
// the cfg build.rs sets when its library was found.
include!(concat!(env!("OUT_DIR"), "/engine_modules.rs"));

pub use registry::{entries, find, server_for, shaped_server, Entry, ShapedStart};

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
