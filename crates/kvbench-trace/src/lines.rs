//! The bytes of a trace file as readers take them: buffered, hashed as they pass (the trace's
//! identity), counted, with a first look at the head (format sniffing) that reads nothing twice,
//! so a FIFO or a pipe works, and lines of bounded length (a 10 GB line is an error, not 10 GB
//! of memory).

use std::fs::File;
use std::io::{BufRead, BufReader, Chain, Cursor, Read};
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::Xxh3;

use crate::{Place, TraceError};

/// The longest line a text trace may have: a Redis `SET` of a 64 MiB value, escaped, fits.
pub const MAX_LINE: usize = 256 << 20;

/// A trace file opened for one pass.
pub struct Source {
    path: PathBuf,
    /// The head (read whole at open, for [`Source::peek`]), then the rest of the file.
    inner: BufReader<Chain<Cursor<Vec<u8>>, File>>,
    head: Vec<u8>,
    hash: Xxh3,
    read: u64,
    /// The 1-based number of the last line [`Source::line`] returned.
    line: u64,
}

impl Source {
    pub fn open(path: &Path) -> Result<Source, TraceError> {
        let file = File::open(path).map_err(|e| TraceError::new(path, Place::File, format!("cannot open: {e}")))?;
        let meta = file.metadata().map_err(|e| TraceError::new(path, Place::File, format!("cannot stat: {e}")))?;
        if meta.is_dir() {
            return Err(TraceError::new(path, Place::File, "is a directory (allowed: a trace file, a FIFO or a pipe)"));
        }
        let mut file = file;
        let head = read_head(&mut file).map_err(|e| io_error(path, 0, e))?;
        Ok(Source {
            path: path.to_path_buf(),
            inner: BufReader::with_capacity(1 << 20, Cursor::new(head.clone()).chain(file)),
            head,
            hash: Xxh3::new(),
            read: 0,
            line: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Up to `len` (at most [`HEAD`]) first bytes of the file, whatever was read since (fewer
    /// when the file is shorter).
    pub fn peek(&mut self, len: usize) -> Result<&[u8], TraceError> {
        Ok(&self.head[..self.head.len().min(len)])
    }

    /// Whether every byte has been consumed.
    pub fn at_end(&mut self) -> Result<bool, TraceError> {
        let (path, at) = (&self.path, self.read);
        Ok(self.inner.fill_buf().map_err(|e| io_error(path, at, e))?.is_empty())
    }

    /// Bytes consumed so far.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// The xxh3-64 of the bytes consumed so far.
    pub fn hash(&self) -> u64 {
        self.hash.digest()
    }

    pub fn line_number(&self) -> u64 {
        self.line
    }

    /// Fills `buf` with exactly `buf.len()` bytes: `Ok(false)` at a clean end
    /// of file (no byte read), an error naming the offset when the file ends inside.
    pub fn exact(&mut self, buf: &mut [u8], what: &str) -> Result<bool, TraceError> {
        let at = self.read;
        let mut got = 0;
        while got < buf.len() {
            match self.inner.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(e)),
            }
        }
        self.hash.update(&buf[..got]);
        self.read += got as u64;
        if got == 0 {
            return Ok(false);
        }
        if got < buf.len() {
            return Err(TraceError::new(
                &self.path,
                Place::Offset(at),
                format!("truncated: the file ends {got} bytes into {what} of {} bytes", buf.len()),
            ));
        }
        Ok(true)
    }

    /// Skips `len` bytes (hashed and counted like the rest).
    pub fn skip(&mut self, mut len: u64, what: &str) -> Result<(), TraceError> {
        let mut scratch = [0u8; 8192];
        while len > 0 {
            let take = len.min(scratch.len() as u64) as usize;
            if !self.exact(&mut scratch[..take], what)? {
                return Err(TraceError::new(
                    &self.path,
                    Place::Offset(self.read),
                    format!("truncated: the file ends inside {what}"),
                ));
            }
            len -= take as u64;
        }
        Ok(())
    }

    /// The next line into `buf` (cleared first), without its `\n` (and `\r`); `Ok(false)` at the
    /// end of the file. A line longer than [`MAX_LINE`] is an error naming it, read no further.
    pub fn line(&mut self, buf: &mut Vec<u8>) -> Result<bool, TraceError> {
        buf.clear();
        loop {
            let chunk = self.inner.fill_buf().map_err(|e| io_error(&self.path, self.read, e))?;
            if chunk.is_empty() {
                if buf.is_empty() {
                    return Ok(false);
                }
                break;
            }
            let (take, done) = match memchr(chunk) {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            if buf.len() + take > MAX_LINE + 1 {
                return Err(TraceError::new(
                    &self.path,
                    Place::Line(self.line + 1),
                    format!("line longer than {MAX_LINE} bytes (allowed: at most {MAX_LINE})"),
                ));
            }
            buf.extend_from_slice(&chunk[..take]);
            self.hash.update(&chunk[..take]);
            self.read += take as u64;
            self.inner.consume(take);
            if done {
                break;
            }
        }
        self.line += 1;
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(true)
    }

    /// An error at the current line.
    pub fn at_line(&self, what: impl Into<String>) -> TraceError {
        TraceError::new(&self.path, Place::Line(self.line), what)
    }

    fn io_error(&self, error: std::io::Error) -> TraceError {
        io_error(&self.path, self.read, error)
    }
}

fn io_error(path: &Path, at: u64, error: std::io::Error) -> TraceError {
    TraceError::new(path, Place::Offset(at), format!("cannot read: {error}"))
}

/// Bytes read at open for format sniffing.
pub const HEAD: usize = 4096;

/// The first [`HEAD`] bytes, or the whole file when shorter: a pipe may give them in pieces.
fn read_head(file: &mut File) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(HEAD);
    file.by_ref().take(HEAD as u64).read_to_end(&mut head)?;
    Ok(head)
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&c| c == b'\n')
}

/// Clients named by a string (an address, a connection number), numbered in order of first
/// appearance.
#[derive(Default)]
pub struct Clients {
    ids: std::collections::HashMap<Vec<u8>, u32>,
}

/// Most distinct clients a trace may name (each becomes a thread unless re-sharded).
pub const MAX_CLIENTS: usize = 1 << 20;

impl Clients {
    pub fn id(&mut self, name: &[u8]) -> Option<u32> {
        if let Some(&id) = self.ids.get(name) {
            return Some(id);
        }
        if self.ids.len() >= MAX_CLIENTS {
            return None;
        }
        let id = self.ids.len() as u32;
        self.ids.insert(name.to_vec(), id);
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn lines_are_split_counted_and_hashed_over_every_byte() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"one\r\ntwo\nthree").unwrap();
        let mut s = Source::open(f.path()).unwrap();
        let mut buf = Vec::new();
        let mut got = Vec::new();
        while s.line(&mut buf).unwrap() {
            got.push(String::from_utf8(buf.clone()).unwrap());
        }
        assert_eq!(got, ["one", "two", "three"]);
        assert_eq!(s.line_number(), 3);
        assert_eq!(s.bytes_read(), 14);
        assert_eq!(s.hash(), xxhash_rust::xxh3::xxh3_64(b"one\r\ntwo\nthree"));
    }

    #[test]
    fn a_short_binary_record_is_an_error_naming_its_offset() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&[1, 2, 3]).unwrap();
        let mut s = Source::open(f.path()).unwrap();
        let mut b = [0u8; 2];
        assert!(s.exact(&mut b, "a header").unwrap());
        let e = s.exact(&mut b, "a record").unwrap_err();
        assert_eq!(e.place, Place::Offset(2));
        assert!(e.to_string().contains("truncated"), "{e}");
        assert!(!s.exact(&mut b, "a record").unwrap(), "then a clean end");
    }

    #[test]
    fn a_directory_is_refused_by_name() {
        let d = tempfile::tempdir().unwrap();
        let e = Source::open(d.path()).err().unwrap();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }
}
