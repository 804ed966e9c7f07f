//! docs/scenarios.md lists every scenario field: the fields of the scenario types (read by
//! serialising a scenario that sets every optional table) must be exactly the fields the
//! document's tables name, table by table.

use std::collections::BTreeSet;

use kvbench_model::scenario::Scenario;

/// A scenario that fills every table, so each type's fields appear when serialised.
const FULL: &str = r#"
engines = ["memory"]
memory = "64MiB"
[dataset]
value = { fields = 2, field_size = 8, write_all_fields = true }
[[engine]]
name = "memory"
label = "m2"
memory = "32MiB"
threads = 2
batch = 10
[[phase]]
kind = "load"
[[phase]]
kind = "mixed"
mix = { read = 1 }
kill = { member = 1, after = "2s" }
[[phase]]
kind = "get"
writer = { rate = 100 }
[[ratio]]
phase = "load"
numerator = "memory"
denominator = "m2"
[report]
title = "t"
note = "n of {records}"
differences = ["d"]
[[report.column]]
heading = "name"
text = "{label}"
[[report.column]]
heading = "read"
phase = "load"
phase_for = { m2 = "load" }
metric = "runtime"
counter = "alloc_bytes"
per_pass_of = ["load"]
unit = "ms"
rounding = "significant"
decimals = 2
suffix = " ms"
suffix_for = { m2 = " (x)" }
zero_is_unmeasured = true
[[report.column]]
heading = "c"
computed = "fsync_on_off"
cache = "cold"
priority = 1
[[report.extra_row]]
label = "{label} (again)"
of = ["memory"]
phases = { load = "load" }
blank = ["c"]
"#;

/// (table path, field) of every field in a serialised scenario; arrays of tables use their
/// elements together. Free-form maps (engine options, a report column's rows) are not fields.
fn fields(path: &str, v: &serde_json::Value, out: &mut BTreeSet<(String, String)>) {
    let Some(obj) = v.as_object() else { return };
    for (k, child) in obj {
        out.insert((path.to_string(), k.clone()));
        let free_form = matches!(
            (path, k.as_str()),
            ("engine", "options") | ("report.column", "phase_for" | "suffix_for") | ("report.extra_row", "phases")
        );
        if free_form {
            continue;
        }
        let sub = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
        match child {
            serde_json::Value::Object(_) => fields(&sub, child, out),
            serde_json::Value::Array(a) => {
                for element in a.iter().filter(|x| x.is_object()) {
                    fields(&sub, element, out);
                }
            }
            _ => {}
        }
    }
}

/// The serialised names of the scenario's tables are `engine`, `phase`, `ratio` (the TOML
/// names); the document's headings use those names in backticks, `## Top level` for the root.
fn documented(doc: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    let mut path: Option<String> = None;
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ").or_else(|| line.strip_prefix("### ")) {
            path = if h.trim() == "Top level" {
                Some(String::new())
            } else {
                h.split('`').nth(1).map(|t| t.trim_matches(|c| c == '[' || c == ']').to_string())
            };
        } else if let (Some(p), Some(rest)) = (&path, line.strip_prefix("| `")) {
            if let Some(field) = rest.split('`').next() {
                out.insert((p.clone(), field.to_string()));
            }
        }
    }
    out
}

#[test]
fn every_scenario_field_is_documented_and_nothing_else() {
    let s: Scenario = toml::from_str(FULL).expect("the full scenario parses");
    s.check().expect("and is valid");
    let mut code = BTreeSet::new();
    fields("", &serde_json::to_value(&s).unwrap(), &mut code);
    let doc_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenarios.md");
    let doc = documented(&std::fs::read_to_string(doc_path).expect("docs/scenarios.md"));
    let undocumented: Vec<_> = code.difference(&doc).collect();
    let stale: Vec<_> = doc.difference(&code).collect();
    assert!(undocumented.is_empty(), "fields missing from docs/scenarios.md (table, field): {undocumented:?}");
    assert!(stale.is_empty(), "docs/scenarios.md names fields the code does not have: {stale:?}");
    assert!(code.len() > 30, "the walk saw the nested tables: {}", code.len());
}

#[test]
fn the_example_in_the_document_is_a_valid_scenario() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenarios.md")).unwrap();
    let example = doc.split("```toml\n").nth(1).and_then(|r| r.split("```").next()).expect("a toml example");
    let s: Scenario = toml::from_str(example).unwrap_or_else(|e| panic!("the example: {e}"));
    s.check().unwrap();
}
