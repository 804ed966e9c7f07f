//! Files a user hands kvbench (scenario, result, token, dataset): read only when they are
//! regular files, and only up to a bound, so a FIFO cannot block a command and `/dev/zero`
//! cannot fill memory. Every error names the file.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Bounds of what kvbench reads whole (`spec::limits` bounds what a scenario asks for).
pub mod limits {
    /// A scenario file: its largest field is a few hundred phases and rows.
    pub const SCENARIO_BYTES: u64 = 16 << 20;
    /// A result file: the most histograms a file may hold (`hdrcheck::MAX_PER_FILE`) at
    /// several times the size of a one-second interval's. Refused by its size before a byte
    /// is parsed: parsing costs several times the file's size in memory.
    pub const RESULT_BYTES: u64 = 128 << 20;
    /// A bearer token file (only its first line is used).
    pub const TOKEN_BYTES: u64 = 64 << 10;
    /// A `file:` dataset, held in memory while a plan is made.
    pub const DATASET_BYTES: u64 = 64 << 30;
}

/// What `path` is when it is not a regular file, for the error.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// The bytes of `path`, `what` naming it in errors (`scenario`, `--token-file` ...). Opened
/// without blocking (a FIFO with no writer would block `open` itself), then refused unless it
/// is a regular file of at most `limit` bytes.
pub fn read_regular(path: &Path, what: &str, limit: u64) -> Result<Vec<u8>, String> {
    let name = || format!("{what} {}", path.display());
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| format!("{}: {e}", name()))?;
    let meta = f.metadata().map_err(|e| format!("{}: {e}", name()))?;
    if !meta.is_file() {
        return Err(format!("{}: {}; kvbench reads only regular files", name(), kind_of(meta.file_type())));
    }
    let too_big = |n: u64| format!("{}: {n} bytes or more, above the limit of {limit} bytes", name());
    if meta.len() > limit {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow while it is read: never more than the limit.
    f.by_ref().take(limit + 1).read_to_end(&mut bytes).map_err(|e| format!("{}: {e}", name()))?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_regular`] as UTF-8 text; invalid UTF-8 is an error naming the file and the line.
pub fn read_regular_text(path: &Path, what: &str, limit: u64) -> Result<String, String> {
    let bytes = read_regular(path, what, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count();
        format!("{what} {}, line {line}: not valid UTF-8", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_a_fifo_or_a_device_is_refused_at_once() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string and mode.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_regular(&fifo, "scenario", 1 << 20).unwrap_err();
        assert!(e.contains("fifo: a FIFO") && e.starts_with("scenario "), "{e}");
        let e = read_regular(Path::new("/dev/zero"), "result file", 1 << 20).unwrap_err();
        assert!(e.contains("/dev/zero: a character device"), "{e}");
        let e = read_regular(d.path(), "scenario", 1 << 20).unwrap_err();
        assert!(e.contains("a directory"), "{e}");
    }

    #[test]
    fn regression_a_file_above_its_limit_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big");
        std::fs::write(&p, vec![b'x'; 1001]).unwrap();
        let e = read_regular(&p, "--token-file", 1000).unwrap_err();
        assert!(e.contains("above the limit of 1000 bytes"), "{e}");
        assert_eq!(read_regular(&p, "x", 1001).unwrap().len(), 1001);
    }

    #[test]
    fn regression_a_result_file_of_264_mb_is_refused_by_its_size_before_it_is_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.json");
        // Sparse: its size is all the check may look at.
        std::fs::File::create(&p).unwrap().set_len(264_000_000).unwrap();
        let e = read_regular_text(&p, "result file", limits::RESULT_BYTES).unwrap_err();
        assert!(e.contains("above the limit of 134217728 bytes"), "{e}");
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.toml");
        std::fs::write(&p, b"a = 1\nb = \"\xff\"\n").unwrap();
        let e = read_regular_text(&p, "scenario", 100).unwrap_err();
        assert!(e.ends_with("s.toml, line 2: not valid UTF-8"), "{e}");
    }
}
