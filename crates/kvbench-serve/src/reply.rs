//! The reply budget: what one request may make the server send (`--max-reply`), enforced while
//! the values are read, so a small request naming large values costs the server about the
//! budget, not the sum of the values.

use std::sync::atomic::{AtomicUsize, Ordering};

use kvbench_model::engine::Reader;

use super::net::Reply;
use super::State;

/// Most keys one `multi_get` call reads: requests of up to this many keys stay one call
/// (RocksDB's batched MultiGet), and the engine's own per-key state stays bounded.
pub(crate) const MGET_BATCH: usize = 16_384;
/// Keys of the first call while the server has read no value yet (nothing to size a call by).
const MGET_PROBE: usize = 16;

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

/// The values of `keys` in order, read in calls sized to the budget by `largest`, the largest
/// value the server has read (updated here). `cost` is what one key and its value add to the
/// reply. Ok(None): the reply would pass `budget` (the reading stops at the first call that
/// passes it).
pub(crate) fn values_within(
    reader: &mut dyn Reader,
    largest: &AtomicUsize,
    keys: &[&[u8]],
    budget: usize,
    cost: impl Fn(&[u8], Option<&Vec<u8>>) -> usize,
) -> kvbench_model::engine::Result<Option<Vec<Option<Vec<u8>>>>> {
    let mut values = Vec::with_capacity(keys.len().min(MGET_BATCH));
    let mut batch = Vec::new();
    let mut size = 0usize;
    let mut done = 0;
    while done < keys.len() {
        let n = next_batch(largest.load(Ordering::Relaxed), budget.saturating_sub(size), keys.len() - done);
        reader.multi_get(&keys[done..done + n], &mut batch)?;
        for (k, v) in keys[done..done + n].iter().zip(batch.drain(..)) {
            let len = v.as_ref().map_or(0, Vec::len);
            largest.fetch_max(len, Ordering::Relaxed);
            size = size.saturating_add(cost(k, v.as_ref()));
            values.push(v);
        }
        if size > budget {
            return Ok(None);
        }
        done += n;
    }
    Ok(Some(values))
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let got = values_within(&mut r, &largest, &keys, budget, |_, v| 5 + v.map_or(0, Vec::len)).unwrap();
        assert!(got.is_none(), "512 MiB asked for, 64 MiB allowed");
        // Read: at most the budget's worth plus one call, not all 128 values.
        assert!(r.read * (4 << 20) <= budget + MGET_PROBE * (4 << 20), "{} values read", r.read);
        // Small values stay one call.
        let mut small = Fixed { len: 50, read: 0, calls: 0 };
        let keys = vec![&b"k"[..]; 1000];
        let largest = AtomicUsize::new(50);
        let got = values_within(&mut small, &largest, &keys, budget, |_, v| 5 + v.map_or(0, Vec::len)).unwrap();
        assert_eq!(got.map(|v| v.len()), Some(1000));
        assert_eq!(small.calls, 1, "one multi_get call");
    }
}
