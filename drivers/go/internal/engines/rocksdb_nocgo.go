//go:build !cgo && (!kvbench_only || kvbench_rocksdb)

package engines

import "github.com/kvbench/kvbench/drivers/go/internal/worker"

func init() { register(rocksdbDescriptor) }

// Without cgo the Go worker still builds; go-rocksdb then says why it cannot run.
var rocksdbDescriptor = &worker.Descriptor{
	Name:        "go-rocksdb",
	Description: "RocksDB (Debian's librocksdb) through grocksdb and cgo: LSM tree",
	Caps: worker.Capabilities{OrderedScan: true, MultiGet: true, Batch: true, ReadOnlyOpen: true,
		SecondaryOpen: true, Persistent: true, Delete: true},
	Version: func() string { return "RocksDB (not built: cgo disabled)" },
	Unavailable: func() string {
		return "the Go worker was built with CGO_ENABLED=0; rebuild with cgo and librocksdb-dev"
	},
	Open: func(worker.OpenArgs) (worker.Engine, error) {
		return nil, &worker.Unsupported{What: "go-rocksdb without cgo"}
	},
}
