//go:build !kvbench_only || kvbench_pogreb

package engines

import (
	"github.com/akrylysov/pogreb"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func init() { register(pogrebDescriptor) }

// go-pogreb: github.com/akrylysov/pogreb, a hash index over an append-only log, for
// read-heavy workloads. No batches, no transactions, no ordered scan (its iterator is in hash
// order). Sync: none = no background sync; commit = DB.Sync() after every batch; always =
// BackgroundSyncInterval -1 (pogreb syncs after every write).
var pogrebDescriptor = &worker.Descriptor{
	Name:        "go-pogreb",
	Description: "pogreb: hash index + append-only log in Go; no ordered scan, no batches",
	Caps:        worker.Capabilities{Persistent: true, Delete: true},
	Version:     func() string { return moduleVersion("github.com/akrylysov/pogreb") },
	Unavailable: available,
	Open:        openPogreb,
}

type pogrebEngine struct {
	db   *pogreb.DB
	sync string
}

func openPogreb(a worker.OpenArgs) (worker.Engine, error) {
	o := &pogreb.Options{}
	if a.Sync == "always" {
		o.BackgroundSyncInterval = -1
	}
	db, err := pogreb.Open(a.Dir, o)
	if err != nil {
		return nil, err
	}
	return &pogrebEngine{db: db, sync: a.Sync}, nil
}

func (e *pogrebEngine) Write(batch []worker.WriteOp) error {
	for _, w := range batch {
		var err error
		if w.Delete {
			err = e.db.Delete(w.Key)
		} else {
			err = e.db.Put(w.Key, w.Value)
		}
		if err != nil {
			return err
		}
	}
	if e.sync == "commit" {
		return e.db.Sync()
	}
	return nil
}

func (e *pogrebEngine) Reader() (worker.Reader, error) { return &pogrebReader{db: e.db}, nil }
func (e *pogrebEngine) FinishLoad() error              { return nil }
func (e *pogrebEngine) Close() error                   { return e.db.Close() }
func (e *pogrebEngine) Settings() map[string]string {
	return map[string]string{
		"sync":  syncSetting(e.sync, "no background sync (BackgroundSyncInterval 0)", "DB.Sync() after every batch", "BackgroundSyncInterval -1: Sync() after every write"),
		"batch": "no batches: a batch is a loop of Put/Delete",
	}
}

type pogrebReader struct {
	worker.NoScan
	db *pogreb.DB
}

func (r *pogrebReader) Get(key []byte) ([]byte, bool, error) {
	v, err := r.db.Get(key)
	if err != nil {
		return nil, false, err
	}
	if v != nil {
		return v, true, nil
	}
	// nil is "absent", but also what an empty value may come back as.
	ok, err := r.db.Has(key)
	return nil, ok, err
}

func (r *pogrebReader) Refresh() error { return nil }
func (r *pogrebReader) Close() error   { return nil }
