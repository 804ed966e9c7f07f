package cpu

import "unsafe"

// maxBytes bounds what one Prefetch asks for: past a few lines the hardware prefetcher follows
// a sequential read by itself.
const maxBytes = 1024

// Prefetch asks the CPU to bring the cache lines of the n bytes at p (at most maxBytes) closer:
// a hint that never faults and reads nothing.
//
//go:noescape
func Prefetch(p unsafe.Pointer, n int)
