//go:build !kvbench_only || kvbench_goleveldb

package engines

import (
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func init() { register(goleveldbDescriptor) }

// go-goleveldb: github.com/syndtr/goleveldb, LevelDB in pure Go. A batch larger than one is
// a WriteBatch; one write is DB.Put/Delete. Sync maps to WriteOptions.Sync.
var goleveldbDescriptor = &worker.Descriptor{
	Name:        "go-goleveldb",
	Description: "goleveldb: LevelDB's LSM tree in pure Go; batches are WriteBatch",
	Caps:        worker.Capabilities{OrderedScan: true, Batch: true, ReadOnlyOpen: true, Persistent: true, Delete: true},
	Options: []worker.OptionSpec{
		{Name: "compression", Kind: "enum", Default: "snappy", Doc: "block compression", Choices: []string{"none", "snappy"}},
		{Name: "block_cache", Kind: "int", Default: "8m", Doc: "block cache capacity (goleveldb's default 8 MiB)"},
		{Name: "write_buffer", Kind: "int", Default: "4m", Doc: "memtable size (goleveldb's default 4 MiB)"},
	},
	Version:     func() string { return moduleVersion("github.com/syndtr/goleveldb") },
	Unavailable: available,
	Open:        openGoleveldb,
}

type goleveldbEngine struct {
	db       *leveldb.DB
	wo       *opt.WriteOptions
	sync     string
	settings map[string]string
}

func openGoleveldb(a worker.OpenArgs) (worker.Engine, error) {
	o := &opt.Options{ReadOnly: a.Mode != "read-write", Compression: opt.SnappyCompression}
	comp := a.Options.Text("compression")
	if comp == "none" {
		o.Compression = opt.NoCompression
	}
	if n, ok := a.Options.Int("block_cache"); ok {
		o.BlockCacheCapacity = int(n)
	}
	if n, ok := a.Options.Int("write_buffer"); ok {
		o.WriteBuffer = int(n)
	}
	db, err := leveldb.OpenFile(a.Dir, o)
	if err != nil {
		return nil, err
	}
	return &goleveldbEngine{db: db, wo: &opt.WriteOptions{Sync: a.Sync != "none"}, sync: a.Sync, settings: map[string]string{
		"sync":        syncSetting(a.Sync, "WriteOptions.Sync = false", "WriteOptions.Sync = true (each Put or WriteBatch)", "WriteOptions.Sync = true (each Put or WriteBatch)"),
		"compression": comp,
		"batch":       "batch 1: DB.Put/Delete; larger: one leveldb.Batch per DB.Write",
	}}, nil
}

func (e *goleveldbEngine) Write(batch []worker.WriteOp) error {
	if len(batch) == 1 {
		if batch[0].Delete {
			return e.db.Delete(batch[0].Key, e.wo)
		}
		return e.db.Put(batch[0].Key, batch[0].Value, e.wo)
	}
	b := new(leveldb.Batch)
	for _, w := range batch {
		if w.Delete {
			b.Delete(w.Key)
		} else {
			b.Put(w.Key, w.Value)
		}
	}
	return e.db.Write(b, e.wo)
}

func (e *goleveldbEngine) Reader() (worker.Reader, error) { return &goleveldbReader{db: e.db}, nil }
func (e *goleveldbEngine) FinishLoad() error              { return nil }
func (e *goleveldbEngine) Close() error                   { return e.db.Close() }
func (e *goleveldbEngine) Settings() map[string]string    { return e.settings }

// Settle compacts the whole key range (DB.CompactRange over an empty range: every key), which
// flushes the memtable first.
func (e *goleveldbEngine) Settle() (string, error) {
	if err := e.db.CompactRange(util.Range{}); err != nil {
		return "", err
	}
	var st leveldb.DBStats
	if err := e.db.Stats(&st); err != nil {
		return "", err
	}
	return fmt.Sprintf("flushed the memtable and compacted every key (CompactRange): %d tables at L0 after", l0Tables(&st)), nil
}

// l0Tables is the tables at level 0 (goleveldb lists no level while it has no table).
func l0Tables(st *leveldb.DBStats) int {
	if len(st.LevelTablesCounts) == 0 {
		return 0
	}
	return st.LevelTablesCounts[0]
}

// Internals are goleveldb's statistics (DB.Stats): tables and bytes per level, write delays,
// the bytes its storage read and wrote.
func (e *goleveldbEngine) Internals() map[string]float64 {
	var st leveldb.DBStats
	if e.db.Stats(&st) != nil {
		return nil
	}
	out := map[string]float64{
		"goleveldb.write_delays":         float64(st.WriteDelayCount),
		"goleveldb.write_delay_s":        st.WriteDelayDuration.Seconds(),
		"goleveldb.io_read_bytes":        float64(st.IORead),
		"goleveldb.io_write_bytes":       float64(st.IOWrite),
		"goleveldb.memtable_compactions": float64(st.MemComp),
		"goleveldb.l0_compactions":       float64(st.Level0Comp),
		"goleveldb.compactions":          float64(st.NonLevel0Comp),
		"goleveldb.tables_bytes":         float64(st.LevelSizes.Sum()),
	}
	out["goleveldb.l0_tables"] = float64(l0Tables(&st))
	return out
}

type goleveldbReader struct{ db *leveldb.DB }

func (r *goleveldbReader) Get(key []byte) ([]byte, bool, error) {
	v, err := r.db.Get(key, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

func (r *goleveldbReader) Scan(start []byte, limit int, visit func(k, v []byte) bool) (int, error) {
	it := r.db.NewIterator(&util.Range{Start: start}, nil)
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		n++
		if !visit(it.Key(), it.Value()) {
			break
		}
	}
	it.Release()
	return n, it.Error()
}

func (r *goleveldbReader) Refresh() error { return nil }
func (r *goleveldbReader) Close() error   { return nil }
