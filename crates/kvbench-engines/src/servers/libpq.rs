//! The postgres engine's one-statement writes through libpq (`pq-sys`): a blocking connection
//! whose prepared statement costs one write and one read of the socket, where the `postgres`
//! crate's runtime adds wake-ups per statement (docs/decisions.md, "PostgreSQL client").
//! Only what those writes need: connect, run SQL, prepare, execute with binary parameters.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::ptr::NonNull;

use pq_sys::{ConnStatusType, ExecStatusType, PGconn, PGresult};

/// The linked libpq's version (`15.4`).
pub fn version() -> String {
    // SAFETY: no preconditions.
    let v = unsafe { pq_sys::PQlibVersion() };
    format!("{}.{}", v / 10000, v % 10000)
}

/// One libpq connection, closed on drop.
pub struct Conn(NonNull<PGconn>);

// SAFETY: a PGconn may move between threads; it is used by one thread at a time (&mut self).
unsafe impl Send for Conn {}

/// A result, cleared on drop.
struct Res(*mut PGresult);

impl Drop for Res {
    fn drop(&mut self) {
        // SAFETY: the pointer came from libpq and is cleared once (PQclear takes null too).
        unsafe { pq_sys::PQclear(self.0) }
    }
}

fn cstring(what: &str, text: &str) -> Result<CString, String> {
    CString::new(text).map_err(|_| format!("{what} holds a NUL byte"))
}

/// A C string libpq owns, copied (empty for null).
fn owned(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: libpq returns NUL-terminated strings that live as long as their connection/result.
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy().trim_end().to_string()
}

impl Conn {
    /// Connect with libpq's keywords (`host`, `port`, `user`, `password`, ...).
    pub fn connect(params: &[(&str, String)]) -> Result<Conn, String> {
        let keys: Vec<CString> = params.iter().map(|(k, _)| cstring("a keyword", k)).collect::<Result<_, _>>()?;
        let vals: Vec<CString> = params.iter().map(|(k, v)| cstring(k, v)).collect::<Result<_, _>>()?;
        let mut kp: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr()).collect();
        let mut vp: Vec<*const c_char> = vals.iter().map(|v| v.as_ptr()).collect();
        kp.push(std::ptr::null());
        vp.push(std::ptr::null());
        // SAFETY: both arrays are NUL-terminated and their strings outlive the call.
        let raw = unsafe { pq_sys::PQconnectdbParams(kp.as_ptr(), vp.as_ptr(), 0) };
        let conn = Conn(NonNull::new(raw).ok_or("libpq: out of memory")?);
        // SAFETY: a connection libpq returned.
        if unsafe { pq_sys::PQstatus(conn.0.as_ptr()) } != ConnStatusType::CONNECTION_OK {
            return Err(conn.error());
        }
        Ok(conn)
    }

    /// Connected and outside any transaction or COPY: fit to serve the next writer.
    pub fn idle(&self) -> bool {
        // SAFETY: a live connection.
        unsafe {
            pq_sys::PQstatus(self.0.as_ptr()) == ConnStatusType::CONNECTION_OK
                && pq_sys::PQtransactionStatus(self.0.as_ptr()) == pq_sys::PGTransactionStatusType::PQTRANS_IDLE
        }
    }

    /// The connection's last error message.
    fn error(&self) -> String {
        // SAFETY: a live connection.
        owned(unsafe { pq_sys::PQerrorMessage(self.0.as_ptr()) })
    }

    /// `res`, or the error it carries: `SQLSTATE: message` as the server gave it.
    fn check(&self, res: *mut PGresult) -> Result<(), String> {
        let res = Res(res);
        if res.0.is_null() {
            return Err(self.error());
        }
        // SAFETY: a result libpq returned, alive until `r` drops.
        let status = unsafe { pq_sys::PQresultStatus(res.0) };
        if matches!(status, ExecStatusType::PGRES_COMMAND_OK | ExecStatusType::PGRES_TUPLES_OK) {
            return Ok(());
        }
        // SAFETY: as above; the fields are null when absent.
        let (code, message) = unsafe {
            (
                owned(pq_sys::PQresultErrorField(res.0, pq_sys::PG_DIAG_SQLSTATE as c_int)),
                owned(pq_sys::PQresultErrorField(res.0, pq_sys::PG_DIAG_MESSAGE_PRIMARY as c_int)),
            )
        };
        Err(if code.is_empty() { self.error() } else { format!("{code}: {message}") })
    }

    /// `res`'s status is `want`; else its error, as [`Conn::check`] gives it.
    fn expect(&self, res: *mut PGresult, want: ExecStatusType) -> Result<(), String> {
        // SAFETY: a result libpq returned (or null, which PQresultStatus takes).
        if !res.is_null() && unsafe { pq_sys::PQresultStatus(res) } == want {
            // SAFETY: as above; cleared once, here.
            unsafe { pq_sys::PQclear(res) };
            return Ok(());
        }
        self.check(res).and(Err(format!("unexpected result (not {want:?})")))
    }

    /// One `COPY ... FROM STDIN` (`sql`): `body` sends its data through [`CopyIn::send`]; the
    /// COPY ends when `body` returns, or is abandoned when it fails. The outer error is the
    /// COPY's (libpq's or the server's), the inner one `body`'s.
    pub fn copy_in<E>(
        &mut self,
        sql: &str,
        body: impl FnOnce(&mut CopyIn<'_>) -> Result<(), E>,
    ) -> Result<Result<(), E>, String> {
        let c = cstring("SQL", sql)?;
        // SAFETY: a live connection and a NUL-terminated string.
        self.expect(unsafe { pq_sys::PQexec(self.0.as_ptr(), c.as_ptr()) }, ExecStatusType::PGRES_COPY_IN)?;
        let sent = body(&mut CopyIn(self));
        let why = if sent.is_err() { c"abandoned by the client".as_ptr() } else { std::ptr::null() };
        // SAFETY: a live connection in COPY IN state; `why` is null or NUL-terminated. In
        // blocking mode the call flushes and returns 1, or -1 on a broken connection.
        if unsafe { pq_sys::PQputCopyEnd(self.0.as_ptr(), why) } != 1 {
            return Err(self.error());
        }
        // SAFETY: a live connection; the COPY's result, then null once it is done.
        let ended = self.check(unsafe { pq_sys::PQgetResult(self.0.as_ptr()) });
        // SAFETY: as above: results past the COPY's (none expected) are drained to null.
        while let Some(r) = NonNull::new(unsafe { pq_sys::PQgetResult(self.0.as_ptr()) }) {
            drop(Res(r.as_ptr()));
        }
        match sent {
            Ok(()) => ended.map(Ok),
            Err(e) => Ok(Err(e)),
        }
    }

    /// Run `sql` (one or more statements without parameters).
    pub fn exec(&mut self, sql: &str) -> Result<(), String> {
        let sql = cstring("SQL", sql)?;
        // SAFETY: a live connection and a NUL-terminated string.
        self.check(unsafe { pq_sys::PQexec(self.0.as_ptr(), sql.as_ptr()) })
    }

    /// Prepare `sql` as statement `name`, its parameter types inferred by the server.
    pub fn prepare(&mut self, name: &CStr, sql: &str, params: usize) -> Result<(), String> {
        let sql = cstring("SQL", sql)?;
        let n = params as c_int;
        // SAFETY: a live connection, NUL-terminated strings, no parameter types (null).
        self.check(unsafe { pq_sys::PQprepare(self.0.as_ptr(), name.as_ptr(), sql.as_ptr(), n, std::ptr::null()) })
    }

    /// Execute prepared statement `name` with `params` sent as binary values (raw bytes: the
    /// binary form of both bytea and text).
    pub fn exec_prepared<const N: usize>(&mut self, name: &CStr, params: [&[u8]; N]) -> Result<(), String> {
        let (values, lengths, formats) = binary_params(params)?;
        // SAFETY: a live connection; N values with their lengths and formats, alive for the call.
        let r = unsafe {
            pq_sys::PQexecPrepared(
                self.0.as_ptr(),
                name.as_ptr(),
                N as c_int,
                values.as_ptr(),
                lengths.as_ptr(),
                formats.as_ptr(),
                0,
            )
        };
        self.check(r)
    }

    /// Execute `sql` with `params` (binary values) as an unnamed statement: the server parses
    /// and plans it on every call, as a client that does not prepare its statements makes it.
    pub fn exec_params<const N: usize>(&mut self, sql: &CStr, params: [&[u8]; N]) -> Result<(), String> {
        let (values, lengths, formats) = binary_params(params)?;
        // SAFETY: a live connection, a NUL-terminated statement, no parameter types (null), and N
        // values with their lengths and formats, alive for the call.
        let r = unsafe {
            pq_sys::PQexecParams(
                self.0.as_ptr(),
                sql.as_ptr(),
                N as c_int,
                std::ptr::null(),
                values.as_ptr(),
                lengths.as_ptr(),
                formats.as_ptr(),
                0,
            )
        };
        self.check(r)
    }
}

/// A COPY FROM STDIN in progress on its connection ([`Conn::copy_in`]).
pub struct CopyIn<'c>(&'c mut Conn);

impl CopyIn<'_> {
    /// Hand `data` (any cut of the COPY stream) to libpq, which sends it as its buffer fills.
    pub fn send(&mut self, data: &[u8]) -> Result<(), String> {
        let n = c_int::try_from(data.len()).map_err(|_| format!("a COPY chunk of {} bytes", data.len()))?;
        let conn = self.0 .0.as_ptr();
        // SAFETY: a live connection in COPY IN state and `n` readable bytes; blocking mode
        // returns 1 once queued, -1 on error.
        if unsafe { pq_sys::PQputCopyData(conn, data.as_ptr().cast(), n) } != 1 {
            return Err(self.0.error());
        }
        Ok(())
    }
}

/// libpq's three parameter arrays for `params` sent as binary values.
type Params<const N: usize> = ([*const c_char; N], [c_int; N], [c_int; N]);

fn binary_params<const N: usize>(params: [&[u8]; N]) -> Result<Params<N>, String> {
    let values: [*const c_char; N] = params.map(|p| p.as_ptr().cast());
    let mut lengths = [0 as c_int; N];
    for (l, p) in lengths.iter_mut().zip(params) {
        *l = c_int::try_from(p.len()).map_err(|_| format!("a parameter of {} bytes is over 2 GiB", p.len()))?;
    }
    Ok((values, lengths, [1 as c_int; N]))
}

impl Drop for Conn {
    fn drop(&mut self) {
        // SAFETY: the connection is closed once, here.
        unsafe { pq_sys::PQfinish(self.0.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_connection_says_why() {
        let dir = std::env::temp_dir().join("kvbench-no-such-socket-dir");
        let params = [("host", dir.display().to_string()), ("port", "1".into()), ("connect_timeout", "2".into())];
        let e = Conn::connect(&params).err().expect("nothing listens there");
        assert!(e.contains("kvbench-no-such-socket-dir"), "{e}");
    }
}
