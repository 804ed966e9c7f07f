//! Fuzzing the trace readers: each file of the corpus (`tests/fuzz-corpus/trace`, one capture
//! per format) with bytes changed, inserted or cut, read in every format and in the sniffed
//! one: every op or a `TraceError` naming the file, never a panic. Cases: `KVBENCH_FUZZ_CASES`
//! (a few hundred in `make test`; `bench/fuzz.sh` runs many more).

use std::path::PathBuf;

use kvbench_trace::Format;
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("KVBENCH_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64)
}

fn corpus() -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz-corpus/trace");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let all: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert!(all.len() >= 4, "one capture per format in {}", dir.display());
    all
}

/// `bytes` with up to three edits: a byte replaced, a byte inserted, or the rest cut.
fn mutate(mut bytes: Vec<u8>, edits: &[(prop::sample::Index, u8, u8)]) -> Vec<u8> {
    for (at, b, how) in edits {
        let i = at.index(bytes.len().max(1)).min(bytes.len());
        match how % 3 {
            0 if i < bytes.len() => bytes[i] = *b,
            1 => bytes.insert(i, *b),
            _ => bytes.truncate(i),
        }
    }
    bytes
}

/// Reads the whole trace (bounded) in `format`; an error must name the file.
fn read_all(path: &std::path::Path, format: Option<Format>) -> Result<(), TestCaseError> {
    let name = path.display().to_string();
    let mut reader = match kvbench_trace::open(path, format) {
        Ok(r) => r,
        Err(e) => {
            prop_assert!(e.to_string().contains(&name), "{e}");
            return Ok(());
        }
    };
    for item in reader.by_ref().take(100_000) {
        if let Err(e) = item {
            prop_assert!(e.to_string().contains(&name), "{e}");
            break;
        }
    }
    let _ = (reader.skipped().len(), reader.bytes_read(), reader.hash());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_trace_readers_never_panic_on_a_changed_capture(
        which in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), any::<u8>()), 0..4),
    ) {
        let all = corpus();
        let bytes = mutate(all[which.index(all.len())].clone(), &edits);
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("trace.bin");
        std::fs::write(&p, &bytes).unwrap();
        read_all(&p, None)?;
        for f in Format::ALL {
            read_all(&p, Some(f))?;
        }
    }

    #[test]
    fn the_trace_readers_never_panic_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("trace.bin");
        std::fs::write(&p, &bytes).unwrap();
        for f in Format::ALL {
            read_all(&p, Some(f))?;
        }
    }
}

/// The corpus itself reads back: each capture in its own format, with operations.
#[test]
fn the_corpus_captures_read_in_their_formats() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz-corpus/trace");
    for (file, format) in [
        ("redis-monitor.txt", Format::RedisMonitor),
        ("memcached-watch.txt", Format::MemcachedWatch),
        ("cache.csv", Format::CacheCsv),
        ("rocksdb.trace", Format::Rocksdb),
    ] {
        let p = dir.join(file);
        let ops: Vec<_> = kvbench_trace::open(&p, None).unwrap().collect::<Result<_, _>>().unwrap();
        assert!(!ops.is_empty(), "{file}");
        assert_eq!(kvbench_trace::open(&p, None).unwrap().format(), format, "{file}");
    }
}
