#!/usr/bin/env bash
# Installs kvbench under PREFIX so that it runs from any directory with every runtime:
#   PREFIX/bin/kvbench
#   PREFIX/lib/kvbench/            kvbench's home (what KVBENCH_HOME names; found beside the binary)
#     drivers/go/bin/              the Go worker and its one-engine workers
#     drivers/python/.venv/        the Python worker's own venv (pinned requirements, the package)
#     drivers/java/                the Java worker's launcher, jar and dependencies
#     drivers/node/                the Node.js worker (its script, lib and pinned node_modules)
#     lib/libkvbench_ffi.so        the worker core the Python and Java workers load
#     lib/libkvbench_node.so       the worker core's Node-API addon the Node.js worker loads
#     scenarios/                   the scenario files (`kvbench run scenarios/X.toml` from anywhere)
# `make install PREFIX=...` builds everything first; this script only copies and makes the venv.
#   scripts/install.sh PREFIX
#   KVBENCH_BIN=path          the kvbench binary to install (default target/release/kvbench)
#   KVBENCH_RUNTIMES="go python java node"   the worker runtimes to install (default all four)
set -euo pipefail
prefix="${1:?usage: scripts/install.sh PREFIX}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${KVBENCH_BIN:-$root/target/release/kvbench}"
runtimes="${KVBENCH_RUNTIMES:-go python java node}"
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
home="$prefix/lib/kvbench"
install -D -m 755 "$bin" "$prefix/bin/kvbench"
mkdir -p "$home/drivers/go" "$home/drivers/python" "$home/lib"
rm -rf "$home/scenarios"
cp -r "$root/scenarios" "$home/scenarios"
if [[ " $runtimes " == *" go "* ]]; then
    [[ -x "$root/drivers/go/bin/kvbench-go-worker" ]] || { echo "install.sh: no Go worker: run make go" >&2; exit 1; }
    rm -rf "$home/drivers/go/bin"
    cp -r "$root/drivers/go/bin" "$home/drivers/go/bin"
fi
if [[ " $runtimes " == *" python "* || " $runtimes " == *" java "* ]]; then
    core="$root/target/release/libkvbench_ffi.so"
    [[ -f "$core" ]] || { echo "install.sh: no worker core $core: run make python or make java" >&2; exit 1; }
    install -m 644 "$core" "$home/lib/libkvbench_ffi.so"
fi
if [[ " $runtimes " == *" java "* ]]; then
    jar="$root/drivers/java/target/kvbench-java-worker.jar"
    [[ -f "$jar" ]] || { echo "install.sh: no Java worker $jar: run make java" >&2; exit 1; }
    rm -rf "$home/drivers/java"
    mkdir -p "$home/drivers/java/target"
    cp -r "$root/drivers/java/bin" "$home/drivers/java/bin"
    cp -r "$jar" "$root/drivers/java/target/lib" "$home/drivers/java/target/"
fi
if [[ " $runtimes " == *" node "* ]]; then
    addon="$root/target/release/libkvbench_node.so"
    [[ -f "$addon" && -d "$root/drivers/node/node_modules" ]] || { echo "install.sh: no Node.js worker ($addon, drivers/node/node_modules): run make node" >&2; exit 1; }
    rm -rf "$home/drivers/node"
    mkdir -p "$home/drivers/node"
    cp -r "$root/drivers/node/bin" "$root/drivers/node/lib" "$root/drivers/node/node_modules" \
        "$root/drivers/node/package.json" "$root/drivers/node/package-lock.json" "$home/drivers/node/"
    install -m 644 "$addon" "$home/lib/libkvbench_node.so"
fi
if [[ " $runtimes " == *" python "* ]]; then
    venv="$home/drivers/python/.venv"
    "${PYTHON:-python3}" -m venv --clear "$venv"
    export PIP_DISABLE_PIP_VERSION_CHECK=1
    "$venv/bin/python" -m pip install --quiet -r "$root/drivers/python/requirements.txt"
    # A copy, not an editable install: the checkout may go away.
    "$venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation "$root/drivers/python"
fi
echo "installed $prefix/bin/kvbench (home $home; runtimes: rust $runtimes)"
