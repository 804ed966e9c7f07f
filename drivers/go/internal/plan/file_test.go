package plan

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"
)

// storedPlan writes a format-2 plan of five records, one key twice ("apple": records 0 and 3,
// 3 loaded last), as plan-format.md lays it out.
func storedPlan() []byte {
	recs := [][2]string{{"apple", "red"}, {"banana", "yellow!"}, {"cherry", ""}, {"apple", "green"}, {"date", "brown dates"}}
	var data, index []byte
	const dataAt = 64 + 32*4 // DATA comes first, right after the table of four sections
	for _, r := range recs {
		index = binary.LittleEndian.AppendUint64(index, dataAt+uint64(len(data)))
		index = binary.LittleEndian.AppendUint32(index, uint32(len(r[0])))
		index = binary.LittleEndian.AppendUint32(index, uint32(len(r[1])))
		data = append(data, r[0]+r[1]...)
	}
	u32s := func(v ...uint32) (b []byte) {
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, x)
		}
		return b
	}
	sections := []struct {
		kind  uint32
		body  []byte
		count uint64
	}{{1, data, 5}, {2, index, 5}, {3, u32s(3, 1, 2, 4), 4}, {4, u32s(3, 1, 2, 3, 4), 5}}
	head := append([]byte("KVBPLAN\x00"), u32s(2, uint32(len(sections)))...)
	for _, v := range []uint64{7, 0xABCD, 5, 4, 40} {
		head = binary.LittleEndian.AppendUint64(head, v)
	}
	head = append(head, make([]byte, 8)...)
	var table, body []byte
	off := uint64(64 + 32*len(sections))
	for _, s := range sections {
		pad := make([]byte, (8-len(body)%8)%8)
		body = append(body, pad...)
		table = append(table, u32s(s.kind, 0)...)
		for _, v := range []uint64{off + uint64(len(body)), uint64(len(s.body)), s.count} {
			table = binary.LittleEndian.AppendUint64(table, v)
		}
		body = append(body, s.body...)
	}
	// The checksum covers the header's first 56 bytes, the table and every section in order.
	sum := xxh3.New()
	_, _ = sum.Write(head[:56])
	_, _ = sum.Write(table)
	for i := range sections {
		at := 32 * i
		o, l := binary.LittleEndian.Uint64(table[at+8:]), binary.LittleEndian.Uint64(table[at+16:])
		_, _ = sum.Write(body[o-off : o-off+l])
	}
	binary.LittleEndian.PutUint64(head[56:], sum.Sum64())
	return append(append(head, table...), body...)
}

// testdata/stored.kvbplan is storedPlan's output (the Go end-to-end tests run it); it must not
// drift from the writer above.
func TestStoredPlanFile(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "stored.kvbplan")
	want := storedPlan()
	if os.Getenv("UPDATE_TESTDATA") != "" {
		_ = os.WriteFile(path, want, 0o644)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Fatalf("%s differs from storedPlan(): UPDATE_TESTDATA=1 go test ./internal/plan", path)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if string(f.Key(3)) != "apple" || string(f.Value(3)) != "green" || string(f.Value(2)) != "" || f.Canon(0) != 3 ||
		f.Positions() != 4 || f.Sorted(3) != 4 || f.maxValue != 11 {
		t.Fatalf("read back wrong: %q %q canon %d positions %d", f.Key(3), f.Value(3), f.Canon(0), f.Positions())
	}
}

// A flipped byte anywhere, a short file or another version is refused with the path.
func TestBadPlansRefused(t *testing.T) {
	good := storedPlan()
	for name, mutate := range map[string]func([]byte) []byte{
		"data byte": func(b []byte) []byte { b[len(b)-3] ^= 1; return b },
		"version":   func(b []byte) []byte { b[8] = 1; return b },
		"short":     func(b []byte) []byte { return b[:40] },
		"magic":     func(b []byte) []byte { b[0] = 'X'; return b },
	} {
		path := filepath.Join(t.TempDir(), "bad.kvbplan")
		if err := os.WriteFile(path, mutate(append([]byte(nil), good...)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
