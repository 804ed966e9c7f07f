package worker

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kvbench/kvbench/drivers/go/internal/plan"
)

// MaxErrors stops a thread after this many engine errors.
const MaxErrors = 1000

// maxErrorClasses is how many distinct error classes a step reports; more go under "other".
const maxErrorClasses = 8

// errorClass is an error's class: its message with every ASCII digit replaced by '#' (ports,
// pids and counts differ between otherwise equal errors), cut to 80 characters.
func errorClass(msg string) string {
	r := []rune(msg)
	if len(r) > 80 {
		r = r[:80]
	}
	for i, c := range r {
		if c >= '0' && c <= '9' {
			r[i] = '#'
		}
	}
	return string(r)
}

// addErrorClass counts n errors of class, keeping at most maxErrorClasses classes.
func addErrorClass(m map[string]uint64, class string, n uint64) {
	if _, ok := m[class]; !ok && len(m) >= maxErrorClasses {
		class = "other"
	}
	m[class] += n
}

// MultiGetter is an optional Reader interface: a native multi-get. It sets vals[i] and
// found[i] for keys[i]; the values stay valid until the next call on the reader.
type MultiGetter interface {
	MultiGet(keys, vals [][]byte, found []bool) error
}

// opsRun is one ops step in flight.
type opsRun struct {
	r           *runner
	st          *Step
	ds          *plan.Dataset
	state       *state
	unit        uint64 // ops per timed unit
	writes      bool   // the step writes: readers refresh their snapshots
	flux        bool   // several threads write: reads accept any version a write in flight allows
	positions   uint64 // sorted positions for scans
	start       time.Time
	timed       bool
	stop        atomic.Bool
	unsupported atomic.Pointer[string]
	col         collector
	progressMem mem
}

// tally is what one thread measured.
type tally struct {
	verdict
	hists                       map[string]*hdrhistogram.Histogram
	ops, requests, errors, busy uint64
	firstError                  string
	errClasses                  map[string]uint64
	iv                          *hdrhistogram.Histogram
	ivIdx, ivOps, ivErrs        uint64
	done                        atomic.Uint64
}

func newTally(st *Step) *tally {
	t := &tally{hists: map[string]*hdrhistogram.Histogram{}, iv: NewHistogram(), errClasses: map[string]uint64{}}
	for _, k := range append([]string{st.Kind}, st.Kinds...) {
		t.hists[k] = NewHistogram()
	}
	return t
}

// thread is one goroutine of an ops step with its reader, stream and scratch buffers.
type thread struct {
	run        *opsRun
	id         uint64
	t          *tally
	s          *stream
	rd         Reader
	dirty      bool
	key, exp   []byte
	val        []byte
	recs       []uint64
	cs         []uint64
	keys, vals [][]byte
	found      []bool
	s1         []uint32
	batch      []WriteOp
	locks      batchLocks
	lastKind   string // the op kind of lastHist, the histogram of the last sample
	lastHist   *hdrhistogram.Histogram
}

func (run *opsRun) newThread(id uint64) (*thread, error) {
	// Buffers are sized up front: what the loop allocates is the engine's (the runtime counters).
	room := run.ds.MaxLen() + 64
	th := &thread{run: run, id: id, s: newStream(run.st), exp: make([]byte, 0, room), val: make([]byte, 0, room)}
	for range run.unit {
		th.keys, th.vals = append(th.keys, make([]byte, 0, 64)), append(th.vals, make([]byte, 0, room))
	}
	u := int(run.unit)
	th.key, th.batch, th.recs, th.cs, th.s1 = make([]byte, 0, 64), make([]WriteOp, 0, u), make([]uint64, 0, u), make([]uint64, 0, u), make([]uint32, 0, u)
	th.locks = batchLocks{make([]uint64, 0, u), make([]uint32, 0, u)}
	th.t = newTally(run.st)
	if run.st.OpenPerOp {
		return th, nil
	}
	rd, err := run.r.eng.Reader()
	th.rd = rd
	return th, err
}

// loop runs the units of ops from..to that belong to this thread (unit j: thread j mod threads).
// A thread that is done lets its snapshot go: a writer on another thread may wait for it.
func (th *thread) loop(from, to uint64) {
	defer th.refresh()
	run, u, n := th.run, th.run.unit, th.run.st.Threads
	for j := th.id; from+j*u < to && !run.stop.Load(); j += n {
		k0 := from + j*u
		var due time.Duration
		if run.timed && run.st.Rate != nil {
			due = time.Duration(float64(j) * 1e9 / *run.st.Rate)
			if run.writes {
				th.refresh() // a writer on another thread must not wait for this one's sleep
			}
			th.wait(due)
		}
		th.unit(k0, min(k0+u, to), due)
		if th.t.errors >= MaxErrors {
			return
		}
	}
}

// wait sleeps until due; it spins only for the last 50 µs.
func (th *thread) wait(due time.Duration) {
	for left := due - time.Since(th.run.start); left > 0; left = due - time.Since(th.run.start) {
		if left > 50*time.Microsecond {
			time.Sleep(left - 50*time.Microsecond)
		}
	}
}

func (th *thread) unit(k0, k1 uint64, due time.Duration) {
	kind, rec := th.s.op(k0)
	if k1-1 > k0 {
		_, last := th.s.op(k1 - 1)
		rec = max(rec, last)
	}
	if rec >= th.run.ds.Total && kind != "scan" {
		th.fail(fmt.Errorf("op %d: record %d is outside the dataset's %d records (the job is wrong)", k0, rec, th.run.ds.Total))
		th.run.stop.Store(true)
		return
	}
	if k1-1 > k0 {
		_, rec = th.s.op(k0)
	}
	switch {
	case th.run.st.OpenPerOp:
		th.openGet(kind, rec, due)
	case kind == "get":
		th.get(rec, due)
	case kind == "multi-get":
		th.multiGet(k0, k1, due)
	case kind == "scan":
		th.scan(k0, rec, due)
	case kind == "rmw":
		th.rmw(rec, due)
	default:
		th.write(kind, k0, k1, due)
	}
}

// sample records one timed unit of ops operations that ran from t0 to t1.
func (th *thread) sample(kind string, t0, t1, due time.Duration, ops uint64, err error) {
	t := th.t
	if err != nil {
		th.fail(err)
	}
	if !th.run.timed {
		return
	}
	t.done.Add(ops)
	lat := t1 - t0
	if th.run.st.Rate != nil {
		lat = t1 - due
	}
	if kind != th.lastKind {
		if t.hists[kind] == nil {
			t.hists[kind] = NewHistogram()
		}
		th.lastKind, th.lastHist = kind, t.hists[kind]
	}
	Record(th.lastHist, int64(lat))
	if idx := uint64(t1 / time.Duration(th.run.r.job.IntervalMs*1e6)); idx != t.ivIdx {
		th.run.col.flush(th.id, t.ivIdx, t.iv, t.ivOps, t.ivErrs, idx)
		t.ivIdx, t.ivOps, t.ivErrs = idx, 0, 0
	}
	Record(t.iv, int64(lat))
	if err != nil {
		t.ivErrs++
	}
	t.ivOps += ops
	t.ops += ops
	t.requests++
	t.busy += uint64(t1 - t0)
}

func (th *thread) fail(err error) {
	var u *Unsupported
	if errors.As(err, &u) {
		msg := u.Error()
		th.run.unsupported.CompareAndSwap(nil, &msg)
		th.run.stop.Store(true)
		return
	}
	addErrorClass(th.t.errClasses, errorClass(err.Error()), 1)
	if th.t.errors++; th.t.firstError == "" {
		th.t.firstError = err.Error()
	}
}

func (th *thread) now() time.Duration { return time.Since(th.run.start) }

// beforeRead refreshes a reader's snapshot when writes may have happened since it was taken.
func (th *thread) beforeRead() {
	if th.run.writes && (th.dirty || th.run.st.Threads > 1) {
		th.refresh()
	}
}

// refresh lets the reader's snapshot go: before a write of this thread (a read transaction
// held across a write can deadlock a store), and before reads that must see new writes.
func (th *thread) refresh() {
	if th.rd != nil {
		if err := th.rd.Refresh(); err != nil {
			th.fail(err)
		}
	}
	th.dirty = false
}

func (th *thread) verifies() bool { return th.run.st.Verify == nil || *th.run.st.Verify }

func (th *thread) check(c uint64, s1, s2 uint32, v []byte, found bool) {
	if th.verifies() {
		th.t.check(th.run.ds, th.exp, c, s1, s2, v, found)
	}
}

func (th *thread) get(rec uint64, due time.Duration) {
	ds, st := th.run.ds, th.run.state
	c := ds.Canon(rec)
	th.key = ds.Key(th.key[:0], rec)
	s1 := st.load(c) // before the snapshot: the snapshot is never older than s1
	var exp []byte
	if s1&(lockBit|1) == 1 { // present, and no write in flight
		exp = ds.Value(th.exp[:0], c, writesOf(s1)-1)
		warm(exp)
	}
	th.beforeRead()
	t0 := th.now()
	v, found, err := th.rd.Get(th.key)
	t1 := th.now()
	th.sample("get", t0, t1, due, 1, err)
	switch s2 := st.load(c); {
	case err != nil:
	case exp != nil && s2 == s1 && s1&lockBit == 0 && found && th.verifies():
		if !bytes.Equal(exp, v) {
			th.t.mismatches++
		}
	default:
		th.check(c, s1, s2, v, found)
	}
}

func (th *thread) multiGet(k0, k1 uint64, due time.Duration) {
	ds, st := th.run.ds, th.run.state
	n := int(k1 - k0)
	th.keys, th.vals, th.recs, th.s1 = grow(th.keys, n), grow(th.vals, n), th.recs[:0], th.s1[:0]
	if len(th.found) < n {
		th.found = make([]bool, n)
	}
	for i := range n {
		_, r := th.s.op(k0 + uint64(i))
		th.keys[i] = ds.Key(th.keys[i][:0], r)
		th.recs = append(th.recs, ds.Canon(r))
		th.s1 = append(th.s1, st.load(ds.Canon(r)))
	}
	th.beforeRead()
	t0 := th.now()
	var err error
	if mg, ok := th.rd.(MultiGetter); ok {
		err = mg.MultiGet(th.keys, th.vals, th.found[:n])
	} else {
		// No native multi-get: the request loops over get, copying each value as a caller must
		// (a reader's value is valid only until its next call).
		for i := 0; i < n && err == nil; i++ {
			var v []byte
			v, th.found[i], err = th.rd.Get(th.keys[i])
			th.vals[i] = append(th.vals[i][:0], v...)
		}
	}
	t1 := th.now()
	th.sample("multi-get", t0, t1, due, uint64(n), err)
	for i := 0; i < n && err == nil; i++ {
		th.check(th.recs[i], th.s1[i], st.load(th.recs[i]), th.vals[i], th.found[i])
	}
}

func grow(b [][]byte, n int) [][]byte {
	for len(b) < n {
		b = append(b, nil)
	}
	return b[:n]
}

// write runs one batch of load, update, insert or delete ops as one timed Write.
func (th *thread) write(kind string, k0, k1 uint64, due time.Duration) {
	ds, st := th.run.ds, th.run.state
	th.recs, th.cs = th.recs[:0], th.cs[:0]
	for k := k0; k < k1; k++ {
		_, r := th.s.op(k)
		th.recs, th.cs = append(th.recs, r), append(th.cs, ds.Canon(r))
	}
	th.refresh() // no snapshot is held while waiting for a record's lock or the store's
	if kind != "load" {
		th.locks.take(st, th.cs)
	}
	n := len(th.recs)
	th.keys, th.vals, th.batch = grow(th.keys, n), grow(th.vals, n), th.batch[:0]
	for i, r := range th.recs {
		c := th.cs[i]
		th.keys[i] = ds.Key(th.keys[i][:0], r)
		switch kind {
		case "load":
			th.vals[i] = append(th.vals[i][:0], ds.Value(th.exp[:0], r, 0)...)
		case "delete":
			th.locks.del(c)
		default:
			th.vals[i] = append(th.vals[i][:0], ds.Value(th.exp[:0], c, th.locks.put(c))...)
		}
		th.batch = append(th.batch, WriteOp{Key: th.keys[i], Value: th.vals[i], Delete: kind == "delete"})
	}
	t0 := th.now()
	err := th.run.r.eng.Write(th.batch)
	t1 := th.now()
	th.sample(kind, t0, t1, due, k1-k0, err)
	th.dirty = true
	if kind != "load" {
		st.unlock(th.locks.recs, th.locks.states)
	} else if st.cells != nil {
		for _, c := range th.cs {
			atomic.StoreUint32(&st.cells[c], 3)
		}
	}
}

// rmw reads a record and writes its next version, timed as one unit; the record's lock is
// held throughout, so the read expects exactly the locked state.
func (th *thread) rmw(rec uint64, due time.Duration) {
	ds, st := th.run.ds, th.run.state
	c := ds.Canon(rec)
	th.key = ds.Key(th.key[:0], rec)
	th.cs = append(th.cs[:0], c)
	th.refresh() // no snapshot is held while waiting for a record's lock
	th.locks.take(st, th.cs)
	th.refresh() // and the read sees the last write of the record
	s := th.locks.states[0]
	th.val = append(th.val[:0], ds.Value(th.exp[:0], c, th.locks.put(c))...)
	th.vals = grow(th.vals, 1)
	t0 := th.now()
	v, found, err := th.rd.Get(th.key)
	th.vals[0] = append(th.vals[0][:0], v...)
	if err == nil {
		err = th.rd.Refresh()
	}
	if err == nil {
		th.batch = append(th.batch[:0], WriteOp{Key: th.key, Value: th.val})
		err = th.run.r.eng.Write(th.batch)
	}
	t1 := th.now()
	th.sample("rmw", t0, t1, due, 1, err)
	th.dirty = true
	st.unlock(th.locks.recs, th.locks.states)
	if err == nil {
		th.check(c, s, s, th.vals[0], found)
	}
}

// openGet is the article 000 method: open the engine, read one key, close it, timed together.
func (th *thread) openGet(kind string, rec uint64, due time.Duration) {
	ds, st, r := th.run.ds, th.run.state, th.run.r
	c := ds.Canon(rec)
	th.key = ds.Key(th.key[:0], rec)
	s1 := st.load(c)
	var found bool
	t0 := th.now()
	e, err := r.desc.Open(r.args(th.run.st.Mode))
	if err == nil {
		var rd Reader
		if rd, err = e.Reader(); err == nil {
			var v []byte
			v, found, err = rd.Get(th.key)
			th.val = append(th.val[:0], v...)
			err = errors.Join(err, rd.Close())
		}
		err = errors.Join(err, e.Close())
	}
	t1 := th.now()
	th.sample(kind, t0, t1, due, 1, err)
	if err == nil {
		th.check(c, s1, st.load(c), th.val, found)
	}
}

// scan visits records from sorted position p and checks them beside the engine's cursor,
// inside the timed call (keeping them for later would cost memory per record).
func (th *thread) scan(k, p uint64, due time.Duration) {
	run := th.run
	limit := uint64(th.s.scanLen(k))
	if p < run.positions {
		th.key = run.ds.Key(th.key[:0], th.sorted(p))
	} else { // past the last key (a stored dataset's n counts repeated keys): expect nothing
		th.key = append(run.ds.Key(th.key[:0], th.sorted(run.positions-1)), 0)
	}
	w := &scanWalk{th: th, q: p}
	th.beforeRead()
	t0 := th.now()
	_, err := th.rd.Scan(th.key, int(min(limit, math.MaxInt)), w.visit)
	t1 := th.now()
	th.sample("scan", t0, t1, due, w.seen, err)
	if err != nil || run.flux || !th.verifies() {
		return
	}
	// Present records the engine did not return before the scan's length was reached.
	for ; w.q < run.positions && w.expected < limit; w.q++ {
		if run.state.load(run.ds.Canon(th.sorted(w.q)))&1 == 1 {
			w.expected++
			th.t.missing++
		}
	}
}

func (th *thread) sorted(p uint64) uint64 {
	if th.run.ds.File.Positions() == 0 {
		return p
	}
	return th.run.ds.File.Sorted(p)
}

// scanWalk merges the engine's keys with the expected sorted positions; `expected` counts the
// present records passed (returned or missing).
type scanWalk struct {
	th                *thread
	q, seen, expected uint64
	key               []byte
}

func (w *scanWalk) visit(k, v []byte) bool {
	th, run := w.th, w.th.run
	w.seen++
	if !th.verifies() {
		return true
	}
	for ; w.q < run.positions; w.q++ {
		r := th.sorted(w.q)
		c := run.ds.Canon(r)
		s := run.state.load(c)
		if !run.flux && s&1 == 0 {
			continue
		}
		w.key = run.ds.Key(w.key[:0], r)
		switch cmp := bytes.Compare(k, w.key); {
		case cmp < 0:
			th.t.mismatches++
			return true
		case cmp > 0:
			if !run.flux {
				th.t.missing++
				w.expected++
			}
			continue
		}
		s1 := s
		if run.flux {
			s1 = lockBit
		}
		th.check(c, s1, s, v, true)
		w.q++
		w.expected++
		return true
	}
	th.t.mismatches++
	return true
}

// collector merges the threads' interval histograms and encodes an interval as soon as every
// thread has moved past it, so memory does not grow with the phase's length.
type collector struct {
	mu    sync.Mutex
	open  map[uint64]*hdrhistogram.Histogram
	ops   map[uint64]uint64
	errs  map[uint64]uint64
	marks []uint64
	out   []Interval
	ms    uint64
	free  []*hdrhistogram.Histogram
	// harness is what the collector allocated itself, taken out of the step's runtime counters.
	harness mem
}

func (c *collector) flush(th, idx uint64, h *hdrhistogram.Histogram, ops, errs, next uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m0 := memStats()
	if h.TotalCount() > 0 {
		if c.open[idx] == nil {
			c.open[idx] = c.take()
		}
		c.open[idx].Merge(h)
		c.ops[idx] += ops
		c.errs[idx] += errs
		h.Reset()
	}
	c.marks[th] = next
	low := slices.Min(c.marks)
	for i, oh := range c.open {
		if i < low {
			c.out = append(c.out, Interval{TMs: i * c.ms, Ops: c.ops[i], Errors: c.errs[i], Hdr: Encode(oh)})
			delete(c.open, i)
			delete(c.ops, i)
			delete(c.errs, i)
			oh.Reset()
			c.free = append(c.free, oh)
		}
	}
	c.harness.add(memStats(), m0)
}

func (c *collector) take() *hdrhistogram.Histogram {
	if n := len(c.free); n > 0 {
		h := c.free[n-1]
		c.free = c.free[:n-1]
		return h
	}
	return NewHistogram()
}
