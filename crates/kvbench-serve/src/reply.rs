//! The reply limits: what one request may make the server send (`--max-reply`), and what all
//! replies being read or unsent may hold (`--reply-budget`, [`super::ledger`]), both enforced
//! while the values are read, so a small request naming large values costs the server about
//! the limit, not the sum of the values.

use std::sync::atomic::{AtomicUsize, Ordering};

use kvbench_model::engine::Reader;

use super::ledger::Charge;
use super::net::Reply;
use super::State;

/// Most keys one `multi_get` call reads: requests of up to this many keys stay one call
/// (RocksDB's batched MultiGet), and the engine's own per-key state stays bounded.
pub(crate) const MGET_BATCH: usize = 16_384;
/// Keys of a call while the server has read no value yet (nothing to size a call, or its
/// reservation on the reply budget, by): one, so that concurrent first requests read one value
/// each before the largest is known.
const MGET_PROBE: usize = 1;

/// 413: the reply would pass `--max-reply`.
pub(crate) fn too_large(st: &State, what: &str) -> Reply {
    st.stats.too_large.fetch_add(1, Ordering::Relaxed);
    Reply::text(
        413,
        format!(
            "{what}: the reply would be larger than the server's limit of {} bytes (--max-reply)\n",
            st.limits.max_reply
        ),
    )
}

/// Keys of the next call: as many as fit what is left of the budget at the largest value
/// seen, at least one, at most [`MGET_BATCH`].
fn next_batch(largest: usize, left: usize, remaining_keys: usize) -> usize {
    let n = left.checked_div(largest).unwrap_or(MGET_PROBE);
    n.clamp(1, MGET_BATCH).min(remaining_keys)
}

/// What reading a multi-get's values gave.
#[derive(Debug)]
pub(crate) enum Read {
    Values(Vec<Option<Vec<u8>>>),
    /// The reply would pass `--max-reply` (413).
    TooLarge,
    /// The reply budget over all connections has no room (503).
    Busy,
}

/// The values of `keys` in order, read in calls sized by `largest`, the largest value the
/// server has read (updated here), to what is left of `budget` and of the reply budget. `cost`
/// is what one key and its value add to the reply. Each call reserves its keys at `largest`
/// on `charge` before it reads (so concurrent requests cannot all read past the reply budget
/// at once), then charges what came. The reading stops at the first call that passes either.
pub(crate) fn values_within(
    reader: &mut dyn Reader,
    largest: &AtomicUsize,
    keys: &[&[u8]],
    budget: usize,
    charge: &mut Charge,
    cost: impl Fn(&[u8], Option<&Vec<u8>>) -> usize,
) -> kvbench_model::engine::Result<Read> {
    let mut values = Vec::with_capacity(keys.len().min(MGET_BATCH));
    let mut batch = Vec::new();
    let mut size = 0usize;
    let mut done = 0;
    while done < keys.len() {
        let left = budget.saturating_sub(size).min(charge.left());
        let big = largest.load(Ordering::Relaxed);
        let n = next_batch(big, left, keys.len() - done);
        let reserved = n.saturating_mul(big);
        if !charge.add(reserved) {
            return Ok(Read::Busy);
        }
        reader.multi_get(&keys[done..done + n], &mut batch)?;
        let mut call = 0usize;
        for (k, v) in keys[done..done + n].iter().zip(batch.drain(..)) {
            let len = v.as_ref().map_or(0, Vec::len);
            largest.fetch_max(len, Ordering::Relaxed);
            call = call.saturating_add(cost(k, v.as_ref()));
            values.push(v);
        }
        size = size.saturating_add(call);
        if size > budget {
            return Ok(Read::TooLarge);
        }
        charge.give(reserved);
        if !charge.add(call) {
            return Ok(Read::Busy);
        }
        done += n;
    }
    Ok(Read::Values(values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Ledger;
    use kvbench_model::engine::Result;

    /// Every key holds `len` bytes; counts the keys read.
    struct Fixed {
        len: usize,
        read: usize,
        calls: usize,
    }

    impl Reader for Fixed {
        fn get(&mut self, _key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
            self.read += 1;
            out.clear();
            out.resize(self.len, b'v');
            Ok(true)
        }
        fn multi_get(&mut self, keys: &[&[u8]], out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
            self.calls += 1;
            out.clear();
            for k in keys {
                let mut v = Vec::new();
                self.get(k, &mut v)?;
                out.push(Some(v));
            }
            Ok(())
        }
    }

    #[test]
    fn regression_mget_of_one_large_value_many_times_stops_at_the_budget() {
        let mut r = Fixed { len: 4 << 20, read: 0, calls: 0 };
        let keys = vec![&b"big"[..]; 128];
        let budget = 64 << 20;
        let largest = AtomicUsize::new(0);
        let ledger = Ledger::new(1 << 30);
        let mut charge = Charge::new(&ledger);
        let got = values_within(&mut r, &largest, &keys, budget, &mut charge, cost).unwrap();
        assert!(matches!(got, Read::TooLarge), "512 MiB asked for, 64 MiB allowed");
        // Read: at most the budget's worth plus one call, not all 128 values.
        assert!(r.read * (4 << 20) <= budget + MGET_PROBE * (4 << 20), "{} values read", r.read);
        // Small values stay one call.
        let mut small = Fixed { len: 50, read: 0, calls: 0 };
        let keys = vec![&b"k"[..]; 1000];
        let largest = AtomicUsize::new(50);
        let mut charge = Charge::new(&ledger);
        let got = values_within(&mut small, &largest, &keys, budget, &mut charge, cost).unwrap();
        assert!(matches!(got, Read::Values(v) if v.len() == 1000));
        assert_eq!(small.calls, 1, "one multi_get call");
        assert_eq!(charge.bytes(), 55 * 1000, "charged as read");
    }

    fn cost(_: &[u8], value: Option<&Vec<u8>>) -> usize {
        5 + value.map_or(0, Vec::len)
    }

    /// Issue 42: 40 clients each asking for 15 × 4 MiB and never reading held 2 GB+. Each
    /// reply is now charged as it is read: with a 256 MiB budget the fifth gets Busy (503)
    /// after reading at most one call past the room left, and what it read is given back.
    #[test]
    fn regression_replies_over_all_connections_stop_at_the_reply_budget() {
        let ledger = Ledger::new(256 << 20);
        let largest = AtomicUsize::new(4 << 20);
        let keys = vec![&b"big"[..]; 15];
        let mut held = Vec::new();
        let mut busy = 0;
        for _ in 0..40 {
            let mut r = Fixed { len: 4 << 20, read: 0, calls: 0 };
            let mut charge = Charge::new(&ledger);
            let room = ledger.left();
            match values_within(&mut r, &largest, &keys, 64 << 20, &mut charge, cost).unwrap() {
                Read::Values(v) => held.push((v, charge)),
                Read::Busy => {
                    busy += 1;
                    assert!(r.read <= 1 + (room >> 22), "{} values read with {room} bytes of room", r.read);
                }
                Read::TooLarge => panic!("60 MiB is within --max-reply"),
            }
            assert!(ledger.used() <= 256 << 20);
        }
        assert_eq!((held.len(), busy), (4, 36));
        held.clear();
        assert_eq!(ledger.used(), 0, "sent replies give their bytes back");
    }
}
