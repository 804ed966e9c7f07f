//! What the clusters kvbench starts share (Redis Cluster, etcd): several loopback ports chosen
//! at once, a generated secret, and a group of member processes stopped together.
//!
//! Each member is a [`ServerProcess`] in a process group of its own (so one member can be
//! killed alone, as a fault step does); [`Members::stop`] asks every member to stop at once and
//! then waits, so a cluster of N members stops in one grace period, not N.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{Ipv4Addr, TcpListener};

use kvbench_model::engine::RunningServer;

use super::lifecycle::ServerProcess;

/// `count` distinct loopback ports nobody listens on right now. The listeners are held until all
/// are chosen, so the kernel cannot hand out the same port twice; a server may still lose a
/// port to another process before binding it (callers retry on "in use").
pub fn free_ports(count: usize) -> Result<Vec<u16>, String> {
    let mut held = Vec::with_capacity(count);
    for _ in 0..count {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| format!("no free loopback port: {e}"))?;
        held.push(l);
    }
    held.iter().map(|l| l.local_addr().map(|a| a.port()).map_err(|e| format!("no free loopback port: {e}"))).collect()
}

/// A random secret for a server's password: 32 hex digits from the kernel's generator.
pub fn random_secret() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("cannot read /dev/urandom for a password: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// One member of a cluster: its process and the ports it listens on.
#[derive(Debug)]
pub struct Member {
    pub name: String,
    pub proc: ServerProcess,
    /// Where clients reach it.
    pub port: u16,
    /// The cluster's internal port (Redis cluster bus, etcd peer port).
    pub peer_port: u16,
}

impl Member {
    /// Kill the member as a crash would: SIGKILL to its process group, no shutdown, no flush
    /// (the fault step). A later stop of the cluster reaps it.
    pub fn kill(&mut self) {
        // SAFETY: signalling the process group of a server this process spawned.
        unsafe { libc::kill(-self.proc.pid(), libc::SIGKILL) };
    }
}

/// The members `spawn` starts, spawned again (three tries in all) while one loses a port it
/// chose to another process first (the error says "in use").
pub fn spawn_retrying(mut spawn: impl FnMut() -> Result<Members, String>) -> Result<Members, String> {
    let mut last = String::new();
    for _ in 0..3 {
        match spawn() {
            Err(e) if e.contains("in use") => last = e,
            started => return started,
        }
    }
    Err(last)
}

/// The members of a cluster, stopped together.
#[derive(Debug, Default)]
pub struct Members(pub Vec<Member>);

impl Members {
    /// Ask every member to stop, then wait for each; the error lists every member that had to
    /// be killed.
    pub fn stop(&mut self) -> Result<(), String> {
        // Each stop sends its signal and waits; run them side by side so the grace periods
        // overlap.
        let errors: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = self.0.iter_mut().map(|m| s.spawn(move || m.proc.stop())).collect();
            handles.into_iter().filter_map(|h| h.join().unwrap_or_else(|_| Err("stop panicked".into())).err()).collect()
        });
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    }

    /// (name, process group) of every member, in start order.
    pub fn groups(&self) -> Vec<(String, i32)> {
        self.0.iter().map(|m| (m.name.clone(), m.proc.pid())).collect()
    }

    /// Ports, pids, commands and logs of every member, for `RunningServer::info`.
    pub fn describe(&self, info: &mut BTreeMap<String, String>) {
        for m in &self.0 {
            info.insert(format!("{}.port", m.name), format!("{} (peer {})", m.port, m.peer_port));
            info.insert(format!("{}.pid", m.name), m.proc.pid().to_string());
            info.insert(format!("{}.log", m.name), m.proc.log().display().to_string());
            info.insert(format!("{}.command", m.name), m.proc.command().to_string());
        }
        if let Some(first) = self.0.first() {
            // The keys every server reports (tests look for `pid` and `log`).
            info.insert("pid".into(), first.proc.pid().to_string());
            info.insert("log".into(), first.proc.log().display().to_string());
        }
        info.insert("members".into(), self.0.len().to_string());
    }
}

/// What sets one kind of cluster apart: its name, how clients address a member, and what it
/// reports beside its members.
pub trait Kind: Send {
    /// The server's name in `info`.
    const SERVER: &'static str;
    /// The scheme of a member's URL (`SCHEME://127.0.0.1:PORT`).
    const SCHEME: &'static str;
    /// What `info` reports beside the server, its version and the members.
    fn facts(&self, info: &mut BTreeMap<String, String>);
    /// The credential clients need, if any.
    fn token(&self) -> Option<String> {
        None
    }
}

/// A cluster kvbench started: its members, their version and what its kind adds.
pub struct Cluster<K> {
    pub(super) members: Members,
    pub(super) version: String,
    pub(super) kind: K,
}

impl<K> Cluster<K> {
    /// The members, for tests and fault steps that stop one of them.
    pub fn members_mut(&mut self) -> &mut Members {
        &mut self.members
    }
}

impl<K: Kind> RunningServer for Cluster<K> {
    /// Every member's URL, comma-separated.
    fn url(&self) -> String {
        let urls: Vec<String> =
            self.members.0.iter().map(|m| format!("{}://127.0.0.1:{}", K::SCHEME, m.port)).collect();
        urls.join(",")
    }

    fn info(&self) -> BTreeMap<String, String> {
        let mut info = BTreeMap::from([("server".into(), K::SERVER.into()), ("version".into(), self.version.clone())]);
        self.kind.facts(&mut info);
        self.members.describe(&mut info);
        info
    }

    fn token(&self) -> Option<String> {
        self.kind.token()
    }

    fn members(&self) -> Vec<(String, i32)> {
        self.members.groups()
    }

    fn stop(mut self: Box<Self>) -> Result<(), String> {
        self.members.stop()
    }
}

impl Drop for Members {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct() {
        let p = free_ports(20).unwrap();
        let set: std::collections::BTreeSet<_> = p.iter().collect();
        assert_eq!(set.len(), 20);
    }

    #[test]
    fn secrets_differ() {
        let a = random_secret().unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, random_secret().unwrap());
    }
}
