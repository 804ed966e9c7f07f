//! The servers a run starts (memcached, Redis, PostgreSQL): started once per run on first
//! use, stopped at the end and by the Ctrl-C handler.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use kvbench_core::engine::RunningServer;

use super::RunOptions;

/// Servers this run started; the Ctrl-C handler stops them.
static SERVERS: Mutex<Vec<(String, Box<dyn RunningServer>)>> = Mutex::new(Vec::new());

pub fn stop_servers() {
    let mut servers = match SERVERS.lock() {
        Ok(s) => s,
        Err(p) => p.into_inner(),
    };
    for (name, s) in servers.drain(..) {
        if let Err(e) = s.stop() {
            eprintln!("stopping the {name} server: {e}");
        }
    }
}

/// A started server as a row sees it: URL, info (into the row's settings), client credential.
pub type Started = (String, BTreeMap<String, String>, Option<String>);

/// Start (once per run) the server an engine needs, unless the row gives a URL: its URL, info
/// and the credential its clients need.
pub fn server_url(
    name: &str,
    start: fn(&Path) -> Result<Box<dyn RunningServer>, String>,
    o: &RunOptions,
) -> Result<Started, String> {
    let mut servers = SERVERS.lock().map_err(|_| "server registry poisoned".to_string())?;
    if let Some((_, s)) = servers.iter().find(|(n, _)| n == name) {
        return Ok((s.url(), s.info(), s.token()));
    }
    let dir = o.data_dir.join(format!("server-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    }
    let s = start(&dir)?;
    let out = (s.url(), s.info(), s.token());
    servers.push((name.to_string(), s));
    Ok(out)
}
