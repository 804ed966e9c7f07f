package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func vectors(t *testing.T) map[string]json.RawMessage {
	text, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "tests", "vectors", "derive.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(text, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func decode(t *testing.T, raw []byte, into any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(into); err != nil {
		t.Fatal(err)
	}
}

// The op streams of derive.json, thread by thread: [k, kind, record] or [k, "scan", position,
// length or null].
func TestOpStreamVectors(t *testing.T) {
	var cases []struct {
		Step json.RawMessage
		Runs []struct {
			Threads   uint64
			PerThread [][][]any `json:"per_thread"`
		}
	}
	decode(t, vectors(t)["ops"], &cases)
	for _, c := range cases {
		for _, run := range c.Runs {
			var st Step
			decode(t, c.Step, &st)
			st.Step = "ops" // the vectors hold the OpsStep object, without its tag
			if err := st.check(); err != nil {
				t.Fatal(err)
			}
			st.Threads = run.Threads
			for th, want := range run.PerThread {
				got := threadOps(&st, uint64(th))
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s, %d threads, thread %d:\n got %v\nwant %v", st.Name, st.Threads, th, got, want)
				}
			}
		}
	}
}

// threadOps is what thread th of st executes, as thread.loop walks it.
func threadOps(st *Step, th uint64) [][]any {
	s, u := newStream(st), unitSize(st)
	var out [][]any
	for j := th; j*u < st.Count; j += st.Threads {
		for k := j * u; k < min((j+1)*u, st.Count); k++ {
			kind, rec := s.op(k)
			op := []any{json.Number(fmt.Sprint(k)), kind, json.Number(fmt.Sprint(rec))}
			if kind == "scan" {
				var length any = json.Number(fmt.Sprint(s.scanLen(k)))
				if st.Scan.Max == 0 {
					length = nil
				}
				op = append(op, length)
			}
			out = append(out, op)
		}
	}
	return out
}

// latest's draws by one generator state as the newest record grows.
func TestLatestVectors(t *testing.T) {
	var v struct {
		Dist  Dist
		Draws [][4]json.Number
	}
	decode(t, vectors(t)["latest"], &v)
	s := newStream(&Step{Dist: v.Dist})
	for _, d := range v.Draws {
		var ux, last, want uint64
		fmt.Sscan(string(d[0]), &ux)
		fmt.Sscan(string(d[1]), &last)
		fmt.Sscan(string(d[2]), &want)
		zetan, _ := d[3].Float64()
		if got := s.latest(ux, last); got != want || s.zetan != zetan {
			t.Fatalf("draw %v: record %d, zetan %v", d, got, s.zetan)
		}
	}
}

// load-order is pass 0 of shuffle on every pass (plan-format.md): the load's order, replayed.
func TestLoadOrderReplaysTheFirstShufflePass(t *testing.T) {
	const n = 50
	shuffle := newStream(&Step{Kind: "get", PermSeed: 9, Dist: Dist{Name: "shuffle", N: n}})
	replay := newStream(&Step{Kind: "get", PermSeed: 9, Dist: Dist{Name: "load-order", N: n}})
	for k := uint64(0); k < 3*n; k++ {
		_, want := shuffle.op(k % n)
		if _, got := replay.op(k); got != want {
			t.Fatalf("load-order op %d: record %d, want %d (shuffle op %d)", k, got, want, k%n)
		}
	}
}
