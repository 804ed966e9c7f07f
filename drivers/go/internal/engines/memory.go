//go:build !kvbench_only || kvbench_memory

package engines

import (
	"bytes"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func init() { register(memoryDescriptor) }

// go-memory: a map in the worker process, the reference oracle of the tests (not a real
// store; nothing survives close). `corrupt_every` makes every N-th get return a wrong value,
// so tests can prove that mismatches are counted exactly; `stable_values` makes its reader
// declare StableValues (a value stays the map's until a write replaces it), so they can prove
// it of the checks bbolt's reader defers too.
var memoryDescriptor = &worker.Descriptor{
	Name:        "go-memory",
	Description: "Go map in the worker (reference oracle for tests; not a real store)",
	Caps:        worker.Capabilities{OrderedScan: true, Batch: true, Delete: true},
	Options: []worker.OptionSpec{
		{Name: "corrupt_every", Kind: "int", Default: "0", Doc: "every N-th get returns a wrong value (0: never); for tests"},
		{Name: "stable_values", Kind: "bool", Default: "false", Doc: "the reader declares StableValues (checks one get later); for tests"},
	},
	Version:     func() string { return "kvbench-go-worker " + worker.Version },
	Unavailable: available,
	Open: func(a worker.OpenArgs) (worker.Engine, error) {
		n, _ := a.Options.Int("corrupt_every")
		return &memoryEngine{m: map[string][]byte{}, corruptEvery: uint64(max(n, 0)), stable: a.Options.Bool("stable_values")}, nil
	},
}

type memoryEngine struct {
	mu           sync.RWMutex
	m            map[string][]byte
	sorted       []string
	corruptEvery uint64
	stable       bool
	gets         atomic.Uint64
}

func (e *memoryEngine) Write(batch []worker.WriteOp) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range batch {
		if w.Delete {
			delete(e.m, string(w.Key))
		} else {
			e.m[string(w.Key)] = append([]byte(nil), w.Value...)
		}
	}
	e.sorted = nil
	return nil
}

func (e *memoryEngine) Reader() (worker.Reader, error) {
	if e.stable {
		return &stableMemoryReader{memoryReader{e}}, nil
	}
	return &memoryReader{e}, nil
}

func (e *memoryEngine) FinishLoad() error { return nil }
func (e *memoryEngine) Close() error      { return nil }
func (e *memoryEngine) Settings() map[string]string {
	return map[string]string{"store": "Go map; ordered scans sort the keys when they changed"}
}

type memoryReader struct{ e *memoryEngine }

// stableMemoryReader is go-memory's reader with `stable_values`.
type stableMemoryReader struct{ memoryReader }

func (r *stableMemoryReader) StableValues() {}

func (r *memoryReader) Get(key []byte) ([]byte, bool, error) {
	e := r.e
	e.mu.RLock()
	v, ok := e.m[string(key)]
	e.mu.RUnlock()
	if ok && e.corruptEvery > 0 && e.gets.Add(1)%e.corruptEvery == 0 {
		v = append([]byte("corrupt:"), v...)
	}
	return v, ok, nil
}

func (r *memoryReader) Scan(start []byte, limit int, visit func(k, v []byte) bool) (int, error) {
	e := r.e
	e.mu.Lock()
	if e.sorted == nil {
		e.sorted = make([]string, 0, len(e.m))
		for k := range e.m {
			e.sorted = append(e.sorted, k)
		}
		sort.Strings(e.sorted)
	}
	keys := e.sorted
	e.mu.Unlock()
	i := sort.Search(len(keys), func(i int) bool { return bytes.Compare([]byte(keys[i]), start) >= 0 })
	n := 0
	for ; i < len(keys) && n < limit; i++ {
		e.mu.RLock()
		v, ok := e.m[keys[i]]
		e.mu.RUnlock()
		if !ok {
			continue
		}
		n++
		if !visit([]byte(keys[i]), v) {
			break
		}
	}
	return n, nil
}

func (r *memoryReader) Refresh() error { return nil }
func (r *memoryReader) Close() error   { return nil }
