package cpu

import "unsafe"

// Prefetch asks the CPU to bring the cache line at p closer: a hint that never faults and
// reads nothing.
//
//go:noescape
func Prefetch(p unsafe.Pointer)
