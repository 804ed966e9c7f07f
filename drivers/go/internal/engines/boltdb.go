//go:build !kvbench_only || kvbench_boltdb

package engines

import (
	"bytes"
	"time"

	"github.com/boltdb/bolt"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func init() { register(boltdbDescriptor) }

// go-boltdb: github.com/boltdb/bolt v1.3.1, the original BoltDB (archived; bbolt is its
// maintained fork), kept because article 004 measured it beside bbolt. Same model: a
// copy-on-write B+tree in one mmapped file, one writer at a time, a batch is one Update
// transaction, sync none sets DB.NoSync. It has no freelist option (bbolt added that).
var boltdbDescriptor = &worker.Descriptor{
	Name:        "go-boltdb",
	Description: "BoltDB v1.3.1 (the original, archived): copy-on-write B+tree in one mmapped file; a batch is one Update transaction",
	Caps:        worker.Capabilities{OrderedScan: true, Batch: true, ReadOnlyOpen: true, Persistent: true, Delete: true},
	Version:     func() string { return moduleVersion("github.com/boltdb/bolt") },
	Unavailable: available,
	Open:        openBoltdb,
}

var boltdbBucket = []byte("kvbench")

type boltdbEngine struct {
	db   *bolt.DB
	sync string
}

func openBoltdb(a worker.OpenArgs) (worker.Engine, error) {
	o := &bolt.Options{Timeout: 10 * time.Second, ReadOnly: a.Mode != "read-write"}
	if a.Mode == "secondary" {
		return nil, &worker.Unsupported{What: "secondary open"}
	}
	db, err := bolt.Open(a.File("data.boltdb"), 0o644, o)
	if err != nil {
		return nil, err
	}
	db.NoSync = a.Sync == "none"
	if !o.ReadOnly {
		err = db.Update(func(tx *bolt.Tx) error {
			_, err := tx.CreateBucketIfNotExists(boltdbBucket)
			return err
		})
		if err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	return &boltdbEngine{db: db, sync: a.Sync}, nil
}

func (e *boltdbEngine) Write(batch []worker.WriteOp) error {
	// Bolt's remap (when the file grows) waits for every open read transaction: the worker
	// lets its own snapshot go before it writes (as for bbolt). Ending other goroutines'
	// transactions from here would pull them from under a read in progress.
	return e.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltdbBucket)
		for _, w := range batch {
			if err := boltdbApply(b, w); err != nil {
				return err
			}
		}
		return nil
	})
}

func boltdbApply(b *bolt.Bucket, w worker.WriteOp) error {
	if w.Delete {
		return b.Delete(w.Key)
	}
	return b.Put(w.Key, w.Value)
}

func (e *boltdbEngine) Reader() (worker.Reader, error) {
	return &boltdbReader{e: e}, nil
}

func (e *boltdbEngine) FinishLoad() error { return nil }
func (e *boltdbEngine) Close() error      { return e.db.Close() }
func (e *boltdbEngine) Settings() map[string]string {
	commit := "fsync (fdatasync) at every Update commit; a batch is one transaction"
	return map[string]string{
		"sync":   syncSetting(e.sync, "DB.NoSync = true (no fsync at commit)", commit, commit),
		"bucket": "one bucket `kvbench`",
		"reads":  "one read transaction per reader (View), cursor Seek for scans",
	}
}

type boltdbReader struct {
	e  *boltdbEngine
	tx *bolt.Tx
	b  *bolt.Bucket
}

func (r *boltdbReader) release() {
	if r.tx != nil {
		_ = r.tx.Rollback()
		r.tx, r.b = nil, nil
	}
}

// bucket begins the read transaction if none is open; nil means the bucket does not exist.
func (r *boltdbReader) bucket() (*bolt.Bucket, error) {
	if r.tx == nil {
		tx, err := r.e.db.Begin(false)
		if err != nil {
			return nil, err
		}
		r.tx, r.b = tx, tx.Bucket(boltdbBucket)
	}
	return r.b, nil
}

func (r *boltdbReader) Get(key []byte) ([]byte, bool, error) {
	b, err := r.bucket()
	if b == nil || err != nil {
		return nil, false, err
	}
	if v := b.Get(key); v != nil {
		return v, true, nil
	}
	// An empty value can come back as nil too: a cursor tells it from an absent key.
	k, _ := b.Cursor().Seek(key)
	return nil, k != nil && bytes.Equal(k, key), nil
}

func (r *boltdbReader) Scan(start []byte, limit int, visit func(k, v []byte) bool) (int, error) {
	b, err := r.bucket()
	if b == nil || err != nil {
		return 0, err
	}
	n := 0
	c := b.Cursor()
	for k, v := c.Seek(start); k != nil && n < limit; k, v = c.Next() {
		n++
		if !visit(k, v) {
			break
		}
	}
	return n, nil
}

func (r *boltdbReader) Refresh() error {
	r.release()
	return nil
}

func (r *boltdbReader) Close() error {
	r.release()
	return nil
}
