package worker

import (
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// An interval keeps the errors of every thread beside its operations (a fault's timeline).
func TestCollectorCountsErrorsPerInterval(t *testing.T) {
	c := collector{open: map[uint64]*hdrhistogram.Histogram{}, ops: map[uint64]uint64{}, errs: map[uint64]uint64{}, marks: make([]uint64, 2), ms: 100}
	for th := uint64(0); th < 2; th++ {
		h := NewHistogram()
		Record(h, 1000)
		Record(h, 2000)
		c.flush(th, 0, h, 2, th+1, 1)
	}
	for th := uint64(0); th < 2; th++ {
		c.flush(th, 1, NewHistogram(), 0, 0, ^uint64(0))
	}
	if len(c.out) != 1 {
		t.Fatalf("intervals: %+v", c.out)
	}
	if got := c.out[0]; got.Ops != 4 || got.Errors != 3 || got.TMs != 0 {
		t.Fatalf("interval 0: %+v, want 4 ops and 3 errors", got)
	}
}

// Error classes hide the digits that differ between equal errors and stop at eight.
func TestErrorClasses(t *testing.T) {
	if got := errorClass("dial tcp 127.0.0.1:2379: connect: connection refused"); got != "dial tcp ###.#.#.#:####: connect: connection refused" {
		t.Fatalf("class: %q", got)
	}
	m := map[string]uint64{}
	for i := 0; i < 10; i++ {
		addErrorClass(m, string(rune('a'+i)), 1)
	}
	if len(m) != 9 || m["other"] != 2 {
		t.Fatalf("classes: %v", m)
	}
}
