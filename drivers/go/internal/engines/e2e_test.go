package engines

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	bolt "go.etcd.io/bbolt"

	"github.com/kvbench/kvbench/drivers/go/internal/plan"
	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// runJobFile runs a testdata job (its "DIR" replaced by a fresh directory, the engine as
// given, its options resolved from `options`, then `edits` applied) and returns its job and
// the step events by index.
func runJobFile(t *testing.T, name, engine string, options map[string]any, edits ...func(map[string]any)) (*worker.Job, map[int]*worker.StepResult) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		t.Fatal(err)
	}
	raw["dir"], raw["engine"], raw["label"], raw["options"] = t.TempDir(), engine, engine, resolvedValues(t, Find(engine), options)
	if url := serverURL(t, engine); url != "" {
		raw["url"] = url
	}
	for _, edit := range edits {
		edit(raw)
	}
	if raw["plan"] == "STORED" {
		raw["plan"], _ = filepath.Abs(filepath.Join("..", "..", "testdata", "stored.kvbplan"))
	}
	text, _ = json.Marshal(raw)
	path := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	job, err := worker.LoadJob(path)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[int]*worker.StepResult{}
	var last any
	ok := worker.RunJob(job, Find(engine), func(e any) {
		if s, isStep := e.(*worker.StepResult); isStep {
			steps[s.Index] = s
		}
		last = e
	})
	if !ok || last.(map[string]string)["event"] != "done" {
		t.Fatalf("job did not finish: %v", last)
	}
	return job, steps
}

// units is the number of timed units an ops step runs.
func units(s *worker.Step) uint64 {
	switch s.Kind {
	case "load", "update", "insert", "delete":
		return (s.Count + s.Batch - 1) / s.Batch
	case "multi-get":
		return s.Count / s.KeysPerRequest
	}
	return s.Count
}

// Every step and op kind on go-memory and go-bbolt, and a stored dataset with a repeated key
// and unordered keys: no errors, every read verified right, every operation and timed unit
// counted, one histogram per op kind.
func TestEveryStep(t *testing.T) {
	for _, c := range []struct{ file, engine string }{{"every-step-memory.json", "go-memory"}, {"every-step.json", "go-bbolt"},
		{"stored.json", "go-memory"}, {"stored.json", "go-bbolt"}} {
		t.Run(c.file+"/"+c.engine, func(t *testing.T) {
			job, steps := runJobFile(t, c.file, c.engine, map[string]any{})
			checkSteps(t, job, steps, false)
		})
	}
}

// The other Go engines through the same job: a step an engine cannot do (pogreb's scans)
// reports `unsupported`, and every read it does is still right.
func TestEveryStepOtherEngines(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for _, d := range Registry {
		// go-etcd needs a running cluster: etcd_test.go runs it against one.
		if d.Name == "go-memory" || d.Name == "go-bbolt" || d.Name == "go-etcd" {
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			job, steps := runJobFile(t, "every-step.json", d.Name, map[string]any{})
			checkSteps(t, job, steps, true)
		})
	}
}

func checkSteps(t *testing.T, job *worker.Job, steps map[int]*worker.StepResult, unsupportedOK bool) {
	t.Helper()
	for i := range job.Steps {
		s, r := &job.Steps[i], steps[i]
		if r != nil && r.Error != nil && unsupportedOK && r.ErrorKind == "unsupported" {
			continue
		}
		if r == nil || r.Error != nil || r.Errors != 0 || r.Mismatches != 0 || r.Missing != 0 {
			t.Fatalf("step %d %s %s: %+v", i, s.Step, s.Name, r)
		}
		if s.Step == "evict" && r.Evicted == 0 {
			t.Fatalf("evict: no file evicted")
		}
		if s.Step != "ops" {
			continue
		}
		scans := s.Kind == "scan" || strings.Contains(strings.Join(s.Kinds, " "), "scan")
		if r.Requests != units(s) || (!scans && r.Ops != s.Count) || len(r.Hist) == 0 || len(r.Intervals) == 0 {
			t.Fatalf("step %d %s: ops %d requests %d hist %d intervals %d", i, s.Name, r.Ops, r.Requests, len(r.Hist), len(r.Intervals))
		}
		var samples int64
		for _, h := range r.Hist {
			d, err := hdrhistogram.Decode([]byte(h))
			if err != nil {
				t.Fatal(err)
			}
			samples += d.TotalCount()
		}
		if samples != int64(r.Requests) {
			t.Fatalf("step %s: %d samples for %d requests", s.Name, samples, r.Requests)
		}
		if s.Kind == "mixed" && len(r.Hist) != len(s.Kinds) {
			t.Fatalf("step %s: histograms for %v", s.Name, r.Hist)
		}
	}
}

// The runtime counters are the engine's: go-memory's get allocates nothing, so a get step of
// thousands of reads shows at most the few allocations of starting its threads.
func TestRuntimeCountersLeaveTheHarnessOut(t *testing.T) {
	job, steps := runJobFile(t, "every-step-memory.json", "go-memory", map[string]any{})
	for i := range job.Steps {
		s, r := &job.Steps[i], steps[i]
		if s.Kind == "get" && s.Count >= 500 && (r.Runtime["mallocs"] > 16 || r.Runtime["alloc_bytes"] > 4096) {
			t.Errorf("step %s: %v", s.Name, r.Runtime)
		}
		if s.Kind == "load" && r.Runtime["mallocs"] < worker.F64(s.Count) {
			t.Errorf("load %s: %v (go-memory copies every value)", s.Name, r.Runtime)
		}
	}
}

// go-memory's corrupt_every returns a wrong value every N-th get: the worker counts exactly
// those, on one thread and on two, and in multi-get requests.
func TestMismatchesCountedExactly(t *testing.T) {
	mismatchesCountedExactly(t)
}

// A get's check runs after the next op is prepared: json-docs values, built in the thread's
// two buffers in turn, must not be overwritten before their check.
func TestMismatchesCountedExactlyWithBuiltValues(t *testing.T) {
	mismatchesCountedExactly(t, func(raw map[string]any) { raw["dataset"].(map[string]any)["generator"] = "json-docs" })
}

func mismatchesCountedExactly(t *testing.T, edits ...func(map[string]any)) {
	job, steps := runJobFile(t, "every-step-memory.json", "go-memory", map[string]any{"corrupt_every": json.Number("7")}, edits...)
	gets := uint64(0)
	for i := range job.Steps {
		s := &job.Steps[i]
		switch {
		case s.Kind == "get" || s.Kind == "multi-get":
			gets += s.Count
			want := gets/7 - (gets-s.Count)/7
			if steps[i].Mismatches != want {
				t.Fatalf("step %s: %d mismatches, want %d", s.Name, steps[i].Mismatches, want)
			}
		case s.Step == "ops" && s.Kind != "load" && s.Kind != "insert" && s.Kind != "update" && s.Kind != "delete":
			return // gets inside rmw and mixed steps: counted by the engine, not here
		}
	}
}

// The shared protocol vector: tests/vectors/protocol/job-every-step.json (written for Rust's
// `memory`) on go-memory gives the same counters as the Rust worker's events-rust.jsonl —
// except ops of steps whose scans run beside writers on other threads (they depend on timing).
// UPDATE_VECTORS=1 rewrites events-go.jsonl with this run's events.
func TestSharedJobAgreesWithRust(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "tests", "vectors", "protocol")
	text, err := os.ReadFile(filepath.Join(dir, "job-every-step.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		t.Fatal(err)
	}
	raw["engine"], raw["label"], raw["dir"] = "go-memory", "go-memory", t.TempDir()
	text, _ = json.Marshal(raw)
	path := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	job, err := worker.LoadJob(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	got := map[int]*worker.StepResult{}
	worker.RunJob(job, Find("go-memory"), func(e any) {
		if s, ok := e.(*worker.StepResult); ok {
			got[s.Index] = s
		}
		if m, ok := e.(map[string]any); !ok || m["event"] != "progress" {
			b, _ := json.Marshal(e)
			out.Write(append(b, '\n'))
		}
	})
	rust, err := os.ReadFile(filepath.Join(dir, "events-rust.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(rust)), "\n") {
		var want worker.StepResult
		if json.Unmarshal([]byte(line), &want); want.Event != "step" {
			continue
		}
		g, s := got[want.Index], &job.Steps[want.Index]
		racy := s.Threads > 1 && strings.Contains(strings.Join(s.Kinds, " "), "scan")
		if g == nil || (g.Ops != want.Ops && !racy) || g.Requests != want.Requests || g.Errors != want.Errors ||
			g.Mismatches != want.Mismatches || g.Missing != want.Missing || g.Evicted != want.Evicted ||
			(g.Error == nil) != (want.Error == nil) || len(g.Hist) != len(want.Hist) {
			t.Errorf("step %d: go %+v\nrust %+v", want.Index, g, want)
		}
	}
	if os.Getenv("UPDATE_VECTORS") != "" {
		_ = os.WriteFile(filepath.Join(dir, "events-go.jsonl"), out.Bytes(), 0o644)
	}
}

// A get step on go-bbolt allocates what bbolt's own Get allocates for the same keys and
// nothing more per op: the extra reads of a longer step (the same stream, twice the count)
// cost as many allocations as calling Get on those keys directly, give or take the few that
// a step's start and end vary by (one allocation per op of the harness would be thousands).
func TestGetStepOnBboltAllocatesOnlyWhatBboltDoes(t *testing.T) {
	const short, long = 3000, 6000
	getStep := func(index, count int) map[string]any {
		return map[string]any{"step": "ops", "index": index, "name": fmt.Sprint("get", count), "kind": "get", "count": count,
			"dist": map[string]any{"name": "uniform", "n": 2000}, "rec_seed": 7}
	}
	job, steps := runJobFile(t, "every-step.json", "go-bbolt", map[string]any{}, func(raw map[string]any) {
		all := raw["steps"].([]any)
		raw["steps"] = []any{all[0], all[1], all[2], getStep(3, short), getStep(4, long)}
		raw["progress_ms"], raw["interval_ms"] = 3_600_000, 3_600_000
	})
	for _, i := range []int{3, 4} {
		if r := steps[i]; r.Error != nil || r.Mismatches != 0 || r.Missing != 0 || r.Ops != uint64(job.Steps[i].Count) {
			t.Fatalf("step %d: %+v", i, r)
		}
	}
	worker := float64(steps[4].Runtime["mallocs"] - steps[3].Runtime["mallocs"])
	db, err := bolt.Open(filepath.Join(job.Dir, "data.bolt"), 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ds := &plan.Dataset{KeyKind: "decimal", Width: 16}
	var own float64
	err = db.View(func(tx *bolt.Tx) error {
		b, key := tx.Bucket(bboltBucket), make([]byte, 0, 64)
		own = testing.AllocsPerRun(1, func() {
			for k := uint64(short); k < long; k++ {
				key = ds.Key(key[:0], plan.Below(plan.Rnd(7, k), 2000))
				if b.Get(key) == nil {
					t.Errorf("key %s missing", key)
				}
			}
		})
		return nil
	})
	if err != nil || own < long-short {
		t.Fatalf("bbolt's own gets: %v allocations, %v", own, err)
	}
	if math.Abs(worker-own) > 16 {
		t.Errorf("the %d extra gets of the step allocated %v times, bbolt's Get on the same keys %v", long-short, worker, own)
	}
}
