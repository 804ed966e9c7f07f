//! What `redis` and `redis-cluster` both do to one Redis node, untimed, through the `redis`
//! crate's connection: apply durability, read settings back, clear the job's namespace. Every
//! error starts with `who` (the engine's name).

use std::time::{Duration, Instant};

use ::redis::Connection;
use kvbench_model::engine::{EngineError, Result, SyncMode};

/// How long the AOF rewrite that `appendonly yes` starts may take.
const AOF_REWRITE_TIMEOUT: Duration = Duration::from_secs(300);

fn err(who: &str, error: ::redis::RedisError) -> EngineError {
    EngineError::Store(format!("{who}: {error}"))
}

/// Apply `sync` with CONFIG SET: no RDB snapshots; `none` → no AOF; `commit`/`always` → AOF
/// with `appendfsync = policy`, then wait for the rewrite it starts so that it does not run
/// under the measured phases.
pub fn configure(conn: &mut Connection, who: &str, sync: SyncMode, policy: &str) -> Result<()> {
    config_set(conn, who, "save", "")?;
    match sync {
        SyncMode::None => config_set(conn, who, "appendonly", "no"),
        SyncMode::Commit | SyncMode::Always => {
            config_set(conn, who, "appendfsync", policy)?;
            config_set(conn, who, "appendonly", "yes")?;
            wait_aof_rewrite(conn, who)
        }
    }
}

fn config_set(conn: &mut Connection, who: &str, key: &str, value: &str) -> Result<()> {
    ::redis::cmd("CONFIG").arg("SET").arg(key).arg(value).query::<()>(conn).map_err(|e| {
        EngineError::Store(format!(
            "{who} CONFIG SET {key} {value:?}: {e} (set option configure=false to leave the server as it is)"
        ))
    })
}

/// A setting's value, `?` when the server does not say.
pub fn config_get(conn: &mut Connection, name: &str) -> String {
    ::redis::cmd("CONFIG")
        .arg("GET")
        .arg(name)
        .query::<Vec<String>>(conn)
        .ok()
        .and_then(|v| v.get(1).cloned())
        .unwrap_or_else(|| "?".into())
}

/// One `field:value` line of `INFO section`.
pub fn info_field(conn: &mut Connection, section: &str, field: &str) -> Option<String> {
    let text: String = ::redis::cmd("INFO").arg(section).query(conn).ok()?;
    text.lines().find_map(|l| l.strip_prefix(field).and_then(|r| r.strip_prefix(':')).map(|v| v.trim().to_string()))
}

fn wait_aof_rewrite(conn: &mut Connection, who: &str) -> Result<()> {
    let t0 = Instant::now();
    while info_field(conn, "persistence", "aof_rewrite_in_progress").as_deref() == Some("1")
        || info_field(conn, "persistence", "aof_rewrite_scheduled").as_deref() == Some("1")
    {
        if t0.elapsed() > AOF_REWRITE_TIMEOUT {
            let secs = AOF_REWRITE_TIMEOUT.as_secs();
            return Err(EngineError::Store(format!("{who}: an AOF rewrite did not finish within {secs} s")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Delete every key under `prefix` on this node (SCAN MATCH, UNLINK); returns how many. One
/// key per UNLINK, pipelined: a cluster node's keys lie in many slots and a cross-slot UNLINK is
/// refused.
pub fn clear_prefix(conn: &mut Connection, who: &str, prefix: &[u8]) -> Result<u64> {
    let pattern = match_pattern(prefix);
    let (mut cursor, mut n) = (0u64, 0u64);
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = ::redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query(conn)
            .map_err(|e| err(who, e))?;
        if !keys.is_empty() {
            n += keys.len() as u64;
            let mut pipe = ::redis::pipe();
            for k in &keys {
                pipe.cmd("UNLINK").arg(k).ignore();
            }
            pipe.query::<()>(conn).map_err(|e| err(who, e))?;
        }
        cursor = next;
        if cursor == 0 {
            return Ok(n);
        }
    }
}

/// The SCAN MATCH pattern of the keys under `prefix`: its glob characters escaped, then `*`.
fn match_pattern(prefix: &[u8]) -> Vec<u8> {
    let mut pattern = Vec::with_capacity(prefix.len() + 1);
    for &b in prefix {
        if b"*?[]\\".contains(&b) {
            pattern.push(b'\\');
        }
        pattern.push(b);
    }
    pattern.push(b'*');
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_with_glob_characters_matches_only_itself() {
        assert_eq!(match_pattern(b"kvb:a*b?[c]\\"), b"kvb:a\\*b\\?\\[c\\]\\\\*".to_vec());
    }
}
