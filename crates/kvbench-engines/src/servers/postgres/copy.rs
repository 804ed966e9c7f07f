//! COPY FROM STDIN as a stream: rows escaped (text) or framed (binary) into chunks of libpq's
//! send-buffer size, each derived while the server parses the previous one.

use super::*;

/// The COPY data handed to the client library at a time: libpq's own send buffer size; larger
/// chunks measured no faster (docs/methodology.md, "psql and libpq beside kvbench").
pub(super) const COPY_CHUNK: usize = 8 * 1024;

pub(super) fn push_copy_text(buf: &mut Vec<u8>, bytes: &[u8], text: bool) {
    if text {
        for &c in bytes {
            match c {
                b'\\' => buf.extend_from_slice(b"\\\\"),
                b'\t' => buf.extend_from_slice(b"\\t"),
                b'\n' => buf.extend_from_slice(b"\\n"),
                b'\r' => buf.extend_from_slice(b"\\r"),
                _ => buf.push(c),
            }
        }
    } else {
        // bytea hex input `\x..`, its backslash escaped for COPY's text format.
        buf.extend_from_slice(b"\\\\x");
        crate::push_hex(buf, bytes);
    }
}

/// A COPY's rows in COPY's text or binary format, handed to the server in chunks.
pub(super) struct CopyRows<'b> {
    pub(super) buf: &'b mut Vec<u8>,
    pub(super) binary: bool,
    pub(super) text: bool,
}

impl CopyRows<'_> {
    pub(super) fn header(&mut self) {
        if self.binary {
            self.buf.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
            self.buf.extend_from_slice(&0i32.to_be_bytes()); // flags
            self.buf.extend_from_slice(&0i32.to_be_bytes()); // header extension length
        }
    }

    pub(super) fn row(&mut self, key: &[u8], value: &[u8]) {
        if self.binary {
            self.buf.extend_from_slice(&2i16.to_be_bytes());
            self.buf.extend_from_slice(&(key.len() as i32).to_be_bytes());
            self.buf.extend_from_slice(key);
            self.buf.extend_from_slice(&(value.len() as i32).to_be_bytes());
            self.buf.extend_from_slice(value);
        } else {
            push_copy_text(self.buf, key, self.text);
            self.buf.push(b'\t');
            push_copy_text(self.buf, value, self.text);
            self.buf.push(b'\n');
        }
    }

    pub(super) fn trailer(&mut self) {
        if self.binary {
            self.buf.extend_from_slice(&(-1i16).to_be_bytes());
        }
    }
}

/// A COPY's whole stream for `row_count` rows, row i derived by `row` as the chunk it belongs to is
/// built in `rows`' buffer, each chunk of about [`COPY_CHUNK`] bytes handed to `send`, so the
/// server parses one chunk while the next is derived.
pub(super) fn copy_stream(
    rows: &mut CopyRows<'_>,
    row_count: usize,
    row: &mut RowFn<'_>,
    send: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let (mut k, mut v) = (Vec::new(), Vec::new());
    rows.buf.clear();
    rows.header();
    for i in 0..row_count {
        row(i, &mut k, &mut v);
        rows.row(&k, &v);
        if rows.buf.len() >= COPY_CHUNK {
            send(rows.buf)?;
            rows.buf.clear();
        }
    }
    rows.trailer();
    send(rows.buf)?;
    rows.buf.clear();
    Ok(())
}
