//go:build cgo

package plan

// #cgo LDFLAGS: -lm
// #include <math.h>
import "C"

// Pow is the C library's pow, which plan-format.md specifies: Go's math.Pow can differ in the
// last bit (it does for YCSB's zipfian eta), and Rust and CPython call the C library's.
func Pow(x, y float64) float64 { return float64(C.pow(C.double(x), C.double(y))) }
