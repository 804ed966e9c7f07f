//! Headless Chromium for the page tests (the HTML report here, the dashboard in `kvbench`'s
//! history tests, through the `browser-test` feature): render a page's DOM, catch console
//! messages, write screenshots. Without Chromium a test says so and passes, unless
//! `KVBENCH_REQUIRE_CHROMIUM` is set (as `make test` does, having installed it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KVBENCH_CHROMIUM") {
        return Some(p.into());
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// Run Chromium on `page` with `args`; (stdout, stderr). Killed after 20 s.
pub fn run(bin: &Path, args: &[String], page: &Path) -> (String, String) {
    run_url(bin, args, &format!("file://{}", page.display()))
}

/// Run Chromium on `url` (a page with a `#fragment`, say) with `args`; (stdout, stderr).
pub fn run_url(bin: &Path, args: &[String], url: &str) -> (String, String) {
    let profile = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
    ]);
    cmd.arg(format!("--user-data-dir={}", profile.path().display()));
    cmd.args(args).arg(url);
    let out_path = profile.path().join("out");
    let err_path = profile.path().join("err");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 20 s on {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (std::fs::read_to_string(out_path).unwrap_or_default(), std::fs::read_to_string(err_path).unwrap_or_default())
}

/// The console messages in Chromium's stderr.
pub fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// Chromium, or None when it is missing and not required (the test then says it skipped).
pub fn browser(what: &str) -> Option<PathBuf> {
    let bin = chromium();
    if bin.is_none() {
        assert!(std::env::var_os("KVBENCH_REQUIRE_CHROMIUM").is_none(), "chromium not found (make deps installs it)");
        eprintln!("chromium not found: {what} browser test skipped");
    }
    bin
}

/// Where pages and screenshots go (`KVBENCH_SCREENSHOT_DIR`, as `make test` sets it).
pub fn screenshot_dir() -> PathBuf {
    let dir = std::env::var_os("KVBENCH_SCREENSHOT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("kvbench-html-test"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Write a screenshot of `page` at `width` x `height` to `shot`; its size in bytes.
pub fn screenshot(bin: &Path, page: &str, shot: &Path, width: u32, height: u32) -> u64 {
    let _ = std::fs::remove_file(shot);
    run_url(bin, &[format!("--screenshot={}", shot.display()), format!("--window-size={width},{height}")], page);
    std::fs::metadata(shot).map(|m| m.len()).unwrap_or(0)
}
