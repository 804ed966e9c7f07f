package worker

import (
	"bytes"
	"testing"
)

// warm is assembly that walks a value's cache lines: it must end, and leave the bytes as they
// were, for every length (none, within one line, across lines, past its 512-byte cap) and
// every alignment.
func TestWarmEndsAndChangesNothing(t *testing.T) {
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := bytes.Clone(buf)
	warm(nil)
	for off := 0; off < 130; off++ {
		for _, n := range []int{0, 1, 2, 63, 64, 65, 100, 127, 128, 129, 511, 512, 513, 1000, 3000} {
			warm(buf[off : off+n])
		}
	}
	if !bytes.Equal(buf, want) {
		t.Fatal("warm changed the bytes it was given")
	}
}
