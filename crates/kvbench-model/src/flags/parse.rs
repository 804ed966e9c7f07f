//! One flag's value from its text, with an error that says what is allowed. The command line
//! hands these to its parser; they know no parser library.

use serde::de::DeserializeOwned;

use super::PerPhase;
use crate::engine::SyncMode;
use crate::scenario::{self, RepetitionOrder, Warmup};
use crate::spec::{CacheMode, KeyKind};

/// A whole number of at least `min`, with an error that says so (negatives included).
fn at_least<T: std::str::FromStr + PartialOrd + std::fmt::Display>(s: &str, min: T) -> Result<T, String> {
    match s.trim().parse::<T>() {
        Ok(v) if v >= min => Ok(v),
        _ => Err(format!("must be a whole number >= {min} (got `{s}`)")),
    }
}

pub fn positive_u32(s: &str) -> Result<u32, String> {
    at_least(s, 1u32)
}

pub fn positive_u16(s: &str) -> Result<u16, String> {
    at_least(s, 1u16)
}

pub fn positive_u64(s: &str) -> Result<u64, String> {
    at_least(s, 1u64)
}

pub fn whole_u64(s: &str) -> Result<u64, String> {
    at_least(s, 0u64)
}

/// A column of a `file:` dataset: 1 to `limits::COLUMN`.
pub fn column(s: &str) -> Result<usize, String> {
    let max = crate::spec::limits::COLUMN;
    at_least(s, 1usize)
        .ok()
        .filter(|&c| c <= max)
        .ok_or_else(|| format!("must be a column from 1 to {max} (got `{s}`)"))
}

pub fn positive_f64(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("must be a number > 0 (got `{s}`)")),
    }
}

pub fn non_negative_f64(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("must be a number >= 0 (got `{s}`)")),
    }
}

/// `--duration [PHASE=]D`: checked with the scenario's own parser, kept as written.
pub fn duration(s: &str) -> Result<PerPhase<String>, String> {
    PerPhase::parse(s, |d| scenario::parse_duration_ms(d, 1, scenario::DURATION_MAX_MS).map(|_| d.trim().to_string()))
}

pub fn ops(s: &str) -> Result<PerPhase<u64>, String> {
    PerPhase::parse(s, positive_u64)
}

pub fn warmup(s: &str) -> Result<PerPhase<Warmup>, String> {
    PerPhase::parse(s, Warmup::parse)
}

/// A memory size as the scenario takes it (`512MiB`), kept as written.
pub fn memory(s: &str) -> Result<String, String> {
    crate::spec::parse_memory(s).map(|_| s.trim().to_string())
}

/// One of a scenario's words for `T` (its serde name), or `allowed`.
fn word<T: DeserializeOwned>(s: &str, allowed: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(s.into())).map_err(|_| allowed.to_string())
}

pub fn key_kind(s: &str) -> Result<KeyKind, String> {
    word(s, "key kinds: u32be, u64be, decimal, ycsb, random")
}

pub fn sync(s: &str) -> Result<SyncMode, String> {
    word(s, "sync: none, commit, always")
}

pub fn cache(s: &str) -> Result<CacheMode, String> {
    word(s, "allowed: warm, cold, reopen")
}

pub fn order(s: &str) -> Result<RepetitionOrder, String> {
    word(s, "allowed: interleaved, sequential")
}

/// Whether `s` reads as an engine option (`rocksdb.compression=zstd`): `-o` once meant that.
fn looks_like_engine_option(s: &str) -> bool {
    let Some((name, _)) = s.split_once('=') else { return false };
    let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    name.split_once('.').is_some_and(|(engine, option)| word(engine) && word(option))
}

/// `-o/--output DIR`: any path, except one shaped as the engine option `-o` once took.
pub fn output_dir(s: &str) -> Result<std::path::PathBuf, String> {
    if looks_like_engine_option(s) {
        return Err(format!("-o is the output directory; an engine option is `--set {s}` (or `-O {s}`)"));
    }
    Ok(s.into())
}

/// `--option`, the old spelling of `--set`: refused with the new one named.
pub fn old_option(s: &str) -> Result<String, String> {
    Err(format!("engine options are `--set {s}` (or `-O {s}`); --option is gone"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_an_old_dash_o_engine_option_is_refused_with_set_named() {
        let e = output_dir("rocksdb.compression=zstd").unwrap_err();
        assert!(e.contains("--set rocksdb.compression=zstd"), "{e}");
        assert!(old_option("lmdb.map_size=64m").unwrap_err().contains("--set lmdb.map_size=64m"));
        for dir in ["results", "out.d", "/tmp/a=b", "runs/2026.11=x/y"] {
            assert_eq!(output_dir(dir).unwrap(), std::path::PathBuf::from(dir), "{dir}");
        }
    }
}
