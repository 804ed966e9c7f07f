//go:build !kvbench_only || kvbench_pebble2

package engines

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func init() { register(pebble2Descriptor) }

// go-pebble2: github.com/cockroachdb/pebble/v2, Pebble's second major version (columnar
// blocks, blob files for separated values). The same calls as go-pebble; the format major
// version is an option because v2's own default (the oldest it reads) hides what v2 changed.
var pebble2Descriptor = &worker.Descriptor{
	Name:        "go-pebble2",
	Description: "Pebble v2: CockroachDB's LSM tree in Go, newest on-disk format; batches are one Batch.Commit",
	Caps:        worker.Capabilities{OrderedScan: true, Batch: true, ReadOnlyOpen: true, Persistent: true, Delete: true},
	Options: []worker.OptionSpec{
		{Name: "cache", Kind: "int", Default: "8m", Doc: "block cache size (Pebble's default 8 MiB)"},
		{Name: "compression", Kind: "enum", Default: "snappy", Doc: "block compression of every level", Choices: []string{"none", "snappy", "zstd"}},
		{Name: "format", Kind: "enum", Default: "newest", Doc: "format major version of a new store: newest (FormatNewest, as cmd/pebble and CockroachDB) or min (FormatMinSupported, Options.EnsureDefaults' choice)", Choices: []string{"newest", "min"}},
	},
	Version:     func() string { return moduleVersion("github.com/cockroachdb/pebble/v2") },
	Unavailable: available,
	Open:        openPebble2,
}

type pebble2Engine struct {
	db       *pebble.DB
	wo       *pebble.WriteOptions
	settings map[string]string
}

func pebble2Compression(name string) *sstable.CompressionProfile {
	switch name {
	case "none":
		return sstable.NoCompression
	case "zstd":
		return sstable.ZstdCompression
	}
	return sstable.SnappyCompression
}

func openPebble2(a worker.OpenArgs) (worker.Engine, error) {
	size, _ := a.Options.Int("cache")
	cache := pebble.NewCache(size)
	o := &pebble.Options{Cache: cache, ReadOnly: a.Mode != "read-write", Logger: quietLogger{}}
	format := a.Options.Text("format")
	o.FormatMajorVersion = pebble.FormatNewest
	if format == "min" {
		o.FormatMajorVersion = pebble.FormatMinSupported
	}
	profile := pebble2Compression(a.Options.Text("compression"))
	for i := range o.Levels {
		o.Levels[i].Compression = func() *sstable.CompressionProfile { return profile }
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
	return &pebble2Engine{db: db, wo: wo, settings: map[string]string{
		"sync":        syncSetting(a.Sync, "pebble.NoSync (WAL written, not synced)", "pebble.Sync at every Set/Delete or Batch.Commit", "pebble.Sync at every Set/Delete or Batch.Commit"),
		"compression": a.Options.Text("compression"),
		"cache":       a.Options.Text("cache"),
		"format":      fmt.Sprintf("%s (format major version %d of a new store)", format, o.FormatMajorVersion),
		"batch":       "batch 1: DB.Set/Delete; larger: one Batch, Commit",
	}}, nil
}

func (e *pebble2Engine) Write(batch []worker.WriteOp) error {
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

func (e *pebble2Engine) Reader() (worker.Reader, error) { return &pebble2Reader{db: e.db}, nil }
func (e *pebble2Engine) FinishLoad() error              { return nil }
func (e *pebble2Engine) Close() error                   { return e.db.Close() }
func (e *pebble2Engine) Settings() map[string]string    { return e.settings }

// Settle flushes the memtable and compacts the whole key range (first to last key), waiting
// for the compaction.
func (e *pebble2Engine) Settle() (string, error) {
	if err := e.db.Flush(); err != nil {
		return "", err
	}
	first, last, err := pebble2Bounds(e.db)
	if err != nil || first == nil {
		return "flushed the memtable; no keys to compact", err
	}
	// Compact's end is exclusive: the smallest key after the last one.
	if err := e.db.Compact(context.Background(), first, append(last, 0), true); err != nil {
		return "", err
	}
	m := e.db.Metrics()
	return fmt.Sprintf("flushed the memtable and compacted every key (Flush, Compact): %d files at L0, read amplification %d, compaction debt %d bytes after",
		m.Levels[0].TablesCount, m.ReadAmp(), m.Compact.EstimatedDebt), nil
}

// pebble2Bounds are the first and last keys (nil when the store is empty), copied.
func pebble2Bounds(db *pebble.DB) (first, last []byte, err error) {
	it, err := db.NewIter(nil)
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

// Internals are Pebble's metrics (DB.Metrics), under the same names as go-pebble's.
func (e *pebble2Engine) Internals() map[string]float64 {
	m := e.db.Metrics()
	var flushed, compacted uint64
	for _, l := range m.Levels {
		flushed += l.TableBytesFlushed + l.BlobBytesFlushed
		compacted += l.TableBytesCompacted + l.BlobBytesCompacted
	}
	total := m.Total()
	return map[string]float64{
		"pebble.l0_files":                 float64(m.Levels[0].TablesCount),
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
		"pebble.sstable_bytes":            float64(total.AggregateSize()),
	}
}

type pebble2Reader struct {
	db  *pebble.DB
	buf []byte
}

// Get copies the value out before releasing it (Pebble's value is valid until the closer
// runs), as a caller must.
func (r *pebble2Reader) Get(key []byte) ([]byte, bool, error) {
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

func (r *pebble2Reader) Scan(start []byte, limit int, visit func(k, v []byte) bool) (int, error) {
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

func (r *pebble2Reader) Refresh() error { return nil }
func (r *pebble2Reader) Close() error   { return nil }
