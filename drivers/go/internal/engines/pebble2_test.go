package engines

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// go-pebble2's `format` option decides the on-disk format of a new store (v2's own default is
// the oldest format it reads), and the settings name it.
func TestPebble2FormatOptionSetsTheStoresFormat(t *testing.T) {
	for format, want := range map[string]pebble.FormatMajorVersion{"newest": pebble.FormatNewest, "min": pebble.FormatMinSupported} {
		o := resolved(t, Find("go-pebble2"), map[string]any{"format": format})
		e, err := openPebble2(worker.OpenArgs{Dir: t.TempDir(), Options: o, Sync: "none", Mode: "read-write"})
		if err != nil {
			t.Fatal(err)
		}
		got := e.(*pebble2Engine).db.FormatMajorVersion()
		settings := e.Settings()["format"]
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("format %s: store at %d, want %d (settings %q)", format, got, want, settings)
		}
	}
}
