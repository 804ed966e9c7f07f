package cpu

import (
	"testing"
	"unsafe"
)

// A prefetch must never fault or write, whatever range it is given: empty, nil, off a line
// boundary, ending at the last byte of a mapping, or longer than it asks for.
func TestPrefetchTakesAnyRangeAndChangesNothing(t *testing.T) {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	Prefetch(nil, 0)
	Prefetch(nil, -1)
	for _, r := range [][2]int{{0, 1}, {1, 100}, {60, 100}, {63, 2}, {len(buf) - 1, 1}, {0, len(buf)}, {100, 5000}} {
		Prefetch(unsafe.Pointer(&buf[r[0]]), r[1])
	}
	for i := range buf {
		if buf[i] != byte(i) {
			t.Fatalf("byte %d changed to %d", i, buf[i])
		}
	}
}
