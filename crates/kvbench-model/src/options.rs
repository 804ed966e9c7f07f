//! Engine options, checked and resolved once in Rust for every runtime. A row's options are
//! checked against the engine's specs (the Rust registry's, or those a Go or Python worker
//! declares in `--list`) and written into the job resolved: every option of the engine present,
//! defaults filled in, sizes as integers. Workers only read them.

use std::collections::BTreeMap;

use serde_json::Value;

/// The type of an engine option; values arrive as JSON from the scenario or the CLI.
#[derive(Debug, Clone, Copy)]
pub enum OptionKind {
    Bool,
    /// An integer; sizes accept suffixes `k`, `m`, `g` (powers of 1024) when given as text.
    Int,
    Enum(&'static [&'static str]),
    Text,
}

#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    pub name: &'static str,
    pub kind: OptionKind,
    pub default: &'static str,
    pub doc: &'static str,
}

/// One line per option in an engine's table.
impl OptionSpec {
    pub const fn bool(name: &'static str, default: &'static str, doc: &'static str) -> OptionSpec {
        OptionSpec { name, kind: OptionKind::Bool, default, doc }
    }

    pub const fn int(name: &'static str, default: &'static str, doc: &'static str) -> OptionSpec {
        OptionSpec { name, kind: OptionKind::Int, default, doc }
    }

    pub const fn text(name: &'static str, default: &'static str, doc: &'static str) -> OptionSpec {
        OptionSpec { name, kind: OptionKind::Text, default, doc }
    }

    /// An option that takes one of `values`.
    pub const fn one_of(
        name: &'static str,
        values: &'static [&'static str],
        default: &'static str,
        doc: &'static str,
    ) -> OptionSpec {
        OptionSpec { name, kind: OptionKind::Enum(values), default, doc }
    }
}

/// The type of an option, owned (a worker's `--list` is read at run time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Bool,
    /// An integer; sizes accept suffixes `k`, `m`, `g` (powers of 1024) when given as text.
    Int,
    Enum(Vec<String>),
    Text,
}

/// One option of one engine, from whichever runtime declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionDecl {
    pub name: String,
    pub kind: Kind,
    /// As the spec spells it (`64m`, `true`, `snappy`); empty: unset, the engine's own default.
    pub default: String,
}

impl From<OptionKind> for Kind {
    fn from(kind: OptionKind) -> Self {
        match kind {
            OptionKind::Bool => Kind::Bool,
            OptionKind::Int => Kind::Int,
            OptionKind::Enum(c) => Kind::Enum(c.iter().map(|s| s.to_string()).collect()),
            OptionKind::Text => Kind::Text,
        }
    }
}

impl From<&OptionSpec> for OptionDecl {
    fn from(spec: &OptionSpec) -> Self {
        OptionDecl { name: spec.name.into(), kind: spec.kind.into(), default: spec.default.into() }
    }
}

impl OptionDecl {
    /// A spec as a worker's `--list` declares it (`kind` = `bool`|`int`|`enum`|`text`).
    pub fn from_list(name: &str, kind: &str, default: &str, choices: &[String]) -> Result<OptionDecl, String> {
        let kind = match kind {
            "bool" => Kind::Bool,
            "int" => Kind::Int,
            "enum" => Kind::Enum(choices.to_vec()),
            "text" => Kind::Text,
            other => return Err(format!("option `{name}` has kind `{other}` (expected bool, int, enum or text)")),
        };
        Ok(OptionDecl { name: name.into(), kind, default: default.into() })
    }
}

/// A row's option that the engine does not take; `option` names it so the caller can point
/// at its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    pub option: String,
    pub message: String,
}

impl std::fmt::Display for OptionError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.message)
    }
}

/// Check `given` against `decls` and resolve it: every option of the engine, `null` where the
/// spec has no default (the engine's own default applies), sizes as integers.
pub fn resolve(
    engine: &str,
    decls: &[OptionDecl],
    given: &BTreeMap<String, Value>,
) -> Result<BTreeMap<String, Value>, OptionError> {
    for name in given.keys() {
        if !decls.iter().any(|d| &d.name == name) {
            let known: Vec<&str> = decls.iter().map(|d| d.name.as_str()).collect();
            let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
            let message = format!("engine {engine} has no option `{name}` (options: {known})");
            return Err(OptionError { option: name.clone(), message });
        }
    }
    let mut out = BTreeMap::new();
    for d in decls {
        let value = match given.get(&d.name) {
            Some(v) => value_of(&d.kind, v).ok_or_else(|| wrong_kind(engine, d, v))?,
            None => default_of(engine, d)?,
        };
        out.insert(d.name.clone(), value);
    }
    Ok(out)
}

fn wrong_kind(engine: &str, decl: &OptionDecl, value: &Value) -> OptionError {
    let message = format!("engine {engine} option `{}` = {value}: expected {}", decl.name, describe(&decl.kind));
    OptionError { option: decl.name.clone(), message }
}

/// The value as the job carries it, or None when `value` is not of the kind.
fn value_of(kind: &Kind, value: &Value) -> Option<Value> {
    match kind {
        Kind::Bool => value.is_boolean().then(|| value.clone()),
        Kind::Int => value.as_i64().or_else(|| value.as_str().and_then(parse_size)).map(Value::from),
        Kind::Enum(choices) => value.as_str().filter(|s| choices.iter().any(|c| c == s)).map(Value::from),
        Kind::Text => value.is_string().then(|| value.clone()),
    }
}

/// The spec's default as a value; a default that is not of its own kind is the engine's bug.
fn default_of(engine: &str, decl: &OptionDecl) -> Result<Value, OptionError> {
    if decl.default.is_empty() {
        return Ok(Value::Null);
    }
    let given = match decl.kind {
        Kind::Bool => Value::Bool(decl.default == "true"),
        _ => Value::String(decl.default.clone()),
    };
    value_of(&decl.kind, &given).ok_or_else(|| OptionError {
        option: decl.name.clone(),
        message: format!(
            "engine {engine} declares option `{}` with default `{}`, which is not {}",
            decl.name,
            decl.default,
            describe(&decl.kind)
        ),
    })
}

/// What a kind accepts, as error messages and `kvbench list` say it.
pub fn describe(kind: &Kind) -> String {
    match kind {
        Kind::Bool => "true or false".into(),
        Kind::Int => "an integer (sizes may say 64m, 1g)".into(),
        Kind::Enum(c) => format!("one of {}", c.join(", ")),
        Kind::Text => "a string".into(),
    }
}

/// `123`, `64k`, `64m`, `1g` (powers of 1024); None for anything else or beyond i64.
pub fn parse_size(text: &str) -> Option<i64> {
    let text = text.trim().to_ascii_lowercase();
    let (num, mult) = match text.chars().last()? {
        'k' => (&text[..text.len() - 1], 1i64 << 10),
        'm' => (&text[..text.len() - 1], 1 << 20),
        'g' => (&text[..text.len() - 1], 1 << 30),
        _ => (&text[..], 1),
    };
    num.trim().parse::<i64>().ok().and_then(|n| n.checked_mul(mult))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decls() -> Vec<OptionDecl> {
        let d = |name: &str, kind: Kind, default: &str| OptionDecl { name: name.into(), kind, default: default.into() };
        vec![
            d("cache", Kind::Int, "8m"),
            d("limit", Kind::Int, ""),
            d("raw", Kind::Bool, "false"),
            d("compression", Kind::Enum(vec!["none".into(), "snappy".into()]), "snappy"),
            d("prefix", Kind::Text, "kvb/"),
        ]
    }

    fn given(v: Value) -> BTreeMap<String, Value> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn every_option_is_resolved_with_defaults_and_sizes_as_integers() {
        let got = resolve("e", &decls(), &given(json!({"cache": "64M", "raw": true}))).unwrap();
        let want = json!({"cache": 67108864, "limit": null, "raw": true, "compression": "snappy", "prefix": "kvb/"});
        assert_eq!(serde_json::to_value(&got).unwrap(), want);
        let defaults = resolve("e", &decls(), &BTreeMap::new()).unwrap();
        assert_eq!(defaults["cache"], json!(8 << 20));
        assert_eq!(defaults["raw"], json!(false));
    }

    #[test]
    fn a_resolved_map_resolves_to_itself_except_unset_options() {
        let once = resolve("e", &decls(), &given(json!({"cache": "1g"}))).unwrap();
        let mut set = once.clone();
        set.remove("limit");
        assert_eq!(resolve("e", &decls(), &set).unwrap(), once);
    }

    #[test]
    fn bad_options_name_the_option_and_what_it_takes() {
        let err = |v: Value| resolve("go-x", &decls(), &given(v)).unwrap_err();
        let e = err(json!({"cahce": 1}));
        assert_eq!(e.option, "cahce");
        assert_eq!(e.message, "engine go-x has no option `cahce` (options: cache, limit, raw, compression, prefix)");
        let e = err(json!({"cache": "64x"}));
        assert_eq!(e.message, "engine go-x option `cache` = \"64x\": expected an integer (sizes may say 64m, 1g)");
        assert_eq!(err(json!({"raw": "yes"})).message, "engine go-x option `raw` = \"yes\": expected true or false");
        let e = err(json!({"compression": "zstd"}));
        assert_eq!(e.message, "engine go-x option `compression` = \"zstd\": expected one of none, snappy");
        assert_eq!(err(json!({"prefix": 3})).message, "engine go-x option `prefix` = 3: expected a string");
        assert_eq!(err(json!({"cache": 1.5})).option, "cache");
        let none = resolve("m", &[], &given(json!({"a": 1}))).unwrap_err();
        assert_eq!(none.message, "engine m has no option `a` (options: none)");
    }

    #[test]
    fn sizes() {
        let got: Vec<_> = ["123", "64k", "64M", " 1g ", "x", "", "k", "1_000", "9999999999g", "-2k"]
            .iter()
            .map(|s| parse_size(s))
            .collect();
        let want =
            [Some(123), Some(64 << 10), Some(64 << 20), Some(1 << 30), None, None, None, None, None, Some(-2048)];
        assert_eq!(got, want);
    }

    #[test]
    fn a_worker_kind_outside_the_four_is_refused() {
        assert!(OptionDecl::from_list("x", "float", "", &[]).is_err());
        let d = OptionDecl::from_list("f", "enum", "a", &["a".into(), "b".into()]).unwrap();
        assert_eq!(d.kind, Kind::Enum(vec!["a".into(), "b".into()]));
    }
}
