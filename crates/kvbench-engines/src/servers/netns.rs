//! A private network namespace for the servers kvbench starts on TCP (the etcd cluster, Redis
//! Cluster): their client, peer and cluster-bus ports listen on a loopback of their own, which no
//! other user's process can reach, while the row's worker joins the namespace to connect.
//!
//! The namespace is made by a thread of its own (`unshare(CLONE_NEWNET)` moves only the calling
//! thread), which brings its loopback up, starts the servers (children inherit the namespace of
//! the thread that forks them) and then waits until the server is dropped: the servers' parent
//! death signal follows that thread. Without the privilege (not root), the server starts on the
//! shared loopback as before and its `network` setting says so.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use kvbench_model::engine::RunningServer;

/// A server started in a private network namespace, and what keeps the namespace and its
/// starting thread alive.
pub struct Isolated {
    server: Box<dyn RunningServer>,
    /// The namespace, or why there is none (the server then shares the loopback).
    net: Result<OwnedFd, String>,
    /// Dropped after the server: the starting thread then ends.
    _keep: Option<mpsc::Sender<()>>,
}

type Start = Box<dyn FnOnce(&Path) -> Result<Box<dyn RunningServer>, String> + Send>;

/// Start the server with `start` in `dir` inside a new network namespace when this process may
/// make one; else on the shared loopback.
pub fn isolated(dir: &Path, start: Start) -> Result<Box<dyn RunningServer>, String> {
    let (done_tx, done_rx) = mpsc::channel();
    let (keep_tx, keep_rx) = mpsc::channel::<()>();
    let here: PathBuf = dir.to_path_buf();
    let dir = here.clone();
    std::thread::Builder::new()
        .name("kvbench-private-net".into())
        .spawn(move || {
            let net = match new_namespace() {
                Ok(fd) => fd,
                Err(e) => return drop(done_tx.send(Err((start, e)))),
            };
            let started = start(&dir);
            let ok = started.is_ok();
            let _ = done_tx.send(Ok((started, net)));
            if ok {
                // Until the server is dropped: its processes die with the thread that forked them.
                let _ = keep_rx.recv();
            }
        })
        .map_err(|e| format!("cannot start a thread for the server's network: {e}"))?;
    match done_rx.recv().map_err(|_| "the server's start-up thread ended without a word".to_string())? {
        Ok((started, net)) => Ok(Box::new(Isolated { server: started?, net: Ok(net), _keep: Some(keep_tx) })),
        Err((start, why)) => Ok(Box::new(Isolated { server: start(&here)?, net: Err(why), _keep: None })),
    }
}

/// Move this thread into a new network namespace with its loopback up; its descriptor.
fn new_namespace() -> Result<OwnedFd, String> {
    // SAFETY: unshare affects only the calling thread's network namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!("cannot make a network namespace: {}", std::io::Error::last_os_error()));
    }
    loopback_up()?;
    let fd = std::fs::File::open("/proc/thread-self/ns/net").map_err(|e| format!("network namespace: {e}"))?;
    Ok(OwnedFd::from(fd))
}

/// `ip link set lo up`, by ioctl: a new namespace's loopback starts down.
fn loopback_up() -> Result<(), String> {
    // SAFETY: a datagram socket only to carry the interface ioctls; closed by OwnedFd.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        return Err(format!("loopback: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: s is a descriptor we just opened and own.
    let s = unsafe { OwnedFd::from_raw_fd(s) };
    // SAFETY: ifreq is plain data; zero is a valid value of every field.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, b) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *d = *b as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write `req`, which outlives both calls.
    unsafe {
        if libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) != 0 {
            return Err(format!("loopback flags: {}", std::io::Error::last_os_error()));
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS, &req) != 0 {
            return Err(format!("loopback up: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

impl RunningServer for Isolated {
    fn url(&self) -> String {
        self.server.url()
    }

    fn info(&self) -> BTreeMap<String, String> {
        let mut m = self.server.info();
        let net = match &self.net {
            Ok(_) => "a private network namespace: its ports are reachable only from the row's worker".into(),
            Err(why) => format!("the shared loopback: other local users can reach its ports ({why})"),
        };
        m.insert("network".into(), net);
        m
    }

    fn token(&self) -> Option<String> {
        self.server.token()
    }

    fn members(&self) -> Vec<(String, i32)> {
        self.server.members()
    }

    fn process_groups(&self) -> Vec<i32> {
        self.server.process_groups()
    }

    fn netns(&self) -> Option<i32> {
        self.net.as_ref().ok().map(|f| f.as_raw_fd())
    }

    fn stop(self: Box<Self>) -> Result<(), String> {
        let Isolated { server, net, _keep } = *self;
        let r = server.stop();
        drop((net, _keep));
        r
    }
}
