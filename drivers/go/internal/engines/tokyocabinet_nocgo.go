//go:build !cgo && (!kvbench_only || kvbench_tokyocabinet)

package engines

import "github.com/kvbench/kvbench/drivers/go/internal/worker"

func init() { register(tokyocabinetDescriptor) }

// Without cgo the Go worker still builds; go-tokyocabinet then says why it cannot run.
var tokyocabinetDescriptor = &worker.Descriptor{
	Name:        "go-tokyocabinet",
	Description: "Tokyo Cabinet hash database (tchdb) through cgo; no ordered scan",
	Caps:        worker.Capabilities{Batch: true, ReadOnlyOpen: true, Persistent: true, Delete: true},
	Version:     func() string { return "tokyocabinet (not built: cgo disabled)" },
	Unavailable: func() string {
		return "the Go worker was built with CGO_ENABLED=0; rebuild with cgo and libtokyocabinet-dev"
	},
	Open: func(worker.OpenArgs) (worker.Engine, error) {
		return nil, &worker.Unsupported{What: "go-tokyocabinet without cgo"}
	},
}
