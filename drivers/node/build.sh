#!/usr/bin/env bash
# The Node worker (make node): the pinned npm packages of package-lock.json in node_modules, and
# the worker core's Node-API addon (crates/kvbench-node, target/release/libkvbench_node.so).
# `npm ci` runs only when node_modules is not what the lock file and this Node say (a stamp):
# after the first install nothing is fetched, and better-sqlite3 (compiled from source when
# its prebuilt binary cannot be downloaded: minutes) is not rebuilt.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v node >/dev/null || { echo "build.sh: node not found (Node.js >= 20 and npm are needed)" >&2; exit 1; }
stamp="$here/node_modules/.kvbench-install"
want="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1) $(node --version)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    echo "build.sh: npm ci in $here" >&2
    (cd "$here" && npm ci --no-audit --no-fund --prefer-offline)
    echo "$want" > "$stamp"
fi
# KVBENCH_CORE_BUILD: which cargo build makes the addon (`make run` and `make install` name the workspace,
# the release build they make anyway: building one package alone unifies its dependencies'
# features apart from the workspace's, so cargo would compile them a second time).
# shellcheck disable=SC2086
(cd "$here/../.." && "${CARGO:-cargo}" build --release --quiet ${KVBENCH_CORE_BUILD:--p kvbench-node})
# The worker answers --list with every engine loaded (a broken native module shows here).
"$here/bin/kvbench-node-worker" --list | node -e '
const l = JSON.parse(require("fs").readFileSync(0, "utf8"));
const bad = l.filter((e) => !e.available);
for (const e of bad) console.error(`build.sh: ${e.name} unavailable: ${e.why}`);
process.exit(bad.length ? 1 : 0);'
