//go:build !amd64

package cpu

import "unsafe"

// Prefetch does nothing here: only amd64 has the instruction written for it.
func Prefetch(p unsafe.Pointer, n int) {}
