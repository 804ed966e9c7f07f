//! What the PostgreSQL test files share: kvbench's server, started or skipped, and the engine
//! opened on it with given options.

use std::collections::BTreeMap;
use std::path::Path;

use kvbench_engines::{find, Entry};
use kvbench_model::engine::{Engine, EngineDescriptor, OpenArgs, OpenMode, Options, RunningServer, SyncMode};

pub fn descriptor() -> &'static EngineDescriptor {
    match find("postgres") {
        Some(Entry::Ready(d)) => d,
        _ => panic!("engine postgres was not built"),
    }
}

/// kvbench's PostgreSQL server, or None (skipped) when it is not installed and
/// KVBENCH_ALLOW_MISSING is set.
pub fn server(dir: &Path) -> Option<Box<dyn RunningServer>> {
    match (descriptor().start_server.expect("a server engine"))(dir) {
        Ok(s) => Some(s),
        Err(e) if std::env::var_os("KVBENCH_ALLOW_MISSING").is_some() && e.contains("not found") => {
            eprintln!("skipping postgres: {e}");
            None
        }
        Err(e) => panic!("postgres did not start: {e}"),
    }
}

/// The engine on the server at `url` with the `given` options, prepared (its writer's
/// connection made) as a run prepares it before the timed phases.
pub fn open(dir: &Path, url: &str, given: &BTreeMap<String, serde_json::Value>) -> Box<dyn Engine> {
    let d = descriptor();
    let options = Options::parse("postgres", d.options, given).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let args = OpenArgs {
        dir,
        options: &options,
        sync: SyncMode::None,
        mode: OpenMode::ReadWrite,
        expected_records: 0,
        expected_bytes: 0,
        url: Some(url),
        token: None,
    };
    let mut e = (d.open)(&args).unwrap();
    e.prepare().unwrap();
    e
}
