//! The servers a run starts (memcached, Redis, PostgreSQL): a pool owned by the run, which
//! starts each server once on first use and stops them all, and removes their directories, when
//! it is dropped — on success, on failure and after Ctrl-C alike.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kvbench_model::engine::{Options, RunningServer};
use kvbench_model::scenario::Variant;

use crate::catalog::Resolved;

/// A server started, or why not.
type StartResult = Result<Box<dyn RunningServer>, String>;

/// What a job needs to reach a server the pool started.
pub struct Access {
    pub url: String,
    /// The credential the server demands, if any (servers on a private socket need none).
    pub token: Option<String>,
    pub info: BTreeMap<String, String>,
    /// The server's own network namespace, which the row's worker joins.
    pub netns: Option<i32>,
}

struct Started {
    name: String,
    server: Box<dyn RunningServer>,
    dir: PathBuf,
}

pub struct ServerPool {
    /// The run's private directory: each server gets `server-NAME` inside.
    root: PathBuf,
    keep_dirs: bool,
    started: Vec<Started>,
}

impl ServerPool {
    pub fn new(root: &Path, keep_dirs: bool) -> Self {
        ServerPool { root: root.to_path_buf(), keep_dirs, started: Vec::new() }
    }

    /// The running server of engine `name`, started now if this run has none yet.
    pub fn get(&mut self, name: &str, start: &dyn Fn(&Path) -> StartResult) -> Result<Access, String> {
        if let Some(s) = self.started.iter().find(|s| s.name == name) {
            return Ok(access(s.server.as_ref()));
        }
        let dir = self.root.join(format!("server-{name}"));
        std::fs::create_dir(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let server = match start(&dir) {
            Ok(s) => s,
            Err(e) => {
                self.remove(&dir);
                return Err(e);
            }
        };
        let out = access(server.as_ref());
        self.started.push(Started { name: name.to_string(), server, dir });
        Ok(out)
    }

    /// The members of server `name` (a cluster's), for a kill step; empty for a single server.
    pub fn members(&self, name: &str) -> Vec<(String, i32)> {
        self.started.iter().find(|s| s.name == name).map(|s| s.server.members()).unwrap_or_default()
    }

    /// The process groups of server `name` (empty when the pool did not start it).
    pub fn process_groups(&self, name: &str) -> Vec<i32> {
        self.started.iter().find(|s| s.name == name).map(|s| s.server.process_groups()).unwrap_or_default()
    }

    /// Stop server `name` now (a member was killed): the next row that needs it gets a whole
    /// one.
    pub fn discard(&mut self, name: &str) {
        let Some(i) = self.started.iter().position(|s| s.name == name) else { return };
        let s = self.started.remove(i);
        if let Err(e) = s.server.stop() {
            crate::note!("stopping the {} server after its fault: {e}", s.name);
        }
        self.remove(&s.dir);
    }

    /// Stop every server (in reverse start order) and remove its directory; errors are shown.
    pub fn stop_all(&mut self) {
        while let Some(s) = self.started.pop() {
            if let Err(e) = s.server.stop() {
                crate::note!("stopping the {} server: {e}", s.name);
            }
            self.remove(&s.dir);
        }
    }

    fn remove(&self, dir: &Path) {
        if self.keep_dirs {
            return;
        }
        if let Err(e) = std::fs::remove_dir_all(dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                crate::note!("cannot remove the server directory {}: {e}", dir.display());
            }
        }
    }
}

impl Drop for ServerPool {
    fn drop(&mut self) {
        self.stop_all();
    }
}

fn access(server: &dyn RunningServer) -> Access {
    Access { url: server.url(), token: server.token(), info: server.info(), netns: server.netns() }
}

/// The server a row needs, whatever the runtime of its client: one shaped by the row's options
/// (Redis Cluster with replicas), a Rust server engine's own, or the one another runtime's
/// engine names (go-etcd's cluster); with its name in the run's pool.
pub fn server_of(
    variant: &Variant,
    resolved: &Resolved,
    options: &Options,
) -> Option<(String, kvbench_engines::ShapedStart)> {
    if let Some(shaped) = kvbench_engines::shaped_server(&variant.name, options.values()) {
        return Some(shaped);
    }
    let start = match resolved {
        Resolved::Rust(d) => d.start_server.map(|start| (d.name.to_string(), start)),
        _ => kvbench_engines::server_for(&variant.name).map(|start| (variant.name.clone(), start)),
    };
    start.map(|(name, f)| (name, Box::new(f) as kvbench_engines::ShapedStart))
}
