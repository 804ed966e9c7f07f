//! Fuzzing the request side of both protocols below hyper's HTTP framing (hyper parses the
//! request line and headers; every byte after it is kvbench's): any method, path, query and
//! body through [`super::route`], on a real memory engine, answers a status and never panics;
//! the binary bodies' parsers alone on bodies cut or changed from valid ones. Cases:
//! `KVBENCH_FUZZ_CASES` (a few hundred in `make test`; `bench/fuzz.sh` runs many more); the
//! seeds are `tests/fuzz-corpus/serve`.

use std::path::PathBuf;
use std::sync::{Mutex, RwLock};
use std::time::Duration;

use proptest::prelude::*;

use super::*;

fn cases() -> u32 {
    std::env::var("KVBENCH_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

/// A server's state over the memory engine, with small limits (so that limits are reached).
fn state(root: &Path) -> State {
    let desc = match kvbench_engines::find("memory") {
        Some(kvbench_engines::Entry::Ready(d)) => d,
        _ => panic!("the memory engine is built"),
    };
    let req = OpenRequest {
        dir: root.to_path_buf(),
        options: BTreeMap::new(),
        sync: SyncMode::None,
        mode: OpenMode::ReadWrite,
        expected_records: 100,
        expected_bytes: 1 << 20,
    };
    let engine = open_engine(desc, &req, root).unwrap();
    State {
        desc,
        root: root.to_path_buf(),
        engine: RwLock::new(Some(engine)),
        open_dir: Mutex::new(Some(root.to_path_buf())),
        incr: Mutex::new(()),
        token: None,
        limits: Limits {
            max_body: 1 << 16,
            max_keys: 64,
            max_reply: 1 << 16,
            reply_budget: 1 << 18,
            read_timeout: Duration::from_secs(1),
        },
        exec: Exec::Inline,
        stats: net::Counters::default(),
        replies: ledger::Ledger::new(1 << 18),
        say: |_| {},
    }
}

/// The corpus: request lines (`METHOD TARGET`) and the body after a blank line.
fn corpus() -> Vec<(String, String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz-corpus/serve");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let all: Vec<_> = files
        .iter()
        .map(|f| {
            let bytes = std::fs::read(f).unwrap();
            let at = bytes.windows(2).position(|w| w == b"\n\n").unwrap_or(bytes.len());
            let head = String::from_utf8_lossy(&bytes[..at]).into_owned();
            let (method, target) = head.trim().split_once(' ').unwrap_or(("GET", "/"));
            (method.to_string(), target.to_string(), bytes.get(at + 2..).unwrap_or_default().to_vec())
        })
        .collect();
    assert!(all.len() >= 6, "requests in {}", dir.display());
    all
}

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

fn request(st: &State, method: &str, target: &str, body: &[u8], text: bool) -> u16 {
    let mut b = hyper::Request::builder().method(method).uri(target);
    if text {
        b = b.header(hyper::header::CONTENT_TYPE, "text/plain");
    }
    match b.body(()) {
        Ok(req) => route(st, &req.into_parts().0, body).status,
        Err(_) => 400, // hyper refuses it before kvbench sees it
    }
}

type Edits = Vec<(prop::sample::Index, u8, u8)>;

fn edits() -> impl Strategy<Value = Edits> {
    prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), any::<u8>()), 0..4)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    /// A corpus request with its target and body changed: a status, never a panic; the reply
    /// budget is all given back once the replies are dropped.
    #[test]
    fn requests_changed_from_valid_ones_answer_a_status(
        which in any::<prop::sample::Index>(), target_edits in edits(), body_edits in edits(), text in any::<bool>(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let st = state(tmp.path());
        let all = corpus();
        let (method, target, body) = &all[which.index(all.len())];
        let target = String::from_utf8_lossy(&mutate(target.clone().into_bytes(), &target_edits)).into_owned();
        let body = mutate(body.clone(), &body_edits);
        let status = request(&st, method, &target, &body, text);
        prop_assert!((200..600).contains(&status), "{status}");
        prop_assert_eq!(st.replies.used(), 0);
    }

    /// Arbitrary bodies through every binary and text body parser.
    #[test]
    fn arbitrary_bodies_answer_a_status(body in prop::collection::vec(any::<u8>(), 0..256), text in any::<bool>()) {
        let tmp = tempfile::tempdir().unwrap();
        let st = state(tmp.path());
        for path in ["/kv/mget", "/kv/put", "/kv/delete", "/kv/write", "/set", "/mset", "/del", "/mdel", "/incr", "/open"] {
            let status = request(&st, "POST", path, &body, text);
            prop_assert!((200..600).contains(&status), "{path}: {status}");
        }
    }
}
