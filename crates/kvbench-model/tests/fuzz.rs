//! Fuzzing the byte readers of the model: HdrHistogram encodings (base64, the V2 cookie and
//! length, the zlib stream, the header inside it and the counts payload) and result files.
//! Seeds: `tests/fuzz-corpus/hdr` (the histograms of a real result) and
//! `tests/fuzz-corpus/result`. Every input decodes, or is refused with an error; a decoded
//! histogram holds at most `MAX_COUNT` samples and summarises and encodes without a panic.
//! Cases: `KVBENCH_FUZZ_CASES` (a few hundred in `make test`; `bench/fuzz.sh` runs many more).

use std::io::{Read, Write};
use std::path::PathBuf;

use base64::Engine as _;
use kvbench_model::histogram::{decode_histogram, encode_histogram, summarize, MAX_COUNT};
use kvbench_model::result::RunResult;
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("KVBENCH_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

fn corpus_dir(what: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz-corpus").join(what)
}

fn histograms() -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(corpus_dir("hdr").join("kvbench.txt")).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    text.lines().filter(|l| !l.is_empty()).map(|l| b64.decode(l).unwrap()).collect()
}

type Edits = Vec<(prop::sample::Index, u8, u8)>;

fn edits() -> impl Strategy<Value = Edits> {
    prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), any::<u8>()), 1..5)
}

/// `bytes` with each edit: a byte replaced, a byte inserted, a byte deleted, or the rest cut.
fn mutate(mut bytes: Vec<u8>, edits: &[(prop::sample::Index, u8, u8)]) -> Vec<u8> {
    for (at, b, how) in edits {
        let i = at.index(bytes.len().max(1)).min(bytes.len());
        match how % 4 {
            0 if i < bytes.len() => bytes[i] = *b,
            1 => bytes.insert(i, *b),
            2 if i < bytes.len() => {
                bytes.remove(i);
            }
            _ => bytes.truncate(i),
        }
    }
    bytes
}

/// A V2 deflate encoding whose inflated header and counts are `inner`, well framed.
fn deflated(inner: &[u8]) -> String {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(inner).unwrap();
    let z = z.finish().unwrap();
    let mut out = 0x1c84_9314u32.to_be_bytes().to_vec();
    out.extend_from_slice(&(z.len() as u32).to_be_bytes());
    out.extend_from_slice(&z);
    base64::engine::general_purpose::STANDARD.encode(out)
}

fn inflated(encoded: &[u8]) -> Vec<u8> {
    let mut inner = Vec::new();
    flate2::read::ZlibDecoder::new(&encoded[8..]).read_to_end(&mut inner).unwrap();
    inner
}

/// Decodes `text`: refused, or a histogram of at most MAX_COUNT samples that summarises and
/// encodes again.
fn decodes_or_refuses(text: &str) -> Result<(), TestCaseError> {
    if let Ok(h) = decode_histogram(text) {
        prop_assert!(h.len() <= MAX_COUNT);
        if let Some(l) = summarize(&h) {
            prop_assert!(l.min_ns <= l.max_ns);
            prop_assert_eq!(decode_histogram(&encode_histogram(&h)).unwrap().len(), h.len());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    /// The encoding's outer bytes changed (cookie, length, zlib stream), and its base64 text.
    #[test]
    fn hdr_encodings_changed_outside_never_panic(which in any::<prop::sample::Index>(), e in edits(), t in edits()) {
        let all = histograms();
        let bytes = mutate(all[which.index(all.len())].clone(), &e);
        let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
        decodes_or_refuses(&text)?;
        decodes_or_refuses(&String::from_utf8_lossy(&mutate(text.into_bytes(), &t)))?;
    }

    /// The inflated header and counts changed, re-framed well: what a crafted file can hold.
    #[test]
    fn hdr_headers_and_counts_changed_inside_never_panic(which in any::<prop::sample::Index>(), e in edits()) {
        let all = histograms();
        let inner = mutate(inflated(&all[which.index(all.len())]), &e);
        decodes_or_refuses(&deflated(&inner))?;
    }
}

proptest! {
    // An eighth of the cases: each reads a whole file and decodes its histograms.
    #![proptest_config(ProptestConfig { cases: (cases() / 8).max(1), failure_persistence: None, ..ProptestConfig::default() })]

    /// A real result file with bytes changed: read or refused, never a panic; a file that
    /// reads has every histogram decoding or refused.
    #[test]
    fn result_files_changed_never_panic(e in edits()) {
        let good = std::fs::read(corpus_dir("result").join("quick-two-rows.json")).unwrap();
        let text = String::from_utf8_lossy(&mutate(good, &e)).into_owned();
        if let Ok(r) = RunResult::from_json(&text) {
            for p in r.engines.iter().flat_map(|e| &e.phases) {
                for h in p.latency.iter().map(|l| &l.hdr).chain(p.intervals.iter().map(|i| &i.hdr)) {
                    decodes_or_refuses(h)?;
                }
            }
        }
    }
}

#[test]
fn the_corpus_reads() {
    assert!(histograms().iter().all(|b| b.len() > 8));
    let text = std::fs::read_to_string(corpus_dir("result").join("quick-two-rows.json")).unwrap();
    RunResult::from_json(&text).unwrap();
}
