#!/usr/bin/env bash
# Create (or bring up to date) drivers/python/.venv with the pinned requirements and the
# kvbench_driver package installed editable, then build the worker core (crates/kvbench-ffi,
# which the worker loads with ctypes). Idempotent: cargo does nothing when the core is up to date, and
# when the requirements and the package metadata have not changed since the last successful
# run, the venv is left as it is.
#   drivers/python/setup.sh           runtime + dev tools (pytest, ruff)
#   PYTHON=python3.12 setup.sh        choose the interpreter the venv is made from
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
python="${PYTHON:-python3}"
stamp="$venv/.kvbench-setup"
# KVBENCH_CORE_BUILD: which cargo build makes it (`make run` and `make install` name the workspace,
# the release build they make anyway: building one package alone unifies its dependencies'
# features apart from the workspace's, so cargo would compile them a second time).
# shellcheck disable=SC2086
core() { (cd "$here/../.." && "${CARGO:-cargo}" build --release --quiet ${KVBENCH_CORE_BUILD:--p kvbench-ffi}); }
want="$(cat "$here/requirements.txt" "$here/requirements-dev.txt" "$here/pyproject.toml" | sha256sum | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.version.split()[0])')"

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    core
    exit 0
fi
# The downloads first: beside a release build (make run's -j3) they cost no wall time.
if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup.sh: creating $venv" >&2
    "$python" -m venv "$venv"
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$venv/bin/python" -m pip install --quiet -r "$here/requirements-dev.txt"
"$venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e "$here" 2>/dev/null \
    || "$venv/bin/python" -m pip install --quiet --no-deps -e "$here"
core
"$venv/bin/python" -c "import hdrh; from kvbench_driver import core; core.load()" >/dev/null
echo "$want" > "$stamp"
echo "setup.sh: $venv ready" >&2
