// Command minimal is the reference loop of the Go worker's benchmark (bench/run.sh): random
// gets on a bbolt file the worker loaded, the same derived keys and op stream as the worker's
// get step, one read transaction, a per-op timer into an HdrHistogram, nothing else.
package main

import (
	"flag"
	"fmt"
	"math/bits"
	"os"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	bolt "go.etcd.io/bbolt"
)

// record is the uniform op stream's k-th record of n (docs/plan-format.md): SplitMix64's k-th
// output from seed, mapped to [0, n) by the high half of the 128-bit product.
func record(seed, k, n uint64) uint64 {
	z := seed + (k+1)*0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	hi, _ := bits.Mul64(z^z>>31, n)
	return hi
}

// key is kvbench's default key of record r: its decimal digits, zero-padded to 16.
func key(dst []byte, r uint64) []byte {
	var digits [20]byte
	s := strconv.AppendUint(digits[:0], r, 10)
	for i := len(s); i < 16; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

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
	use := flag.Bool("use", false, "read every byte of each value after its timed get, as a caller using it would")
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
	h := hdrhistogram.New(1, 3_600_000_000_000, 3)
	var found, k []byte
	var sum byte
	cpu0 := cpuNs()
	start := time.Now()
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("kvbench"))
		for i := uint64(0); i < *count; i++ {
			k = key(k[:0], record(*seed, i, *records))
			t0 := time.Now()
			found = b.Get(k)
			_ = h.RecordValue(max(int64(time.Since(t0)), 1))
			if found == nil {
				return fmt.Errorf("key %s missing", k)
			}
			if *use {
				for _, c := range found {
					sum += c
				}
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
	if *use {
		fmt.Fprintf(os.Stderr, "sum of the values' bytes: %d\n", sum)
	}
}
