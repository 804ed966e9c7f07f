package worker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func protocolDir() string {
	return filepath.Join("..", "..", "..", "..", "tests", "vectors", "protocol")
}

func vectorLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<24)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func TestJobVectorsParse(t *testing.T) {
	lines := vectorLines(t, filepath.Join(protocolDir(), "jobs.jsonl"))
	if len(lines) < 3 {
		t.Fatalf("%d jobs", len(lines))
	}
	jobs := []*Job{}
	for i, l := range lines {
		j, err := ParseJob([]byte(l))
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		jobs = append(jobs, j)
	}
	min := jobs[0]
	if min.OpenMode != "read-write" || min.ProgressMs != 200 || min.Phases[0].Threads != 1 || min.Phases[0].Batch != 1 ||
		min.Phases[0].Cache != "warm" || min.Phases[0].OpenPer != "phase" || len(min.Options) != 0 {
		t.Fatalf("defaults not applied: %+v", min)
	}
	full := jobs[1]
	if full.OpenMode != "secondary" || full.Sync != "none" || full.Phases[0].Batch != 1000 || full.Phases[1].OpenPer != "operation" ||
		full.Phases[2].Cache != "cold" || full.Phases[3].KeysPerRequest != 100 {
		t.Fatalf("fields lost: %+v", full)
	}
}

func TestBadJobsNameTheField(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`{"engine":"x","label":"x","plan":"p","dir":"d","sync":"none","phases":[]}`, "`protocol`"},
		{`{"protocol":1,"engine":"x","label":"x","plan":"p","dir":"d","sync":"fast","phases":[]}`, "`sync`"},
		{`{"protocol":1,"engine":"x","label":"x","plan":"p","dir":"d","sync":"none","phases":[{"name":"a","kind":"get","plan_phase":-1}]}`, "`plan_phase`"},
		{`{"protocol":1,"engine":"x","label":"x","plan":"p","dir":"d","sync":"none","phases":[{"name":"a","kind":"nap","plan_phase":1}]}`, "`kind`"},
	} {
		_, err := ParseJob([]byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v, want a message naming %s", c.text, err, c.want)
		}
	}
}

// typed is the Go type of an event, by its tag.
func typed(tag string) any {
	switch tag {
	case "hello":
		return &Hello{}
	case "progress":
		return &Progress{}
	case "phase":
		return &PhaseEvent{}
	case "error":
		return &ErrorEvent{}
	case "done":
		return &DoneEvent{}
	}
	return nil
}

func generic(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return normalise(v)
}

// normalise makes 1 and 1.0 compare equal (JSON numbers as float64) but keeps everything else.
func normalise(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalise(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalise(e)
		}
	}
	return v
}

// Every event of every worker (Rust, Python, Go) parses into the Go types and serialises back
// to the same JSON value, and every histogram decodes to its summary.
func TestEventVectorsRoundTripAndHistogramsMatchSummaries(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(protocolDir(), "events-*.jsonl"))
	if len(files) < 2 {
		t.Fatalf("event vectors: %v", files)
	}
	seen := map[string]int{}
	for _, f := range files {
		for no, l := range vectorLines(t, f) {
			at := filepath.Base(f) + ":" + string(rune('0'+no%10))
			var head struct{ Event string }
			if err := json.Unmarshal([]byte(l), &head); err != nil {
				t.Fatalf("%s: not JSON: %v", at, err)
			}
			seen[head.Event]++
			ev := typed(head.Event)
			if ev == nil {
				t.Fatalf("%s: unknown event %q", at, head.Event)
			}
			d := json.NewDecoder(strings.NewReader(l))
			d.UseNumber()
			d.DisallowUnknownFields()
			if err := d.Decode(ev); err != nil {
				t.Fatalf("%s: %v", at, err)
			}
			back, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(generic(t, back), generic(t, []byte(l))) {
				t.Fatalf("%s: does not serialise back to the same JSON:\n%s\n%s", at, l, back)
			}
			pe, ok := ev.(*PhaseEvent)
			if !ok || pe.Result.Latency == nil {
				continue
			}
			lats := map[string]*Latency{"": pe.Result.Latency}
			for k, v := range pe.Result.LatencyByOp {
				lats[k] = v
			}
			for k, lat := range lats {
				h, err := Decode(lat.Hdr)
				if err != nil {
					t.Fatalf("%s %s: hdr: %v", at, k, err)
				}
				if k == "" && uint64(h.TotalCount()) != pe.Result.Requests {
					t.Fatalf("%s: %d samples for %d requests", at, h.TotalCount(), pe.Result.Requests)
				}
				again := Summarize(h)
				if again.MinNs != lat.MinNs || again.P50Ns != lat.P50Ns || again.P90Ns != lat.P90Ns || again.P99Ns != lat.P99Ns ||
					again.P999Ns != lat.P999Ns || again.MaxNs != lat.MaxNs {
					t.Fatalf("%s %s: summary %+v differs from %+v", at, k, again, lat)
				}
				close := func(a, b F64) bool {
					return math.Abs(float64(a-b)) <= 1e-9*math.Max(math.Abs(float64(a)), 1)
				}
				if !close(again.MeanNs, lat.MeanNs) || !close(again.StdevNs, lat.StdevNs) {
					t.Fatalf("%s %s: mean/stdev %v/%v vs %v/%v", at, k, again.MeanNs, again.StdevNs, lat.MeanNs, lat.StdevNs)
				}
			}
		}
	}
	for _, tag := range []string{"hello", "phase", "done", "error", "progress"} {
		if seen[tag] == 0 {
			t.Fatalf("no %s event among the vectors: %v", tag, seen)
		}
	}
}

func TestFloatsCarryAFraction(t *testing.T) {
	for f, want := range map[float64]string{0: "0.0", 12: "12.0", 1.5: "1.5", 1e21: "1e+21", math.NaN(): "0.0"} {
		b, _ := F64(f).MarshalJSON()
		if string(b) != want {
			t.Fatalf("%v: %s, want %s", f, b, want)
		}
	}
}

func TestSummaryOfKnownSamples(t *testing.T) {
	h := NewHistogram()
	for _, v := range []int64{0, 1, 2, 3, 1000, 2047, 2048, 100_000, 5_000_000_000_000} {
		Record(h, v)
	}
	s := Summarize(h)
	if s.MinNs != 1 || s.MaxNs < MaxNs || s.P50Ns != 1000 {
		t.Fatalf("%+v", s)
	}
	back, err := Decode(s.Hdr)
	if err != nil || back.TotalCount() != 9 {
		t.Fatalf("decode: %v", err)
	}
}
