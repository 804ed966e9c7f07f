//! Work done beside a client thread: items handed to a thread of their own, done one at a time
//! in the order handed, and handed back for reuse. The worker core checks a block's reads
//! there while the client thread runs the next block (blocks.rs; docs/decisions.md, "The
//! worker core behind a C ABI").

use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Whether the thread runs like any other or only on CPU time no other thread wants.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cpu {
    Shared,
    Idle,
}

/// A thread doing `each(state, item)` for every item handed to it; `finish` returns the state.
pub struct Beside<T, S> {
    hand: Option<SyncSender<T>>,
    back: Receiver<T>,
    join: Option<JoinHandle<S>>,
}

impl<T: Send + 'static, S: Send + 'static> Beside<T, S> {
    /// Starts the thread. At most one item waits while another is done: a client that runs
    /// ahead waits at `hand`, so no more than two items are ever out of its hands.
    pub fn start(name: &str, mut state: S, each: fn(&mut S, &mut T), cpu: Cpu) -> std::io::Result<Beside<T, S>> {
        let (hand, todo) = sync_channel::<T>(1);
        let (done, back) = channel();
        let join = std::thread::Builder::new().name(name.to_string()).spawn(move || {
            if cpu == Cpu::Idle {
                crate::sys::only_when_idle();
            }
            for mut item in todo {
                each(&mut state, &mut item);
                // The client may have finished: an item it does not take back is dropped.
                let _ = done.send(item);
            }
            state
        })?;
        Ok(Beside { hand: Some(hand), back, join: Some(join) })
    }

    /// An item done and handed back, when there is one.
    pub fn take(&mut self) -> Option<T> {
        self.back.try_recv().ok()
    }

    /// Waits for the next item handed back; None when the thread has stopped (it panicked).
    pub fn back(&mut self) -> Option<T> {
        self.back.recv().ok()
    }

    /// Hands `item` over; it comes back as the error when the thread has stopped (it panicked).
    pub fn hand(&mut self, item: T) -> Result<(), T> {
        match &self.hand {
            Some(h) => h.send(item).map_err(|e| e.0),
            None => Err(item),
        }
    }

    /// Waits until every item handed over was done; the state, or None when the thread panicked.
    pub fn finish(mut self) -> Option<S> {
        self.hand = None;
        self.join.take()?.join().ok()
    }
}

impl<T, S> Drop for Beside<T, S> {
    fn drop(&mut self) {
        self.hand = None;
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_done_in_the_order_handed_and_come_back() {
        let mut b = Beside::start(
            "test-beside",
            Vec::new(),
            |seen: &mut Vec<u32>, x: &mut u32| {
                seen.push(*x);
                *x += 100;
            },
            Cpu::Shared,
        )
        .unwrap();
        for i in 0..50 {
            b.hand(i).unwrap();
            if i % 2 == 1 {
                assert_eq!(b.back(), Some(i / 2 + 100), "handed back done, in order");
            }
        }
        assert_eq!(b.finish().unwrap(), (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn a_thread_that_panicked_hands_the_item_back_and_finishes_with_none() {
        let mut b = Beside::start("test-beside", (), |_, x: &mut u32| assert!(*x < 3), Cpu::Shared).unwrap();
        let handed = (0..10).map(|i| b.hand(i)).filter(|r| r.is_err()).count();
        assert!(handed > 0, "once the thread is gone an item comes back");
        assert!(b.finish().is_none());
    }
}
