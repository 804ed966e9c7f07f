//! What the streamed-load test files share: reading a store back in key order against the rows
//! its load derived.

use kvbench_model::engine::Engine;

/// Scans `e` from its first key and checks record i against `row(i)` (`what` names the case in
/// a failure); returns how many records it read.
pub fn read_back(e: &dyn Engine, row: fn(usize, &mut Vec<u8>, &mut Vec<u8>), what: &str) -> usize {
    let mut r = e.reader().unwrap();
    let (mut k, mut v, mut seen) = (Vec::new(), Vec::new(), 0);
    r.scan(None, usize::MAX, &mut |key, value| {
        row(seen, &mut k, &mut v);
        assert_eq!((key, value), (&k[..], &v[..]), "{what}: record {seen}");
        seen += 1;
        true
    })
    .unwrap();
    seen
}
