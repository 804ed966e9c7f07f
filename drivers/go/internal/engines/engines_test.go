package engines

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func openArgs(t *testing.T, d *worker.Descriptor, dir, sync string) worker.OpenArgs {
	t.Helper()
	o, err := worker.ParseOptions(d.Name, d.Options, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	return worker.OpenArgs{Dir: dir, Options: o, Sync: sync, Mode: "read-write", URL: serverURL(t, d.Name)}
}

// Conformance: random puts (empty values included), deletes and batches on every engine, with
// an in-memory map as the oracle; every get and (where declared) every ordered scan must agree,
// before and after a reopen.
func TestConformanceAgainstAMap(t *testing.T) {
	for _, d := range Registry {
		d := d
		t.Run(d.Name, func(t *testing.T) {
			dir := t.TempDir()
			args := openArgs(t, d, dir, "none")
			e, err := d.Open(args)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(4))
			oracle := map[string][]byte{}
			key := func() []byte { return []byte(fmt.Sprintf("k%03d", rng.Intn(300))) }
			for round := 0; round < 60; round++ {
				n := 1 + rng.Intn(20)
				batch := []worker.WriteOp{}
				for i := 0; i < n; i++ {
					k := key()
					if rng.Intn(5) == 0 {
						batch = append(batch, worker.WriteOp{Key: k, Delete: true})
					} else {
						v := make([]byte, rng.Intn(3)*rng.Intn(700))
						rng.Read(v)
						batch = append(batch, worker.WriteOp{Key: k, Value: v})
					}
				}
				if err := e.Write(batch); err != nil {
					t.Fatal(err)
				}
				for _, w := range batch {
					if w.Delete {
						delete(oracle, string(w.Key))
					} else {
						oracle[string(w.Key)] = append([]byte(nil), w.Value...)
					}
				}
			}
			check := func(e worker.Engine, when string) {
				r, err := e.Reader()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				for i := 0; i < 300; i++ {
					k := fmt.Sprintf("k%03d", i)
					v, ok, err := r.Get([]byte(k))
					if err != nil {
						t.Fatal(err)
					}
					want, wantOK := oracle[k]
					if ok != wantOK || (ok && !bytes.Equal(v, want)) {
						t.Fatalf("%s: get %s: found %v (%d bytes), want %v (%d bytes)", when, k, ok, len(v), wantOK, len(want))
					}
				}
				keys := make([]string, 0, len(oracle))
				for k := range oracle {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				from := keys[len(keys)/3]
				var got []string
				n, err := r.Scan([]byte(from), 50, func(k, v []byte) bool {
					if !bytes.Equal(v, oracle[string(k)]) {
						t.Fatalf("%s: scan value of %s differs", when, k)
					}
					got = append(got, string(k))
					return true
				})
				if !d.Caps.OrderedScan {
					if _, ok := err.(*worker.Unsupported); !ok {
						t.Fatalf("no ordered scan declared, but Scan returned %v", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				i := sort.SearchStrings(keys, from)
				want := keys[i:min(i+50, len(keys))]
				if n != len(want) || strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("%s: scan from %s: %v, want %v", when, from, got, want)
				}
			}
			check(e, "open")
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if !d.Caps.Persistent {
				return
			}
			e, err = d.Open(args)
			if err != nil {
				t.Fatal(err)
			}
			check(e, "reopened")
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func tinyPlan() string {
	return filepath.Join("..", "..", "..", "..", "tests", "vectors", "plan-tiny.kvbplan")
}

func tinyJob(engine, dir string) *worker.Job {
	ph := func(name, kind string, p int) worker.JobPhase {
		b, k := 1, 1
		if kind == "load" {
			b = 8
		}
		if kind == "multi-get" {
			k = 4
		}
		return worker.JobPhase{Name: name, Kind: kind, PlanPhase: p, Threads: 1, Batch: b, KeysPerRequest: k, Cache: "warm", OpenPer: "phase"}
	}
	return &worker.Job{Protocol: 1, Engine: engine, Label: engine, Options: map[string]any{}, Plan: tinyPlan(), Dir: dir,
		Sync: "commit", OpenMode: "read-write", ProgressMs: 0, Phases: []worker.JobPhase{
			ph("load", "load", 0), ph("get", "get", 1), ph("multi-get", "multi-get", 2), ph("update", "update", 3),
			ph("delete", "delete", 4), ph("mixed", "mixed", 5), ph("get-hot", "get", 6), ph("get-seq", "get", 7),
			ph("scan", "scan", 8), ph("scan-short", "scan", 9), ph("get-zipfian", "get", 10), ph("get-latest", "get", 11),
		}}
}

// End to end: every engine runs the whole tiny plan (every operation kind) with zero
// mismatches; a scan is N/A exactly where no ordered scan is declared. Persistent engines also
// run a cold phase, open-per-operation and two reader threads.
func TestTinyPlanEndToEnd(t *testing.T) {
	for _, d := range Registry {
		d := d
		t.Run(d.Name, func(t *testing.T) {
			job := tinyJob(d.Name, t.TempDir())
			job.URL = serverURL(t, d.Name)
			if d.Caps.Persistent {
				// Copies of the last phase: its expectations still hold after it.
				cold := job.Phases[11]
				cold.Name, cold.Cache = "get-cold", "cold"
				per := job.Phases[11]
				per.Name, per.OpenPer = "get-open-per-op", "operation"
				threads := job.Phases[11]
				threads.Name, threads.Threads = "get-2-threads", 2
				job.Phases = append(job.Phases, cold, per, threads)
			}
			var events []any
			if !worker.RunJob(job, d, Names(), func(e any) { events = append(events, e) }) {
				t.Fatalf("job failed: %+v", events[len(events)-1])
			}
			phases := 0
			// After a writing phase that was N/A, later reads expect writes that never
			// happened: only errors count then.
			skipped := false
			for _, e := range events {
				pe, ok := e.(worker.PhaseEvent)
				if !ok {
					continue
				}
				r := pe.Result
				phases++
				scanNA := !d.Caps.OrderedScan && (r.Kind == "scan" || r.Kind == "mixed")
				switch {
				case scanNA && r.Status == "n/a":
					skipped = skipped || r.Kind == "mixed"
				case skipped:
					if r.Errors != 0 {
						t.Fatalf("phase %s: %s", r.Name, r.Reason)
					}
				case r.Status != "ok" || r.Mismatches != 0 || r.Missing != 0 || r.Errors != 0:
					t.Fatalf("phase %s: %s %s (mismatches %d, missing %d)", r.Name, r.Status, r.Reason, r.Mismatches, r.Missing)
				}
				if r.Status == "ok" && r.Kind == "get" && r.Ops == 0 {
					t.Fatalf("phase %s read nothing", r.Name)
				}
				if strings.HasPrefix(r.Cache, "cold") && r.Name == "get-cold" && !strings.Contains(r.Cache, "evicted") {
					t.Fatalf("cold phase: %s", r.Cache)
				}
			}
			if phases != len(job.Phases)+2 {
				t.Fatalf("%d phase results for %d phases", phases, len(job.Phases))
			}
			if _, ok := events[len(events)-1].(worker.DoneEvent); !ok {
				t.Fatalf("last event %+v", events[len(events)-1])
			}
		})
	}
}

// UPDATE_VECTORS=all regenerates tests/vectors/protocol/events-go.jsonl (go-memory over the
// tiny plan, plus an error), which the Rust and Python vectors tests read too.
func TestRegenerateGoEventsOnRequest(t *testing.T) {
	if os.Getenv("UPDATE_VECTORS") != "all" {
		t.Skip("set UPDATE_VECTORS=all to rewrite events-go.jsonl")
	}
	var out bytes.Buffer
	progress := 0
	emit := func(e any) {
		if _, ok := e.(worker.Progress); ok {
			if progress++; progress > 3 {
				return
			}
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(b, '\n'))
	}
	job := tinyJob("go-memory", t.TempDir())
	if !worker.RunJob(job, Find("go-memory"), Names(), emit) {
		t.Fatal("job failed")
	}
	job.Protocol = 99
	worker.RunJob(job, Find("go-memory"), Names(), emit)
	path := filepath.Join("..", "..", "..", "..", "tests", "vectors", "protocol", "events-go.jsonl")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
