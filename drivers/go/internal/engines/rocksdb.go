//go:build !kvbench_only || kvbench_rocksdb

package engines

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/linxGnu/grocksdb"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func init() { register(rocksdbDescriptor) }

// go-rocksdb: RocksDB through grocksdb, whose cgo calls RocksDB's C API in Debian's
// librocksdb: the very library the Rust `rocksdb` row links, so the two rows differ only by the
// language and binding they call it from. Same knobs as that row where grocksdb has them.
var rocksdbDescriptor = &worker.Descriptor{
	Name:        "go-rocksdb",
	Description: "RocksDB (Debian's librocksdb) through grocksdb and cgo: LSM tree",
	Caps: worker.Capabilities{OrderedScan: true, MultiGet: true, Batch: true, ReadOnlyOpen: true,
		SecondaryOpen: true, Persistent: true, Delete: true},
	Options: []worker.OptionSpec{
		{Name: "compression", Kind: "enum", Default: "snappy", Doc: "block compression of SST files", Choices: []string{"none", "snappy", "lz4", "zstd"}},
		{Name: "block_cache", Kind: "int", Default: "", Doc: "LRU block cache capacity in bytes; 0 disables it (default: the library's own block cache)"},
		{Name: "bloom_bits", Kind: "int", Default: "0", Doc: "bloom filter bits per key (0 = no filter)"},
		{Name: "write_buffer", Kind: "int", Default: "", Doc: "memtable size in bytes (default: the library's, 64 MiB)"},
		{Name: "wal", Kind: "bool", Default: "true", Doc: "write the WAL (false: WriteOptions.disableWAL; writes since the last flush are lost in a crash)"},
		{Name: "perf_context", Kind: "enum", Default: "off", Doc: "off: rocksdb_set_perf_level(kDisable) before each call, as the Rust row and db_bench (one cgo call more); library: RocksDB's default, which counts", Choices: []string{"off", "library"}},
	},
	Version:     rocksdbVersion,
	Unavailable: available,
	Open:        openRocksdb,
}

// rocksdbVersion names the shared library this process mapped (its file name carries
// RocksDB's full version) and the binding's module version.
func rocksdbVersion() string {
	lib := "librocksdb (not mapped)"
	if maps, err := os.ReadFile("/proc/self/maps"); err == nil {
		for _, line := range strings.Split(string(maps), "\n") {
			if i := strings.Index(line, "/"); i >= 0 && strings.Contains(line, "librocksdb.so") {
				lib = filepath.Base(line[i:])
				break
			}
		}
	}
	return "RocksDB " + strings.TrimPrefix(lib, "librocksdb.so.") + " (" + lib + ") via " + moduleVersion("github.com/linxGnu/grocksdb")
}

type rocksdbEngine struct {
	db       *grocksdb.DB
	opts     *grocksdb.Options
	wo       *grocksdb.WriteOptions
	ro       *grocksdb.ReadOptions
	mode     string
	perfOff  bool
	settings map[string]string
}

var rocksdbCompression = map[string]grocksdb.CompressionType{
	"none": grocksdb.NoCompression, "snappy": grocksdb.SnappyCompression,
	"lz4": grocksdb.LZ4Compression, "zstd": grocksdb.ZSTDCompression,
}

func openRocksdb(a worker.OpenArgs) (worker.Engine, error) {
	e := &rocksdbEngine{mode: a.Mode, settings: map[string]string{}}
	opts, err := rocksdbOptions(a, e.settings)
	if err != nil {
		return nil, err
	}
	e.opts = opts
	e.wo, err = rocksdbWriteOptions(a, e.settings)
	if err != nil {
		opts.Destroy()
		return nil, err
	}
	e.perfOff = a.Options.Text("perf_context") != "library"
	e.settings["perf_context"] = map[bool]string{true: "off (rocksdb_set_perf_level(kDisable) before each call: a goroutine may change OS thread between calls)", false: "library default (counts)"}[e.perfOff]
	if e.db, err = rocksdbOpen(a, opts, e.settings); err != nil {
		opts.Destroy()
		e.wo.Destroy()
		return nil, err
	}
	e.ro = grocksdb.NewDefaultReadOptions()
	e.settings["write_batch"] = "1: DB.Put/Delete; more: one WriteBatch per DB.Write"
	e.settings["multi_get"] = "DB.MultiGet (rocksdb_multi_get: the C API of 7.8 has no batched MultiGet)"
	e.settings["binding"] = moduleVersion("github.com/linxGnu/grocksdb") + " (cgo, RocksDB's C API)"
	return e, nil
}

// rocksdbOptions builds the database and table options the row asks for.
func rocksdbOptions(a worker.OpenArgs, settings map[string]string) (*grocksdb.Options, error) {
	o := a.Options
	comp := o.Text("compression")
	if comp == "" {
		comp = "snappy"
	}
	ct, ok := rocksdbCompression[comp]
	if !ok {
		return nil, fmt.Errorf("go-rocksdb compression `%s`: none, snappy, lz4 or zstd", comp)
	}
	table := grocksdb.NewDefaultBlockBasedTableOptions()
	if err := rocksdbTable(o, table, settings); err != nil {
		table.Destroy()
		return nil, err
	}
	opts := grocksdb.NewDefaultOptions()
	opts.SetCreateIfMissing(a.Mode == "read-write")
	opts.SetCompression(ct)
	settings["compression"] = comp
	opts.SetBlockBasedTableFactory(table)
	settings["write_buffer"] = "library default (64 MiB)"
	if n, ok := o.Int("write_buffer"); ok {
		if n <= 0 {
			opts.Destroy()
			return nil, fmt.Errorf("go-rocksdb write_buffer must be positive, got %d", n)
		}
		opts.SetWriteBufferSize(uint64(n))
		settings["write_buffer"] = fmt.Sprintf("%d bytes", n)
	}
	return opts, nil
}

// rocksdbTable sets the block cache and the bloom filter.
func rocksdbTable(o *worker.Options, table *grocksdb.BlockBasedTableOptions, settings map[string]string) error {
	settings["block_cache"] = "library default"
	if n, ok := o.Int("block_cache"); ok {
		switch {
		case n > 0:
			table.SetBlockCache(grocksdb.NewLRUCache(uint64(n)))
			settings["block_cache"] = fmt.Sprintf("%d bytes LRU", n)
		case n == 0:
			table.SetNoBlockCache(true)
			settings["block_cache"] = "disabled"
		default:
			return fmt.Errorf("go-rocksdb block_cache must be >= 0, got %d", n)
		}
	}
	bits, _ := o.Int("bloom_bits")
	switch {
	case bits < 0:
		return fmt.Errorf("go-rocksdb bloom_bits must be >= 0, got %d", bits)
	case bits > 0:
		table.SetFilterPolicy(grocksdb.NewBloomFilterFull(float64(bits)))
		settings["bloom_filter"] = fmt.Sprintf("%d bits/key (full filter)", bits)
	default:
		settings["bloom_filter"] = "off"
	}
	return nil
}

func rocksdbWriteOptions(a worker.OpenArgs, settings map[string]string) (*grocksdb.WriteOptions, error) {
	wal := a.Options.Bool("wal")
	if !wal && a.Sync != "none" {
		return nil, fmt.Errorf("go-rocksdb wal = false needs sync = \"none\" (got %q): RocksDB makes a write durable by syncing its WAL", a.Sync)
	}
	wo := grocksdb.NewDefaultWriteOptions()
	wo.SetSync(a.Sync != "none")
	wo.DisableWAL(!wal)
	settings["wal"] = map[bool]string{true: "on", false: "off (WriteOptions.disableWAL)"}[wal]
	settings["sync"] = syncSetting(a.Sync, "WriteOptions.sync=false (WAL fsynced only at close)",
		"WriteOptions.sync=true (WAL fsync per write batch)", "WriteOptions.sync=true (WAL fsync per write batch)")
	return wo, nil
}

func rocksdbOpen(a worker.OpenArgs, opts *grocksdb.Options, settings map[string]string) (*grocksdb.DB, error) {
	switch a.Mode {
	case "read-only":
		settings["open_mode"] = "read-only (OpenDbForReadOnly)"
		return grocksdb.OpenDbForReadOnly(opts, a.Dir, false)
	case "secondary":
		settings["open_mode"] = "secondary (OpenDbAsSecondary, caught up at open)"
		secondary := a.File("secondary")
		if err := os.MkdirAll(secondary, 0o755); err != nil {
			return nil, err
		}
		opts.SetMaxOpenFiles(-1) // RocksDB requires every table file open in a secondary
		db, err := grocksdb.OpenDbAsSecondary(opts, a.Dir, secondary)
		if err != nil {
			return nil, err
		}
		if err := db.TryCatchUpWithPrimary(); err != nil {
			db.Close()
			return nil, err
		}
		return db, nil
	}
	settings["open_mode"] = "read-write"
	return grocksdb.OpenDb(opts, a.Dir)
}

// perf turns RocksDB's per-thread perf counting off on the thread this goroutine runs on now.
func (e *rocksdbEngine) perf() {
	if e.perfOff {
		grocksdb.SetPerfLevel(grocksdb.KDisable)
	}
}

func (e *rocksdbEngine) Write(batch []worker.WriteOp) error {
	if e.mode != "read-write" {
		return fmt.Errorf("go-rocksdb: opened %s, cannot write", e.mode)
	}
	e.perf()
	if len(batch) == 1 {
		if batch[0].Delete {
			return e.db.Delete(e.wo, batch[0].Key)
		}
		return e.db.Put(e.wo, batch[0].Key, batch[0].Value)
	}
	wb := grocksdb.NewWriteBatch()
	defer wb.Destroy()
	for _, w := range batch {
		if w.Delete {
			wb.Delete(w.Key)
		} else {
			wb.Put(w.Key, w.Value)
		}
	}
	return e.db.Write(e.wo, wb)
}

func (e *rocksdbEngine) Reader() (worker.Reader, error) { return &rocksdbReader{e: e}, nil }
func (e *rocksdbEngine) FinishLoad() error              { return nil }
func (e *rocksdbEngine) Settings() map[string]string    { return e.settings }

// Close makes the WAL durable when writes were not synced (as the Rust row), then frees the
// database and its options.
func (e *rocksdbEngine) Close() error {
	var err error
	if e.mode == "read-write" && !e.wo.IsSync() && !e.wo.IsDisableWAL() {
		err = e.db.FlushWAL(true)
	}
	e.db.Close()
	e.ro.Destroy()
	e.wo.Destroy()
	e.opts.Destroy()
	return err
}

// rocksdbSettleWait bounds how long Settle waits for background compactions after its own.
const rocksdbSettleWait = 10 * time.Minute

// Settle flushes the memtable, compacts every key and waits until no compaction is pending.
func (e *rocksdbEngine) Settle() (string, error) {
	if e.mode != "read-write" {
		return "", &worker.Unsupported{What: "settle of a " + e.mode + " open"}
	}
	start := time.Now()
	fo := grocksdb.NewDefaultFlushOptions()
	defer fo.Destroy()
	if err := e.db.Flush(fo); err != nil {
		return "", err
	}
	e.db.CompactRange(grocksdb.Range{})
	compacted := time.Since(start)
	busy := func() bool {
		pending, _ := e.db.GetIntProperty("rocksdb.estimate-pending-compaction-bytes")
		running, _ := e.db.GetIntProperty("rocksdb.num-running-compactions")
		return pending != 0 || running != 0
	}
	for busy() && time.Since(start) < rocksdbSettleWait {
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Sprintf("flushed the memtable and compacted every key (CompactRange) in %s; %s files at L0 after",
		compacted.Round(time.Millisecond), strings.TrimSpace(e.db.GetProperty("rocksdb.num-files-at-level0"))), nil
}

// rocksdbProperties are RocksDB's integer properties read for Internals, under the names the
// Rust row emits.
var rocksdbProperties = [][2]string{
	{"rocksdb.estimate-pending-compaction-bytes", "rocksdb.compaction.pending_bytes"},
	{"rocksdb.num-running-compactions", "rocksdb.compaction.running"},
	{"rocksdb.num-running-flushes", "rocksdb.flush.running"},
	{"rocksdb.is-write-stopped", "rocksdb.write.stopped"},
	{"rocksdb.cur-size-all-mem-tables", "rocksdb.memtable.bytes"},
	{"rocksdb.live-sst-files-size", "rocksdb.sst.live_bytes"},
	{"rocksdb.background-errors", "rocksdb.background_errors"},
}

func (e *rocksdbEngine) Internals() map[string]float64 {
	out := map[string]float64{}
	for _, p := range rocksdbProperties {
		if n, ok := e.db.GetIntProperty(p[0]); ok {
			out[p[1]] = float64(n)
		}
	}
	var l0 float64
	if _, err := fmt.Sscan(e.db.GetProperty("rocksdb.num-files-at-level0"), &l0); err == nil {
		out["rocksdb.l0.files"] = l0
	}
	return out
}

// rocksdbReader reads the latest state (no snapshot). A value stays pinned in RocksDB (no
// copy) until the reader's next call, as the Reader contract allows.
type rocksdbReader struct {
	e      *rocksdbEngine
	pinned *grocksdb.PinnableSliceHandle
	slices grocksdb.Slices
}

// release frees what the previous call handed out.
func (r *rocksdbReader) release() {
	if r.pinned != nil {
		r.pinned.Destroy()
		r.pinned = nil
	}
	if r.slices != nil {
		r.slices.Destroy()
		r.slices = nil
	}
}

func (r *rocksdbReader) Get(key []byte) ([]byte, bool, error) {
	r.release()
	r.e.perf()
	h, err := r.e.db.GetPinned(r.e.ro, key)
	if err != nil {
		return nil, false, err
	}
	r.pinned = h
	if !h.Exists() {
		return nil, false, nil
	}
	return h.Data(), true, nil
}

func (r *rocksdbReader) MultiGet(keys, vals [][]byte, found []bool) error {
	r.release()
	r.e.perf()
	s, err := r.e.db.MultiGet(r.e.ro, keys...)
	if err != nil {
		return err
	}
	r.slices = s
	for i, v := range s {
		found[i] = v.Exists()
		vals[i] = v.Data()
	}
	return nil
}

func (r *rocksdbReader) Scan(start []byte, limit int, visit func(k, v []byte) bool) (int, error) {
	r.release()
	if limit <= 0 {
		return 0, nil
	}
	r.e.perf()
	it := r.e.db.NewIterator(r.e.ro)
	defer it.Close()
	n := 0
	for it.Seek(start); it.Valid() && n < limit; it.Next() {
		n++
		if !visit(it.Key().Data(), it.Value().Data()) {
			break
		}
	}
	return n, it.Err()
}

// Refresh: reads see the latest writes (no snapshot); the secondary open catches up at open only.
func (r *rocksdbReader) Refresh() error { return nil }
func (r *rocksdbReader) Close() error   { r.release(); return nil }
