//! Which value a read must return: the per-record state of docs/plan-format.md ("State").
//! `s = (writes << 1) | present`; bit 31 locks a record while a writer of a multi-threaded
//! phase writes it.

use std::sync::atomic::{AtomicU32, Ordering};

pub const LOCK: u32 = 1 << 31;
/// State of a record the load wrote once.
pub const LOADED: u32 = (1 << 1) | 1;

/// What a read of one record may return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Absent,
    /// Exactly this version.
    Version(u32),
    /// Absent, or any version in the range (a writer was active during the read).
    Between(u32, u32),
}

/// Per-record states; implicit (loaded records present at version 0, the rest absent) until a
/// phase writes after the load, so read-only runs keep no memory per record.
pub struct State {
    loaded: u64,
    total: u64,
    cells: Option<Vec<AtomicU32>>,
}

pub fn writes(state: u32) -> u32 {
    (state & !LOCK) >> 1
}

pub fn present(state: u32) -> bool {
    state & 1 == 1
}

/// Spins on a held record before [`State::begin_write`] yields the CPU instead.
const SPINS: u32 = 100;

impl State {
    pub fn new(loaded: u64, total: u64) -> State {
        State { loaded, total, cells: None }
    }

    /// Keep one word per record from now on (called before a phase that writes after the load).
    pub fn materialize(&mut self) {
        if self.cells.is_none() {
            let loaded = self.loaded;
            self.cells = Some((0..self.total).map(|c| AtomicU32::new(if c < loaded { LOADED } else { 0 })).collect());
        }
    }

    #[inline]
    pub fn get(&self, record: u64) -> u32 {
        match &self.cells {
            Some(v) => v[record as usize].load(Ordering::Acquire),
            None if record < self.loaded => LOADED,
            None => 0,
        }
    }

    /// Take record c for writing; returns its state. With `lock`, waits while another writer
    /// holds it: spinning briefly (an embedded store's write is short), then yielding the CPU,
    /// since a server's write holds the record for a round trip and a spinning thread would
    /// burn the CPU the holder needs (hot records of a zipfian mix are taken often).
    #[inline]
    pub fn begin_write(&self, record: u64, lock: bool) -> u32 {
        let Some(v) = &self.cells else { return self.get(record) };
        let cell = &v[record as usize];
        if !lock {
            return cell.load(Ordering::Acquire);
        }
        let mut tries = 0u32;
        loop {
            let s = cell.load(Ordering::Acquire);
            if s & LOCK == 0 && cell.compare_exchange_weak(s, s | LOCK, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                return s;
            }
            tries += 1;
            if tries < SPINS {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Store the state after a write (and release the lock).
    #[inline]
    pub fn end_write(&self, record: u64, state: u32) {
        if let Some(v) = &self.cells {
            v[record as usize].store(state & !LOCK, Ordering::Release);
        }
    }

    /// What a read may return, from the states before (`s1`) and after (`s2`) the call.
    #[inline]
    pub fn expect(s1: u32, s2: u32) -> Expect {
        if s1 == s2 && s1 & LOCK == 0 {
            return if present(s1) { Expect::Version(writes(s1) - 1) } else { Expect::Absent };
        }
        Expect::Between(writes(s1).saturating_sub(1), writes(s2))
    }
}

/// State after a put of the version `writes(state)`.
#[inline]
pub fn after_put(state: u32) -> u32 {
    ((writes(state) + 1) << 1) | 1
}

/// State after a delete.
#[inline]
pub fn after_delete(state: u32) -> u32 {
    (state & !LOCK) & !1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_put_then_a_delete_then_a_put_expects_the_third_version() {
        let mut st = State::new(2, 4);
        assert_eq!(State::expect(st.get(1), st.get(1)), Expect::Version(0));
        assert_eq!(State::expect(st.get(3), st.get(3)), Expect::Absent);
        st.materialize();
        let s = st.begin_write(1, true);
        st.end_write(1, after_put(s));
        let s = st.begin_write(1, true);
        st.end_write(1, after_delete(s));
        assert_eq!(State::expect(st.get(1), st.get(1)), Expect::Absent);
        let s = st.begin_write(1, false);
        assert_eq!(writes(s), 2, "the next write is version 2");
        st.end_write(1, after_put(s));
        assert_eq!(State::expect(st.get(1), st.get(1)), Expect::Version(2));
    }

    #[test]
    fn a_read_beside_a_writer_accepts_the_range() {
        assert_eq!(State::expect(LOADED | LOCK, after_put(LOADED)), Expect::Between(0, 2));
    }
}
