#!/usr/bin/env bash
# Builds kvbench's Java worker: target/kvbench-java-worker.jar and its dependencies in target/lib/
# with Maven (versions pinned in pom.xml), on Temurin 25, then the worker core (crates/kvbench-ffi,
# a cdylib the worker loads through the FFM API) into the repository's target/release.
# bin/kvbench-java-worker runs it.
set -euo pipefail
cd "$(dirname "$0")"
export JAVA_HOME="${KVBENCH_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
[[ -x "$JAVA_HOME/bin/javac" ]] || { echo "no JDK 25 at $JAVA_HOME: install Temurin 25 or set KVBENCH_JAVA_HOME" >&2; exit 1; }
command -v mvn >/dev/null || { echo "mvn not found: install Maven (apt-get install maven)" >&2; exit 1; }
command -v cargo >/dev/null || { echo "cargo not found: install Rust (make rust)" >&2; exit 1; }
# Maven first: the jar needs no core (the worker loads it at run time), so under `make run` its
# downloads and compile overlap the release build instead of following it.
mvn -B -q -ntp -DskipTests package
# KVBENCH_CORE_BUILD: which cargo build makes it (`make run` and `make install` name the workspace,
# the release build they make anyway: building one package alone unifies its dependencies'
# features apart from the workspace's, so cargo would compile them a second time).
# shellcheck disable=SC2086
(cd ../.. && cargo build --release ${KVBENCH_CORE_BUILD:--p kvbench-ffi} --target-dir target)
echo "built $(pwd)/target/kvbench-java-worker.jar ($(ls target/lib | wc -l) jars in target/lib)"
