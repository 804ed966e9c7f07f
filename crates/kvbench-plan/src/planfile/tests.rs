use super::*;
use crate::derive::{derived_key, Keys, Values};
use crate::job::{Dataset, Generator, ValueShape};
use crate::spec::{KeyKind, ValueContent};

/// Records given in memory; keys repeat.
struct Fixed(Vec<(&'static str, &'static str)>);

impl RecordSource for Fixed {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn record(&mut self, i: u64, key: &mut Vec<u8>, value: &mut Vec<u8>) -> anyhow::Result<()> {
        let (k, v) = self.0[i as usize];
        key.clear();
        value.clear();
        key.extend_from_slice(k.as_bytes());
        value.extend_from_slice(v.as_bytes());
        Ok(())
    }
    fn update_value(&mut self, _: u64, _: u64, _: &mut Vec<u8>) {}
    fn key(&mut self, i: u64, key: &mut Vec<u8>) {
        key.clear();
        key.extend_from_slice(self.0[i as usize].0.as_bytes());
    }
}

fn source() -> Fixed {
    Fixed(vec![("b", "1"), ("a", "22"), ("c", "333"), ("a", "4444"), ("b", "55555"), ("d", "")])
}

const ID: PlanId = PlanId { seed: 7, spec_hash: 0xABCD, spec_json: b"{\"test\":true}" };

fn build(dir: &Path, order: LoadOrder) -> PlanFile {
    let path = dir.join("p.kvbplan");
    build_stored(&path, ID, &mut source(), order).unwrap();
    PlanFile::open(&path).unwrap()
}

#[test]
fn the_duplicate_loaded_last_wins() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(dir.path(), LoadOrder::Sequential);
    assert_eq!(p.header(), Header { seed: 7, spec_hash: 0xABCD, records: 6, distinct: 4, raw_bytes: 5 + 6 + 4 + 1 });
    assert_eq!((0..6).map(|r| p.canon(r)).collect::<Vec<_>>(), [4, 3, 2, 3, 4, 5]);
    assert_eq!((0..4).map(|i| p.sorted(i)).collect::<Vec<_>>(), [3, 4, 2, 5]);
    assert_eq!((p.key(3), p.value(3)), (&b"a"[..], &b"4444"[..]));
    assert_eq!(p.spec_json(), Some(&b"{\"test\":true}"[..]));
    assert_eq!(p.longest_value(), 5);
}

#[test]
fn rank_is_each_records_sorted_position_and_duplicates_take_their_winners() {
    let dir = tempfile::tempdir().unwrap();
    let p = build(dir.path(), LoadOrder::Sequential);
    // SORTED is [3, 4, 2, 5]; records 1 and 0 are duplicates of 3 and 4.
    assert_eq!((0..6).map(|r| p.rank(r).unwrap()).collect::<Vec<_>>(), [1, 0, 2, 0, 1, 3]);
    assert_eq!(p.section(RANK).unwrap().count, 6);
}

#[test]
fn a_cached_plan_without_rank_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{:016x}.kvbplan", ID.spec_hash));
    // A plan as kvbench wrote them before RANK: SORTED and SPEC alone.
    let tmp = dir.path().join("old.tmp");
    let mut w = Writer::create(&tmp, 2).unwrap();
    w.u32s(SORTED, [1u32, 0].into_iter()).unwrap();
    write_spec(&mut w, ID.spec_json).unwrap();
    let header = Header { seed: ID.seed, spec_hash: ID.spec_hash, records: 2, distinct: 2, raw_bytes: 0 };
    w.finish(&tmp, &path, header).unwrap();
    assert_eq!(PlanFile::open(&path).unwrap().rank(0), None);
    let shape = crate::job::KeyShape { kind: KeyKind::Ycsb, width: 0 };
    let (p, note) = ensure(dir.path(), ID.spec_hash, |at: &Path| build_sorted(at, ID, shape, 2)).unwrap();
    assert!(note.is_some_and(|n| n.contains("no RANK")));
    assert!(p.rank(0).is_some());
}

#[test]
fn a_shuffled_load_decides_by_load_position() {
    let dir = tempfile::tempdir().unwrap();
    let order = LoadOrder::Shuffle { perm_seed: 3 };
    let p = build(dir.path(), order);
    let pos = order.positions(6);
    for (a, b) in [(0u64, 4u64), (1, 3)] {
        let winner = if pos[a as usize] > pos[b as usize] { a } else { b };
        assert_eq!((p.canon(a), p.canon(b)), (winner, winner));
    }
}

#[test]
fn stored_values_come_from_the_plan_and_later_versions_are_derived() {
    let dir = tempfile::tempdir().unwrap();
    let p = std::sync::Arc::new(build(dir.path(), LoadOrder::Sequential));
    let ds = Dataset {
        generator: Generator::Stored,
        key: crate::job::KeyShape { kind: KeyKind::Decimal, width: 0 },
        value: ValueShape { min: 0, max: 5, content: ValueContent::Printable, ..Default::default() },
        loaded: 6,
        total: 6,
        ordered: false,
        pool_seed: 1,
        value_seed: 2,
        open_records: 6,
        open_bytes: 0,
    };
    let (keys, values) = (Keys::new(&ds, Some(p.clone())).unwrap(), Values::new(&ds, Some(p)).unwrap());
    let mut b = Vec::new();
    keys.key(2, &mut b);
    assert_eq!(b, b"c");
    values.value(2, 0, &mut b);
    assert_eq!(b, b"333");
    assert!(values.matches(2, 0, b"333") && !values.matches(2, 0, b"334"));
    values.value(2, 1, &mut b);
    assert_eq!(b.len(), 3);
    assert!(values.matches(2, 1, &b) && b != b"333");
}

/// Opens a copy of `good` with `patch` applied.
fn corrupt(good: &Path, patch: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut bytes = std::fs::read(good).unwrap();
    patch(&mut bytes);
    let bad = good.with_extension("bad");
    std::fs::write(&bad, bytes).unwrap();
    let err = format!("{:#}", PlanFile::open(&bad).unwrap_err());
    assert!(err.contains(&bad.display().to_string()), "error names the path: {err}");
    err
}

#[test]
fn corrupt_files_are_detected() {
    let dir = tempfile::tempdir().unwrap();
    let good = build(dir.path(), LoadOrder::Sequential).path().to_path_buf();
    let index = PlanFile::open(&good).unwrap().section(INDEX).unwrap().offset as usize;
    assert!(corrupt(&good, |b| b[60] ^= 1).contains("checksum"));
    assert!(corrupt(&good, |b| b[12..16].copy_from_slice(&u32::MAX.to_le_bytes())).contains("section count 4294967295"));
    assert!(corrupt(&good, |b| b[index + 17] ^= 0x40).contains("checksum"));
    assert!(corrupt(&good, |b| b[..8].copy_from_slice(b"NOTAPLAN")).contains("magic"));
    assert!(corrupt(&good, |b| b[8] = 1).contains("version 1"));
    assert!(corrupt(&good, |b| b.truncate(b.len() - 3)).contains("outside the file"));
}

#[test]
fn ensure_reuses_a_valid_plan_and_rebuilds_a_corrupt_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut builds = 0;
    let mut make = |path: &Path| {
        builds += 1;
        build_stored(path, ID, &mut source(), LoadOrder::Sequential)
    };
    let (p, note) = ensure(dir.path(), ID.spec_hash, &mut make).unwrap();
    assert!(note.is_none());
    let path = p.path().to_path_buf();
    assert!(path.ends_with("000000000000abcd.kvbplan"));
    assert!(ensure(dir.path(), ID.spec_hash, &mut make).unwrap().1.is_none());
    let mut bytes = std::fs::read(&path).unwrap();
    let index = p.section(INDEX).unwrap().offset as usize;
    bytes[index + 3] ^= 0xFF;
    std::fs::write(&path, bytes).unwrap();
    let (p2, note) = ensure(dir.path(), ID.spec_hash, &mut make).unwrap();
    assert!(note.unwrap().contains("checksum"));
    assert_eq!(p2.key(3), b"a");
    assert_eq!(builds, 2);
}

#[test]
fn sorted_alone_orders_ycsb_and_random_keys_by_bytes() {
    for (kind, width) in [(KeyKind::Ycsb, 0), (KeyKind::Random, 24), (KeyKind::Random, 8)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.kvbplan");
        build_sorted(&path, ID, crate::job::KeyShape { kind, width }, 5000).unwrap();
        let p = PlanFile::open(&path).unwrap();
        let key = |r: u64| {
            let mut k = Vec::new();
            derived_key(kind, width, r, &mut k);
            k
        };
        let mut expect: Vec<u64> = (0..5000).collect();
        expect.sort_by_key(|&r| key(r));
        assert_eq!((0..5000).map(|i| p.sorted(i)).collect::<Vec<_>>(), expect, "{kind:?} {width}");
        assert!((0..5000).all(|i| p.rank(p.sorted(i)) == Some(i)), "RANK inverts SORTED: {kind:?} {width}");
        assert_eq!(p.header().distinct, 5000);
    }
}

#[test]
fn sorted_in_several_buckets_is_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let shape = crate::job::KeyShape { kind: KeyKind::Decimal, width: 3 };
    let (one, many) = (dir.path().join("one.kvbplan"), dir.path().join("many.kvbplan"));
    sorted::build_sorted_within(&one, ID, shape, 20_000, 1 << 30).unwrap();
    sorted::build_sorted_within(&many, ID, shape, 20_000, 16 * 2 * 1000).unwrap();
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&many).unwrap());
    let p = PlanFile::open(&many).unwrap();
    let mut expect: Vec<u64> = (0..20_000).collect();
    expect.sort_by_key(|&r| format!("{r:03}"));
    assert!((0..20_000).map(|i| p.sorted(i)).eq(expect.into_iter()), "SORTED is in key byte order");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "spill files are removed");
}

#[test]
fn digit_codes_keep_byte_order() {
    use sorted::digit_code;
    let keys: [&[u8]; 6] = [b"user-92", b"user1", b"user10", b"user100", b"user11", b"user9"];
    for w in keys.windows(2) {
        assert!(digit_code(w[0]) < digit_code(w[1]), "{:?}", w);
    }
}

#[test]
fn a_stored_dataset_refuses_a_plan_without_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.kvbplan");
    build_sorted(&path, ID, crate::job::KeyShape { kind: KeyKind::Ycsb, width: 0 }, 10).unwrap();
    let p = std::sync::Arc::new(PlanFile::open(&path).unwrap());
    let ds = Dataset {
        generator: Generator::Stored,
        key: crate::job::KeyShape { kind: KeyKind::Decimal, width: 0 },
        value: ValueShape { min: 0, max: 5, content: ValueContent::Printable, ..Default::default() },
        loaded: 10,
        total: 10,
        ordered: false,
        pool_seed: 1,
        value_seed: 2,
        open_records: 10,
        open_bytes: 0,
    };
    let err = Keys::new(&ds, Some(p.clone())).err().unwrap().to_string();
    assert!(err.contains("s.kvbplan") && err.contains("kind 1"), "{err}");
    assert!(Values::new(&ds, Some(p)).is_err());
}
