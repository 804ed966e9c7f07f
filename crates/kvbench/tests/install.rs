//! `make install PREFIX=...` (scripts/install.sh): an installed copy in a temporary prefix runs
//! from a directory outside the checkout, finds its Go workers beside itself, and says which
//! runtimes it found and where. (The Python runtime's venv needs PyPI, so this test installs
//! the Rust and Go runtimes; `make install` installs all three.)

use std::path::Path;
use std::process::Command;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn an_installed_copy_lists_and_plans_from_outside_the_checkout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if !root.join("drivers/go/bin/kvbench-go-worker").exists() {
        eprintln!("skipped: no Go worker built (make go)");
        return;
    }
    let prefix = tempfile::tempdir().unwrap();
    let o = Command::new(root.join("scripts/install.sh"))
        .arg(prefix.path())
        .env("KVBENCH_BIN", env!("CARGO_BIN_EXE_kvbench"))
        .env("KVBENCH_RUNTIMES", "go")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let away = tempfile::tempdir().unwrap();
    let kvbench = prefix.path().join("bin/kvbench");
    let home = prefix.path().canonicalize().unwrap().join("lib/kvbench");
    let o = Command::new(&kvbench).arg("list").current_dir(away.path()).env_remove("KVBENCH_HOME").output().unwrap();
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let go_bbolt = out.lines().find(|l| l.starts_with("go-bbolt ")).unwrap_or_else(|| panic!("{out}"));
    assert!(go_bbolt.ends_with(" ok"), "{go_bbolt}");
    assert!(out.contains(&format!("  go      {}/drivers/go/bin/kvbench-go-worker", home.display())), "{out}");
    assert!(out.contains(&format!("  home    {}", home.display())), "{out}");
    // A scenario named as in the README, from any directory: the installed copy's.
    let o = Command::new(&kvbench)
        .args(["plan", "scenarios/quick.toml", "--engines", "go-bbolt", "--records", "500"])
        .current_dir(away.path())
        .env_remove("KVBENCH_HOME")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("scenarios/quick.toml (from kvbench's home)"), "{}", text(&o.stderr));
}
