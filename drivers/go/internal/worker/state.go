package worker

import (
	"bytes"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/kvbench/kvbench/drivers/go/internal/plan"
)

// lockBit marks a record whose write is in progress (plan-format.md "Threads").
const lockBit = 1 << 31

// state is the per-record state `(writes << 1) | present` of plan-format.md "State"; nil
// cells (before any phase writes after the load) are implicit: loaded records hold version 0.
type state struct {
	ds    *plan.Dataset
	cells []uint32
}

func writesOf(s uint32) uint64 { return uint64(s&^lockBit) >> 1 }

// materialise creates the cells when a phase is about to write.
func (st *state) materialise() {
	if st.cells != nil {
		return
	}
	st.cells = make([]uint32, st.ds.Total)
	for c := uint64(0); c < st.ds.Loaded && c < st.ds.Total; c++ {
		st.cells[c] = 3
	}
}

func (st *state) load(c uint64) uint32 {
	if st.cells != nil {
		return atomic.LoadUint32(&st.cells[c])
	}
	if c < st.ds.Loaded {
		return 3
	}
	return 0
}

// lock takes the write locks of recs (sorted, distinct: no deadlock) and returns their states.
func (st *state) lock(recs []uint64, into []uint32) []uint32 {
	into = into[:0]
	for _, c := range recs {
		p := &st.cells[c]
		for {
			s := atomic.LoadUint32(p)
			if s&lockBit == 0 && atomic.CompareAndSwapUint32(p, s, s|lockBit) {
				into = append(into, s)
				break
			}
			runtime.Gosched()
		}
	}
	return into
}

// unlock stores the new states (without the lock bit).
func (st *state) unlock(recs []uint64, states []uint32) {
	for i, c := range recs {
		atomic.StoreUint32(&st.cells[c], states[i]&^lockBit)
	}
}

// verdict counts one read: wrong or missing against what the states before (s1) and after
// (s2) the call allow.
type verdict struct{ mismatches, missing uint64 }

// check counts one read of record c; exp, when not nil, is its value in state s1, derived
// before the call.
func (v *verdict) check(ds *plan.Dataset, buf, exp []byte, c uint64, s1, s2 uint32, val []byte, found bool) {
	if s1 == s2 && s1&lockBit == 0 {
		switch {
		case s1&1 == 0 && found:
			v.mismatches++
		case s1&1 == 0:
		case !found:
			v.missing++
		case exp == nil:
			exp = ds.Value(buf[:0], c, writesOf(s1)-1)
			fallthrough
		default:
			if !bytes.Equal(exp, val) {
				v.mismatches++
			}
		}
		return
	}
	if !found {
		return
	}
	for w := max(writesOf(s1), 1) - 1; w <= writesOf(s2); w++ {
		if bytes.Equal(ds.Value(buf[:0], c, w), val) {
			return
		}
	}
	v.mismatches++
}

// batchLocks locks the distinct records of a write batch and tracks their states while the
// batch's values are computed in op order.
type batchLocks struct {
	recs   []uint64
	states []uint32
}

func (b *batchLocks) take(st *state, recs []uint64) {
	b.recs = append(b.recs[:0], recs...)
	slices.Sort(b.recs)
	b.recs = slices.Compact(b.recs)
	b.states = st.lock(b.recs, b.states)
}

// put returns the version a put of c writes and records it.
func (b *batchLocks) put(c uint64) uint64 {
	i, _ := slices.BinarySearch(b.recs, c)
	w := writesOf(b.states[i])
	b.states[i] = uint32(w+1)<<1 | 1
	return w
}

func (b *batchLocks) del(c uint64) {
	i, _ := slices.BinarySearch(b.recs, c)
	b.states[i] &^= 1
}
