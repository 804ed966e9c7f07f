//! Start a cluster kvbench would start, print where it listens, keep it until standard input
//! closes, then stop it. For benchmark scripts that point kvbench and another tool at the same
//! cluster (bench/etcd.sh):
//!
//!     cargo run --release -p kvbench-engines --example cluster -- etcd DIR
//!     cargo run --release -p kvbench-engines --example cluster -- redis-cluster DIR
//!
//! The first line on standard output is `url=...`; for a cluster with a password the second
//! is `token-file=PATH` (the password is in that file, mode 0600, inside the private DIR).

use std::io::Read;
use std::path::Path;

use kvbench_model::engine::RunningServer;

fn start(kind: &str, dir: &Path) -> Result<Box<dyn RunningServer>, String> {
    match kind {
        "etcd" => kvbench_engines::servers::etcdcluster::start_server(dir),
        "redis-cluster" => kvbench_engines::servers::rediscluster::start_cluster(dir, 3, 0).map(|c| Box::new(c) as _),
        other => Err(format!("unknown cluster `{other}` (etcd, redis-cluster)")),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, dir] = &args[..] else {
        eprintln!("usage: cluster etcd|redis-cluster DIR (DIR: an empty directory)");
        std::process::exit(2);
    };
    let dir = Path::new(dir);
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("{}: {e}", dir.display());
        std::process::exit(2);
    }
    let server = match start(kind, dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    println!("url={}", server.url());
    if let Some(token) = server.token() {
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join("token");
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, token.as_bytes()));
        match written {
            Ok(()) => println!("token-file={}", path.display()),
            Err(e) => eprintln!("{}: {e}", path.display()),
        }
    }
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    if let Err(e) = server.stop() {
        eprintln!("stop: {e}");
        std::process::exit(1);
    }
}
