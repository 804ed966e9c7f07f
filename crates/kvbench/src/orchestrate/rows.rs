//! The rows of a run, checked before anything runs: labels distinct, engines found, and every
//! row's options checked against its engine's specs (the Rust registry's or a worker's
//! `--list`) and resolved, so that a bad option stops the run with the scenario file, line,
//! row and option before any worker starts.

use std::collections::BTreeMap;
use std::path::Path;

use kvbench_model::engine::{Capabilities, Options};
use kvbench_model::options::OptionError;
use kvbench_model::scenario::Variant;
use kvbench_policy::jobs::{caps_from_names, RowFacts};
use serde::Deserialize;

use super::servers::server_of;
use crate::catalog::{self, Resolved};
use kvbench_engines::ShapedStart;

/// A row ready to run; or why it cannot run here (an engine missing on this machine: the row
/// then fails with the reason).
pub type RowEngine = Result<ReadyRow, String>;

/// How to run a row's engine, its options resolved, and the server it needs: decided once,
/// when the rows are resolved.
pub struct ReadyRow {
    pub resolved: Resolved,
    pub options: Options,
    /// The server the row's client reaches, by its name in the run's pool and how to start it
    /// ([`server_of`]); None for an embedded engine. A row with its own `url` reaches that
    /// instead.
    pub server: Option<(String, ShapedStart)>,
}

/// Resolve every row; `file` is the scenario file the rows come from (errors point into it).
pub fn resolve_rows(variants: &[Variant], file: Option<&Path>) -> anyhow::Result<Vec<RowEngine>> {
    let mut rows = Vec::new();
    let mut labels = std::collections::BTreeSet::new();
    for v in variants {
        if !labels.insert(v.label()) {
            anyhow::bail!("two engine rows are labelled `{}`: give each [[engine]] a distinct `label`", v.label());
        }
        let row = match catalog::resolve(&v.name) {
            Ok(r) => {
                let options = row_options(v, &r).map_err(|e| anyhow::anyhow!(locate(file, v, e)))?;
                let server = server_of(v, &r, &options);
                if v.url.is_some() && server.is_none() {
                    let message = format!(
                        "url: `{}` is an embedded engine, opened in the worker's process: it takes no url \
                         (url is for server engines)",
                        v.name
                    );
                    anyhow::bail!(locate(file, v, OptionError { option: URL.into(), message }));
                }
                Ok(ReadyRow { resolved: r, options, server })
            }
            Err(why) => Err(why),
        };
        rows.push(row);
    }
    Ok(rows)
}

/// What the policy needs to plan each row's job, or why the row cannot run here.
pub fn row_facts<'a>(variants: &'a [Variant], rows: &'a [RowEngine]) -> Vec<Result<RowFacts<'a>, String>> {
    let each = variants.iter().zip(rows).map(|(v, row)| {
        let row = row.as_ref().map_err(Clone::clone)?;
        let (r, options) = (&row.resolved, &row.options);
        let (caps, runtime) = (capabilities(r), runtime_of(r));
        let server = v.url.is_some() || row.server.is_some();
        Ok(RowFacts { variant: v, options: options.values(), caps, runtime, server })
    });
    each.collect()
}

/// The runtime whose worker runs the row.
pub fn runtime_of(resolved: &Resolved) -> &'static str {
    match resolved {
        Resolved::Rust(_) => "rust",
        Resolved::Python { .. } => "python",
        Resolved::Worker { info, .. } => info.runtime.name(),
    }
}

fn capabilities(resolved: &Resolved) -> Capabilities {
    match resolved {
        Resolved::Rust(d) => d.capabilities,
        Resolved::Python { info, .. } | Resolved::Worker { info, .. } => caps_from_names(&info.capabilities),
    }
}

fn row_options(variant: &Variant, engine: &Resolved) -> Result<Options, OptionError> {
    catalog::resolve_options(&variant.name, engine, &variant.options).map(Options::resolved)
}

/// `FILE, line N: [[engine]] LABEL: MESSAGE`, with as much of the place as is known.
fn locate(file: Option<&Path>, variant: &Variant, error: OptionError) -> String {
    let row = format!("[[engine]] {}: {}", variant.label(), error.message);
    let Some(file) = file else { return row };
    let limit = kvbench_model::input::limits::SCENARIO_BYTES;
    let text = kvbench_model::input::read_regular_text(file, "scenario", limit).unwrap_or_default();
    match option_line(&text, &variant.label(), &error.option) {
        Some(line) => format!("{}, line {line}: {row}", file.display()),
        None => format!("{}: {row}", file.display()),
    }
}

#[derive(Deserialize)]
struct FileRows {
    #[serde(default)]
    engine: Vec<FileRow>,
}

#[derive(Deserialize)]
struct FileRow {
    name: String,
    label: Option<String>,
    url: Option<toml::Spanned<String>>,
    #[serde(default)]
    options: BTreeMap<String, toml::Spanned<toml::Value>>,
}

/// The row's own `url` line, where an error about it points (it is no option).
const URL: &str = "\0url";

/// The line of option `option` (or of the row's `url`: [`URL`]) of the `[[engine]]` row
/// labelled `label` in a scenario's text.
fn option_line(text: &str, label: &str, option: &str) -> Option<usize> {
    let rows: FileRows = toml::from_str(text).ok()?;
    let row = rows.engine.iter().find(|r| r.label.as_deref().unwrap_or(&r.name) == label)?;
    let start = if option == URL { row.url.as_ref()?.span().start } else { row.options.get(option)?.span().start };
    Some(text[..start.min(text.len())].matches('\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"engines = ["lmdb"]

[[engine]]
name = "go-bbolt"
label = "map"
options = { freelist = "map" }

[[engine]]
name = "go-bbolt"
[engine.options]
freelist = "array"
pagesize = "4k"
"#;

    #[test]
    fn an_option_is_found_on_its_line_by_the_row_label() {
        assert_eq!(option_line(TEXT, "map", "freelist"), Some(6));
        assert_eq!(option_line(TEXT, "go-bbolt", "pagesize"), Some(12));
        assert_eq!(option_line(TEXT, "go-bbolt", "missing"), None);
        assert_eq!(option_line(TEXT, "lmdb", "x"), None);
    }
}
