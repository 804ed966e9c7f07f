use super::*;
use crate::job::{KeyShape, ValueShape};

fn dataset(generator: Generator, min: u32, max: u32, content: ValueContent) -> Dataset {
    Dataset {
        generator,
        key: KeyShape { kind: KeyKind::Decimal, width: 16 },
        value: ValueShape { min, max, content, ..Default::default() },
        loaded: 1000,
        total: 1000,
        ordered: true,
        pool_seed: 11,
        value_seed: 12,
        open_records: 1000,
        open_bytes: 0,
    }
}

#[test]
fn rnd_is_splitmix64() {
    // The first output of SplitMix64 seeded with 0 (Vigna's reference implementation).
    assert_eq!(rnd(0, 0), 0xE220_A839_7B1D_CDAF);
    assert_eq!(rnd(0, 1), rnd(G, 0));
}

#[test]
fn below_and_unit_stay_in_range() {
    for i in 0..1000 {
        let x = rnd(5, i);
        assert!(below(x, 7) < 7);
        assert!((0.0..1.0).contains(&unit(x)));
    }
    assert_eq!(below(u64::MAX, 10), 9);
    assert_eq!(unit(u64::MAX), 1.0 - 2f64.powi(-53));
}

#[test]
fn ycsb_keys_are_ycsbs() {
    // YCSB's first key of a hashed load, as its load phase prints it.
    let mut k = Vec::new();
    derived_key(KeyKind::Ycsb, 0, 0, &mut k);
    assert_eq!(k, b"user6284781860667377211");
}

#[test]
fn decimal_keys_pad_and_never_truncate() {
    let mut k = Vec::new();
    derived_key(KeyKind::Decimal, 5, 42, &mut k);
    assert_eq!(k, b"00042");
    derived_key(KeyKind::Decimal, 2, 12345, &mut k);
    assert_eq!(k, b"12345");
    derived_key(KeyKind::Decimal, 0, u64::MAX, &mut k);
    assert_eq!(k, u64::MAX.to_string().as_bytes());
    derived_key(KeyKind::U32be, 0, 258, &mut k);
    assert_eq!(k, [0, 0, 1, 2]);
}

/// Wide decimal keys (16 digits, kvbench's default, take a copy of known length) are what
/// `format!` writes, at every digit-count boundary and for scattered records.
#[test]
fn wide_decimal_keys_are_what_format_writes() {
    let mut edges = vec![0u64, 1, 9, 10, 99, 100, 999, 1_000, 9_999, 10_000, 99_999, 100_000];
    for p in [8u32, 12, 15, 16] {
        let e = 10u64.pow(p);
        edges.extend([e - 1, e, e + 1]);
    }
    edges.extend((0..20_000u64).map(|i| rnd(7, i) % 10u64.pow(1 + (i % 17) as u32)));
    let mut k = Vec::new();
    for &x in &edges {
        for width in [16u32, 17, 20] {
            derived_key(KeyKind::Decimal, width, x, &mut k);
            assert_eq!(k, format!("{x:0w$}", w = width as usize).as_bytes(), "record {x}, width {width}");
        }
    }
}

#[test]
fn pool_is_printable_and_seeded() {
    let p = Pool::new(3, 10);
    assert_eq!(p.bytes().len(), POOL + 10);
    assert!(p.bytes().iter().all(|b| PRINTABLE.contains(b)));
    assert_ne!(Pool::new(4, 10).bytes()[..64], p.bytes()[..64]);
}

#[test]
fn values_match_what_they_build_and_nothing_else() {
    let sets = [
        dataset(Generator::Synthetic, 100, 100, ValueContent::Printable),
        dataset(Generator::Synthetic, 0, 37, ValueContent::Random),
        dataset(Generator::JsonDocs, 0, 50, ValueContent::Printable),
    ];
    let (mut v, mut next) = (Vec::new(), Vec::new());
    for ds in &sets {
        let values = Values::new(ds, None).unwrap();
        for r in 0..300 {
            values.value(r, r % 3, &mut v);
            values.value(r, r % 3 + 1, &mut next);
            assert!(values.matches(r, r % 3, &v), "{:?} r={r}", ds.generator);
            assert_eq!(values.matches(r, r % 3 + 1, &v), v == next, "another version matched");
            if let Some(last) = v.last_mut() {
                *last ^= 1;
                assert!(!values.matches(r, r % 3, &v));
            }
        }
    }
}

#[test]
fn value_lengths_cover_the_range() {
    let ds = dataset(Generator::Synthetic, 45, 55, ValueContent::Random);
    let values = Values::new(&ds, None).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let mut v = Vec::new();
    for r in 0..2000 {
        values.value(r, 0, &mut v);
        seen.insert(v.len());
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), (45..=55).collect::<Vec<_>>());
}

#[test]
fn json_docs_parse() {
    let ds = dataset(Generator::JsonDocs, 0, 2000, ValueContent::Printable);
    let values = Values::new(&ds, None).unwrap();
    let mut v = Vec::new();
    for r in 0..100 {
        values.value(r, 1, &mut v);
        let doc: serde_json::Value = serde_json::from_slice(&v).unwrap();
        assert_eq!(doc["created_at"].as_u64(), Some(1_700_000_000 + r));
    }
}

#[test]
fn perm_is_a_bijection() {
    for n in (1..300).chain([1000, 1023, 1024, 1025, 4096, 65_537, 100_003]) {
        let p = Perm::new(n, n * 7919);
        let mut seen = vec![false; n as usize];
        for i in 0..n {
            let x = p.at(i) as usize;
            assert!(!seen[x], "n={n}: {x} twice");
            seen[x] = true;
        }
    }
}

#[test]
fn perm_depends_on_its_key() {
    let (a, b) = (Perm::new(1000, 1), Perm::new(1000, 2));
    assert!((0..1000).filter(|&i| a.at(i) == b.at(i)).count() < 20);
}

#[test]
fn euler_maclaurin_zeta_agrees_with_summation_and_ycsb() {
    for (n, theta) in [(5_000u64, 0.99), (1_000_000, 0.99), (1_000_000, 0.5), (123_457, 0.8)] {
        let (a, b) = (zeta(n, theta), zeta_em(n, theta));
        assert!((a - b).abs() < 1e-11 * a, "n={n} theta={theta}: {a} vs {b}");
    }
    // YCSB's ZETAN was summed in doubles over 10^10 terms: 3.2e-11 above the accurate value.
    let em = zeta_em(YCSB_ITEM_COUNT, YCSB_THETA);
    assert!((em - YCSB_ZETAN).abs() < 1e-10, "{em} vs {YCSB_ZETAN}");
}

/// Draws of YCSB's ScrambledZipfianGenerator over `n` records.
fn scrambled(n: u64, draws: u64) -> Vec<u64> {
    let Dist::Zipfian { items, zetan, eta, theta, alpha, .. } = zipfian_dist(n, 0.99).unwrap() else { panic!() };
    let mut hits = vec![0u64; n as usize];
    for k in 0..draws {
        let z = zipf(unit(rnd(99, k)), items, zetan, eta, theta, alpha);
        hits[(ycsbhash(z) as u64 % n) as usize] += 1;
    }
    hits
}

#[test]
fn zipfian_top_share_is_ycsbs() {
    let draws = 1_000_000;
    let hits = scrambled(100_000, draws);
    let top = *hits.iter().max().unwrap() as f64 / draws as f64;
    // YCSB: the hottest key takes 1 / ZETAN = 3.78% of requests.
    assert!((top - 0.0378).abs() < 0.1 * 0.0378, "top-1 share {top}");
}

#[test]
fn zipfian_reaches_nearly_every_record() {
    // Computed, not sampled: every rank below ITEMS has a u-interval wider than 2^-53 (the
    // narrowest, 1 / (zetan * ITEMS^theta), is about 3e-12), so every rank is reachable, and
    // the ranks below 2 000 000 alone already hash onto these records.
    let n = 100_000u64;
    let mut hit = vec![false; n as usize];
    (0..2_000_000u64).for_each(|z| hit[(ycsbhash(z) as u64 % n) as usize] = true);
    let reached = hit.iter().filter(|&&h| h).count() as f64 / n as f64;
    assert!(reached >= 0.99, "reachable share {reached}");
}

#[test]
fn latest_favours_the_newest_record() {
    let Dist::Latest { count, zetan, eta, theta, alpha, .. } = latest_dist(1000, 999, 0.99).unwrap() else { panic!() };
    let mut g = Latest::new(count, zetan, eta, theta, alpha);
    let mut hits = vec![0u64; 1000];
    for k in 0..100_000 {
        hits[g.next(unit(rnd(5, k)), 999) as usize] += 1;
    }
    let top = (0..1000).max_by_key(|&r| hits[r]).unwrap();
    assert_eq!(top, 999);
    assert!(hits[999] > hits[998] && hits[998] > hits[990] && hits[990] > hits[500]);
}

#[test]
fn latest_grows_zeta_as_ycsb_does() {
    let Dist::Latest { count, zetan, eta, theta, alpha, .. } = latest_dist(2000, 999, 0.99).unwrap() else { panic!() };
    let mut g = Latest::new(count, zetan, eta, theta, alpha);
    g.next(0.5, 1500);
    assert_eq!(g.zetan(), zeta(1500, 0.99));
    assert!(g.next(0.999_999, 1500) <= 1500);
}

#[test]
fn thresholds_are_exact_binary_fractions() {
    assert_eq!(thresholds(&[0.5, 0.5]).unwrap(), [1 << 63, u64::MAX]);
    assert_eq!(thresholds(&[0.95, 0.05]).unwrap(), [17_524_406_870_024_074_035, u64::MAX]);
    assert_eq!(thresholds(&[50.0, 0.0, 50.0]).unwrap(), [1 << 63, 1 << 63, u64::MAX]);
    assert!(thresholds(&[0.0]).is_err());
    assert!(thresholds(&[-1.0, 2.0]).is_err());
    assert!(thresholds(&[f64::NAN]).is_err());
}

fn fields_dataset(fields: u32, content: ValueContent, write_all_fields: bool) -> Dataset {
    let mut ds = dataset(Generator::Synthetic, 100, 100, content);
    (ds.value.fields, ds.value.write_all_fields) = (fields, write_all_fields);
    ds
}

/// The fields of a serialised value: (name, bytes) in order.
fn split_fields(mut b: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let n = u32::from_be_bytes(b[..4].try_into().unwrap()) as usize;
        let name = String::from_utf8(b[4..4 + n].to_vec()).unwrap();
        b = &b[4 + n..];
        let len = u32::from_be_bytes(b[..4].try_into().unwrap()) as usize;
        out.push((name, b[4..4 + len].to_vec()));
        b = &b[4 + len..];
    }
    out
}

#[test]
fn ycsb_records_hold_ten_named_fields_of_100_bytes() {
    let ds = fields_dataset(10, ValueContent::Printable, false);
    let values = Values::new(&ds, None).unwrap();
    let mut v = Vec::new();
    values.value(7, 0, &mut v);
    assert_eq!(v.len() as u64, ds.value.encoded_len(100));
    assert_eq!(v.len(), 1140, "10 x (4 + 6 + 4 + 100)");
    let fields = split_fields(&v);
    let names: Vec<&str> = fields.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        ["field0", "field1", "field2", "field3", "field4", "field5", "field6", "field7", "field8", "field9"]
    );
    assert!(fields.iter().all(|f| f.1.len() == 100));
    assert!(fields.windows(2).all(|w| w[0].1 != w[1].1), "fields differ");
}

#[test]
fn an_update_rewrites_exactly_one_field() {
    for content in [ValueContent::Printable, ValueContent::Random] {
        let values = Values::new(&fields_dataset(10, content, false), None).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for r in [0u64, 5, 99] {
            for v in 1..40 {
                values.value(r, v - 1, &mut a);
                values.value(r, v, &mut b);
                let (fa, fb) = (split_fields(&a), split_fields(&b));
                let changed: Vec<usize> = (0..10).filter(|&i| fa[i] != fb[i]).collect();
                assert_eq!(changed, [values.written_field(r, v) as usize], "r {r} v {v}");
            }
        }
    }
}

#[test]
fn write_all_fields_rewrites_every_field() {
    let values = Values::new(&fields_dataset(4, ValueContent::Printable, true), None).unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    values.value(3, 1, &mut a);
    values.value(3, 2, &mut b);
    let (fa, fb) = (split_fields(&a), split_fields(&b));
    assert!((0..4).all(|i| fa[i].1 != fb[i].1));
}

#[test]
fn verification_checks_every_field() {
    let values = Values::new(&fields_dataset(10, ValueContent::Printable, false), None).unwrap();
    let mut v = Vec::new();
    values.value(42, 6, &mut v);
    assert!(values.matches(42, 6, &v));
    assert!(!values.matches(42, 5, &v), "an older version differs in a field");
    for at in (0..v.len()).step_by(37).chain([v.len() - 1]) {
        let mut bad = v.clone();
        bad[at] ^= 1;
        assert!(!values.matches(42, 6, &bad), "byte {at} flipped");
    }
    assert!(!values.matches(42, 6, &v[..v.len() - 1]));
    let mut longer = v.clone();
    longer.push(b'x');
    assert!(!values.matches(42, 6, &longer));
}

/// What a worker fetches ahead of a check, or a check fetches itself, is what the check compares
/// with: each field's bytes, for every version (fields written at different versions come from
/// different draws).
#[test]
fn the_sources_of_a_fields_check_are_the_fields_it_compares() {
    let values = Values::new(&fields_dataset(10, ValueContent::Printable, false), None).unwrap();
    let mut v = Vec::new();
    for version in [0, 1, 6] {
        values.value(42, version, &mut v);
        let mut sources = Vec::new();
        values.expected(42, version).each_source(|s| sources.push(s.to_vec()));
        let fields: Vec<Vec<u8>> = split_fields(&v).into_iter().map(|f| f.1).collect();
        assert_eq!(sources, fields, "version {version}");
        // A check that fetches its own bytes hands over the same ones, every one before it
        // compares (a wrong value is known at its first field), and still judges.
        let mut fetched = Vec::new();
        let mut wrong = v.clone();
        *wrong.last_mut().unwrap() ^= 1;
        assert!(!values.expected(42, version).matches_fetched(&wrong, |s| fetched.push(s.to_vec())));
        assert_eq!(fetched, fields, "version {version}");
        assert!(values.expected(42, version).matches_fetched(&v, |_| {}));
    }
    let random = Values::new(&fields_dataset(10, ValueContent::Random, false), None).unwrap();
    random.expected(42, 0).each_source(|_| panic!("random bytes are computed, not stored"));
    let mut v = Vec::new();
    random.value(42, 0, &mut v);
    assert!(random.expected(42, 0).matches_fetched(&v, |_| panic!("random bytes are computed, not stored")));
}

/// The model's size estimate (`encoded_len`, which the size guard reads) counts the field
/// headers `Values` writes, names of two digits included.
#[test]
fn a_value_of_the_most_fields_is_as_long_as_its_estimate() {
    let ds = fields_dataset(MAX_FIELDS as u32, ValueContent::Printable, false);
    let mut v = Vec::new();
    Values::new(&ds, None).unwrap().value(3, 0, &mut v);
    assert_eq!(v.len() as u64, ds.value.encoded_len(100));
}

#[test]
fn random_keys_have_their_width_and_never_repeat() {
    let mut k = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in 0..10_000 {
        derived_key(KeyKind::Random, 24, r, &mut k);
        assert_eq!(k.len(), 24);
        assert!(seen.insert(k.clone()), "record {r}'s key repeats an earlier one");
    }
    derived_key(KeyKind::Random, 11, 7, &mut k);
    assert_eq!(k[..8], rnd(7, 0).to_be_bytes());
    assert_eq!(k[8..], rnd(7, 1).to_be_bytes()[..3]);
}

#[test]
fn db_bench_keys_are_the_big_endian_number_padded_with_zero_characters() {
    let mut k = Vec::new();
    derived_key(KeyKind::DbBench, 16, 0x0102, &mut k);
    assert_eq!(k, b"\0\0\0\0\0\0\x01\x0200000000");
    let mut g = Vec::new();
    crate::gen::make_key(KeyKind::DbBench, 16, 0x0102, &mut g);
    assert_eq!(g, k, "the plan file's keys and the derived keys agree");
    derived_key(KeyKind::DbBench, 8, 0x0102, &mut k);
    assert_eq!(k, 0x0102u64.to_be_bytes());
    let mut prev = Vec::new();
    for r in [0, 1, 255, 256, 65_535, 1 << 40] {
        derived_key(KeyKind::DbBench, 16, r, &mut k);
        assert!(k > prev, "record {r}'s key sorts after the one before: key order is record order");
        prev = k.clone();
    }
}
