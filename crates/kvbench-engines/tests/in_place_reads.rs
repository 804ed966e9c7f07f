//! Get phases on a reader that reads in place check each value one get later (after
//! prefetching it): every value must still be checked, the last one too, and a wrong value
//! counted exactly once, as on a reader that copies.

mod in_process;
mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use kvbench_model::engine::*;
use kvbench_model::result::{PhaseResult, Status};

/// A map whose readers hold a snapshot in which every value of a key ending in `9` is wrong (the last one read in order, too).
#[derive(Default)]
struct Spoilt {
    in_place: bool,
}

impl support::MapReaders for Spoilt {
    fn reader(engine: &support::MapEngine<Self>) -> Result<Box<dyn Reader + '_>> {
        let mut snap = engine.map.lock().unwrap().clone();
        for (k, v) in snap.iter_mut() {
            if k.last() == Some(&b'9') {
                v.push(b'!');
            }
        }
        Ok(Box::new(SpoiltReader { snap: Arc::new(snap), in_place: engine.state.in_place }))
    }
}

struct SpoiltReader {
    snap: Arc<BTreeMap<Vec<u8>, Vec<u8>>>,
    in_place: bool,
}

impl Reader for SpoiltReader {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        Ok(kvbench_engines::copy_found(self.snap.get(key), out))
    }

    fn reads_in_place(&self) -> bool {
        self.in_place
    }

    fn get_shared(&self, key: &[u8]) -> Result<Option<&[u8]>> {
        Ok(self.snap.get(key).map(|v| &v[..]))
    }
}

static IN_PLACE: EngineDescriptor =
    support::map_engine("spoilt-in-place", "test engine: reads in place, some values wrong", |_| {
        Ok(Box::new(support::MapEngine { map: Default::default(), state: Spoilt { in_place: true } }))
    });

static COPYING: EngineDescriptor =
    support::map_engine("spoilt-copying", "test engine: copies values, some wrong", |_| {
        Ok(Box::new(support::MapEngine::<Spoilt>::default()))
    });

fn get_phase(desc: &EngineDescriptor, distribution: &str) -> PhaseResult {
    let text = format!(
        "engines = [\"{}\"]\n[dataset]\nrecords = 1000\n[[phase]]\nkind = \"load\"\n\
         [[phase]]\nkind = \"get\"\ndistribution = \"{distribution}\"\n",
        desc.name
    );
    support::get_phase(desc, &text)
}

#[test]
fn in_place_reads_check_every_value_the_last_one_too() {
    for dist in ["shuffle", "sequential"] {
        let copying = get_phase(&COPYING, dist);
        let in_place = get_phase(&IN_PLACE, dist);
        // Keys are 16-digit decimal record numbers: 100 of the 1000 end in 9, record 999 among them.
        assert_eq!(copying.mismatches, 100, "{dist}: the copying reader");
        assert_eq!(in_place.mismatches, 100, "{dist}: the in-place reader");
        assert_eq!((in_place.ops, in_place.missing, in_place.errors), (1000, 0, 0), "{dist}");
        assert_eq!(in_place.status, Status::Failed, "{dist}: wrong values fail the phase");
    }
}
