//go:build !kvbench_only || kvbench_pebble

package engines

import (
	"errors"
	"fmt"
	"log"

	"github.com/cockroachdb/pebble"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func init() { register(pebbleDescriptor) }

// go-pebble: github.com/cockroachdb/pebble, CockroachDB's LSM tree (RocksDB-compatible
// format). A batch larger than one is a Batch committed once; sync maps to pebble.Sync/NoSync.
var pebbleDescriptor = &worker.Descriptor{
	Name:        "go-pebble",
	Description: "Pebble: CockroachDB's LSM tree in Go; batches are one Batch.Commit",
	Caps:        worker.Capabilities{OrderedScan: true, Batch: true, ReadOnlyOpen: true, Persistent: true, Delete: true},
	Options: []worker.OptionSpec{
		{Name: "cache", Kind: "int", Default: "8m", Doc: "block cache size (Pebble's default 8 MiB)"},
		{Name: "compression", Kind: "enum", Default: "snappy", Doc: "block compression of every level", Choices: []string{"none", "snappy", "zstd"}},
	},
	Version:     func() string { return moduleVersion("github.com/cockroachdb/pebble") },
	Unavailable: available,
	Open:        openPebble,
}

type pebbleEngine struct {
	db       *pebble.DB
	cache    *pebble.Cache
	wo       *pebble.WriteOptions
	settings map[string]string
}

func openPebble(a worker.OpenArgs) (worker.Engine, error) {
	size, _ := a.Options.Int("cache")
	cache := pebble.NewCache(size)
	o := &pebble.Options{Cache: cache, ReadOnly: a.Mode != "read-write"}
	comp := a.Options.Text("compression")
	c := pebble.SnappyCompression
	switch comp {
	case "none":
		c = pebble.NoCompression
	case "zstd":
		c = pebble.ZstdCompression
	}
	o.Levels = make([]pebble.LevelOptions, 7)
	for i := range o.Levels {
		o.Levels[i].Compression = c
	}
	o.Logger = quietLogger{}
	o.EnsureDefaults()
	db, err := pebble.Open(a.Dir, o)
	cache.Unref() // the DB holds its own reference
	if err != nil {
		return nil, err
	}
	wo := pebble.Sync
	if a.Sync == "none" {
		wo = pebble.NoSync
	}
	return &pebbleEngine{db: db, wo: wo, settings: map[string]string{
		"sync":        syncSetting(a.Sync, "pebble.NoSync (WAL written, not synced)", "pebble.Sync at every Set/Delete or Batch.Commit", "pebble.Sync at every Set/Delete or Batch.Commit"),
		"compression": comp,
		"cache":       a.Options.Text("cache"),
		"batch":       "batch 1: DB.Set/Delete; larger: one Batch, Commit",
	}}, nil
}

func (e *pebbleEngine) Write(batch []worker.WriteOp) error {
	if len(batch) == 1 {
		if batch[0].Delete {
			return e.db.Delete(batch[0].Key, e.wo)
		}
		return e.db.Set(batch[0].Key, batch[0].Value, e.wo)
	}
	b := e.db.NewBatch()
	for _, w := range batch {
		var err error
		if w.Delete {
			err = b.Delete(w.Key, nil)
		} else {
			err = b.Set(w.Key, w.Value, nil)
		}
		if err != nil {
			_ = b.Close()
			return err
		}
	}
	if err := b.Commit(e.wo); err != nil {
		_ = b.Close()
		return err
	}
	return b.Close()
}

func (e *pebbleEngine) Reader() (worker.Reader, error) { return &pebbleReader{db: e.db}, nil }
func (e *pebbleEngine) FinishLoad() error              { return nil }
func (e *pebbleEngine) Close() error                   { return e.db.Close() }
func (e *pebbleEngine) Settings() map[string]string    { return e.settings }

type pebbleReader struct {
	db  *pebble.DB
	buf []byte
}

// Get copies the value out before releasing it (Pebble's value is valid until the closer
// runs), as a caller must.
func (r *pebbleReader) Get(key []byte) ([]byte, bool, error) {
	v, closer, err := r.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	r.buf = append(r.buf[:0], v...)
	return r.buf, true, closer.Close()
}

func (r *pebbleReader) Scan(start []byte, limit int, visit func(k, v []byte) bool) (int, error) {
	it, err := r.db.NewIter(&pebble.IterOptions{LowerBound: start})
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		n++
		if !visit(it.Key(), it.Value()) {
			break
		}
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return n, err
	}
	return n, it.Close()
}

func (r *pebbleReader) Refresh() error { return nil }
func (r *pebbleReader) Close() error   { return nil }

// quietLogger drops Pebble's informational lines (one per WAL replayed at every open) and
// keeps its errors, on stderr (the job's log).
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{}) {}
func (quietLogger) Errorf(format string, args ...interface{}) {
	log.Printf("pebble: "+format, args...)
}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	log.Fatal(fmt.Sprintf("pebble: "+format, args...))
}
