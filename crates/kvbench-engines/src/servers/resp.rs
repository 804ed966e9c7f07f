//! A Redis connection for the timed paths: requests encoded in RESP here, replies parsed from
//! a buffer this side owns. The `redis` crate's synchronous connection hides what it has
//! buffered, so a pipelined get phase could not tell whether more replies have arrived without
//! blocking; refilling a pipeline as replies come in (memtier's way) needs that
//! (docs/decisions.md, "Connections and pipelines"). Set-up and administration keep the crate.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::ops::Range;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use ::redis::{ConnectionAddr, ConnectionInfo};
use kvbench_model::engine::{EngineError, Result};

/// Bytes read from the socket at once (at most).
const READ_CHUNK: usize = 64 * 1024;

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// One reply, its data borrowed from the connection's buffer.
#[derive(Debug, PartialEq)]
pub enum Reply<'a> {
    /// `+...` or `:n`.
    Ok,
    Nil,
    Bulk(&'a [u8]),
    /// `*n`: the `n` replies follow.
    Array(usize),
    Error(&'a [u8]),
}

/// What one reply at the start of a buffer is: where its data is and where the next one starts.
#[derive(Debug, PartialEq)]
enum Frame {
    Ok,
    Nil,
    Bulk(Range<usize>),
    Array(usize),
    Error(Range<usize>),
}

fn bad(what: &str) -> EngineError {
    EngineError::Store(format!("redis: malformed reply ({what})"))
}

/// The frame at the start of `buf` and its length, `None` when `buf` holds only part of it.
/// An array is its header alone: its elements are frames of their own.
fn frame(buf: &[u8]) -> Result<Option<(Frame, usize)>> {
    let Some(eol) = buf.windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
    let line = &buf[1..eol];
    let num =
        || -> Result<i64> { std::str::from_utf8(line).ok().and_then(|s| s.parse().ok()).ok_or_else(|| bad("length")) };
    let f = match buf[0] {
        b'+' | b':' => Frame::Ok,
        b'-' => Frame::Error(1..eol),
        b'_' => Frame::Nil,
        b'*' => match num()? {
            n if n < 0 => Frame::Nil,
            n => Frame::Array(n as usize),
        },
        b'$' => match num()? {
            n if n < 0 => Frame::Nil,
            n => {
                let (start, end) = (eol + 2, eol + 2 + n as usize);
                if buf.len() < end + 2 {
                    return Ok(None);
                }
                if &buf[end..end + 2] != b"\r\n" {
                    return Err(bad("bulk string not followed by CRLF"));
                }
                return Ok(Some((Frame::Bulk(start..end), end + 2)));
            }
        },
        _ => return Err(bad("unknown type")),
    };
    Ok(Some((f, eol + 2)))
}

pub struct Conn {
    stream: Stream,
    buf: Vec<u8>,
    /// Unparsed replies are `buf[pos..end]`.
    pos: usize,
    end: usize,
}

impl Conn {
    /// Connect as the crate would (`info`'s address, user, password and database).
    pub fn connect(info: &ConnectionInfo, timeout: Duration) -> Result<Conn> {
        let io = |e: std::io::Error| EngineError::Store(format!("redis: cannot connect: {e}"));
        let stream = match &info.addr {
            ConnectionAddr::Tcp(host, port) => {
                let s = TcpStream::connect((host.as_str(), *port)).map_err(io)?;
                s.set_nodelay(true).map_err(io)?;
                s.set_read_timeout(Some(timeout)).map_err(io)?;
                s.set_write_timeout(Some(timeout)).map_err(io)?;
                Stream::Tcp(s)
            }
            ConnectionAddr::Unix(path) => {
                let s = UnixStream::connect(path).map_err(io)?;
                s.set_read_timeout(Some(timeout)).map_err(io)?;
                s.set_write_timeout(Some(timeout)).map_err(io)?;
                Stream::Unix(s)
            }
            ConnectionAddr::TcpTls { .. } => {
                return Err(EngineError::Option("redis: TLS (rediss://) is not supported".into()))
            }
        };
        let mut c = Conn { stream, buf: vec![0; READ_CHUNK], pos: 0, end: 0 };
        let r = &info.redis;
        let mut cmd = Vec::new();
        if let Some(p) = &r.password {
            let mut args: Vec<&[u8]> = vec![b"AUTH"];
            args.extend(r.username.as_deref().map(str::as_bytes));
            args.push(p.as_bytes());
            c.command(&mut cmd, &args, "AUTH")?;
        }
        if r.db != 0 {
            c.command(&mut cmd, &[b"SELECT", r.db.to_string().as_bytes()], "SELECT")?;
        }
        Ok(c)
    }

    /// Send one command and expect a simple reply.
    fn command(&mut self, cmd: &mut Vec<u8>, args: &[&[u8]], what: &str) -> Result<()> {
        cmd.clear();
        push_command(cmd, args);
        self.send(cmd)?;
        match self.reply()? {
            Reply::Error(e) => Err(EngineError::Store(format!("redis {what}: {}", String::from_utf8_lossy(e)))),
            _ => Ok(()),
        }
    }

    /// Write `bytes` (one or more encoded commands) in one go.
    pub fn send(&mut self, bytes: &[u8]) -> Result<()> {
        let r = match &mut self.stream {
            Stream::Tcp(s) => s.write_all(bytes),
            Stream::Unix(s) => s.write_all(bytes),
        };
        r.map_err(|e| EngineError::Store(format!("redis: write: {e}")))
    }

    /// Read what the socket has (blocking until something arrives), keeping unparsed bytes.
    fn fill(&mut self) -> Result<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end + READ_CHUNK / 4 > self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let r = match &mut self.stream {
            Stream::Tcp(s) => s.read(&mut self.buf[self.end..]),
            Stream::Unix(s) => s.read(&mut self.buf[self.end..]),
        };
        match r {
            Ok(0) => Err(EngineError::Store("redis closed the connection".into())),
            Ok(n) => {
                self.end += n;
                Ok(())
            }
            Err(e) => Err(EngineError::Store(format!("redis: read: {e}"))),
        }
    }

    /// The next reply, waiting for it.
    pub fn reply(&mut self) -> Result<Reply<'_>> {
        loop {
            if let Some((f, n)) = frame(&self.buf[self.pos..self.end])? {
                let base = self.pos;
                self.pos += n;
                let at = |r: Range<usize>| base + r.start..base + r.end;
                return Ok(match f {
                    Frame::Ok => Reply::Ok,
                    Frame::Nil => Reply::Nil,
                    Frame::Array(n) => Reply::Array(n),
                    Frame::Bulk(r) => Reply::Bulk(&self.buf[at(r)]),
                    Frame::Error(r) => Reply::Error(&self.buf[at(r)]),
                });
            }
            self.fill()?;
        }
    }

    /// The next reply as a value: `None` for nil, an error for an error reply.
    pub fn value(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        match self.reply()? {
            Reply::Bulk(b) => {
                out.extend_from_slice(b);
                Ok(true)
            }
            Reply::Nil => Ok(false),
            other => Err(unexpected(&other)),
        }
    }

    /// Read `replies` replies that must not be errors (a write window's); every one is read even
    /// after a bad one, so the connection stays in step.
    pub fn expect_ok(&mut self, replies: usize) -> Result<()> {
        let mut first = None;
        let mut left = replies;
        while left > 0 {
            left -= 1;
            match self.reply()? {
                Reply::Error(e) => {
                    first.get_or_insert_with(|| EngineError::Store(format!("redis: {}", String::from_utf8_lossy(e))));
                }
                Reply::Array(k) => left += k,
                _ => {}
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl super::GetReplies for Conn {
    fn next_get(&mut self) -> Result<super::GetReply> {
        Ok(match self.reply()? {
            Reply::Bulk(b) => super::GetReply::Found(b.to_vec()),
            Reply::Nil => super::GetReply::Absent,
            other => super::GetReply::Wrong(unexpected(&other)),
        })
    }

    /// A whole reply that is not an array has arrived.
    fn get_ready(&self) -> bool {
        matches!(frame(&self.buf[self.pos..self.end]), Ok(Some((f, _))) if !matches!(f, Frame::Array(_)))
    }
}

/// An error for a reply a value was expected in place of.
pub fn unexpected(reply: &Reply<'_>) -> EngineError {
    match reply {
        Reply::Error(e) => EngineError::Store(format!("redis: {}", String::from_utf8_lossy(e))),
        other => EngineError::Store(format!("redis: unexpected reply {other:?}")),
    }
}

/// Start a command of `args` arguments.
pub fn push_header(buf: &mut Vec<u8>, args: usize) {
    buf.push(b'*');
    super::push_decimal(buf, args);
    buf.extend_from_slice(b"\r\n");
}

/// Append one bulk-string argument made of `parts` concatenated.
pub fn push_arg(buf: &mut Vec<u8>, parts: &[&[u8]]) {
    buf.push(b'$');
    super::push_decimal(buf, parts.iter().map(|p| p.len()).sum());
    buf.extend_from_slice(b"\r\n");
    for p in parts {
        buf.extend_from_slice(p);
    }
    buf.extend_from_slice(b"\r\n");
}

/// Append a whole command.
pub fn push_command(buf: &mut Vec<u8>, args: &[&[u8]]) {
    push_header(buf, args.len());
    for a in args {
        push_arg(buf, &[a]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_wait_for_whole_replies() {
        assert_eq!(frame(b"$3\r\nab").unwrap(), None);
        assert_eq!(frame(b"$3\r\nabc\r").unwrap(), None);
        assert_eq!(frame(b"$3\r\nabc\r\n$").unwrap(), Some((Frame::Bulk(4..7), 9)));
        assert_eq!(frame(b"$-1\r\n").unwrap(), Some((Frame::Nil, 5)));
        assert_eq!(frame(b"+OK\r\n").unwrap(), Some((Frame::Ok, 5)));
        assert_eq!(frame(b"-ERR x\r\n").unwrap(), Some((Frame::Error(1..6), 8)));
        assert_eq!(frame(b"*2\r\n").unwrap(), Some((Frame::Array(2), 4)));
        assert!(frame(b"$3\r\nabcXY").is_err());
        assert!(frame(b"?\r\n").is_err());
    }

    #[test]
    fn commands_are_resp_arrays() {
        let mut b = Vec::new();
        push_command(&mut b, &[b"GET", b"k"]);
        assert_eq!(b, b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    }
}
