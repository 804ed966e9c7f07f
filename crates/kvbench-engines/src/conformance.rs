//! The conformance suite: every engine must behave like the `memory` oracle. Used by
//! `tests/conformance.rs` (one test per engine) and by `kvbench selftest`.

use std::collections::BTreeMap;
use std::path::Path;

use kvbench_model::engine::{Capabilities, Engine, EngineDescriptor, OpenArgs, OpenMode, Options, SyncMode, WriteOp};

type Oracle = BTreeMap<Vec<u8>, Vec<u8>>;

/// Where a server engine's server is: its url and the credential kvbench generated.
#[derive(Debug, Clone, Copy, Default)]
pub struct Target<'a> {
    pub url: Option<&'a str>,
    pub token: Option<&'a str>,
}

fn args<'a>(dir: &'a Path, options: &'a Options, sync: SyncMode, mode: OpenMode, target: Target<'a>) -> OpenArgs<'a> {
    OpenArgs {
        dir,
        options,
        sync,
        mode,
        expected_records: 1000,
        expected_bytes: 1 << 20,
        url: target.url,
        token: target.token,
    }
}

/// Open and prepare (the runner's `open` and `prepare` steps); `what` names the open in errors.
fn open(desc: &EngineDescriptor, args: &OpenArgs<'_>, what: &str) -> Result<Box<dyn Engine>, String> {
    let mut e = (desc.open)(args).map_err(|e| format!("{what}: {e}"))?;
    e.prepare().map_err(|e| format!("prepare after {what}: {e}"))?;
    Ok(e)
}

fn key(index: u32) -> Vec<u8> {
    // Binary keys with a zero byte inside, in an order that differs from insertion order.
    let mut k = b"k\0".to_vec();
    k.extend_from_slice(&(index.wrapping_mul(2654435761) % 100_000).to_be_bytes());
    k.extend_from_slice(&index.to_be_bytes());
    k
}

fn value(index: u32, version: u32) -> Vec<u8> {
    let len = (index * 37 + version * 11) % 300;
    (0..len).map(|j| (j ^ index ^ version) as u8).collect()
}

fn check_reads(engine: &dyn Engine, oracle: &Oracle, probe: &[Vec<u8>], caps: Capabilities) -> Result<(), String> {
    let mut r = engine.reader().map_err(|e| format!("reader: {e}"))?;
    let mut buf = Vec::new();
    for k in probe {
        let found = r.get(k, &mut buf).map_err(|e| format!("get {k:?}: {e}"))?;
        let want = oracle.get(k);
        if found != want.is_some() || (found && Some(&buf) != want) {
            return Err(format!("get {k:?}: found={found} value={buf:?}, oracle has {want:?}"));
        }
        let borrowed = r.get_ref(k, &mut buf).map_err(|e| format!("get_ref {k:?}: {e}"))?;
        if borrowed != want.map(|v| &v[..]) {
            return Err(format!("get_ref {k:?}: got {borrowed:?}, oracle has {want:?}"));
        }
        if r.reads_in_place() {
            let shared = r.get_shared(k).map_err(|e| format!("get_shared {k:?}: {e}"))?;
            if shared != want.map(|v| &v[..]) {
                return Err(format!("get_shared {k:?}: got {shared:?}, oracle has {want:?}"));
            }
        }
    }
    let keys: Vec<&[u8]> = probe.iter().map(|k| &k[..]).collect();
    let mut out = Vec::new();
    r.multi_get(&keys, &mut out).map_err(|e| format!("multi_get: {e}"))?;
    if out.len() != keys.len() {
        return Err(format!("multi_get returned {} values for {} keys", out.len(), keys.len()));
    }
    for (k, got) in keys.iter().zip(&out) {
        if got.as_ref() != oracle.get(*k) {
            return Err(format!("multi_get {k:?}: got {got:?}, oracle has {:?}", oracle.get(*k)));
        }
    }
    if caps.ordered_scan {
        let mut got = Vec::new();
        r.scan(None, usize::MAX, &mut |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            true
        })
        .map_err(|e| format!("full scan: {e}"))?;
        let want: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        if got != want {
            return Err(format!(
                "full scan: {} records, oracle has {} (or order/values differ)",
                got.len(),
                want.len()
            ));
        }
        if let Some((mid, _)) = oracle.iter().nth(oracle.len() / 2) {
            let mut got = Vec::new();
            let n = r
                .scan(Some(mid), 7, &mut |k, _| {
                    got.push(k.to_vec());
                    true
                })
                .map_err(|e| format!("scan from middle: {e}"))?;
            let want: Vec<_> = oracle.range(mid.clone()..).take(7).map(|(k, _)| k.clone()).collect();
            if got != want || n != want.len() {
                return Err(format!("scan of 7 from the middle: got {got:?}, want {want:?}"));
            }
        }
    }
    Ok(())
}

/// The engine `name` for a test: its descriptor; or None, with a note, when it is missing or
/// unavailable here and KVBENCH_ALLOW_MISSING is set; otherwise a panic that says why (CI
/// installs every engine).
pub fn engine_or_skip(name: &str) -> Option<&'static EngineDescriptor> {
    let why = match crate::find(name) {
        Some(crate::Entry::Ready(d)) => match (d.available)() {
            Ok(()) => return Some(d),
            Err(why) => why,
        },
        Some(crate::Entry::Missing { why, .. }) => why,
        None => panic!("engine {name} is not in the registry"),
    };
    if std::env::var_os("KVBENCH_ALLOW_MISSING").is_some() {
        eprintln!("skipping {name}: {why}");
        return None;
    }
    panic!("engine {name} unavailable: {why}");
}

/// Run the whole suite on one engine in `dir` (which must be empty).
pub fn run(desc: &EngineDescriptor, dir: &Path, url: Option<&str>) -> Result<(), String> {
    run_on(desc, dir, Target { url, token: None })
}

/// [`run`] against a server that needs a credential.
/// A server engine gives each thread a writer of its own (its own connection): two threads
/// write at once through theirs, and a reader then sees every write.
fn writers_on_threads(engine: &dyn Engine, oracle: &mut Oracle) -> Result<(), String> {
    let keys = |t: u32| (0..20u32).map(move |i| (key(300 + 20 * t + i), value(i, 2)));
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..2u32)
            .map(|t| {
                s.spawn(move || -> Result<(), String> {
                    let mut w = engine
                        .writer()
                        .map_err(|e| e.to_string())?
                        .ok_or("a server engine without writers per thread")?;
                    for (k, v) in keys(t) {
                        w.write(&[WriteOp { key: &k, value: Some(&v) }])
                            .map_err(|e| format!("thread's writer: {e}"))?;
                    }
                    Ok(())
                })
            })
            .collect();
        threads.into_iter().try_for_each(|h| h.join().unwrap_or_else(|_| Err("a writer thread panicked".into())))
    })?;
    let mut r = engine.reader().map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    for (k, v) in (0..2).flat_map(keys) {
        if !r.get(&k, &mut buf).map_err(|e| e.to_string())? || buf != v {
            return Err("a write through a thread's own writer is not read back".into());
        }
        oracle.insert(k, v);
    }
    Ok(())
}

pub fn run_on(desc: &EngineDescriptor, dir: &Path, target: Target<'_>) -> Result<(), String> {
    let caps = desc.capabilities;
    let options = Options::parse(desc.name, desc.options, &BTreeMap::new())?;
    let mut oracle = Oracle::new();
    let probe: Vec<Vec<u8>> = (0..260).map(key).collect();

    let mut e = open(desc, &args(dir, &options, SyncMode::Commit, OpenMode::ReadWrite, target), "open")?;
    // Load 200 records in batches of 50, and one with an empty value.
    for chunk in (0..200u32).collect::<Vec<_>>().chunks(50) {
        let vals: Vec<(Vec<u8>, Vec<u8>)> = chunk.iter().map(|&i| (key(i), value(i, 0))).collect();
        let batch: Vec<WriteOp<'_>> = vals.iter().map(|(k, v)| WriteOp { key: k, value: Some(v) }).collect();
        e.write(&batch).map_err(|e| format!("write batch: {e}"))?;
        for (k, v) in vals {
            oracle.insert(k, v);
        }
    }
    e.write(&[WriteOp { key: &key(200), value: Some(b"") }]).map_err(|e| format!("write empty value: {e}"))?;
    oracle.insert(key(200), Vec::new());
    e.finish_load().map_err(|e| format!("finish_load: {e}"))?;
    check_reads(e.as_ref(), &oracle, &probe, caps).map_err(|m| format!("after load: {m}"))?;

    if !caps.build_once {
        for i in (0..200u32).step_by(3) {
            e.write(&[WriteOp { key: &key(i), value: Some(&value(i, 1)) }]).map_err(|e| format!("overwrite: {e}"))?;
            oracle.insert(key(i), value(i, 1));
        }
        if caps.delete {
            for i in (0..200u32).step_by(7) {
                e.write(&[WriteOp { key: &key(i), value: None }]).map_err(|e| format!("delete: {e}"))?;
                oracle.remove(&key(i));
            }
            // Deleting an absent key is not an error.
            e.write(&[WriteOp { key: &key(9999), value: None }]).map_err(|e| format!("delete absent key: {e}"))?;
        }
        check_reads(e.as_ref(), &oracle, &probe, caps).map_err(|m| format!("after overwrite/delete: {m}"))?;
        // A reader refreshed after a write sees it.
        let mut r = e.reader().map_err(|e| e.to_string())?;
        e.write(&[WriteOp { key: &key(1), value: Some(b"fresh") }]).map_err(|e| format!("write: {e}"))?;
        oracle.insert(key(1), b"fresh".to_vec());
        r.refresh().map_err(|e| format!("refresh: {e}"))?;
        let mut buf = Vec::new();
        if !r.get(&key(1), &mut buf).map_err(|e| e.to_string())? || buf != b"fresh" {
            return Err("a refreshed reader does not see a write made after it was created".into());
        }
        if desc.start_server.is_some() {
            writers_on_threads(e.as_ref(), &mut oracle)?;
        }
    }
    e.close().map_err(|e| format!("close: {e}"))?;

    if caps.persistent {
        let e = open(desc, &args(dir, &options, SyncMode::None, OpenMode::ReadWrite, target), "reopen")?;
        check_reads(e.as_ref(), &oracle, &probe, caps).map_err(|m| format!("after reopen: {m}"))?;
        e.close().map_err(|e| format!("close: {e}"))?;
        if caps.read_only_open {
            let e = open(desc, &args(dir, &options, SyncMode::None, OpenMode::ReadOnly, target), "read-only open")?;
            check_reads(e.as_ref(), &oracle, &probe, caps).map_err(|m| format!("read-only: {m}"))?;
            e.close().map_err(|e| format!("close: {e}"))?;
        }
        if caps.secondary_open {
            let e = open(desc, &args(dir, &options, SyncMode::None, OpenMode::Secondary, target), "secondary open")?;
            check_reads(e.as_ref(), &oracle, &probe, caps).map_err(|m| format!("secondary: {m}"))?;
            e.close().map_err(|e| format!("close: {e}"))?;
        }
    }
    Ok(())
}

/// Every sync mode opens and writes (durability knobs must not break the engine).
pub fn sync_modes(desc: &EngineDescriptor, root: &Path, url: Option<&str>) -> Result<(), String> {
    sync_modes_on(desc, root, Target { url, token: None })
}

/// [`sync_modes`] against a server that needs a credential.
pub fn sync_modes_on(desc: &EngineDescriptor, root: &Path, target: Target<'_>) -> Result<(), String> {
    let options = Options::parse(desc.name, desc.options, &BTreeMap::new())?;
    for (n, sync) in [SyncMode::None, SyncMode::Commit, SyncMode::Always].into_iter().enumerate() {
        let dir = root.join(format!("sync{n}"));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let mut e = open(desc, &args(&dir, &options, sync, OpenMode::ReadWrite, target), &format!("open sync={sync}"))?;
        e.write(&[WriteOp { key: b"a", value: Some(b"1") }, WriteOp { key: b"b", value: Some(b"2") }])
            .map_err(|e| format!("write sync={sync}: {e}"))?;
        e.finish_load().map_err(|e| format!("finish_load sync={sync}: {e}"))?;
        let mut buf = Vec::new();
        let found = e.reader().and_then(|mut r| r.get(b"b", &mut buf)).map_err(|e| format!("get sync={sync}: {e}"))?;
        if !found || buf != b"2" {
            return Err(format!("sync={sync}: read back {buf:?}"));
        }
        e.close().map_err(|e| format!("close sync={sync}: {e}"))?;
    }
    Ok(())
}
