//go:build !kvbench_only || kvbench_badger

package engines

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func init() { register(badgerDescriptor) }

// go-badger: github.com/dgraph-io/badger/v4, an LSM tree with values in a separate log
// (WiscKey). One write is one Update transaction; a larger batch is a WriteBatch, which
// badger splits into as many transactions as its size limit needs (not atomic as a whole).
// Sync maps to Options.SyncWrites.
var badgerDescriptor = &worker.Descriptor{
	Name:        "go-badger",
	Description: "Badger v4: LSM tree with a value log (WiscKey) in Go; batches are a WriteBatch",
	Caps:        worker.Capabilities{OrderedScan: true, Batch: true, ReadOnlyOpen: true, Persistent: true, Delete: true},
	Options: []worker.OptionSpec{
		{Name: "value_threshold", Kind: "int", Default: "1m", Doc: "values at least this long go to the value log (badger's default 1 MiB)"},
		{Name: "block_cache", Kind: "int", Default: "256m", Doc: "block cache size (badger's default 256 MiB)"},
	},
	Version:     func() string { return moduleVersion("github.com/dgraph-io/badger/v4") },
	Unavailable: available,
	Open:        openBadger,
}

type badgerEngine struct {
	db       *badger.DB
	dir      string
	settings map[string]string
}

func openBadger(a worker.OpenArgs) (worker.Engine, error) {
	o := badger.DefaultOptions(a.Dir).WithLogger(nil).WithSyncWrites(a.Sync != "none").WithReadOnly(a.Mode != "read-write")
	if n, ok := a.Options.Int("value_threshold"); ok {
		o = o.WithValueThreshold(n)
	}
	if n, ok := a.Options.Int("block_cache"); ok {
		o = o.WithBlockCacheSize(n)
	}
	db, err := badger.Open(o)
	if err != nil {
		return nil, err
	}
	return &badgerEngine{db: db, dir: a.Dir, settings: map[string]string{
		"sync":            syncSetting(a.Sync, "SyncWrites = false", "SyncWrites = true (each commit)", "SyncWrites = true (each commit)"),
		"batch":           "batch 1: one Update transaction; larger: a WriteBatch (split by badger at its transaction size limit)",
		"value_threshold": a.Options.Text("value_threshold"),
		"block_cache":     a.Options.Text("block_cache"),
	}}, nil
}

func (e *badgerEngine) Write(batch []worker.WriteOp) error {
	if len(batch) == 1 {
		w := batch[0]
		return e.db.Update(func(txn *badger.Txn) error {
			if w.Delete {
				return txn.Delete(w.Key)
			}
			return txn.Set(w.Key, w.Value)
		})
	}
	wb := e.db.NewWriteBatch()
	defer wb.Cancel()
	for _, w := range batch {
		var err error
		if w.Delete {
			err = wb.Delete(w.Key)
		} else {
			err = wb.Set(w.Key, w.Value)
		}
		if err != nil {
			return err
		}
	}
	return wb.Flush()
}

func (e *badgerEngine) Reader() (worker.Reader, error) {
	return &badgerReader{db: e.db, txn: e.db.NewTransaction(false)}, nil
}
func (e *badgerEngine) FinishLoad() error           { return nil }
func (e *badgerEngine) Close() error                { return e.db.Close() }
func (e *badgerEngine) Settings() map[string]string { return e.settings }

// Settle flattens the LSM tree to one level (DB.Flatten) and runs value-log garbage
// collection until it rewrites nothing (DB.RunValueLogGC at badger's recommended ratio).
// Badger has no call that flushes the memtable: what it holds stays there.
func (e *badgerEngine) Settle() (string, error) {
	if err := e.db.Flatten(runtime.NumCPU()); err != nil {
		return "", err
	}
	rewrites := 0
	for ; rewrites < maxGCRounds; rewrites++ {
		err := e.db.RunValueLogGC(0.5)
		if errors.Is(err, badger.ErrNoRewrite) {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("flattened the LSM tree to one level (Flatten) and ran value-log GC at discard ratio 0.5: %d value-log files rewritten; the memtable is not flushed (badger has no call for it)", rewrites), nil
}

// maxGCRounds bounds the value-log GC of a settle: each round rewrites at most one file.
const maxGCRounds = 1000

// Internals are the LSM tree's levels (DB.Levels) and the value log's files on disk. Badger's
// own DB.Size is refreshed once a minute, too seldom for a timeline.
func (e *badgerEngine) Internals() map[string]float64 {
	out := map[string]float64{}
	var lsm, tables, score float64
	for _, l := range e.db.Levels() {
		lsm += float64(l.Size)
		tables += float64(l.NumTables)
		score = max(score, l.Score)
		if l.Level == 0 {
			out["badger.l0_tables"] = float64(l.NumTables)
		}
	}
	out["badger.lsm_bytes"], out["badger.tables"], out["badger.max_compaction_score"] = lsm, tables, score
	out["badger.vlog_bytes"] = float64(filesSize(e.dir, ".vlog"))
	return out
}

// filesSize is the total size of the files of dir whose names end with suffix.
func filesSize(dir, suffix string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, d := range entries {
		if info, err := d.Info(); err == nil && strings.HasSuffix(d.Name(), suffix) {
			n += info.Size()
		}
	}
	return n
}

type badgerReader struct {
	db  *badger.DB
	txn *badger.Txn
	buf []byte
}

// Get copies the value out (ValueCopy), as a caller must after the transaction moves on.
func (r *badgerReader) Get(key []byte) ([]byte, bool, error) {
	item, err := r.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	r.buf, err = item.ValueCopy(r.buf[:0])
	return r.buf, err == nil, err
}

func (r *badgerReader) Scan(start []byte, limit int, visit func(k, v []byte) bool) (int, error) {
	it := r.txn.NewIterator(badger.DefaultIteratorOptions)
	defer it.Close()
	n := 0
	for it.Seek(start); it.Valid() && n < limit; it.Next() {
		item := it.Item()
		var err error
		if r.buf, err = item.ValueCopy(r.buf[:0]); err != nil {
			return n, err
		}
		n++
		if !visit(item.Key(), r.buf) {
			break
		}
	}
	return n, nil
}

func (r *badgerReader) Refresh() error {
	r.txn.Discard()
	r.txn = r.db.NewTransaction(false)
	return nil
}

func (r *badgerReader) Close() error {
	r.txn.Discard()
	return nil
}
