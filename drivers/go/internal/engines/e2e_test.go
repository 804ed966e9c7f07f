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
	"golang.org/x/sys/unix"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// testJob is what these tests read of a job: its directory and its steps.
type testJob struct {
	Dir   string `json:"dir"`
	Steps []struct {
		Step, Name, Kind      string
		Count, Threads, Batch uint64
		KeysPerRequest        uint64 `json:"keys_per_request"`
		Kinds                 []string
	} `json:"steps"`
}

// stepEvent is what these tests read of a step event.
type stepEvent struct {
	Event, Step                                         string
	Index                                               int
	Error                                               *string
	ErrorKind                                           string `json:"error_kind"`
	Evicted, Ops, Requests, Errors, Mismatches, Missing uint64
	Hist                                                map[string]string
	Intervals                                           []json.RawMessage
	Runtime                                             map[string]float64
}

// runJobFile runs a testdata job (its "DIR" replaced by a fresh directory, the engine as
// given, its options resolved from `options`, then `edits` applied) and returns its job and
// the step events by index.
func runJobFile(t *testing.T, name, engine string, options map[string]any, edits ...func(map[string]any)) (*testJob, map[int]*stepEvent) {
	t.Helper()
	raw := readJSON(t, filepath.Join("..", "..", "testdata", name))
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
	job, events := runJob(t, raw)
	if last := events[len(events)-1]; !strings.Contains(last, `"done"`) {
		t.Fatalf("job did not finish: %s", last)
	}
	return job, stepEvents(t, events)
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

// runJob runs the job raw in this process and returns it and its event lines.
func runJob(t *testing.T, raw map[string]any) (*testJob, []string) {
	t.Helper()
	text, _ := json.Marshal(raw)
	var job testJob
	if err := json.Unmarshal(text, &job); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "job.json")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// The worker gets a descriptor of its own (the core leaves it open).
	fd, err := unix.Dup(int(out.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	worker.Run(path, fd, Find)
	_ = unix.Close(fd)
	events, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return &job, strings.Split(strings.TrimSpace(string(events)), "\n")
}

func stepEvents(t *testing.T, lines []string) map[int]*stepEvent {
	t.Helper()
	steps := map[int]*stepEvent{}
	for _, line := range lines {
		var e stepEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if e.Event == "step" {
			steps[e.Index] = &e
		}
	}
	return steps
}

// units is the number of timed units an ops step runs.
func units(kind string, count, batch, keysPerRequest uint64) uint64 {
	switch kind {
	case "load", "update", "insert", "delete":
		return (count + max(batch, 1) - 1) / max(batch, 1)
	case "multi-get":
		return count / max(keysPerRequest, 1)
	}
	return count
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

func checkSteps(t *testing.T, job *testJob, steps map[int]*stepEvent, unsupportedOK bool) {
	t.Helper()
	for i := range job.Steps {
		s, r := &job.Steps[i], steps[i]
		if r != nil && unsupportedOK && r.ErrorKind == "unsupported" {
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
		if r.Requests != units(s.Kind, s.Count, s.Batch, s.KeysPerRequest) || (!scans && r.Ops != s.Count) || len(r.Hist) == 0 || len(r.Intervals) == 0 {
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
		if s.Kind == "load" && r.Runtime["mallocs"] < float64(s.Count) {
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

// A reader whose values outlive its next call has each get's value checked after the next get:
// every mismatch must still be counted, against its own key.
func TestMismatchesCountedExactlyWhenChecksWaitAGet(t *testing.T) {
	mismatchesCountedExactly(t, func(raw map[string]any) { raw["options"].(map[string]any)["stable_values"] = true })
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
	raw := readJSON(t, filepath.Join(dir, "job-every-step.json"))
	raw["engine"], raw["label"], raw["dir"] = "go-memory", "go-memory", t.TempDir()
	job, lines := runJob(t, raw)
	got := stepEvents(t, lines)
	rust, err := os.ReadFile(filepath.Join(dir, "events-rust.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(rust)), "\n") {
		var want stepEvent
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
		var out []string
		for _, line := range lines {
			if !strings.Contains(line, `"event":"progress"`) {
				out = append(out, line)
			}
		}
		_ = os.WriteFile(filepath.Join(dir, "events-go.jsonl"), []byte(strings.Join(out, "\n")+"\n"), 0o644)
	}
}

// A get step on go-bbolt allocates what bbolt's own Get allocates and nothing more per op:
// the extra reads of a longer step (the same stream, twice the count) cost as many
// allocations as calling Get as often directly (bbolt's Get allocates the same whatever the
// key), give or take the few that a step's start and end vary by (one allocation per op of
// the harness would be thousands).
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
	var own float64
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bboltBucket)
		var keys [][]byte
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			keys = append(keys, append([]byte(nil), k...))
		}
		own = testing.AllocsPerRun(1, func() {
			for i := range long - short {
				if b.Get(keys[i%len(keys)]) == nil {
					t.Errorf("key %s missing", keys[i%len(keys)])
				}
			}
		})
		return nil
	})
	if err != nil || own < long-short {
		t.Fatalf("bbolt's own gets: %v allocations, %v", own, err)
	}
	if math.Abs(worker-own) > 16 {
		t.Errorf("the %d extra gets of the step allocated %v times, bbolt's Get as often %v", long-short, worker, own)
	}
}
