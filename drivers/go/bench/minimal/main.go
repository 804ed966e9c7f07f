// Command minimal is the reference loop of the Go worker's benchmark (bench/run.sh): random
// gets on a bbolt file the worker loaded, the same derived keys and op stream as the worker's
// get step, one read transaction, a per-op timer into an HdrHistogram, nothing else.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kvbench/kvbench/drivers/go/internal/plan"
	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// cpuNs is this process's user + system time.
func cpuNs() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func main() {
	path := flag.String("db", "", "bbolt file")
	records := flag.Uint64("records", 1_000_000, "records loaded")
	count := flag.Uint64("count", 1_000_000, "gets")
	seed := flag.Uint64("rec-seed", 7, "the get step's rec_seed")
	flag.Parse()
	db, err := bolt.Open(*path, 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer db.Close()
	if path := os.Getenv("KVBENCH_GO_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	ds := &plan.Dataset{KeyKind: "decimal", Width: 16}
	h := worker.NewHistogram()
	var found, key []byte
	cpu0 := cpuNs()
	start := time.Now()
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("kvbench"))
		for k := uint64(0); k < *count; k++ {
			key = ds.Key(key[:0], plan.Below(plan.Rnd(*seed, k), *records))
			t0 := time.Now()
			found = b.Get(key)
			worker.Record(h, int64(time.Since(t0)))
			if found == nil {
				return fmt.Errorf("key %s missing", key)
			}
		}
		return nil
	})
	wall := time.Since(start)
	cpu := cpuNs() - cpu0
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%.0f %.0f\n", float64(*count)/wall.Seconds(), float64(*count)/float64(cpu)*1e9)
}
