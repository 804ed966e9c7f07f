//go:build !cgo

package plan

import "math"

// Pow without cgo is Go's math.Pow, which can differ from the C library's in the last bit: a
// draw near an integer boundary then differs from the other runtimes (plan-format.md).
func Pow(x, y float64) float64 { return math.Pow(x, y) }
