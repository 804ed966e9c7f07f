#!/usr/bin/env bash
# etcd's own benchmark tool against kvbench's go-etcd engine, on the same 3-member etcd cluster
# (started once by kvbench's code, from Debian's etcd-server) and the same two workloads:
#   put:   N puts of distinct 8-byte keys with VAL-byte values, one at a time, one client
#          (kvbench's write phases run on one thread until the protocol 2 workers land)
#   range: N linearizable reads of one 8-byte key holding a VAL-byte value, CLIENTS clients
# Both tools give each client its own connection to one member, clients spread over members.
# Each tool runs REPS times, alternately; the script prints every run's requests/s and the
# ratio kvbench / etcd-benchmark of the means. Not a test: numbers depend on the machine.
#
#   bench/etcd.sh                       # N=2000 CLIENTS=1 VAL=256 REPS=2
#   N=5000 CLIENTS=8 bench/etcd.sh
#
# etcd's tool is built from etcd's Go module at the version of go-etcd's client
# (go.etcd.io/etcd/v3 v3.5.21, tools/benchmark) in a scratch module, as `go install` refuses
# modules with replace directives.
set -euo pipefail
N=${N:-2000}
CLIENTS=${CLIENTS:-1}
VAL=${VAL:-256}
REPS=${REPS:-2}
ETCD_VERSION=v3.5.21
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/kvbench-etcd-bench.XXXXXX)
echo "work directory: $work"

# 1. etcd's benchmark tool.
mkdir -p "$work/tool"
(
	cd "$work/tool"
	printf 'module kvbench.local/etcdbench\n\ngo 1.23.0\n' >go.mod
	go get "go.etcd.io/etcd/v3@$ETCD_VERSION" >/dev/null 2>&1
	go build -o benchmark go.etcd.io/etcd/v3/tools/benchmark
)
bench="$work/tool/benchmark"

# 2. kvbench's binaries.
(cd "$repo" && cargo build --release -q -p kvbench && cargo build --release -q -p kvbench-engines --example cluster)
(cd "$repo/drivers/go" && ./build.sh >/dev/null)
kvbench="$repo/target/release/kvbench"

# 3. The cluster, kept until this script's end closes the example's standard input.
mkfifo "$work/hold"
"$repo/target/release/examples/cluster" etcd "$work/cluster" <"$work/hold" >"$work/cluster.out" 2>"$work/cluster.err" &
cluster_pid=$!
exec 9>"$work/hold"
trap 'exec 9>&-; wait $cluster_pid || true' EXIT
for _ in $(seq 300); do grep -q '^url=' "$work/cluster.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^url=//p' "$work/cluster.out")
[ -n "$url" ] || { cat "$work/cluster.err"; exit 1; }
endpoints=${url//http:\/\//}
first=${url%%,*}
echo "cluster: $url"

# The key etcd's range reads: 8 bytes ("rangekey"), a VAL-byte value.
value=$(head -c "$VAL" /dev/zero | tr '\0' 'v' | base64 -w0)
curl -s -X POST "$first/v3/kv/put" -d "{\"key\":\"$(printf rangekey | base64)\",\"value\":\"$value\"}" >/dev/null

cat >"$work/scenario.toml" <<TOML
# kvbench's side of bench/etcd.sh: the put and range workloads of etcd's benchmark tool.
name = "etcd-vs-etcd-benchmark"
seed = 1
sync = "commit"
[dataset]
records = $N
key = { kind = "u64be" }
value = { min = $VAL, max = $VAL }
[[engine]]
name = "go-etcd"
url = "$url"
options = { prefix = "" }
[[phase]]
name = "put"
kind = "load"
batch = 1
[[phase]]
name = "range"
kind = "get"
distribution = "hot"
hot_key = 0
count = $N
threads = $CLIENTS
TOML

etcd_rate() { sed -n 's/^ *Requests\/sec:[[:space:]]*//p' | head -1; }
kvbench_rate() { # phase name -> ops/s from the newest result file
	python3 -c 'import json,sys,glob,os
f=max(glob.glob(sys.argv[1]+"/**/*.json",recursive=True),key=os.path.getmtime)
d=json.load(open(f))
rows=d["engines"] if "engines" in d else d["results"]
for p in rows[0]["phases"]:
    if p["name"]==sys.argv[2]: print(round(p["ops_per_sec"],1))' "$work/results" "$1"
}

declare -a ep er kp kr
for rep in $(seq "$REPS"); do
	"$kvbench" run "$work/scenario.toml" --out "$work/results" --data-dir "$work/data" --plan-dir "$work/plans" --no-progress >"$work/kvbench-$rep.txt" 2>&1 || { cat "$work/kvbench-$rep.txt"; exit 1; }
	kp+=("$(kvbench_rate put)")
	kr+=("$(kvbench_rate range)")
	ep+=("$("$bench" put --endpoints "$endpoints" --clients 1 --conns 1 --total "$N" --key-size 8 --val-size "$VAL" --sequential-keys --key-space-size "$N" 2>/dev/null | etcd_rate)")
	er+=("$("$bench" range rangekey --endpoints "$endpoints" --clients "$CLIENTS" --conns "$CLIENTS" --total "$N" --consistency l 2>/dev/null | etcd_rate)")
	echo "rep $rep: put  kvbench ${kp[-1]}/s  etcd-benchmark ${ep[-1]}/s"
	echo "rep $rep: range kvbench ${kr[-1]}/s  etcd-benchmark ${er[-1]}/s"
done
mean() { python3 -c 'import sys; v=[float(x) for x in sys.argv[1:]]; print(sum(v)/len(v))' "$@"; }
echo "N=$N CLIENTS=$CLIENTS VAL=$VAL REPS=$REPS"
printf 'put   ratio kvbench/etcd-benchmark: %.2f\n' "$(python3 -c "print($(mean "${kp[@]}")/$(mean "${ep[@]}"))")"
printf 'range ratio kvbench/etcd-benchmark: %.2f\n' "$(python3 -c "print($(mean "${kr[@]}")/$(mean "${er[@]}"))")"
