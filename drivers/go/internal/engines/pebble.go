//go:build !kvbench_only || kvbench_pebble

package engines

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"

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
		{Name: "tuning", Kind: "enum", Default: "default", Doc: "default: Pebble's own defaults; cmd-pebble: the options cmd/pebble's benchmarks open with (64 MiB memtables, 32 KiB blocks, 10-bit bloom filters, L0 compaction at 2 files, 64 MiB level base, 3 compactions, newest format)", Choices: []string{"default", "cmd-pebble"}},
		{Name: "read", Kind: "enum", Default: "get", Doc: "get: DB.Get; seek: a new iterator, SeekGE to the key, its key and value (cmd/pebble ycsb's read)", Choices: []string{"get", "seek"}},
	},
	Version:     func() string { return moduleVersion("github.com/cockroachdb/pebble") },
	Unavailable: available,
	Open:        openPebble,
}

type pebbleEngine struct {
	db       *pebble.DB
	cache    *pebble.Cache
	wo       *pebble.WriteOptions
	seek     bool
	settings map[string]string
}

// cmdPebbleTuning sets the options cmd/pebble v1.1.5 opens its store with (cmd/pebble/db.go,
// newPebbleDB), but its MVCC comparer and merge operator: kvbench's keys are plain bytes.
func cmdPebbleTuning(o *pebble.Options) {
	o.FormatMajorVersion = pebble.FormatNewest
	o.L0CompactionThreshold = 2
	o.L0StopWritesThreshold = 1000
	o.LBaseMaxBytes = 64 << 20
	o.MaxOpenFiles = 16384
	o.MemTableSize = 64 << 20
	o.MemTableStopWritesThreshold = 4
	o.MaxConcurrentCompactions = func() int { return 3 }
	for i := range o.Levels {
		l := &o.Levels[i]
		l.BlockSize = 32 << 10
		l.IndexBlockSize = 256 << 10
		l.FilterPolicy = bloom.FilterPolicy(10)
		l.FilterType = pebble.TableFilter
		if i > 0 {
			l.TargetFileSize = o.Levels[i-1].TargetFileSize * 2
		}
		l.EnsureDefaults()
	}
	o.Levels[6].FilterPolicy = nil
	o.FlushSplitBytes = o.Levels[0].TargetFileSize
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
	tuning := a.Options.Text("tuning")
	if tuning == "cmd-pebble" {
		cmdPebbleTuning(o)
	}
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
	read := a.Options.Text("read")
	return &pebbleEngine{db: db, wo: wo, seek: read == "seek", settings: map[string]string{
		"sync":        syncSetting(a.Sync, "pebble.NoSync (WAL written, not synced)", "pebble.Sync at every Set/Delete or Batch.Commit", "pebble.Sync at every Set/Delete or Batch.Commit"),
		"compression": comp,
		"cache":       a.Options.Text("cache"),
		"tuning":      tuning,
		"read":        map[bool]string{true: "seek: NewIter, SeekGE, Key and Value, Close (cmd/pebble ycsb's read)", false: "get: DB.Get"}[read == "seek"],
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

func (e *pebbleEngine) Reader() (worker.Reader, error) {
	return &pebbleReader{db: e.db, seek: e.seek}, nil
}
func (e *pebbleEngine) FinishLoad() error           { return nil }
func (e *pebbleEngine) Close() error                { return e.db.Close() }
func (e *pebbleEngine) Settings() map[string]string { return e.settings }

// Settle flushes the memtable and compacts the whole key range (first to last key), waiting
// for the compaction.
func (e *pebbleEngine) Settle() (string, error) {
	if err := e.db.Flush(); err != nil {
		return "", err
	}
	first, last, err := e.bounds()
	if err != nil || first == nil {
		return "flushed the memtable; no keys to compact", err
	}
	// Compact's end is exclusive: the smallest key after the last one.
	if err := e.db.Compact(first, append(last, 0), true); err != nil {
		return "", err
	}
	m := e.db.Metrics()
	return fmt.Sprintf("flushed the memtable and compacted every key (Flush, Compact): %d files at L0, read amplification %d, compaction debt %d bytes after",
		m.Levels[0].NumFiles, m.ReadAmp(), m.Compact.EstimatedDebt), nil
}

// bounds are the first and last keys (nil when the store is empty), copied.
func (e *pebbleEngine) bounds() (first, last []byte, err error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return nil, nil, err
	}
	if it.First() {
		first = append([]byte(nil), it.Key()...)
	}
	if it.Last() {
		last = append([]byte(nil), it.Key()...)
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return nil, nil, err
	}
	return first, last, it.Close()
}

// Internals are Pebble's metrics (DB.Metrics): the LSM's shape and what it wrote.
func (e *pebbleEngine) Internals() map[string]float64 {
	m := e.db.Metrics()
	var flushed, compacted uint64
	for _, l := range m.Levels {
		flushed += l.BytesFlushed
		compacted += l.BytesCompacted
	}
	total := m.Total()
	return map[string]float64{
		"pebble.l0_files":                 float64(m.Levels[0].NumFiles),
		"pebble.l0_sublevels":             float64(m.Levels[0].Sublevels),
		"pebble.read_amp":                 float64(m.ReadAmp()),
		"pebble.compaction_debt_bytes":    float64(m.Compact.EstimatedDebt),
		"pebble.compactions":              float64(m.Compact.Count),
		"pebble.compactions_in_progress":  float64(m.Compact.NumInProgress),
		"pebble.flushes":                  float64(m.Flush.Count),
		"pebble.wal_bytes_in":             float64(m.WAL.BytesIn),
		"pebble.wal_bytes_written":        float64(m.WAL.BytesWritten),
		"pebble.flush_bytes_written":      float64(flushed),
		"pebble.compaction_bytes_written": float64(compacted),
		"pebble.write_amp":                total.WriteAmp(),
		"pebble.memtable_bytes":           float64(m.MemTable.Size),
		"pebble.sstable_bytes":            float64(total.Size),
	}
}

type pebbleReader struct {
	db   *pebble.DB
	seek bool
	buf  []byte
}

// Get copies the value out before releasing it (Pebble's value is valid until the closer
// runs), as a caller must.
func (r *pebbleReader) Get(key []byte) ([]byte, bool, error) {
	if r.seek {
		return r.seekGet(key)
	}
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

// seekGet reads as cmd/pebble ycsb does: a fresh iterator positioned at the first key at or
// after the one asked for; that key missing, the record is missing (kvbench verifies reads).
func (r *pebbleReader) seekGet(key []byte) ([]byte, bool, error) {
	it, err := r.db.NewIter(nil)
	if err != nil {
		return nil, false, err
	}
	found := it.SeekGE(key) && bytes.Equal(it.Key(), key)
	if found {
		r.buf = append(r.buf[:0], it.Value()...)
	}
	if err := it.Close(); err != nil {
		return nil, false, err
	}
	return r.buf, found, nil
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
