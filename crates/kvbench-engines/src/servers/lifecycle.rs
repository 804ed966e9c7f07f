//! Lifecycle of the servers kvbench starts itself (memcached, Redis, PostgreSQL): the system
//! binary spawned with its log file in the private directory, a wait until it answers, and a
//! stop that cannot leave a process behind.
//!
//! Access: a server kvbench starts listens only on a Unix socket inside its private directory
//! (mode 0700, owned by the user the server runs as), not on TCP, so only kvbench (and root)
//! can reach it; no password is needed because no other user can open the socket. (PostgreSQL
//! with `connection = "tcp"` adds a loopback listener behind a generated password.)
//!
//! Every server runs in a process group of its own, so that `stop` reaches whatever it forked
//! (PostgreSQL's backends) and so that a Ctrl-C typed at the terminal reaches kvbench only,
//! which then stops the servers in order. `stop` sends the polite signal (SIGTERM, or what the
//! engine chooses), waits up to [`GRACE`] for the whole group to be gone, then sends SIGKILL to
//! the group. `Drop` stops a server that was not stopped explicitly.
//!
//! If kvbench itself is killed (even by SIGKILL) the kernel sends the server its parent-death
//! signal: servers that must not run as root get their user set between fork and exec (not
//! through `runuser` or the server's own `-u`, which would clear the setting), so the server
//! binary is kvbench's direct child. Linux ties this to the *thread* that spawned the server,
//! so start servers from a thread that outlives them (kvbench's main thread does).
//!
//! Every error names the binary, the full command line and the log file, with the log's tail.

use std::collections::BTreeMap;
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to stop after the polite signal before it gets SIGKILL.
pub const GRACE: Duration = Duration::from_secs(15);
/// How long a server may take to answer after it was spawned.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A loopback port nobody listens on right now. Another process may take it before the server
/// binds it: callers retry with [`with_free_port`].
pub fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| format!("no free loopback port: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| format!("no free loopback port: {e}"))
}

/// Run `start` with a fresh free port, up to three times when the port was taken meanwhile
/// (the error then mentions "in use").
pub fn with_free_port<T>(mut start: impl FnMut(u16) -> Result<T, String>) -> Result<T, String> {
    let mut last = String::new();
    for _ in 0..3 {
        let port = free_port()?;
        match start(port) {
            Ok(t) => return Ok(t),
            Err(e) if e.contains("in use") => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Is something accepting TCP connections on 127.0.0.1:port?
pub fn port_open(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Close `dir` to other users (mode 0700) and return its absolute path (servers change their
/// working directory, so relative paths would break): logs, configs and data live there.
pub fn private_dir(dir: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let abs = dir.canonicalize().map_err(|e| format!("server directory {}: {e}", dir.display()))?;
    std::fs::set_permissions(&abs, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("cannot make {} private: {e}", abs.display()))?;
    Ok(abs)
}

/// Longest Unix socket path the kernel accepts (`sun_path` minus its NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// The private directory of a server that runs as `run_as` (when kvbench is root): closed to
/// others, reachable by that user and owned by it, so the server can create its socket and
/// files there. Returns the absolute path.
pub fn server_dir(dir: &Path, run_as: Option<&str>) -> Result<PathBuf, String> {
    let abs = private_dir(dir)?;
    if let Some(user) = run_as.filter(|_| is_root()) {
        check_reachable(&abs, user)?;
        chown_to(&abs, user)?;
    }
    Ok(abs)
}

/// Where a server's Unix socket lives: its private directory, or, when a socket path there
/// would be longer than the kernel allows, a short private directory under the temp directory
/// (mode 0700, owned by the server's user), removed when this value is dropped. Keep it in the
/// server's value after the process, so the server stops before its socket directory goes.
#[derive(Debug)]
pub struct SocketDir {
    path: PathBuf,
    own: bool,
}

impl SocketDir {
    /// The socket directory for a socket file called `name` of a server whose private directory
    /// is `private` and which runs as `run_as`.
    pub fn new(private: &Path, name: &str, run_as: Option<&str>) -> Result<SocketDir, String> {
        if private.join(name).as_os_str().len() <= MAX_SOCKET_PATH {
            return Ok(SocketDir { path: private.to_path_buf(), own: false });
        }
        let path = short_private_dir()?;
        let dir = SocketDir { path, own: true };
        if let Some(user) = run_as.filter(|_| is_root()) {
            chown_to(&dir.path, user)?;
        }
        if dir.path.join(name).as_os_str().len() > MAX_SOCKET_PATH {
            return Err(format!(
                "socket path {} is longer than the {MAX_SOCKET_PATH} bytes a Unix socket allows: set TMPDIR shorter",
                dir.path.join(name).display()
            ));
        }
        Ok(dir)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn socket(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        if self.own {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// A new directory `kvbench-sock-PID-N` (mode 0700) in the temp directory.
fn short_private_dir() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let mut last = String::new();
    for n in 0..1000 {
        let p = base.join(format!("kvbench-sock-{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = e.to_string(),
            Err(e) => return Err(format!("cannot create a socket directory {}: {e}", p.display())),
        }
    }
    Err(format!("cannot create a socket directory in {}: {last}", base.display()))
}

/// The user a server runs as when kvbench is root (None otherwise: it runs as kvbench's user):
/// the first of `users` that exists (a server's own system user, then `nobody`).
pub fn user_when_root(users: &[&'static str]) -> Option<&'static str> {
    if !is_root() {
        return None;
    }
    users.iter().copied().find(|u| user_ids(u).is_some())
}

/// uid and gid of a local user.
pub fn user_ids(name: &str) -> Option<(u32, u32)> {
    let cname = std::ffi::CString::new(name).ok()?;
    // SAFETY: `passwd` is integers and pointers, for which all zeroes is a valid value.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16384];
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; getpwnam_r writes strings into `buf` only.
    let rc = unsafe { libc::getpwnam_r(cname.as_ptr(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut out) };
    if rc != 0 || out.is_null() {
        return None;
    }
    Some((pwd.pw_uid, pwd.pw_gid))
}

/// Give `path` to `user` (PostgreSQL refuses to run as root and must own its data directory).
pub fn chown_to(path: &Path, user: &str) -> Result<(), String> {
    let (uid, gid) = user_ids(user).ok_or_else(|| format!("there is no user `{user}` on this machine"))?;
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .map_err(|e| format!("cannot give {} to user {user}: {e}", path.display()))
}

/// Fail with a clear message when `user` cannot reach `dir` because an ancestor directory is
/// closed to other users (a private dir must sit directly in a world-traversable one like /tmp).
pub fn check_reachable(dir: &Path, user: &str) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let (uid, _) = user_ids(user).ok_or_else(|| format!("there is no user `{user}` on this machine"))?;
    let dir = dir.canonicalize().map_err(|e| format!("{}: {e}", dir.display()))?;
    for a in dir.ancestors().skip(1) {
        let m = std::fs::metadata(a).map_err(|e| format!("{}: {e}", a.display()))?;
        if m.uid() != uid && m.mode() & 0o001 == 0 {
            return Err(format!(
                "user {user} cannot reach {}: its parent {} is closed to other users (mode {:o}); \
                 put the server directory directly under a world-traversable directory such as /tmp",
                dir.display(),
                a.display(),
                m.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

/// The first existing file among `candidates` (absolute paths or names looked up in PATH).
pub fn find_binary(candidates: &[&str]) -> Option<PathBuf> {
    for c in candidates {
        let p = Path::new(c);
        if p.is_absolute() {
            if p.is_file() {
                return Some(p.to_path_buf());
            }
            continue;
        }
        let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
        for d in std::env::split_paths(&path) {
            let f = d.join(c);
            if f.is_file() {
                return Some(f);
            }
        }
    }
    None
}

/// A server's binary (the first of `candidates` found) and the version line `FLAG` makes it
/// print; `missing` is the error when there is none (what to install, or which URL to give).
pub fn server_binary(candidates: &[&str], flag: &str, missing: &str) -> Result<(PathBuf, String), String> {
    let binary = find_binary(candidates).ok_or(missing)?;
    let version = first_line_of(&binary, &[flag]);
    Ok((binary, version))
}

/// The version line `NAME FLAG` prints (NAME looked up in PATH), or `NAME not installed`.
pub fn installed_version(name: &str, flag: &str) -> String {
    find_binary(&[name]).map_or_else(|| format!("{name} not installed"), |b| first_line_of(&b, &[flag]))
}

/// First line of `binary args` (for `--version`), or an empty string.
pub fn first_line_of(binary: &Path, args: &[&str]) -> String {
    Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()
        .map(|o| {
            let text = if o.stdout.is_empty() { o.stderr } else { o.stdout };
            String::from_utf8_lossy(&text).lines().next().unwrap_or("").trim().to_string()
        })
        .unwrap_or_default()
}

/// The last `max_lines` lines of a log file, for error messages.
pub fn log_tail(path: &Path, max_lines: usize) -> String {
    let text = std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(max_lines)..].join("\n")
}

/// Quote a command line for messages so it can be pasted into a shell.
pub fn render_command(program: &Path, args: &[String]) -> String {
    let quote = |s: &str| {
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b)) {
            s.to_string()
        } else {
            format!("'{}'", s.replace('\'', r"'\''"))
        }
    };
    let mut out = quote(&program.to_string_lossy());
    for a in args {
        out.push(' ');
        out.push_str(&quote(a));
    }
    out
}

/// Does any process of process group `pgid` still exist (zombies included)?
pub fn group_alive(pgid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(-pgid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Run a command to completion (initdb), its output appended to `log`; the error names the
/// command, its status and the log with its tail.
pub fn run_to_completion(what: &str, program: &Path, args: &[String], log: &Path) -> Result<(), String> {
    run_to_completion_as(what, program, args, log, None)
}

/// [`run_to_completion`] as `run_as` when kvbench is root.
pub fn run_to_completion_as(
    what: &str,
    program: &Path,
    args: &[String],
    log: &Path,
    run_as: Option<&str>,
) -> Result<(), String> {
    let command = render_command(program, args);
    let out = File::options().create(true).append(true).open(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(program);
    if let Some(user) = run_as.filter(|_| is_root()) {
        let (uid, gid) = user_ids(user).ok_or_else(|| format!("{what}: there is no user `{user}` on this machine"))?;
        cmd.uid(uid).gid(gid);
    }
    die_with_parent(&mut cmd, libc::SIGKILL);
    let status = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| format!("{what}: cannot run {}: {e}; command: {command}", program.display()))?;
    if !status.success() {
        return Err(format!(
            "{what} failed ({status}); binary: {}; command: {command}; log: {}\n{}",
            program.display(),
            log.display(),
            log_tail(log, 15)
        ));
    }
    Ok(())
}

/// Make the kernel send `signal` to the process `cmd` spawns when kvbench dies, even by
/// SIGKILL. Set in the pre_exec hook, after any change of user (a change of user clears it),
/// so it holds for the server binary itself.
pub fn die_with_parent(cmd: &mut Command, signal: i32) {
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, kill on itself).
    unsafe {
        let parent = libc::getpid();
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0);
            if libc::getppid() != parent {
                // kvbench died between fork and prctl.
                libc::kill(libc::getpid(), signal);
            }
            Ok(())
        });
    }
}

/// Where a single server on a Unix socket lives: its private directory (given to the user it
/// runs as when kvbench is root), its socket directory and its log (`NAME.log`).
pub struct SocketHome {
    pub dir: PathBuf,
    pub sockets: SocketDir,
    pub log: PathBuf,
    pub user: Option<&'static str>,
}

impl SocketHome {
    /// `socket`: the socket file's name; `users`: who runs the server when kvbench is root
    /// ([`user_when_root`]).
    pub fn new(dir: &Path, name: &str, socket: &str, users: &[&'static str]) -> Result<SocketHome, String> {
        let user = user_when_root(users);
        let dir = server_dir(dir, user)?;
        let sockets = SocketDir::new(&dir, socket, user)?;
        Ok(SocketHome { log: dir.join(format!("{name}.log")), dir, sockets, user })
    }

    pub fn socket(&self, name: &str) -> PathBuf {
        self.sockets.socket(name)
    }
}

/// A server kvbench starts on a Unix socket of its own: where its binary is found, how it
/// tells its version, and where it lives. One per server, so that the descriptor's version line
/// and the start name the same binary.
pub struct SocketProgram {
    /// The server's home and log name (`NAME.log`).
    pub name: &'static str,
    /// Names looked up in PATH or absolute paths, the first found wins; the first one is the
    /// binary the version line reports.
    pub candidates: &'static [&'static str],
    pub version_flag: &'static str,
    /// The error when no binary is found: what to install, or which URL to give.
    pub missing: &'static str,
    /// The socket file's name.
    pub socket: &'static str,
    /// Who runs the server when kvbench is root ([`user_when_root`]).
    pub users: &'static [&'static str],
}

/// A server's binary found, with its version line, and its home made.
pub struct Found {
    pub binary: PathBuf,
    pub version: String,
    pub home: SocketHome,
    pub socket: PathBuf,
}

impl SocketProgram {
    /// Find the binary and make the server's private home under `dir`.
    pub fn find(&self, dir: &Path) -> Result<Found, String> {
        let (binary, version) = server_binary(self.candidates, self.version_flag, self.missing)?;
        let home = SocketHome::new(dir, self.name, self.socket, self.users)?;
        let socket = home.socket(self.socket);
        Ok(Found { binary, version, home, socket })
    }

    /// The descriptor's version line: the installed server's version, then the client's.
    pub fn version(&self, client: &str) -> String {
        format!("{}; client: {client}", installed_version(self.candidates[0], self.version_flag))
    }
}

/// Reads settings from the running server at its url.
pub type LiveInfo = fn(&str) -> BTreeMap<String, String>;

/// A single server kvbench started on a Unix socket, as the run sees it: its url and what it
/// reports; stopped by `stop` or, failing that, by the process's Drop.
pub struct SocketServer {
    proc: ServerProcess,
    /// After `proc`: dropped once the server has stopped.
    _sockets: SocketDir,
    url: String,
    info: BTreeMap<String, String>,
    /// Settings read from the running server, added to `info` when it is asked.
    live: Option<LiveInfo>,
}

impl SocketServer {
    /// `about`: the server's name and version; `facts`: what `info` reports beside what every
    /// server reports (name, version, access, command, log, pid and user).
    pub fn new(
        proc: ServerProcess,
        home: SocketHome,
        url: String,
        about: [String; 2],
        facts: &[(&str, String)],
    ) -> Self {
        let [server, version] = about;
        let mut info = BTreeMap::new();
        info.insert("server".into(), server);
        info.insert("version".into(), version);
        info.insert("access".into(), "Unix socket in a directory private to the server (mode 0700); no TCP".into());
        info.insert("command".into(), proc.command().to_string());
        info.insert("log".into(), proc.log().display().to_string());
        info.insert("pid".into(), proc.pid().to_string());
        info.insert("user".into(), home.user.unwrap_or("(kvbench's own)").into());
        info.extend(facts.iter().map(|(k, v)| (k.to_string(), v.clone())));
        SocketServer { proc, _sockets: home.sockets, url, info, live: None }
    }

    /// Add what `read(url)` reads from the running server to every `info`.
    pub fn with_live_info(mut self, read: LiveInfo) -> Self {
        self.live = Some(read);
        self
    }
}

impl kvbench_model::engine::RunningServer for SocketServer {
    fn process_groups(&self) -> Vec<i32> {
        vec![self.proc.pid()]
    }

    fn url(&self) -> String {
        self.url.clone()
    }

    fn info(&self) -> BTreeMap<String, String> {
        let mut m = self.info.clone();
        if let Some(read) = self.live {
            m.extend(read(&self.url));
        }
        m
    }

    fn stop(mut self: Box<Self>) -> Result<(), String> {
        self.proc.stop()
    }
}

/// A server process kvbench spawned, in a process group of its own.
#[derive(Debug)]
pub struct ServerProcess {
    name: String,
    binary: PathBuf,
    command: String,
    log: PathBuf,
    child: Option<Child>,
    pgid: i32,
    /// What `stop` sends first, and to which pid (None: the whole group).
    polite: (i32, Option<i32>),
    grace: Duration,
}

impl ServerProcess {
    /// Spawn `binary args`, stdout and stderr to `log` (appended). When `run_as` is set and
    /// kvbench runs as root, the server runs as that user (set between fork and exec, so the
    /// server itself is kvbench's child and receives the parent-death signal).
    pub fn spawn(name: &str, binary: &Path, args: &[String], log: &Path, run_as: Option<&str>) -> Result<Self, String> {
        Self::spawn_with(name, binary, args, log, run_as, libc::SIGTERM)
    }

    /// [`ServerProcess::spawn`] with the signal the kernel sends the server when kvbench dies
    /// (PostgreSQL takes SIGINT, its fast shutdown; SIGTERM would wait for clients).
    pub fn spawn_with(
        name: &str,
        binary: &Path,
        args: &[String],
        log: &Path,
        run_as: Option<&str>,
        death_signal: i32,
    ) -> Result<Self, String> {
        let ids = match run_as {
            Some(user) if is_root() => {
                Some(user_ids(user).ok_or_else(|| format!("{name}: there is no user `{user}` on this machine"))?)
            }
            _ => None,
        };
        let mut command = render_command(binary, args);
        if let (Some(user), Some(_)) = (run_as, ids) {
            command = format!("{command} (as user {user})");
        }
        if !binary.is_file() {
            return Err(format!(
                "{name}: binary {} not found; command: {command}; install the server or give --url",
                binary.display()
            ));
        }
        let out = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("{name}: cannot open log {}: {e}; command: {command}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(binary);
        cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err).process_group(0);
        if let Some((uid, gid)) = ids {
            // std drops supplementary groups, then sets gid and uid, before the pre_exec hook.
            cmd.uid(uid).gid(gid);
        }
        die_with_parent(&mut cmd, death_signal);
        let child = cmd.spawn().map_err(|e| {
            format!("{name}: cannot start {}: {e}; command: {command}; log: {}", binary.display(), log.display())
        })?;
        let pgid = child.id() as i32;
        Ok(ServerProcess {
            name: name.to_string(),
            binary: binary.to_path_buf(),
            command,
            log: log.to_path_buf(),
            child: Some(child),
            pgid,
            polite: (libc::SIGTERM, None),
            grace: GRACE,
        })
    }

    /// Send `signal` to `pid` (None: the whole group) to ask the server to stop; SIGKILL to the
    /// group follows after [`GRACE`] if anything is left.
    pub fn set_polite_stop(&mut self, signal: i32, pid: Option<i32>) {
        self.polite = (signal, pid);
    }

    /// How long `stop` waits after the polite signal before SIGKILL (default [`GRACE`]).
    pub fn set_grace(&mut self, grace: Duration) {
        self.grace = grace;
    }

    /// The process id of what was spawned, which is also its process group id.
    pub fn pid(&self) -> i32 {
        self.pgid
    }

    pub fn command(&self) -> &str {
        &self.command
    }

    pub fn log(&self) -> &Path {
        &self.log
    }

    /// An error message naming the binary, the command and the log, with the log's tail.
    pub fn failure(&self, what: &str) -> String {
        let tail = log_tail(&self.log, 15);
        format!(
            "{} {what}; binary: {}; command: {}; log: {}{}{}",
            self.name,
            self.binary.display(),
            self.command,
            self.log.display(),
            if tail.is_empty() { "" } else { "\n" },
            tail
        )
    }

    /// Poll `ready` until it succeeds, the process exits, or `timeout` passes.
    pub fn wait_ready(
        &mut self,
        timeout: Duration,
        mut ready: impl FnMut() -> Result<(), String>,
    ) -> Result<(), String> {
        let t0 = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    let mut msg = self.failure(&format!("exited before answering ({status})"));
                    if log_tail(&self.log, 30).contains("ddress already in use") {
                        msg.push_str("\n(port in use)");
                    }
                    self.kill_group();
                    return Err(msg);
                }
            }
            let last = match ready() {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if t0.elapsed() > timeout {
                let msg = self.failure(&format!("did not answer within {} s (last probe: {last})", timeout.as_secs()));
                let _ = self.stop();
                return Err(msg);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn kill_group(&mut self) {
        // SAFETY: signalling our own child's process group.
        unsafe { libc::kill(-self.pgid, libc::SIGKILL) };
        if let Some(mut c) = self.child.take() {
            let _ = c.wait();
        }
        let t0 = Instant::now();
        while group_alive(self.pgid) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Wait until the leader is reaped and the group is empty, or `limit` passes.
    fn wait_gone(&mut self, limit: Duration) -> bool {
        let t0 = Instant::now();
        loop {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(_)) = c.try_wait() {
                    self.child = None;
                }
            }
            if self.child.is_none() && !group_alive(self.pgid) {
                return true;
            }
            if t0.elapsed() > limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stop the server: the polite signal, then SIGKILL to the group after the grace period. Returns an
    /// error (after killing) when the server had to be killed. Stopping twice is harmless.
    pub fn stop(&mut self) -> Result<(), String> {
        if self.child.is_none() && !group_alive(self.pgid) {
            return Ok(());
        }
        let (sig, pid) = self.polite;
        let target = pid.unwrap_or(-self.pgid);
        // SAFETY: signalling our own server (or its group).
        unsafe { libc::kill(target, sig) };
        if self.wait_gone(self.grace) {
            return Ok(());
        }
        self.kill_group();
        Err(self.failure(&format!("did not stop within {:.1} s of signal {sig}; killed", self.grace.as_secs_f64())))
    }

    /// Is the spawned process still running (not exited)?
    pub fn running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Parse `scheme://[user@]host:port[/path]` into (host, port).
pub fn host_port(url: &str, scheme: &str, default_port: u16) -> Result<(String, u16), String> {
    let rest = url
        .strip_prefix(scheme)
        .and_then(|r| r.strip_prefix("://"))
        .ok_or_else(|| format!("url `{url}` should start with {scheme}://"))?;
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let hostport = authority.rsplit('@').next().unwrap_or("");
    if let Some(v6) = hostport.strip_prefix('[') {
        let (h, p) = v6.split_once(']').ok_or_else(|| format!("url `{url}`: bad IPv6 address"))?;
        let port = match p.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| format!("url `{url}`: bad port"))?,
            None => default_port,
        };
        return Ok((h.to_string(), port));
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) => Ok((h.to_string(), p.parse().map_err(|_| format!("url `{url}`: bad port `{p}`"))?)),
        None if !hostport.is_empty() => Ok((hostport.to_string(), default_port)),
        None => Err(format!("url `{url}` has no host")),
    }
}

/// A file in the job's directory recording that the engine already set up its namespace
/// (table, key prefix) during this job, so a reopen keeps the data while the first open of a
/// job starts clean.
pub fn job_marker(dir: &Path, engine: &str) -> PathBuf {
    dir.join(format!(".kvbench-{engine}-namespace"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse() {
        assert_eq!(host_port("memcached://127.0.0.1:11211", "memcached", 1).unwrap(), ("127.0.0.1".into(), 11211));
        assert_eq!(host_port("redis://h", "redis", 6379).unwrap(), ("h".into(), 6379));
        assert_eq!(host_port("postgres://u@h:5/db?x=1", "postgres", 5432).unwrap(), ("h".into(), 5));
        assert_eq!(host_port("redis://[::1]:7", "redis", 1).unwrap(), ("::1".into(), 7));
        assert!(host_port("http://x", "redis", 1).is_err());
    }

    #[test]
    fn a_socket_too_deep_for_the_kernel_goes_to_a_short_private_directory() {
        let short = std::env::temp_dir();
        let d = SocketDir::new(&short, "x.sock", None).unwrap();
        assert_eq!(d.path(), short.as_path(), "a short path stays where it is");
        let deep = short.join("d".repeat(120));
        let d = SocketDir::new(&deep, "x.sock", None).unwrap();
        let path = d.path().to_path_buf();
        assert!(d.socket("x.sock").as_os_str().len() <= MAX_SOCKET_PATH);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o700);
        drop(d);
        assert!(!path.exists(), "removed with the value");
    }

    #[test]
    fn commands_render_for_a_shell() {
        let c = render_command(Path::new("/bin/x"), &["-c".into(), "a b".into(), "it's".into()]);
        assert_eq!(c, r"/bin/x -c 'a b' 'it'\''s'");
    }
}
