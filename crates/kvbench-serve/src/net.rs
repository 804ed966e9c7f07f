//! The HTTP side of `kvbench serve`: accept loops, per-connection hyper state machines, the
//! token check, bounded body reads, and where each request's engine call runs.
//!
//! One thread accepts and deals connections to the worker threads in turn; each worker runs a
//! current-thread tokio runtime. A connection stays on its worker from then on, and each of its
//! requests is parsed, executed and answered there (or, for calls that may block for long, on
//! that worker's blocking pool; `Exec`): no request is handed between threads. The hidden
//! `--runtime multi` runs tokio's work-stealing runtime instead, kept to re-measure the choice.
//!
//! Memory under hostile clients is bounded by: `--max-connections` (further connections wait in
//! the kernel's listen queue), hyper's read buffer per connection ([`MAX_HEAD`]), the body limit
//! per request (413, checked against Content-Length before reading, and while reading), and the
//! body budget over all connections (a request waits for room before its body is read). Slow
//! clients are cut off by the head and body read timeouts; they hold no thread meanwhile.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use hyper::body::{Body as _, Bytes, Incoming};
use hyper::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::http::request::Parts;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::ledger::{Charge, Charged};
use super::{Exec, Runtime, State};

/// Largest request head (request line and headers) hyper buffers per connection: room for a
/// RocksServer-style `GET /mget?k1&k2...` of about 100 000 short keys.
pub(crate) const MAX_HEAD: usize = 1 << 20;
/// The body budget is counted in units of this many bytes (semaphore permits are u32).
const BUDGET_UNIT: u64 = 1024;

/// Counters shown by /stats.
#[derive(Default)]
pub(crate) struct Counters {
    pub requests: AtomicU64,
    pub unauthorized: AtomicU64,
    pub too_large: AtomicU64,
    pub timed_out: AtomicU64,
    /// Replies refused with 503 for want of reply budget.
    pub busy: AtomicU64,
    pub connections: AtomicU64,
    /// The largest value read so far: multi-get calls are sized by it (`reply::values_within`).
    pub largest_value: std::sync::atomic::AtomicUsize,
}

/// One answer: status, body, whether the body is text (else application/octet-stream), and
/// what it holds of the reply budget when it was charged while it was made (a multi-get).
pub(crate) struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
    pub text: bool,
    pub charge: Option<Charge>,
}

impl Reply {
    pub fn new(status: u16, body: Vec<u8>, text: bool) -> Reply {
        Reply { status, body, text, charge: None }
    }
    pub fn ok(body: Vec<u8>) -> Reply {
        Reply::new(200, body, false)
    }
    pub fn text(status: u16, msg: impl Into<String>) -> Reply {
        Reply::new(status, msg.into().into_bytes(), true)
    }
    pub fn charged(mut self, charge: Charge) -> Reply {
        self.charge = Some(charge);
        self
    }
}

/// 503: replies waiting to be read hold the whole reply budget.
pub(crate) fn busy(st: &State) -> Reply {
    st.stats.busy.fetch_add(1, Ordering::Relaxed);
    Reply::text(
        503,
        format!(
            "the server's replies waiting to be read hold its reply budget of {} bytes (--reply-budget); try again\n",
            st.limits.reply_budget
        ),
    )
}

/// The reply charged to the budget by its body (unless it was while it was made), or 503.
fn charge_reply(st: &State, mut reply: Reply) -> Reply {
    if reply.charge.is_none() && !reply.body.is_empty() {
        let mut c = Charge::new(&st.replies);
        if !c.add(reply.body.len()) {
            return busy(st);
        }
        reply.charge = Some(c);
    }
    reply
}

struct Shared {
    state: State,
    connections: Arc<Semaphore>,
    bodies: Arc<Semaphore>,
}

/// The shape of the server: threads, limits, runtime.
pub(crate) struct Server {
    pub threads: usize,
    pub max_connections: usize,
    pub body_budget: u64,
    pub runtime: Runtime,
}

pub(crate) fn run(state: State, listener: std::net::TcpListener, server: &Server) -> Result<(), String> {
    listener.set_nonblocking(true).map_err(|e| format!("listener: {e}"))?;
    let units = (server.body_budget / BUDGET_UNIT).clamp(1, Semaphore::MAX_PERMITS as u64) as usize;
    let shared = Arc::new(Shared {
        state,
        connections: Arc::new(Semaphore::new(server.max_connections)),
        bodies: Arc::new(Semaphore::new(units)),
    });
    match server.runtime {
        Runtime::PerCore => run_per_core(shared, listener, server.threads),
        Runtime::Multi => run_multi(shared, listener, server.threads),
    }
}

/// tokio's multi-thread runtime: any worker may run any connection (work stealing).
fn run_multi(shared: Arc<Shared>, listener: std::net::TcpListener, threads: usize) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .max_blocking_threads(64)
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    rt.block_on(async move {
        let l = tokio::net::TcpListener::from_std(listener).map_err(|e| format!("listener: {e}"))?;
        loop {
            let Some((stream, permit)) = accept(&shared, &l).await else { return Ok(()) };
            drop(tokio::spawn(connection(shared.clone(), stream, permit)));
        }
    })
}

fn run_per_core(shared: Arc<Shared>, listener: std::net::TcpListener, threads: usize) -> Result<(), String> {
    let mut handles = Vec::new();
    let mut workers = Vec::new();
    for i in 0..threads {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        workers.push(tx);
        let sh = shared.clone();
        let h = std::thread::Builder::new()
            .name(format!("serve-{i}"))
            .spawn(move || runtime()?.block_on(worker(sh, rx)))
            .map_err(|e| format!("cannot start a worker thread: {e}"))?;
        handles.push(h);
    }
    runtime()?.block_on(accept_loop(shared, listener, workers))?;
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err("a worker thread panicked".into()),
        }
    }
    Ok(())
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(64)
        .thread_keep_alive(Duration::from_secs(600))
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

/// A connection handed to a worker, with its place under --max-connections.
type Accepted = (std::net::TcpStream, OwnedSemaphorePermit);

/// Accepts on the calling thread and deals connections to the workers in turn: threads that
/// all waited on the socket themselves were measured to take connections unevenly (the first
/// one awake took all 8 of wrk's), leaving a core idle.
async fn accept_loop(
    sh: Arc<Shared>,
    listener: std::net::TcpListener,
    workers: Vec<tokio::sync::mpsc::UnboundedSender<Accepted>>,
) -> Result<(), String> {
    let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| format!("listener: {e}"))?;
    for next in (0..workers.len()).cycle() {
        let Some((stream, permit)) = accept(&sh, &listener).await else { return Ok(()) };
        // The permit goes back when the worker's connection task ends.
        let Ok(stream) = stream.into_std() else { continue };
        if workers[next].send((stream, permit)).is_err() {
            return Err("a worker thread ended".into());
        }
    }
    Ok(())
}

/// The next connection, once there is room for it under --max-connections (None: closed).
async fn accept(
    sh: &Shared,
    listener: &tokio::net::TcpListener,
) -> Option<(tokio::net::TcpStream, OwnedSemaphorePermit)> {
    let permit = sh.connections.clone().acquire_owned().await.ok()?;
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                let _ = s.set_nodelay(true);
                sh.state.stats.connections.fetch_add(1, Ordering::Relaxed);
                return Some((s, permit));
            }
            Err(e) => {
                // Out of descriptors or a connection reset before accept: wait, go on.
                (sh.state.say)(format_args!("kvbench serve: accept: {e}"));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn worker(sh: Arc<Shared>, mut rx: tokio::sync::mpsc::UnboundedReceiver<Accepted>) -> Result<(), String> {
    while let Some((stream, permit)) = rx.recv().await {
        match tokio::net::TcpStream::from_std(stream) {
            Ok(s) => drop(tokio::spawn(connection(sh.clone(), s, permit))),
            Err(e) => (sh.state.say)(format_args!("kvbench serve: {e}")),
        }
    }
    Ok(())
}

async fn connection(sh: Arc<Shared>, stream: tokio::net::TcpStream, _permit: OwnedSemaphorePermit) {
    let timeout = sh.state.limits.read_timeout;
    let service = service_fn(move |req| {
        let sh = sh.clone();
        async move { Ok::<_, Infallible>(handle(sh, req).await) }
    });
    // Errors here are clients that went away or timed out: nothing to answer.
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(timeout)
        .max_buf_size(MAX_HEAD)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

fn respond(reply: Reply) -> Response<Charged> {
    let ctype = if reply.text { "text/plain; charset=utf-8" } else { "application/octet-stream" };
    let mut resp = Response::new(Charged::new(reply.body, reply.charge));
    *resp.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    resp
}

/// Compares without an early exit, so the time taken does not tell how much of a guess matched.
fn same(left: &[u8], right: &[u8]) -> bool {
    left.len() == right.len() && left.iter().zip(right).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn authorized(token: Option<&str>, headers: &HeaderMap) -> bool {
    let Some(token) = token else { return true };
    let Some(given) = headers.get(AUTHORIZATION).and_then(|v| v.as_bytes().strip_prefix(b"Bearer ")) else {
        return false;
    };
    same(given, token.as_bytes())
}

async fn handle(sh: Arc<Shared>, req: Request<Incoming>) -> Response<Charged> {
    let st = &sh.state;
    st.stats.requests.fetch_add(1, Ordering::Relaxed);
    if req.uri().path() == "/health" {
        return respond(Reply::text(200, "ok\n"));
    }
    if !authorized(st.token.as_deref(), req.headers()) {
        st.stats.unauthorized.fetch_add(1, Ordering::Relaxed);
        let mut r = respond(Reply::text(401, "a bearer token is required (Authorization: Bearer TOKEN)\n"));
        r.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return r;
    }
    let (parts, body) = req.into_parts();
    let (body, permit) = match read_body(&sh, &parts, body).await {
        Ok(b) => b,
        Err(r) => return respond(r),
    };
    let inline = match st.exec {
        Exec::Inline => true,
        Exec::Blocking => false,
        Exec::Auto => matches!(parts.uri.path(), "/get" | "/exist" | "/kv/get"),
    };
    let sh2 = sh.clone();
    let work = move || {
        let r = super::route(&sh2.state, &parts, &body);
        drop(permit);
        charge_reply(&sh2.state, r)
    };
    let reply = if inline {
        work()
    } else {
        match tokio::task::spawn_blocking(work).await {
            Ok(r) => r,
            Err(e) => Reply::text(500, format!("the request failed: {e}\n")),
        }
    };
    respond(reply)
}

/// The whole body, within the limit, the budget and the read timeout. The budget permit is
/// held until the request's engine call is done.
async fn read_body(sh: &Shared, parts: &Parts, body: Incoming) -> Result<(Bytes, Option<OwnedSemaphorePermit>), Reply> {
    let st = &sh.state;
    let limit = st.limits.max_body;
    let declared = parts.headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        st.stats.too_large.fetch_add(1, Ordering::Relaxed);
        return Err(Reply::text(413, format!("the body is larger than the server's limit of {limit} bytes\n")));
    }
    // No body (a GET, or Content-Length: 0): nothing to read, no budget to take.
    if declared == Some(0) || body.is_end_stream() {
        return Ok((Bytes::new(), None));
    }
    let deadline = tokio::time::Instant::now() + st.limits.read_timeout;
    // A body without Content-Length (chunked) may use the whole limit.
    let units = declared.unwrap_or(limit).div_ceil(BUDGET_UNIT).max(1) as u32;
    let permit = match tokio::time::timeout_at(deadline, sh.bodies.clone().acquire_many_owned(units)).await {
        Ok(Ok(p)) => p,
        _ => {
            st.stats.timed_out.fetch_add(1, Ordering::Relaxed);
            return Err(Reply::text(503, "the server is busy reading other bodies; try again\n"));
        }
    };
    match tokio::time::timeout_at(deadline, Limited::new(body, limit as usize).collect()).await {
        Ok(Ok(b)) => Ok((b.to_bytes(), Some(permit))),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            st.stats.too_large.fetch_add(1, Ordering::Relaxed);
            Err(Reply::text(413, format!("the body is larger than the server's limit of {limit} bytes\n")))
        }
        Ok(Err(e)) => Err(Reply::text(400, format!("reading the body: {e}\n"))),
        Err(_) => {
            st.stats.timed_out.fetch_add(1, Ordering::Relaxed);
            Err(Reply::text(408, format!("the body did not arrive within {:?}\n", st.limits.read_timeout)))
        }
    }
}
