//go:build cgo

package engines

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// jsonInt is an integer option as a job carries it.
func jsonInt(n int) json.Number { return json.Number(strconv.Itoa(n)) }

func openRocks(t *testing.T, dir, mode, sync string, given map[string]any) (worker.Engine, error) {
	t.Helper()
	return Find("go-rocksdb").Open(worker.OpenArgs{Dir: dir, Options: resolved(t, Find("go-rocksdb"), given), Sync: sync, Mode: mode})
}

// go-rocksdb must run the library the Rust `rocksdb` row links (Debian's librocksdb 7.8.3),
// not one bundled with the binding: its version names the shared library the process mapped.
func TestRocksdbRunsTheSystemLibrary(t *testing.T) {
	e, err := openRocks(t, t.TempDir(), "read-write", "none", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	v := Find("go-rocksdb").Version()
	if !strings.HasPrefix(v, "RocksDB 7.8.") || !strings.Contains(v, "(librocksdb.so.7.8.") || !strings.Contains(v, "grocksdb") {
		t.Fatalf("version %q: want Debian's librocksdb.so.7.8.x through grocksdb", v)
	}
}

// The row's options reach RocksDB and its settings say so; options RocksDB would refuse, or
// that contradict the sync mode, are refused at open with the option's name.
func TestRocksdbOptionsAndTheirErrors(t *testing.T) {
	e, err := openRocks(t, t.TempDir(), "read-write", "commit", map[string]any{"compression": "zstd", "bloom_bits": jsonInt(10), "block_cache": jsonInt(0)})
	if err != nil {
		t.Fatal(err)
	}
	s := e.Settings()
	if s["compression"] != "zstd" || !strings.HasPrefix(s["bloom_filter"], "10 bits/key") || s["block_cache"] != "disabled" || !strings.Contains(s["sync"], "sync=true") {
		t.Fatalf("settings %v", s)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sync  string
		given map[string]any
		want  string
	}{
		{"commit", map[string]any{"wal": false}, "wal = false needs sync"},
		{"none", map[string]any{"bloom_bits": jsonInt(-1)}, "bloom_bits must be >= 0"},
		{"none", map[string]any{"write_buffer": jsonInt(0)}, "write_buffer must be positive"},
		{"none", map[string]any{"compression": "bz2"}, "compression `bz2`"},
	} {
		if _, err := openRocks(t, t.TempDir(), "read-write", c.sync, c.given); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.given, err, c.want)
		}
	}
}

// A read-only open refuses writes and a secondary open sees what the primary wrote; the
// native multi-get finds present keys (an empty value included) and misses absent ones.
func TestRocksdbOpenModesAndMultiGet(t *testing.T) {
	dir := t.TempDir()
	e, err := openRocks(t, dir, "read-write", "none", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Write([]worker.WriteOp{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte{}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"read-only", "secondary"} {
		e, err := openRocks(t, dir, mode, "none", nil)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if err := e.Write([]worker.WriteOp{{Key: []byte("c"), Value: []byte("3")}}); err == nil {
			t.Errorf("%s open accepted a write", mode)
		}
		r, _ := e.Reader()
		vals, found := make([][]byte, 3), make([]bool, 3)
		if err := r.(worker.MultiGetter).MultiGet([][]byte{[]byte("a"), []byte("b"), []byte("z")}, vals, found); err != nil {
			t.Fatal(err)
		}
		if !found[0] || !bytes.Equal(vals[0], []byte("1")) || !found[1] || len(vals[1]) != 0 || found[2] {
			t.Errorf("%s multi-get: %q %v", mode, vals, found)
		}
		r.Close()
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
