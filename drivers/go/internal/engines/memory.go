package engines

import (
	"bytes"
	"sort"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// go-memory: a map in the worker process, the reference oracle of the tests (not a real
// store; nothing survives close).
var memoryDescriptor = &worker.Descriptor{
	Name:        "go-memory",
	Description: "Go map in the worker (reference oracle for tests; not a real store)",
	Caps:        worker.Capabilities{OrderedScan: true, Batch: true, Delete: true},
	Version:     func() string { return "kvbench-go-worker " + worker.Version },
	Unavailable: available,
	Open: func(worker.OpenArgs) (worker.Engine, error) {
		return &memoryEngine{m: map[string][]byte{}}, nil
	},
}

type memoryEngine struct {
	m      map[string][]byte
	sorted []string
}

func (e *memoryEngine) Write(batch []worker.WriteOp) error {
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

func (e *memoryEngine) Reader() (worker.Reader, error) { return &memoryReader{e}, nil }
func (e *memoryEngine) FinishLoad() error              { return nil }
func (e *memoryEngine) Close() error                   { return nil }
func (e *memoryEngine) Settings() map[string]string {
	return map[string]string{"store": "Go map; ordered scans sort the keys when they changed"}
}

type memoryReader struct{ e *memoryEngine }

func (r *memoryReader) Get(key []byte) ([]byte, bool, error) {
	v, ok := r.e.m[string(key)]
	return v, ok, nil
}

func (r *memoryReader) Scan(start []byte, limit int, visit func(k, v []byte) bool) (int, error) {
	e := r.e
	if e.sorted == nil {
		e.sorted = make([]string, 0, len(e.m))
		for k := range e.m {
			e.sorted = append(e.sorted, k)
		}
		sort.Strings(e.sorted)
	}
	i := sort.Search(len(e.sorted), func(i int) bool { return bytes.Compare([]byte(e.sorted[i]), start) >= 0 })
	n := 0
	for ; i < len(e.sorted) && n < limit; i++ {
		n++
		k := e.sorted[i]
		if !visit([]byte(k), e.m[k]) {
			break
		}
	}
	return n, nil
}

func (r *memoryReader) Refresh() error { return nil }
func (r *memoryReader) Close() error   { return nil }
