//! Load from many hosts, on this one machine: the test starts its own `sshd` on a private
//! loopback port (generated host and client keys, a private config, nothing of the system's
//! ssh setup used), then runs the real kvbench worker on "two hosts" (both 127.0.0.1) through
//! `hosts::run_together`: job and plan uploaded over SSH, clocks measured, workers released
//! together at the barrier, results merged. Set KVBENCH_ALLOW_MISSING=1 to skip without sshd.

#[allow(dead_code)]
#[path = "../src/hosts.rs"]
mod hosts;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kvbench_engines::Entry;
use kvbench_model::job::{Event, Job, StepResult};
use kvbench_model::scenario::{Scenario, Variant};
use kvbench_policy::{dataset, jobs};

struct Sshd(Child);

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "kvbench-test", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen");
    assert!(ok.success());
}

fn user() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// sshd on 127.0.0.1:port with keys under `dir`; the Ssh settings that reach it.
fn start_sshd(dir: &Path) -> Option<(Sshd, hosts::Ssh)> {
    let sshd = ["/usr/sbin/sshd", "/usr/bin/sshd"].iter().map(PathBuf::from).find(|p| p.is_file());
    let Some(sshd) = sshd else {
        if std::env::var_os("KVBENCH_ALLOW_MISSING").is_some() {
            eprintln!("skipping: sshd not installed (apt-get install openssh-server)");
            return None;
        }
        panic!("sshd not installed: apt-get install openssh-server (or KVBENCH_ALLOW_MISSING=1)");
    };
    let (host_key, client_key) = (dir.join("host_key"), dir.join("client_key"));
    keygen(&host_key);
    keygen(&client_key);
    std::fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys")).unwrap();
    let port = kvbench_engines::servers::lifecycle::free_port().unwrap();
    let known = format!("[127.0.0.1]:{port} {}", std::fs::read_to_string(dir.join("host_key.pub")).unwrap());
    std::fs::write(dir.join("known_hosts"), known).unwrap();
    let config = format!(
        "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\nAuthorizedKeysFile {}\n\
         StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
         PermitRootLogin prohibit-password\nUsePAM no\nAllowUsers {}\n",
        host_key.display(),
        dir.join("sshd.pid").display(),
        dir.join("authorized_keys").display(),
        user()
    );
    std::fs::write(dir.join("sshd_config"), config).unwrap();
    if kvbench_engines::servers::lifecycle::is_root() {
        // sshd's privilege separation directory, which the system's service would create.
        std::fs::create_dir_all("/run/sshd").unwrap();
    }
    let log = std::fs::File::create(dir.join("sshd.log")).unwrap();
    let child = Command::new(&sshd)
        .args(["-D", "-e", "-f"])
        .arg(dir.join("sshd_config"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let guard = Sshd(child);
    let t0 = Instant::now();
    while !kvbench_engines::servers::lifecycle::port_open(port) {
        assert!(t0.elapsed() < Duration::from_secs(10), "sshd did not listen: {}", read(&dir.join("sshd.log")));
        std::thread::sleep(Duration::from_millis(20));
    }
    let ssh = hosts::Ssh {
        program: None,
        port: Some(port),
        identity: Some(client_key),
        options: vec![
            format!("UserKnownHostsFile={}", dir.join("known_hosts").display()),
            "StrictHostKeyChecking=yes".into(),
            "IdentitiesOnly=yes".into(),
            "LogLevel=ERROR".into(),
        ],
    };
    Some((guard, ssh))
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

fn scenario() -> Scenario {
    toml::from_str(
        r#"
        engines = ["memory"]
        seed = 11
        [dataset]
        records = 3000
        value = { min = 10, max = 100 }
        [[phase]]
        kind = "load"
        batch = 50
        [[phase]]
        kind = "get"
        threads = 2
        "#,
    )
    .unwrap()
}

/// The job of [`scenario`] on the memory engine, as `kvbench run` would write it.
fn job_for(s: &Scenario, dir: &Path, label: String) -> Job {
    let data = dataset::resolve(s, &dir.join("plans")).unwrap();
    let v = Variant { label: Some(label), ..s.all_variants()[0].clone() };
    let Some(Entry::Ready(memory)) = kvbench_engines::find("memory") else { panic!("memory engine") };
    let options = kvbench_model::engine::Options::parse(memory.name, memory.options, &v.options).unwrap();
    let facts = jobs::RowFacts {
        variant: &v,
        options: options.values(),
        caps: memory.capabilities,
        runtime: "rust",
        server: false,
    };
    let mut plan = jobs::build(s, &data, &facts).unwrap();
    plan.place(&dir.join("db"), None, None);
    plan.job
}

#[test]
fn two_hosts_run_together_and_merge() {
    let tmp = tempfile::Builder::new().prefix("kvbench-hosts-").tempdir().unwrap();
    let Some((_sshd, ssh)) = start_sshd(tmp.path()) else { return };
    let s = scenario();
    let me = hosts::parse_hosts(&format!("{u}@127.0.0.1,{u}@127.0.0.1", u = user())).unwrap();
    let mut jobs = Vec::new();
    for (i, host) in me.iter().enumerate() {
        // Each "host" gets its own remote directory, as two machines would; the data is derived
        // from the job's seeds there, so only the job travels.
        let remote = tmp.path().join(format!("host{i}"));
        let job = job_for(&s, &remote, format!("memory@host{i}"));
        let local_job = tmp.path().join(format!("job{i}.json"));
        std::fs::write(&local_job, serde_json::to_string(&job).unwrap()).unwrap();
        let rjob = remote.join("job.json").display().to_string();
        jobs.push(hosts::HostJob {
            host: host.clone(),
            uploads: vec![hosts::Upload { local: local_job, remote: rjob.clone(), executable: false }],
            command: vec![
                "sh".into(),
                "-c".into(),
                format!("mkdir -p {} && exec {} worker --job {rjob}", job.dir.display(), env!("CARGO_BIN_EXE_kvbench")),
            ],
        });
    }
    let outputs = hosts::run_together(&ssh, &jobs, Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{e}\nsshd log:\n{}", read(&tmp.path().join("sshd.log"))));
    assert_eq!(outputs.len(), 2);

    let mut per_host = Vec::new();
    for o in &outputs {
        assert!(o.success, "{}: {}", o.host, o.stderr);
        // Same machine: the offset is within the round trip, far below a millisecond or so.
        assert!(o.clock.offset_ns.unsigned_abs() < 50_000_000, "{}: offset {:?}", o.host, o.clock);
        let events: Vec<Event> = o.lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(matches!(events.last(), Some(Event::Done {})), "{}: {:?}", o.host, events.last());
        let steps: Vec<StepResult> = events
            .iter()
            .filter_map(|e| match e {
                Event::Step(r) if r.step == "ops" => Some((**r).clone()),
                _ => None,
            })
            .collect();
        assert_eq!(steps.len(), 2, "{}: load and get", o.host);
        per_host.push((o.host.clone(), steps));
    }
    let merged = hosts::merge_steps(&per_host).unwrap();
    for (i, m) in merged.iter().enumerate() {
        let want: u64 = per_host.iter().map(|(_, s)| s[i].ops).sum();
        assert_eq!(m.ops, want);
        assert_eq!(m.ops, 2 * 3000, "every host touched every record");
        assert_eq!(m.mismatches + m.missing + m.errors, 0);
        let hist = m.hist.values().next().expect("a histogram");
        let count = kvbench_model::histogram::decode_histogram(hist).unwrap().len();
        let requests: u64 = per_host.iter().map(|(_, s)| s[i].requests).sum();
        assert_eq!(count, requests, "merged histogram holds every host's samples");
        assert_eq!(m.wall_ns, per_host.iter().map(|(_, s)| s[i].wall_ns).max().unwrap());
    }
    // Uploads landed where the jobs said.
    assert!(tmp.path().join("host1/job.json").is_file());
}

#[test]
fn an_unreachable_host_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let ssh =
        hosts::Ssh { port: Some(kvbench_engines::servers::lifecycle::free_port().unwrap()), ..Default::default() };
    let jobs = vec![hosts::HostJob {
        host: hosts::parse_hosts("nobody@127.0.0.1").unwrap().remove(0),
        uploads: vec![],
        command: vec!["true".into()],
    }];
    let t0 = Instant::now();
    let e = hosts::run_together(&ssh, &jobs, Duration::from_secs(5)).unwrap_err();
    assert!(e.contains("nobody@127.0.0.1"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(30));
    drop(tmp);
}

/// `kvbench run --hosts` end to end: the same scenario on "two hosts" (this machine twice, as
/// two SSH logins with their own remote directories), this kvbench uploaded to each, one row
/// per host and the merged row whose counts are the hosts' sums, every read verified.
#[test]
fn kvbench_run_hosts_reports_per_host_rows_and_the_merged_row() {
    let tmp = tempfile::Builder::new().prefix("kvbench-run-hosts-").tempdir().unwrap();
    let Some((_sshd, ssh)) = start_sshd(tmp.path()) else { return };
    let scenario = tmp.path().join("s.toml");
    std::fs::write(
        &scenario,
        "engines = [\"memory\"]\nseed = 4\ntimeout = 120\n[dataset]\nrecords = 2000\n\
         [[phase]]\nkind = \"load\"\nbatch = 100\n[[phase]]\nkind = \"get\"\nthreads = 2\n\
         [[phase]]\nname = \"mixed\"\nkind = \"mixed\"\nmix = { read = 90, update = 10 }\ncount = 1000\n",
    )
    .unwrap();
    let remote = tmp.path().join("remote");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvbench"));
    cmd.current_dir(tmp.path()).arg("run").arg(&scenario);
    cmd.args(["--no-progress", "--out", "results", "--data-dir", "data", "--plan-dir", "plans"]);
    cmd.arg("--hosts").arg(format!("{u}@127.0.0.1,{u}@127.0.0.1", u = user()));
    cmd.arg("--ssh-port").arg(ssh.port.unwrap().to_string());
    cmd.arg("--ssh-identity").arg(ssh.identity.as_ref().unwrap());
    for o in &ssh.options {
        cmd.arg("--ssh-option").arg(o);
    }
    cmd.arg("--remote-dir").arg(&remote);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}\nsshd log:\n{}", read(&tmp.path().join("sshd.log")));

    let file = std::fs::read_dir(tmp.path().join("results")).unwrap().next().unwrap().unwrap().path();
    let r = kvbench_model::result::RunResult::from_json(&std::fs::read_to_string(file).unwrap()).unwrap();
    let labels: Vec<&str> = r.engines.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels, ["memory", "memory@h1", "memory@h2"]);
    let merged = &r.engines[0];
    assert_eq!(merged.hosts.len(), 2, "the merged row lists both hosts and their clocks");
    for h in &merged.hosts {
        assert!(h.offset_ns.unsigned_abs() < 50_000_000, "one machine: offset {h:?}");
    }
    for e in &r.engines {
        assert_eq!(e.status, kvbench_model::result::Status::Ok, "{}: {:?}", e.label, e.error);
    }
    for name in ["load", "get", "mixed"] {
        let phase = |i: usize| r.engines[i].phases.iter().find(|p| p.name == name).unwrap();
        let (m, a, b) = (phase(0), phase(1), phase(2));
        assert_eq!(m.ops, a.ops + b.ops, "{name}: merged ops are the hosts' sum");
        assert_eq!(m.requests, a.requests + b.requests, "{name}");
        assert_eq!(a.ops, if name == "mixed" { 1000 } else { 2000 }, "{name}: each host ran the whole phase");
        for p in [m, a, b] {
            assert_eq!(p.mismatches + p.missing + p.errors, 0, "{name}: every read verified");
        }
        let hist = m.latency.as_ref().unwrap();
        let count = kvbench_model::histogram::decode_histogram(&hist.hdr).unwrap().len();
        assert_eq!(count, m.requests, "{name}: the merged histogram holds every host's samples");
        assert!(m.wall_ns >= a.wall_ns.max(b.wall_ns), "{name}: common wall time spans both hosts");
        assert!(m.notes.iter().any(|n| n.contains("merged from 2 hosts")), "{name}: {:?}", m.notes);
    }
    let left = remote.read_dir().map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0, "the hosts' run directories are removed");
    // The table shows the rows and where the clocks stood.
    let table = String::from_utf8_lossy(&out.stdout);
    eprintln!("{table}");
    assert!(table.contains("memory@h2") && table.contains("clock"), "{table}");
}
