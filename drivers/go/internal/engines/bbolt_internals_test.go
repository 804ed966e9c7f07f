//go:build !kvbench_only || kvbench_bbolt

package engines

import (
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// TestBboltInternalsWhileWritesGrowTheMap guards Internals against reading bbolt's memory map
// (DB.Info did) from the monitor thread while a write remaps it: it faulted the whole worker.
func TestBboltInternalsWhileWritesGrowTheMap(t *testing.T) {
	d := Find("go-bbolt")
	e, err := d.Open(worker.OpenArgs{Dir: t.TempDir(), Options: resolved(t, d, nil), Sync: "none", Mode: "read-write"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var done atomic.Bool
	sampled := make(chan int)
	go func() {
		n := 0
		for ; !done.Load(); n++ {
			if e.(worker.Internals).Internals()["bbolt.file_pages"] <= 0 {
				t.Error("no file_pages in the internals")
			}
		}
		sampled <- n
	}()
	value := make([]byte, 4096)
	for b := 0; b < 64; b++ { // 64 batches of 256 records of 4 KiB: the file grows past 64 MiB
		batch := make([]worker.WriteOp, 256)
		for i := range batch {
			batch[i] = worker.WriteOp{Key: binary.BigEndian.AppendUint32(nil, uint32(b*256+i)), Value: value}
		}
		if err := e.Write(batch); err != nil {
			t.Fatal(err)
		}
	}
	done.Store(true)
	if n := <-sampled; n == 0 {
		t.Fatal("the internals were never sampled during the writes")
	}
}
