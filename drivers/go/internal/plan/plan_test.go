package plan

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The shared plan vectors (tests/vectors/plan-tiny.*): the Go reader must decode the committed
// plan exactly as the JSON says, field by field, like the Rust and Python readers.
func vectors(t *testing.T) string {
	t.Helper()
	return filepath.Join("..", "..", "..", "..", "tests", "vectors")
}

type tinyJSON struct {
	FileLength    int    `json:"file_length"`
	FormatVersion uint32 `json:"format_version"`
	Seed          uint64 `json:"seed"`
	SpecHash      string `json:"spec_hash"`
	Records       uint64 `json:"records"`
	UniqueRecords uint64 `json:"unique_records"`
	RawBytes      uint64 `json:"raw_bytes"`
	UpdateValues  uint64 `json:"update_values"`
	SectionCount  int    `json:"section_count"`
	Sections      []struct {
		Kind, Index           uint32
		Offset, Length, Count uint64
	} `json:"sections"`
	RecordList []struct{ Key, Value string } `json:"record_list"`
	Updates    []struct {
		Record     uint32 `json:"record"`
		Value      string `json:"value"`
		ValueIndex uint32 `json:"value_index"`
	} `json:"updates"`
	Sorted []uint32 `json:"sorted"`
	Phases []struct {
		Phase int         `json:"phase"`
		Ops   [][4]uint32 `json:"ops"`
	} `json:"phases"`
	ScanExpect []struct {
		Phase  int      `json:"phase"`
		Values []uint32 `json:"values"`
	} `json:"scan_expect"`
}

func TestTinyPlanDecodesAsCommitted(t *testing.T) {
	dir := vectors(t)
	raw, err := os.ReadFile(filepath.Join(dir, "plan-tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want tinyJSON
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	p, err := Open(filepath.Join(dir, "plan-tiny.kvbplan"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Len() != want.FileLength || p.Version != want.FormatVersion || p.Seed != want.Seed ||
		p.Records != want.Records || p.UniqueRecords != want.UniqueRecords || p.RawBytes != want.RawBytes ||
		p.UpdateValues != want.UpdateValues || len(p.Sections) != want.SectionCount {
		t.Fatalf("header differs: %+v", p)
	}
	if got := hexU64(p.SpecHash); got != want.SpecHash {
		t.Fatalf("spec hash %s, want %s", got, want.SpecHash)
	}
	for i, s := range want.Sections {
		g := p.Sections[i]
		if g.Kind != s.Kind || g.Index != s.Index || g.Offset != s.Offset || g.Length != s.Length || g.Count != s.Count {
			t.Fatalf("section %d: %+v, want %+v", i, g, s)
		}
	}
	if uint64(len(want.RecordList)) != p.Records {
		t.Fatalf("%d records listed", len(want.RecordList))
	}
	for r, rec := range want.RecordList {
		if hex.EncodeToString(p.Key(uint32(r))) != rec.Key || hex.EncodeToString(p.Value(uint32(r))) != rec.Value {
			t.Fatalf("record %d differs", r)
		}
	}
	for u, up := range want.Updates {
		if up.ValueIndex != uint32(p.Records)+uint32(u) || p.UpdateRecord(uint64(u)) != up.Record ||
			hex.EncodeToString(p.Value(up.ValueIndex)) != up.Value {
			t.Fatalf("update %d differs", u)
		}
	}
	for i, r := range want.Sorted {
		if p.Sorted(uint64(i)) != r {
			t.Fatalf("sorted %d differs", i)
		}
	}
	for _, ph := range want.Phases {
		ops, ok := p.Ops(ph.Phase)
		if !ok || ops.Len() != len(ph.Ops) {
			t.Fatalf("phase %d: %d ops, want %d", ph.Phase, ops.Len(), len(ph.Ops))
		}
		for i, o := range ph.Ops {
			g := ops.At(i)
			if [4]uint32{g.Kind, g.Key, g.Value, g.Aux} != o {
				t.Fatalf("phase %d op %d: %v, want %v", ph.Phase, i, g, o)
			}
		}
	}
	if _, ok := p.Ops(len(want.Phases)); ok {
		t.Fatal("a phase beyond the last decodes")
	}
	for _, se := range want.ScanExpect {
		s := p.ScanExpect(se.Phase)
		if !s.OK || s.Len() != len(se.Values) {
			t.Fatalf("scan expect %d missing", se.Phase)
		}
		for i, v := range se.Values {
			if s.At(uint64(i)) != v {
				t.Fatalf("scan expect %d/%d differs", se.Phase, i)
			}
		}
	}
	if len(p.SpecJSON()) == 0 {
		t.Fatal("no spec")
	}
}

func hexU64(v uint64) string {
	b := make([]byte, 8)
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (56 - 8*i))
	}
	return hex.EncodeToString(b)
}

func TestRefusesWhatIsNotAPlan(t *testing.T) {
	f := filepath.Join(t.TempDir(), "x.kvbplan")
	if err := os.WriteFile(f, make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(f); err == nil {
		t.Fatal("zeros accepted as a plan")
	}
	if err := os.WriteFile(f, []byte("short"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(f); err == nil {
		t.Fatal("short file accepted")
	}
}
