package engines

import (
	"encoding/json"
	"strings"
	"testing"
)

// settleEvent is what these tests read of a step event beyond stepEvent.
type settleEvent struct {
	Event, Step    string
	Index          int
	Error          *string
	ErrorKind      string `json:"error_kind"`
	Settled        *string
	Internals      map[string]float64
	InternalSeries []struct {
		TMs    uint64 `json:"t_ms"`
		Values map[string]float64
	} `json:"internal_series"`
	Mismatches, Missing, Ops uint64
}

// settleJob is every-step.json cut to open, prepare, load, settle, get, close (re-indexed),
// its internals sampled every millisecond, its load of 20 000 records: long enough on fast
// cores for the sampler's ticks (2 000 records took a store about a millisecond).
func settleJob(raw map[string]any) {
	const loaded = 20000
	ds := raw["dataset"].(map[string]any)
	ds["loaded"], ds["total"] = loaded, loaded
	steps := raw["steps"].([]any)
	load := steps[2].(map[string]any)
	load["count"], load["last"] = loaded, loaded-1
	load["dist"].(map[string]any)["n"] = loaded
	cut := []any{steps[0], steps[1], steps[2], map[string]any{"step": "settle"}, steps[3], map[string]any{"step": "close"}}
	for i, s := range cut {
		s.(map[string]any)["index"] = i
	}
	raw["steps"], raw["interval_ms"] = cut, 1
}

func runSettleJob(t *testing.T, engine string) map[int]*settleEvent {
	t.Helper()
	raw := readJSON(t, "../../testdata/every-step.json")
	raw["dir"], raw["engine"], raw["label"], raw["options"] = t.TempDir(), engine, engine, resolvedValues(t, Find(engine), map[string]any{})
	settleJob(raw)
	_, lines := runJob(t, raw)
	out := map[int]*settleEvent{}
	for _, line := range lines {
		var e settleEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if e.Event == "step" {
			out[e.Index] = &e
		}
	}
	if len(out) != 6 {
		t.Fatalf("%d step events of 6: %s", len(out), strings.Join(lines, "\n"))
	}
	return out
}

// A settle step runs each Go store's own settle (Pebble's Flush and Compact, Badger's
// Flatten, goleveldb's CompactRange, bbolt's nothing), says what it did, and leaves every
// record readable; the store's internals are in the step events, at the step's end and, for
// the load, as a series.
func TestSettleAndInternals(t *testing.T) {
	for _, c := range []struct{ engine, did, counter string }{
		{"go-pebble", "compacted every key", "pebble.l0_files"},
		{"go-pebble2", "compacted every key", "pebble.l0_files"},
		{"go-badger", "flattened the LSM tree", "badger.lsm_bytes"},
		{"go-goleveldb", "compacted every key", "goleveldb.l0_tables"},
		{"go-bbolt", "nothing to settle", "bbolt.free_pages"},
		{"go-rocksdb", "compacted every key", "rocksdb.l0.files"},
	} {
		t.Run(c.engine, func(t *testing.T) {
			steps := runSettleJob(t, c.engine)
			settle, load, get := steps[3], steps[2], steps[4]
			if settle.Error != nil || settle.Settled == nil || !strings.Contains(*settle.Settled, c.did) {
				t.Fatalf("settle: %+v", settle)
			}
			if _, ok := settle.Internals[c.counter]; !ok {
				t.Fatalf("settle: no %s in %v", c.counter, settle.Internals)
			}
			if _, ok := load.Internals[c.counter]; !ok || len(load.InternalSeries) == 0 {
				t.Fatalf("load: internals %v, %d samples", load.Internals, len(load.InternalSeries))
			}
			for i, s := range load.InternalSeries {
				if _, ok := s.Values[c.counter]; !ok || (i > 0 && s.TMs < load.InternalSeries[i-1].TMs) {
					t.Fatalf("load sample %d: %+v", i, s)
				}
			}
			if get.Error != nil || get.Ops == 0 || get.Mismatches+get.Missing != 0 {
				t.Fatalf("get after settle: %+v", get)
			}
		})
	}
}

// Pebble's settle (v1 and v2) leaves nothing at L0 and no compaction debt.
func TestPebbleSettleEmptiesL0(t *testing.T) {
	for _, engine := range []string{"go-pebble", "go-pebble2"} {
		in := runSettleJob(t, engine)[3].Internals
		if in["pebble.l0_files"] != 0 || in["pebble.compaction_debt_bytes"] != 0 || in["pebble.sstable_bytes"] == 0 {
			t.Fatalf("%s after settle: %v", engine, in)
		}
	}
}

// An engine without a settle step answers "unsupported" (the phase is then N/A), and the job
// goes on.
func TestSettleWithoutSettlerIsUnsupported(t *testing.T) {
	steps := runSettleJob(t, "go-memory")
	if s := steps[3]; s.ErrorKind != "unsupported" || s.Error == nil || !strings.Contains(*s.Error, "no settle") {
		t.Fatalf("settle: %+v", s)
	}
	if g := steps[4]; g.Error != nil || g.Ops == 0 || g.Mismatches+g.Missing != 0 {
		t.Fatalf("get: %+v", g)
	}
}
