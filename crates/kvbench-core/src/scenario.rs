//! Scenario files (TOML) and the built-in workloads the command line names.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::engine::{OpenMode, SyncMode};
use crate::spec::{CacheMode, DatasetSpec, Distribution, Mix, OpenPer, OpsSpec, PhaseKind};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub name: String,
    /// What the scenario is for; defaults to the file's header comment.
    #[serde(default)]
    pub intent: String,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default)]
    pub sync: SyncMode,
    #[serde(default = "one")]
    pub repetitions: u32,
    /// Seconds one engine job may take before its worker is killed.
    #[serde(default = "default_timeout")]
    pub timeout: u64,
    /// Engine names (each a variant with default options).
    #[serde(default)]
    pub engines: Vec<String>,
    #[serde(default, rename = "engine")]
    pub variants: Vec<Variant>,
    #[serde(default)]
    pub dataset: DatasetSpec,
    #[serde(default, rename = "phase")]
    pub phases: Vec<PhaseDef>,
    /// Ratios of two rows' ops/s in one phase that the report computes (COPY over INSERT...).
    #[serde(default, rename = "ratio")]
    pub ratios: Vec<RatioDef>,
}

/// `[[ratio]]`: ops/s of row `numerator` divided by row `denominator` in `phase`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatioDef {
    pub phase: String,
    pub numerator: String,
    pub denominator: String,
}

fn default_seed() -> u64 {
    42
}
fn one() -> u32 {
    1
}
fn default_timeout() -> u64 {
    3600
}

/// One row of the comparison: an engine with options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    /// Row label; defaults to the engine name.
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub options: BTreeMap<String, serde_json::Value>,
    /// How the read phases open the database.
    #[serde(default)]
    pub open: OpenMode,
    /// Overrides the scenario's `sync` for this row (the report then warns of the mix).
    #[serde(default)]
    pub sync: Option<SyncMode>,
    /// A running server to use instead of starting one.
    #[serde(default)]
    pub url: Option<String>,
    /// The row is expected to fail verification this way (`"mismatch"`): the report shows it as
    /// expected and the run does not fail for it (expect.rs decides).
    #[serde(default)]
    pub expect: Option<crate::expect::Expect>,
}

impl Variant {
    pub fn label(&self) -> String {
        self.label.clone().unwrap_or_else(|| self.name.clone())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseDef {
    #[serde(default)]
    pub name: Option<String>,
    pub kind: PhaseKind,
    #[serde(default)]
    pub count: Option<u64>,
    #[serde(default)]
    pub distribution: Option<Distribution>,
    /// Keys per multi-get request.
    #[serde(default)]
    pub keys: Option<u32>,
    /// Records per scan (0 or absent: to the end; mixed phases: 100).
    #[serde(default)]
    pub length: Option<u64>,
    /// Fewest records per scan: lengths uniform in `min_length..=length` (mixed phases: 1).
    #[serde(default)]
    pub min_length: Option<u64>,
    /// Operations run before the timed ones, untimed (read phases only).
    #[serde(default)]
    pub warmup: Option<u64>,
    #[serde(default)]
    pub mix: Option<Mix>,
    #[serde(default)]
    pub hot_key: Option<u64>,
    #[serde(default)]
    pub zipf_exponent: Option<f64>,
    #[serde(default)]
    pub batch: Option<u32>,
    #[serde(default)]
    pub threads: Option<u32>,
    #[serde(default)]
    pub cache: CacheMode,
    #[serde(default)]
    pub open_per: OpenPer,
    /// Open-loop rate of a get phase (operations per second, all threads together).
    #[serde(default)]
    pub rate: Option<f64>,
}

impl PhaseDef {
    pub fn new(kind: PhaseKind) -> PhaseDef {
        PhaseDef {
            name: None,
            kind,
            count: None,
            distribution: None,
            keys: None,
            length: None,
            min_length: None,
            warmup: None,
            mix: None,
            hot_key: None,
            zipf_exponent: None,
            batch: None,
            threads: None,
            cache: CacheMode::Warm,
            open_per: OpenPer::Phase,
            rate: None,
        }
    }

    pub fn ops_spec(&self) -> OpsSpec {
        let default_dist = match self.kind {
            PhaseKind::Scan | PhaseKind::Insert => Distribution::Sequential,
            PhaseKind::Mixed => Distribution::Uniform,
            _ => Distribution::Shuffle,
        };
        OpsSpec {
            kind: self.kind,
            count: self.count,
            distribution: self.distribution.unwrap_or(default_dist),
            keys_per_request: if self.kind == PhaseKind::MultiGet { self.keys.unwrap_or(100) } else { 1 },
            scan_length: self.length.unwrap_or(if self.kind == PhaseKind::Mixed { 100 } else { 0 }),
            scan_min: self.min_length.unwrap_or(if self.kind == PhaseKind::Mixed { 1 } else { 0 }),
            mix: self.mix.unwrap_or_default(),
            hot_key: self.hot_key,
            zipf_exponent: self.zipf_exponent.unwrap_or(0.99),
        }
    }
}

impl Scenario {
    /// Read a scenario file; errors name the file, line and field.
    pub fn from_file(path: &Path) -> Result<Scenario, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut s: Scenario = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if s.name.is_empty() {
            s.name = path.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        }
        if s.intent.is_empty() {
            s.intent = header_comment(&text);
        }
        s.check().map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(s)
    }

    pub fn check(&self) -> Result<(), String> {
        if self.phases.is_empty() {
            return Err("no [[phase]] tables: a scenario needs at least a `load` phase".into());
        }
        if self.phases[0].kind != PhaseKind::Load {
            return Err("the first [[phase]] must have kind = \"load\"".into());
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, p) in self.phases.iter().enumerate() {
            if !names.insert(self.phase_name(i)) {
                return Err(format!("[[phase]] {} repeats the name `{}`; give it a `name`", i + 1, self.phase_name(i)));
            }
            if let Some(r) = p.rate {
                if !(r.is_finite() && r > 0.0) {
                    return Err(format!(
                        "[[phase]] {}: rate = {r}: operations per second must be finite and > 0",
                        i + 1
                    ));
                }
            }
            if p.open_per == OpenPer::Operation && p.kind != PhaseKind::Get {
                return Err(format!("[[phase]] {}: open_per = \"operation\" is only for get phases", i + 1));
            }
        }
        let labels: Vec<String> = self.all_variants().iter().map(|v| v.label()).collect();
        for (i, r) in self.ratios.iter().enumerate() {
            if !names.contains(&r.phase) {
                return Err(format!("[[ratio]] {}: no phase named `{}`", i + 1, r.phase));
            }
            for l in [&r.numerator, &r.denominator] {
                if !labels.contains(l) {
                    return Err(format!("[[ratio]] {}: no engine row labelled `{l}`", i + 1));
                }
            }
        }
        if self.engines.is_empty() && self.variants.is_empty() {
            return Err("no engines: set `engines = [...]` or add [[engine]] tables".into());
        }
        self.dataset.value.range()?;
        Ok(())
    }

    pub fn phase_name(&self, i: usize) -> String {
        self.phases[i].name.clone().unwrap_or_else(|| self.phases[i].kind.as_str().to_string())
    }

    /// All rows: `engines` names first, then `[[engine]]` variants.
    pub fn all_variants(&self) -> Vec<Variant> {
        let mut v: Vec<Variant> = self
            .engines
            .iter()
            .map(|n| Variant {
                name: n.clone(),
                label: None,
                options: BTreeMap::new(),
                open: OpenMode::ReadWrite,
                sync: None,
                url: None,
                expect: None,
            })
            .collect();
        v.extend(self.variants.iter().cloned());
        v
    }
}

/// The leading `#` comment block of a file, without the `#`s.
pub fn header_comment(text: &str) -> String {
    text.lines()
        .take_while(|l| l.trim_start().starts_with('#'))
        .map(|l| l.trim_start().trim_start_matches('#').trim())
        .collect::<Vec<_>>()
        .join(" ")
        .trim()
        .to_string()
}

/// Workloads named on the command line (`--workload`).
pub const WORKLOADS: &[(&str, &str)] = &[
    ("default", "load, random get of every record, multi-get of 100 keys, one full scan"),
    ("readrandom", "load, then random get of every record"),
    ("readseq", "load, then one full ordered scan"),
    ("fillrandom", "load in random order only"),
    ("fillseq", "load in key order only"),
    ("overwrite", "load, then update every record in random order"),
];

pub fn workload(name: &str) -> Result<Vec<PhaseDef>, String> {
    use PhaseKind::*;
    let load = |dist: Distribution| PhaseDef { distribution: Some(dist), ..PhaseDef::new(Load) };
    Ok(match name {
        "default" => vec![
            load(Distribution::Shuffle),
            PhaseDef::new(Get),
            PhaseDef { keys: Some(100), ..PhaseDef::new(MultiGet) },
            PhaseDef::new(Scan),
        ],
        "readrandom" => vec![load(Distribution::Shuffle), PhaseDef::new(Get)],
        "readseq" => vec![load(Distribution::Shuffle), PhaseDef::new(Scan)],
        "fillrandom" => vec![load(Distribution::Shuffle)],
        "fillseq" => vec![load(Distribution::Sequential)],
        "overwrite" => vec![load(Distribution::Shuffle), PhaseDef::new(Update)],
        other => {
            let names: Vec<_> = WORKLOADS.iter().map(|w| w.0).collect();
            return Err(format!("unknown workload `{other}` (known: {})", names.join(", ")));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_field_names_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(&p, "# intent\nengines = [\"lmdb\"]\n\n[[phase]]\nkind = \"load\"\nbach = 10\n").unwrap();
        let err = Scenario::from_file(&p).unwrap_err();
        assert!(err.contains("s.toml"), "{err}");
        assert!(err.contains("line 6"), "{err}");
        assert!(err.contains("bach"), "{err}");
    }

    #[test]
    fn expect_takes_only_known_values_and_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        let body =
            "engines = []\n[[phase]]\nkind = \"load\"\n[[engine]]\nname = \"tinycdb\"\nexpect = \"mismatches\"\n";
        std::fs::write(&p, body).unwrap();
        let err = Scenario::from_file(&p).unwrap_err();
        assert!(err.contains("line 6") && err.contains("`mismatch`"), "{err}");
        std::fs::write(&p, body.replace("mismatches", "mismatch")).unwrap();
        let s = Scenario::from_file(&p).unwrap();
        assert_eq!(s.variants[0].expect, Some(crate::expect::Expect::Mismatch));
        assert_eq!(s.all_variants()[0].expect, Some(crate::expect::Expect::Mismatch));
    }

    /// Every scenario the project ships parses and passes check().
    #[test]
    fn every_shipped_scenario_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        let mut files: Vec<_> = ["", "ci"]
            .iter()
            .flat_map(|sub| std::fs::read_dir(root.join(sub)).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        assert!(files.len() >= 12, "{files:?}");
        for f in &files {
            Scenario::from_file(f).unwrap_or_else(|e| panic!("{e}"));
        }
        let s = Scenario::from_file(&root.join("article-003-dictionary.toml")).unwrap();
        let put_add = s.all_variants().into_iter().find(|v| v.label() == "tinycdb-put_add").unwrap();
        assert_eq!(put_add.expect, Some(crate::expect::Expect::Mismatch));
    }

    #[test]
    fn header_comment_is_the_intent() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(&p, "# Compare A\n# with B.\nengines = [\"memory\"]\n[[phase]]\nkind = \"load\"\n").unwrap();
        let s = Scenario::from_file(&p).unwrap();
        assert_eq!(s.intent, "Compare A with B.");
        assert_eq!(s.name, "s");
    }

    #[test]
    fn every_named_workload_starts_with_a_load() {
        for (name, _) in WORKLOADS {
            let phases = workload(name).unwrap();
            assert_eq!(phases[0].kind, PhaseKind::Load, "{name}");
        }
        assert!(workload("nope").unwrap_err().contains("readrandom"));
    }
}
