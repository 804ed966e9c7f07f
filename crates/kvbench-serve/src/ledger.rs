//! The reply budget over all connections (`--reply-budget`): bytes of replies being read from
//! the engine or waiting to be sent. A multi-get charges its values as it reads them, any other
//! reply its body once made; a reply that does not fit answers 503 at once and frees what it
//! held. The charge travels with the reply's body and is given back when the body is dropped:
//! the body is handed to hyper in copied chunks, so once it is dropped no byte of it is left in
//! hyper's write queue. Clients that never read thus hold at most the budget, whatever their
//! number.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, SizeHint};

/// Bytes of a reply handed to hyper at a time: hyper polls for the next chunk only when its
/// write queue has room, so an unread reply stays in its body (and charged).
pub(crate) const CHUNK: usize = 64 << 10;

/// The budget's bytes in use.
#[derive(Debug)]
pub(crate) struct Ledger {
    used: AtomicUsize,
    limit: usize,
}

impl Ledger {
    pub fn new(limit: usize) -> Arc<Ledger> {
        Arc::new(Ledger { used: AtomicUsize::new(0), limit })
    }

    /// Bytes still free.
    pub fn left(&self) -> usize {
        self.limit.saturating_sub(self.used.load(Ordering::Relaxed))
    }

    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Takes `bytes` if they fit.
    fn take(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| u.checked_add(bytes).filter(|&t| t <= self.limit))
            .is_ok()
    }

    fn give(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// Bytes one reply holds on the ledger, given back when dropped.
#[derive(Debug)]
pub(crate) struct Charge {
    ledger: Arc<Ledger>,
    bytes: usize,
}

impl Charge {
    pub fn new(ledger: &Arc<Ledger>) -> Charge {
        Charge { ledger: ledger.clone(), bytes: 0 }
    }

    /// Charges `bytes` more; false (nothing charged) when the budget has no room for them.
    pub fn add(&mut self, bytes: usize) -> bool {
        let ok = self.ledger.take(bytes);
        if ok {
            self.bytes += bytes;
        }
        ok
    }

    /// Gives back `bytes` of those charged (a reservation larger than what came).
    pub fn give(&mut self, bytes: usize) {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        self.ledger.give(bytes);
    }

    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn left(&self) -> usize {
        self.ledger.left()
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.ledger.give(self.bytes);
    }
}

/// A reply's body: its bytes in copied chunks of [`CHUNK`], its charge held until it is
/// dropped (sent, or the connection gone).
pub(crate) struct Charged {
    body: Vec<u8>,
    at: usize,
    _charge: Option<Charge>,
}

impl Charged {
    pub fn new(body: Vec<u8>, charge: Option<Charge>) -> Charged {
        Charged { body, at: 0, _charge: charge }
    }
}

impl Body for Charged {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let me = self.get_mut();
        if me.at >= me.body.len() {
            return Poll::Ready(None);
        }
        let end = (me.at + CHUNK).min(me.body.len());
        let chunk = Bytes::copy_from_slice(&me.body[me.at..end]);
        me.at = end;
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.at >= self.body.len()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact((self.body.len() - self.at) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_refused_past_the_limit_and_given_back_on_drop() {
        let ledger = Ledger::new(100);
        let mut a = Charge::new(&ledger);
        assert!(a.add(60));
        let mut b = Charge::new(&ledger);
        assert!(!b.add(41), "past the budget");
        assert!(b.add(40));
        assert_eq!((ledger.used(), ledger.left()), (100, 0));
        drop(a);
        assert_eq!(ledger.used(), 40);
        let body = Charged::new(vec![7; CHUNK + 5], Some(b));
        assert_eq!(body.size_hint().exact(), Some(CHUNK as u64 + 5));
        drop(body);
        assert_eq!(ledger.used(), 0, "the body's charge is given back with it");
    }
}
