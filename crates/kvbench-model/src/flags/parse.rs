//! One flag's value from its text, with an error that says what is allowed. The command line
//! hands these to its parser; they know no parser library.

use serde::de::DeserializeOwned;

use super::PerPhase;
use crate::engine::SyncMode;
use crate::scenario::{self, RepetitionOrder, Warmup};
use crate::spec::{CacheMode, KeyKind};

/// A whole number of at least `min`, with an error that says so (negatives included).
fn at_least<T: std::str::FromStr + PartialOrd + std::fmt::Display>(text: &str, min: T) -> Result<T, String> {
    match text.trim().parse::<T>() {
        Ok(v) if v >= min => Ok(v),
        _ => Err(format!("must be a whole number >= {min} (got `{text}`)")),
    }
}

pub fn positive_u32(text: &str) -> Result<u32, String> {
    at_least(text, 1u32)
}

pub fn positive_u16(text: &str) -> Result<u16, String> {
    at_least(text, 1u16)
}

pub fn positive_u64(text: &str) -> Result<u64, String> {
    at_least(text, 1u64)
}

pub fn whole_u64(text: &str) -> Result<u64, String> {
    at_least(text, 0u64)
}

/// A column of a `file:` dataset: 1 to `limits::COLUMN`.
pub fn column(text: &str) -> Result<usize, String> {
    let max = crate::spec::limits::COLUMN;
    at_least(text, 1usize)
        .ok()
        .filter(|&c| c <= max)
        .ok_or_else(|| format!("must be a column from 1 to {max} (got `{text}`)"))
}

pub fn positive_f64(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("must be a number > 0 (got `{text}`)")),
    }
}

pub fn non_negative_f64(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("must be a number >= 0 (got `{text}`)")),
    }
}

/// `--duration [PHASE=]D`: checked with the scenario's own parser, kept as written.
pub fn duration(text: &str) -> Result<PerPhase<String>, String> {
    PerPhase::parse(text, |d| {
        scenario::parse_duration_ms(d, 1, scenario::DURATION_MAX_MS).map(|_| d.trim().to_string())
    })
}

pub fn ops(text: &str) -> Result<PerPhase<u64>, String> {
    PerPhase::parse(text, positive_u64)
}

pub fn warmup(text: &str) -> Result<PerPhase<Warmup>, String> {
    PerPhase::parse(text, Warmup::parse)
}

/// A memory size as the scenario takes it (`512MiB`), kept as written.
pub fn memory(text: &str) -> Result<String, String> {
    crate::spec::parse_memory(text).map(|_| text.trim().to_string())
}

/// One of a scenario's words for `T` (its serde name), or `allowed`.
fn word<T: DeserializeOwned>(text: &str, allowed: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(text.into())).map_err(|_| allowed.to_string())
}

pub fn key_kind(text: &str) -> Result<KeyKind, String> {
    word(text, "key kinds: u32be, u64be, decimal, ycsb, random, db-bench")
}

pub fn sync(text: &str) -> Result<SyncMode, String> {
    word(text, "sync: none, commit, always")
}

pub fn cache(text: &str) -> Result<CacheMode, String> {
    word(text, "allowed: warm, cold, reopen")
}

pub fn order(text: &str) -> Result<RepetitionOrder, String> {
    word(text, "allowed: interleaved, sequential")
}

/// Whether `text` reads as an engine option (`rocksdb.compression=zstd`): `-o` once meant that.
fn looks_like_engine_option(text: &str) -> bool {
    let Some((name, _)) = text.split_once('=') else { return false };
    let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    name.split_once('.').is_some_and(|(engine, option)| word(engine) && word(option))
}

/// `-o/--output DIR`: any path, except one shaped as the engine option `-o` once took.
pub fn output_dir(text: &str) -> Result<std::path::PathBuf, String> {
    if looks_like_engine_option(text) {
        return Err(format!("-o is the output directory; an engine option is `--set {text}` (or `-O {text}`)"));
    }
    Ok(text.into())
}

/// `--option`, the old spelling of `--set`: refused with the new one named.
pub fn old_option(text: &str) -> Result<String, String> {
    Err(format!("engine options are `--set {text}` (or `-O {text}`); --option is gone"))
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
