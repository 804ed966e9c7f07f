//! The command line's documentation: every flag has help text, `plan` offers only what a plan
//! uses, and the README's table of flags lists exactly the flags of `run` and `plan`.

use std::collections::BTreeMap;

use clap::CommandFactory;

use crate::Cli;

/// `(command path, argument id)` of every argument of every visible command without help.
fn missing_help(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let id = a.get_id().as_str();
        if a.get_help().is_none() && a.get_long_help().is_none() && id != "help" && id != "version" {
            out.push(format!("{path} {id}"));
        }
    }
    for sub in cmd.get_subcommands().filter(|c| !c.is_hide_set()) {
        missing_help(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

#[test]
fn every_flag_and_argument_has_help_text() {
    let mut missing = Vec::new();
    missing_help(&Cli::command(), "kvbench", &mut missing);
    assert!(missing.is_empty(), "arguments without help text: {missing:?}");
}

/// The long flags of one subcommand (`--records`), help and version left out.
fn flags(name: &str) -> Vec<String> {
    let cli = Cli::command();
    let sub = cli.find_subcommand(name).unwrap();
    sub.get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_long())
        .filter(|l| *l != "help")
        .map(|l| format!("--{l}"))
        .collect()
}

#[test]
fn plan_offers_no_flag_of_a_run_only() {
    let plan = flags("plan");
    for only_run in ["--hosts", "--timeout", "--data-dir", "--keep-data", "--format", "--no-progress", "--ssh-port"] {
        assert!(!plan.contains(&only_run.to_string()), "plan offers {only_run}");
    }
}

/// The README's table of flags: flag -> the commands column (`run, plan` or `run`).
fn readme_table() -> BTreeMap<String, String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let start = readme.find("| flag | commands | meaning |").expect("the README's table of flags");
    let mut rows = BTreeMap::new();
    for line in readme[start..].lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // `-o, --option ENGINE.OPTION=VALUE`: the long flag.
        let long = cells[1].trim_matches('`').split([' ', '=']).find(|w| w.starts_with("--")).unwrap_or_default();
        rows.insert(long.to_string(), cells[2].to_string());
    }
    rows
}

#[test]
fn the_readme_flag_table_lists_exactly_the_flags_of_run_and_plan() {
    let table = readme_table();
    let (run, plan) = (flags("run"), flags("plan"));
    let mut want = BTreeMap::new();
    for f in &run {
        let commands = if plan.contains(f) { "run, plan" } else { "run" };
        want.insert(f.clone(), commands.to_string());
    }
    for f in plan.iter().filter(|f| !run.contains(f)) {
        want.insert(f.clone(), "plan".to_string());
    }
    assert_eq!(table, want, "README table (left) against `run`/`plan` flags (right)");
}

#[test]
fn every_flag_docs_scenarios_md_names_exists() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenarios.md")).unwrap();
    let run = flags("run");
    let named: Vec<&str> = doc
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w[2..].starts_with(|c: char| c.is_ascii_lowercase()))
        .collect();
    assert!(!named.is_empty());
    for f in named {
        assert!(run.iter().any(|r| r == f), "docs/scenarios.md names {f}, which `run` does not take");
    }
}

#[test]
fn a_mistyped_flag_gets_a_short_usage_line() {
    let e = Cli::command().try_get_matches_from(["kvbench", "run", "--record", "5"]).unwrap_err().to_string();
    assert!(e.contains("a similar argument exists: '--records'"), "{e}");
    let usage = e.lines().find(|l| l.starts_with("Usage:")).unwrap();
    assert!(usage.len() < 80, "{usage}");
}
