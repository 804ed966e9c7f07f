package engines

import (
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func openPebbleWith(t *testing.T, given map[string]any) *pebbleEngine {
	t.Helper()
	o := resolved(t, Find("go-pebble"), given)
	e, err := openPebble(worker.OpenArgs{Dir: t.TempDir(), Options: o, Sync: "none", Mode: "read-write"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e.(*pebbleEngine)
}

// read = "seek" (cmd/pebble ycsb's read) finds what Get finds and nothing else: SeekGE lands
// on the next key for a missing one, which must read as missing, not as that key's value.
func TestPebbleSeekReadFindsOnlyTheKeyAsked(t *testing.T) {
	e := openPebbleWith(t, map[string]any{"read": "seek"})
	if err := e.Write([]worker.WriteOp{{Key: []byte("b"), Value: []byte("vb")}, {Key: []byte("d"), Value: []byte("vd")}}); err != nil {
		t.Fatal(err)
	}
	r, _ := e.Reader()
	for key, want := range map[string]string{"b": "vb", "d": "vd", "c": "", "a": "", "e": ""} {
		v, found, err := r.Get([]byte(key))
		if err != nil {
			t.Fatal(err)
		}
		if found != (want != "") || (found && string(v) != want) {
			t.Errorf("seek read of %q: %q found=%v, want %q", key, v, found, want)
		}
	}
}

// tuning = "cmd-pebble" opens the store as cmd/pebble's benchmarks do (its newest format and
// its 64 MiB memtables), the default leaves Pebble's own.
func TestPebbleCmdPebbleTuningOpensAsCmdPebble(t *testing.T) {
	e := openPebbleWith(t, map[string]any{"tuning": "cmd-pebble"})
	if got := e.db.FormatMajorVersion(); got != pebble.FormatNewest {
		t.Errorf("cmd-pebble: format %d, want FormatNewest %d", got, pebble.FormatNewest)
	}
	d := openPebbleWith(t, nil)
	if got := d.db.FormatMajorVersion(); got == pebble.FormatNewest {
		t.Errorf("default tuning: format %d, want Pebble's default, not the newest", got)
	}
}
