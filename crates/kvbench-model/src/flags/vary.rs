//! `--vary PARAMETER=V1,V2,...`: one row per value, made from each row the parameter applies
//! to (hyperfine's parameter scan). PARAMETER is `ENGINE.OPTION` (an engine name or row label,
//! then one of its options), `sync`, `memory`, `threads` (every phase after the load) or `batch`
//! (the load's commit size). Every row still runs the same data and op streams, which is why
//! `value-size` cannot be varied inside one run. The rows are labelled `LABEL PARAMETER=VALUE`,
//! run interleaved with everything else, and recorded as a group whose first value is the
//! baseline of the report's verdicts.

use crate::engine::SyncMode;
use crate::scenario::{Scenario, Variant, VaryGroup};

/// What may be varied besides `ENGINE.OPTION`.
const ROW_PARAMETERS: [&str; 4] = ["sync", "memory", "threads", "batch"];

/// Most values one --vary may list.
const MAX_VALUES: usize = 32;

/// Apply every `--vary` to `scenario`, in order (two flags multiply the rows).
pub fn apply(scenario: &mut Scenario, specs: &[String]) -> Result<(), String> {
    for spec in specs {
        one(scenario, spec).map_err(|e| format!("--vary {spec}: {e}"))?;
    }
    Ok(())
}

fn one(scenario: &mut Scenario, spec: &str) -> Result<(), String> {
    let (param, values) =
        spec.split_once('=').ok_or("expected PARAMETER=V1,V2,... (e.g. rocksdb.compression=none,zstd)")?;
    let values: Vec<&str> = values.split(',').map(str::trim).collect();
    if values.len() < 2 || values.len() > MAX_VALUES || values.iter().any(|v| v.is_empty()) {
        return Err(format!("give 2 to {MAX_VALUES} non-empty values, separated by commas"));
    }
    let param = param.trim();
    let (row, key) = match param.split_once('.') {
        Some((row, opt)) if !row.is_empty() && !opt.is_empty() => (Some(row), opt),
        _ if ROW_PARAMETERS.contains(&param) => (None, param),
        _ => {
            return Err(format!(
                "`{param}`: vary ENGINE.OPTION, sync, memory, threads or batch (every row of a run shares its data, \
                 so value-size and record counts take one run each, then `kvbench compare`)"
            ))
        }
    };
    let rows = scenario.all_variants();
    let applies = |v: &Variant| row.is_none_or(|r| v.name == r || v.label() == r);
    if !rows.iter().any(applies) {
        return Err(format!("no row named `{}` in this run", row.unwrap_or_default()));
    }
    let mut out = Vec::new();
    for v in rows {
        if !applies(&v) {
            out.push(v);
            continue;
        }
        let mut labels = Vec::new();
        for value in &values {
            let mut w = v.clone();
            set(&mut w, key, row.is_some(), value)?;
            w.label = Some(format!("{} {key}={value}", v.label()));
            labels.push(w.label());
            out.push(w);
        }
        scenario.vary.push(VaryGroup { parameter: param.to_string(), labels });
    }
    scenario.engines.clear();
    scenario.variants = out;
    Ok(())
}

/// Set `key` to `value` on one row: an engine option (typed as TOML reads it), or one of
/// [`ROW_PARAMETERS`].
fn set(variant: &mut Variant, key: &str, option: bool, value: &str) -> Result<(), String> {
    use crate::spec::limits;
    if option {
        variant.options.insert(key.to_string(), option_value(value));
        return Ok(());
    }
    match key {
        "sync" => {
            let sync: SyncMode = serde_json::from_value(serde_json::Value::String(value.into()))
                .map_err(|_| format!("sync `{value}`: allowed none, commit, always"))?;
            variant.sync = Some(sync);
        }
        "memory" => {
            crate::spec::parse_memory(value)?;
            variant.memory = Some(value.to_string());
        }
        "threads" => variant.threads = Some(count(key, value, limits::THREADS)?),
        _ => variant.batch = Some(count(key, value, limits::BATCH)?),
    }
    Ok(())
}

/// A whole number from 1 to `hi`.
fn count(key: &str, value: &str, hi: u32) -> Result<u32, String> {
    value.parse().ok().filter(|n| (1..=hi).contains(n)).ok_or_else(|| format!("{key} `{value}`: allowed 1 to {hi}"))
}

/// `100` is an integer, `0.5` a float, `true` a boolean, anything else a string.
fn option_value(text: &str) -> serde_json::Value {
    let parsed = toml::from_str::<toml::Table>(&format!("v = {text}")).ok().and_then(|mut t| t.remove("v"));
    match parsed {
        Some(toml::Value::Integer(i)) => i.into(),
        Some(toml::Value::Float(f)) => f.into(),
        Some(toml::Value::Boolean(b)) => b.into(),
        _ => text.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        toml::from_str("engines = [\"lmdb\", \"rocksdb\"]\n[[phase]]\nkind = \"load\"\n").unwrap()
    }

    #[test]
    fn an_engine_option_makes_one_row_per_value_of_that_engine_only() {
        let mut s = scenario();
        apply(&mut s, &["rocksdb.compression=none,zstd".into()]).unwrap();
        let labels: Vec<String> = s.all_variants().iter().map(|v| v.label()).collect();
        assert_eq!(labels, ["lmdb", "rocksdb compression=none", "rocksdb compression=zstd"]);
        assert_eq!(s.variants[2].options["compression"], "zstd");
        assert_eq!(s.vary, [VaryGroup { parameter: "rocksdb.compression".into(), labels: labels[1..].to_vec() }]);
    }

    #[test]
    fn sync_and_memory_vary_every_row_and_values_keep_their_types() {
        let mut s = scenario();
        apply(&mut s, &["sync=none,commit".into(), "lmdb.map_size=1073741824,2147483648".into()]).unwrap();
        assert_eq!(s.variants.len(), 6);
        assert_eq!(s.vary.len(), 4, "two rows for sync, then two lmdb rows for map_size");
        let v = s.variants.iter().find(|v| v.label() == "lmdb sync=commit map_size=2147483648").unwrap();
        assert_eq!(v.sync, Some(SyncMode::Commit));
        assert_eq!(v.options["map_size"], 2_147_483_648u64);
    }

    #[test]
    fn threads_and_batch_vary_every_row_and_reach_the_phases_they_apply_to() {
        let mut s: Scenario = toml::from_str(
            "engines = [\"lmdb\"]\n[[phase]]\nkind = \"load\"\n[[phase]]\nkind = \"get\"\nthreads = 4\n",
        )
        .unwrap();
        apply(&mut s, &["threads=1,2".into(), "batch=1,100".into()]).unwrap();
        let labels: Vec<String> = s.all_variants().iter().map(|v| v.label()).collect();
        assert_eq!(
            labels,
            [
                "lmdb threads=1 batch=1",
                "lmdb threads=1 batch=100",
                "lmdb threads=2 batch=1",
                "lmdb threads=2 batch=100"
            ]
        );
        let v = &s.variants[1];
        assert_eq!((v.threads, v.batch), (Some(1), Some(100)));
        s.check().unwrap();
    }

    #[test]
    fn a_bad_vary_names_the_flag_and_what_is_allowed() {
        for (spec, want) in [
            ("value-size=100,1000", "value-size and record counts take one run each"),
            ("threads=1,0", "threads `0`: allowed 1 to 1024"),
            ("batch=10,x", "batch `x`: allowed 1 to 1000000"),
            ("rocksdb.compression=zstd", "2 to 32"),
            ("nosuch.x=1,2", "no row named `nosuch`"),
            ("sync=none,sometimes", "allowed none, commit, always"),
            ("memory=1KiB,2GiB", "memory"),
            ("rocksdb", "PARAMETER=V1,V2"),
        ] {
            let e = apply(&mut scenario(), &[spec.into()]).unwrap_err();
            assert!(e.starts_with(&format!("--vary {spec}: ")) && e.contains(want), "{spec}: {e}");
        }
    }
}
