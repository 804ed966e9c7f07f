//go:build !kvbench_only || kvbench_bbolt

package engines

import (
	"bytes"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func init() { register(bboltDescriptor) }

// go-bbolt: go.etcd.io/bbolt, a B+tree in one memory-mapped file with one writer at a time.
// A batch is one Update transaction; sync none sets DB.NoSync (no fsync at commit).
var bboltDescriptor = &worker.Descriptor{
	Name:        "go-bbolt",
	Description: "bbolt (BoltDB fork): copy-on-write B+tree in one mmapped file; a batch is one Update transaction",
	Caps:        worker.Capabilities{OrderedScan: true, Batch: true, ReadOnlyOpen: true, Persistent: true, Delete: true},
	Options: []worker.OptionSpec{
		{Name: "freelist", Kind: "enum", Default: "array", Doc: "free page list type (bbolt's FreelistType)", Choices: []string{"array", "map"}},
	},
	Version:     func() string { return moduleVersion("go.etcd.io/bbolt") },
	Unavailable: available,
	Open:        openBbolt,
}

var bboltBucket = []byte("kvbench")

type bboltEngine struct {
	db       *bolt.DB
	sync     string
	freelist string
	// pageSize is read once at open: DB.Info reads the memory map, which a write may be
	// remapping while the monitor thread asks for Internals (a fault, not a value).
	pageSize int
}

func openBbolt(a worker.OpenArgs) (worker.Engine, error) {
	o := &bolt.Options{Timeout: 10 * time.Second, ReadOnly: a.Mode != "read-write", FreelistType: bolt.FreelistArrayType}
	fl := a.Options.Text("freelist")
	if fl == "map" {
		o.FreelistType = bolt.FreelistMapType
	}
	db, err := bolt.Open(a.File("data.bolt"), 0o644, o)
	if err != nil {
		return nil, err
	}
	db.NoSync = a.Sync == "none"
	if !o.ReadOnly {
		if err := db.Update(func(tx *bolt.Tx) error {
			_, err := tx.CreateBucketIfNotExists(bboltBucket)
			return err
		}); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	return &bboltEngine{db: db, sync: a.Sync, freelist: fl, pageSize: db.Info().PageSize}, nil
}

// Write is one Update transaction. A read transaction of the same goroutine held across it
// would deadlock bbolt when the file grows (the remap waits for readers): the worker refreshes
// its reader (which lets the transaction go) before every write.
func (e *bboltEngine) Write(batch []worker.WriteOp) error {
	return e.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bboltBucket)
		for _, w := range batch {
			var err error
			if w.Delete {
				err = b.Delete(w.Key)
			} else {
				err = b.Put(w.Key, w.Value)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *bboltEngine) Reader() (worker.Reader, error) { return &bboltReader{e: e}, nil }

func (e *bboltEngine) FinishLoad() error { return nil }
func (e *bboltEngine) Close() error      { return e.db.Close() }
func (e *bboltEngine) Settings() map[string]string {
	return map[string]string{
		"sync":     syncSetting(e.sync, "DB.NoSync = true (no fsync at commit)", "fsync at every Update commit (a batch is one transaction)", "fsync at every Update commit (a batch is one transaction)"),
		"freelist": e.freelist,
		"bucket":   "one bucket `kvbench`",
		"reads":    "one read transaction per reader (View), cursor Seek for scans",
	}
}

// Settle has nothing to compact: bbolt writes its B+tree in place at each commit. With sync =
// none it syncs the file (DB.Sync), as close would.
func (e *bboltEngine) Settle() (string, error) {
	const what = "nothing to settle: a B+tree in one file, written in place at each commit (no memtable, no compaction)"
	if !e.db.NoSync {
		return what, nil
	}
	if err := e.db.Sync(); err != nil {
		return "", err
	}
	return what + "; the file synced (DB.Sync: sync = none)", nil
}

// Internals are bbolt's statistics (DB.Stats: the freelist, page allocations) and the file's
// size in pages, read without a transaction.
func (e *bboltEngine) Internals() map[string]float64 {
	st := e.db.Stats()
	out := map[string]float64{
		"bbolt.free_pages":       float64(st.FreePageN),
		"bbolt.pending_pages":    float64(st.PendingPageN),
		"bbolt.free_bytes":       float64(st.FreeAlloc),
		"bbolt.freelist_bytes":   float64(st.FreelistInuse),
		"bbolt.page_allocations": float64(st.TxStats.GetPageCount()),
		"bbolt.open_read_txs":    float64(st.OpenTxN),
	}
	if fi, err := os.Stat(e.db.Path()); err == nil && e.pageSize > 0 {
		out["bbolt.file_pages"] = float64(fi.Size() / int64(e.pageSize))
	}
	return out
}

type bboltReader struct {
	e  *bboltEngine
	tx *bolt.Tx
	b  *bolt.Bucket
}

func (r *bboltReader) release() {
	if r.tx != nil {
		_ = r.tx.Rollback()
		r.tx, r.b = nil, nil
	}
}

func (r *bboltReader) begin() error {
	if r.tx != nil {
		return nil
	}
	tx, err := r.e.db.Begin(false)
	if err != nil {
		return err
	}
	r.tx, r.b = tx, tx.Bucket(bboltBucket)
	return nil
}

func (r *bboltReader) Get(key []byte) ([]byte, bool, error) {
	if r.tx == nil { // tested here, not only in begin: a call per get costs the timed call
		if err := r.begin(); err != nil {
			return nil, false, err
		}
	}
	if r.b == nil {
		return nil, false, nil
	}
	v := r.b.Get(key)
	if v != nil {
		return v, true, nil
	}
	// nil is "absent", but also what an empty value may come back as: ask a cursor.
	k, _ := r.b.Cursor().Seek(key)
	return nil, k != nil && bytes.Equal(k, key), nil
}

// StableValues: a value lies in the read transaction's memory map until the transaction ends.
func (r *bboltReader) StableValues() {}

func (r *bboltReader) Scan(start []byte, limit int, visit func(k, v []byte) bool) (int, error) {
	if err := r.begin(); err != nil {
		return 0, err
	}
	if r.b == nil {
		return 0, nil
	}
	c := r.b.Cursor()
	n := 0
	for k, v := c.Seek(start); k != nil && n < limit; k, v = c.Next() {
		n++
		if !visit(k, v) {
			break
		}
	}
	return n, nil
}

func (r *bboltReader) Refresh() error {
	r.release()
	return nil
}

func (r *bboltReader) Close() error {
	r.release()
	return nil
}
