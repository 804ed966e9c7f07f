//! Finds the system libraries of the engines that are enabled. An engine whose library is
//! missing still builds: its registry entry says what to install (see src/registry.rs).

use std::path::Path;

/// feature, cfg name, header that proves the -dev package is there, libraries to link,
/// Debian package, optional C shim in csrc/.
struct Lib {
    feature: &'static str,
    cfg: &'static str,
    header: &'static str,
    link: &'static [&'static str],
    package: &'static str,
    shim: Option<&'static str>,
}

const LIBS: &[Lib] = &[
    Lib {
        feature: "lmdb",
        cfg: "kvb_lmdb",
        header: "/usr/include/lmdb.h",
        link: &["lmdb"],
        package: "liblmdb-dev",
        shim: None,
    },
    Lib {
        feature: "leveldb",
        cfg: "kvb_leveldb",
        header: "/usr/include/leveldb/c.h",
        link: &["leveldb"],
        package: "libleveldb-dev",
        shim: None,
    },
    Lib {
        feature: "rocksdb",
        cfg: "kvb_rocksdb",
        header: "/usr/include/rocksdb/c.h",
        link: &[],
        package: "librocksdb-dev",
        shim: None,
    },
    Lib {
        feature: "sqlite",
        cfg: "kvb_sqlite",
        header: "/usr/include/sqlite3.h",
        link: &[],
        package: "libsqlite3-dev",
        shim: None,
    },
    Lib {
        feature: "tokyocabinet",
        cfg: "kvb_tokyocabinet",
        header: "/usr/include/tchdb.h",
        link: &["tokyocabinet"],
        package: "libtokyocabinet-dev",
        shim: None,
    },
    Lib {
        feature: "kyotocabinet",
        cfg: "kvb_kyotocabinet",
        header: "/usr/include/kclangc.h",
        link: &["kyotocabinet"],
        package: "libkyotocabinet-dev",
        shim: None,
    },
    Lib {
        feature: "qdbm",
        cfg: "kvb_qdbm",
        header: "/usr/include/qdbm/depot.h",
        link: &["qdbm"],
        package: "libqdbm-dev",
        shim: None,
    },
    Lib {
        feature: "tinycdb",
        cfg: "kvb_tinycdb",
        header: "/usr/include/cdb.h",
        link: &["cdb"],
        package: "libcdb-dev",
        shim: Some("cdb_shim.c"),
    },
    Lib {
        feature: "gdbm",
        cfg: "kvb_gdbm",
        header: "/usr/include/gdbm.h",
        link: &["gdbm"],
        package: "libgdbm-dev",
        shim: None,
    },
    Lib {
        feature: "bdb",
        cfg: "kvb_bdb",
        header: "/usr/include/db.h",
        link: &["db"],
        package: "libdb-dev",
        shim: Some("bdb_shim.c"),
    },
    Lib {
        feature: "tkrzw",
        cfg: "kvb_tkrzw",
        header: "/usr/include/tkrzw_langc.h",
        link: &["tkrzw"],
        package: "libtkrzw-dev",
        shim: None,
    },
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc");
    for lib in LIBS {
        println!("cargo::rustc-check-cfg=cfg({})", lib.cfg);
        let upper = lib.feature.to_uppercase().replace('-', "_");
        let version = std::process::Command::new("dpkg-query")
            .args(["-W", "-f=${Version}", lib.package])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        println!("cargo:rustc-env=KVB_PKG_VERSION_{upper}={version}");
        if std::env::var_os(format!("CARGO_FEATURE_{upper}")).is_none() {
            continue;
        }
        if !Path::new(lib.header).exists() {
            println!(
                "cargo:rustc-env=KVB_MISSING_{}={} is not installed (no {}): apt-get install {} and rebuild",
                lib.feature, lib.package, lib.header, lib.package
            );
            println!("cargo:warning=engine {} left out: {} not installed", lib.feature, lib.package);
            continue;
        }
        println!("cargo:rustc-cfg={}", lib.cfg);
        for l in lib.link {
            println!("cargo:rustc-link-lib={l}");
        }
        if let Some(shim) = lib.shim {
            cc::Build::new()
                .file(format!("csrc/{shim}"))
                .warnings(true)
                .compile(&format!("kvb_{}", lib.feature.replace('-', "_")));
        }
    }
}
