#!/usr/bin/env bash
# The fuzz targets of every byte reader, for longer than `make test` runs them: HdrHistogram
# encodings and result files (kvbench-model), reports over changed results (kvbench-report),
# plan files (kvbench-policy), trace readers (kvbench-trace), serve's request parsers
# (kvbench-serve), history store rows (kvbench). Seeds are in tests/fuzz-corpus/.
#
# usage: bench/fuzz.sh [CASES]   (default 100000 cases per property; `make test` runs ~256)
# A failure prints the minimal input proptest found (or the seeded case number).
set -euo pipefail
cd "$(dirname "$0")/.."
export KVBENCH_FUZZ_CASES="${1:-100000}"
run() {
    echo "== $*"
    start=$(date +%s)
    cargo test --release -q "$@"
    echo "   $(( $(date +%s) - start )) s"
}
run -p kvbench-model --test fuzz
run -p kvbench-report --test fuzz
run -p kvbench-policy --test plan_file_input
run -p kvbench-trace --test fuzz
run -p kvbench-serve --lib fuzz_tests
run -p kvbench --test history_fuzz
echo "fuzz: ${KVBENCH_FUZZ_CASES} cases per property, no panic"
