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

/// The formats the code accepts, from its own error for a name it does not know.
fn accepted_formats() -> Vec<String> {
    let e = "?".parse::<kvbench_report::Format>().unwrap_err();
    let list = &e[e.rfind('(').unwrap() + 1..e.rfind(')').unwrap()];
    let names: Vec<String> = list.split(", ").map(String::from).collect();
    for n in &names {
        assert!(n.parse::<kvbench_report::Format>().is_ok(), "the error lists `{n}`, which is refused");
    }
    names
}

/// The help of `--format` in one subcommand.
fn format_help(sub: &str) -> String {
    let cli = Cli::command();
    let arg = cli.find_subcommand(sub).unwrap().get_arguments().find(|a| a.get_long() == Some("format")).unwrap();
    arg.get_help().unwrap().to_string()
}

#[test]
fn every_format_the_code_accepts_is_named_in_the_help_and_the_readme() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let run_row = readme.lines().find(|l| l.starts_with("| `-f, --format")).expect("the README's --format row");
    let report_example = readme.lines().find(|l| l.contains("--format markdown   #")).expect("the report example");
    for name in accepted_formats() {
        for (what, text) in [
            ("run --help", format_help("run")),
            ("report --help", format_help("report")),
            ("README run row", run_row.into()),
        ] {
            assert!(text.contains(&name), "{what} does not name format `{name}`: {text}");
        }
        if name != "hlog" {
            // hlog has an example line of its own below.
            assert!(report_example.contains(&name), "the README's report example does not name `{name}`");
        }
    }
}

#[test]
fn the_help_and_the_readme_say_the_same_about_cache() {
    let cli = Cli::command();
    let arg = cli.find_subcommand("run").unwrap().get_arguments().find(|a| a.get_long() == Some("cache")).unwrap();
    let help = arg.get_help().unwrap().to_string();
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let row = readme.lines().find(|l| l.starts_with("| `--cache")).unwrap();
    // The scope the flag applies to (kvbench_model::flags: every phase after the load).
    assert!(help.starts_with("Before each phase after the load") && row.contains("Before each phase after the load"));
}

/// The README row of `flag` (`--sync`).
fn readme_row(flag: &str) -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    readme.lines().find(|l| l.starts_with(&format!("| `{flag} "))).unwrap_or_else(|| panic!("no row {flag}")).into()
}

/// The words in backticks after a row's first cell.
fn backticked(row: &str) -> std::collections::BTreeSet<String> {
    let rest = row.splitn(3, '|').nth(2).unwrap();
    rest.split('`').skip(1).step_by(2).map(String::from).collect()
}

#[test]
fn the_readme_names_exactly_the_values_each_choice_flag_accepts() {
    for flag in ["--sync", "--cache", "--order", "--key"] {
        let e = Cli::command().try_get_matches_from(["kvbench", "plan", flag, "zzz"]).unwrap_err().to_string();
        // The parser's own list: `allowed: a, b, c` (or `sync: a, b, c`).
        let list = e.lines().find(|l| l.contains(": ") && l.contains(", ")).unwrap_or_else(|| panic!("{e}"));
        let accepted: std::collections::BTreeSet<String> =
            list.rsplit(": ").next().unwrap().split(", ").map(|w| w.trim().to_string()).collect();
        assert_eq!(backticked(&readme_row(flag)), accepted, "{flag}: README (left), parser (right)");
    }
    let cli = Cli::command();
    let run = cli.find_subcommand("run").unwrap();
    let status = run.get_arguments().find(|a| a.get_long() == Some("status-interval")).unwrap();
    let default = status.get_default_values()[0].to_str().unwrap().to_string();
    assert!(readme_row("--status-interval").contains(&format!("(default {default};")), "status-interval {default}");
}
