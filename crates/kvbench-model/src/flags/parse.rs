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
