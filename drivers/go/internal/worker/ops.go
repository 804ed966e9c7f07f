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

// SnapshotValues is an optional Reader interface for readers whose Get values stay valid until
// Refresh or Close (the pages of a read transaction), not only until the next call.
type SnapshotValues interface {
	SnapshotValues()
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
	mixed       bool   // several op kinds: each sample is also recorded in its kind's histogram
	verify      bool   // reads are checked (the step's verify, true unless the job says false)
	positions   uint64 // sorted positions for scans
	start       time.Time
	stop        atomic.Bool
	unsupported atomic.Pointer[string]
	col         collector
}

// thread is one goroutine of an ops step: its reader, stream, counters and the buffers of the
// unit it runs (sized up front: what the loop allocates is the engine's).
type thread struct {
	run   *opsRun
	id    uint64
	s     *stream
	rd    Reader
	mg    MultiGetter // rd's native multi-get, if it has one
	snap  bool        // rd's values outlive its next call (SnapshotValues)
	dirty bool
	verdict
	ops, requests, errors, busy uint64
	firstError                  string
	errClasses                  map[string]uint64
	done                        atomic.Uint64
	hists                       map[string]*hdrhistogram.Histogram
	iv                          *hdrhistogram.Histogram
	ivIdx, ivOps, ivErrs        uint64
	ivEnd                       time.Duration
	kind                        string
	write                       bool // the unit writes (rmw too)
	recs, cs                    []uint64
	s1                          []uint32
	keys, vals, bufs            [][]byte
	found                       []bool
	exp, scratch, spare         []byte
	batch                       []WriteOp
	locks                       batchLocks
	walk                        scanWalk
	visit                       func(k, v []byte) bool // walk.visit, bound once (not per scan)
}

func isWrite(kind string) bool {
	return kind == "load" || kind == "update" || kind == "insert" || kind == "delete"
}

func (run *opsRun) newThread(id uint64) (*thread, error) {
	room, u := run.ds.MaxLen()+64, int(run.unit)
	th := &thread{run: run, id: id, s: newStream(run.st), hists: map[string]*hdrhistogram.Histogram{},
		iv: NewHistogram(), ivEnd: run.interval(), scratch: make([]byte, 0, room), spare: make([]byte, 0, room),
		recs: make([]uint64, 0, u), cs: make([]uint64, 0, u), s1: make([]uint32, 0, u),
		found: make([]bool, max(u, 2)), batch: make([]WriteOp, 0, u)}
	for range max(u, 2) {
		th.keys, th.bufs = append(th.keys, make([]byte, 0, 64)), append(th.bufs, make([]byte, 0, room))
	}
	th.vals = make([][]byte, max(u, 2))
	th.walk.th = th
	th.visit = th.walk.visit
	th.locks = batchLocks{make([]uint64, 0, u), make([]uint32, 0, u)}
	for _, k := range append([]string{run.st.Kind}, run.st.Kinds...) {
		th.hists[k] = NewHistogram()
	}
	if run.st.OpenPerOp {
		return th, nil
	}
	rd, err := run.r.eng.Reader()
	th.rd = rd
	th.mg, _ = rd.(MultiGetter)
	_, th.snap = rd.(SnapshotValues)
	return th, err
}

func (run *opsRun) interval() time.Duration {
	return time.Duration(run.r.job.IntervalMs) * time.Millisecond
}

// loop runs the units of this thread (unit j: thread j mod threads). A thread that is done
// lets its snapshot go: a writer on another thread may wait for it.
func (th *thread) loop() {
	defer th.refresh()
	run, u, n := th.run, th.run.unit, th.run.st.Threads
	if run.st.Kind == "get" && !run.st.OpenPerOp {
		th.gets()
		return
	}
	for j := th.id; j*u < run.st.Count && !run.stop.Load(); j += n {
		due := th.pace(j)
		th.unit(j*u, min(j*u+u, run.st.Count), due)
		if th.errors >= MaxErrors {
			return
		}
	}
}

// pace waits, under a rate, until unit j is due, and returns when that is (0 without a rate;
// a step of gets asks only under one).
func (th *thread) pace(j uint64) time.Duration {
	run := th.run
	if run.st.Rate == nil {
		return 0
	}
	due := time.Duration(float64(j) * 1e9 / *run.st.Rate)
	if run.writes {
		th.refresh() // a writer on another thread must not wait for this one's sleep
	}
	th.wait(due)
	return due
}

// wait sleeps until due; it spins only for the last 50 µs.
func (th *thread) wait(due time.Duration) {
	for left := due - th.now(); left > 0; left = due - th.now() {
		if left > 50*time.Microsecond {
			time.Sleep(left - 50*time.Microsecond)
		}
	}
}

func (th *thread) now() time.Duration { return time.Since(th.run.start) }

// unit runs one timed unit, ops k0..k1: derive its records and keys, prepare what the call
// needs (locks and values for writes, states and the expected value for reads), time the
// call, then release the locks and verify what was read.
func (th *thread) unit(k0, k1 uint64, due time.Duration) {
	if !th.derive(k0, k1) {
		return
	}
	if th.kind == "scan" {
		th.scan(k0, due)
		return
	}
	if th.write {
		th.prepareWrite()
	} else {
		th.prepareRead()
	}
	t0 := th.now()
	err := th.call()
	t1 := th.now()
	if !th.write {
		warm(th.vals[0]) // the value read is checked below: fetch it while the sample is recorded
	}
	th.sample(t0, t1, due, k1-k0, err)
	th.release()
	if err == nil && (!th.write || th.kind == "rmw") && th.run.verify {
		th.verify()
	}
}

// gets runs this thread's ops of a step of gets (no writes), each as unit would in fewer
// steps: derive the record and its key, the state and the expected value (asked from memory
// before the call), time the call, then check the previous get, whose check was left pending
// (pendingRead). The pending read is a local of this loop, not a field of the thread nor a
// value passed in and out of a call per op: storing its slices needs no write barrier while
// the engine's garbage is collected, and nothing is copied per op.
func (th *thread) gets() {
	run := th.run
	var p pendingRead
	for k := th.id; k < run.st.Count && !run.stop.Load(); k += run.st.Threads {
		var due time.Duration
		if run.st.Rate != nil {
			due = th.pace(k)
		}
		r := th.s.record(k)
		if r >= run.ds.Total {
			th.fail(fmt.Errorf("op %d: record %d is outside the dataset's %d records (the job is wrong)", k, r, run.ds.Total))
			run.stop.Store(true)
			break
		}
		c, key := run.ds.Canon(r), th.key(r)
		s1 := run.state.load(c)
		exp := th.expected(c, s1, !p.alt)
		if !th.snap {
			th.checkRead(&p)
		}
		t0 := th.now()
		val, found, err := th.rd.Get(key)
		t1 := th.now()
		warm(val)
		th.sample(t0, t1, due, 1, err)
		th.checkRead(&p)
		p = pendingRead{c: c, s1: s1, exp: exp, val: val, found: found, alt: !p.alt, set: err == nil && run.verify}
		if th.errors >= MaxErrors {
			break
		}
	}
	th.checkRead(&p)
}

// key derives key(r) into the thread's first key buffer.
func (th *thread) key(r uint64) []byte {
	key := th.run.ds.Key(th.keys[0][:0], r)
	if cap(key) > cap(th.keys[0]) {
		th.keys[0] = key // a longer key than any before: keep its buffer
	}
	return key
}

// expected is the value record c holds in state s1 when the get is verified (nil otherwise),
// derived into the spare buffer or the scratch one (the pending read's expected value is in
// the other) and asked from memory.
func (th *thread) expected(c uint64, s1 uint32, spare bool) []byte {
	if s1&(lockBit|1) != 1 || !th.run.verify {
		return nil
	}
	buf := th.scratch
	if spare {
		buf = th.spare
	}
	exp := th.run.ds.Value(buf[:0], c, writesOf(s1)-1)
	warm(exp)
	return exp
}

// pendingRead is a get whose check waits until the next op's key and expected value are
// derived, so the value's cache lines (asked for after the call) arrive meanwhile; when the
// reader's values outlive its next call (SnapshotValues), until that call has returned. The
// value stays valid: otherwise the check runs before the reader's next call. A step of gets
// does not write: the state after the call is the state at the check.
type pendingRead struct {
	c        uint64
	s1       uint32
	exp, val []byte
	found    bool
	alt      bool // exp lives in thread.spare, not thread.scratch
	set      bool
}

func (th *thread) checkRead(p *pendingRead) {
	if !p.set {
		return
	}
	p.set = false
	if s2 := th.run.state.load(p.c); s2 != p.s1 || p.exp == nil || !p.found {
		buf := th.scratch
		if p.alt {
			buf = th.spare
		}
		th.check(th.run.ds, buf, p.exp, p.c, p.s1, s2, p.val, p.found)
	} else if !bytes.Equal(p.exp, p.val) {
		th.mismatches++
	}
}

// derive fills the unit's kind, records, canonical records and keys; false (and the step
// stops) when the job names a record outside the dataset.
func (th *thread) derive(k0, k1 uint64) bool {
	ds := th.run.ds
	th.recs, th.cs = th.recs[:0], th.cs[:0]
	for k := k0; k < k1; k++ {
		kind, r := th.s.op(k)
		th.kind, th.write = kind, isWrite(kind) || kind == "rmw"
		if kind == "scan" {
			th.recs = append(th.recs, r)
			return true
		}
		if r >= ds.Total {
			th.fail(fmt.Errorf("op %d: record %d is outside the dataset's %d records (the job is wrong)", k, r, ds.Total))
			th.run.stop.Store(true)
			return false
		}
		i := len(th.recs)
		th.recs, th.cs = append(th.recs, r), append(th.cs, ds.Canon(r))
		th.keys[i] = ds.Key(th.keys[i][:0], r)
	}
	return true
}

// prepareRead takes the records' states before the snapshot (the snapshot is never older than
// them) and, for a single key, derives the expected value and asks the CPU to fetch it, so the
// check after the call does not wait for memory.
func (th *thread) prepareRead() {
	st := th.run.state
	th.s1, th.exp = th.s1[:0], nil
	for _, c := range th.cs {
		th.s1 = append(th.s1, st.load(c))
	}
	if s := th.s1[0]; len(th.cs) == 1 && s&(lockBit|1) == 1 && th.run.verify {
		th.exp = th.run.ds.Value(th.scratch[:0], th.cs[0], writesOf(s)-1)
		warm(th.exp)
	}
	th.beforeRead()
}

// beforeRead refreshes a reader's snapshot when writes may have happened since it was taken.
func (th *thread) beforeRead() {
	if th.run.writes && (th.dirty || th.run.st.Threads > 1) {
		th.refresh()
	}
}

// prepareWrite locks the records (not for a load: nobody reads them yet) and builds the batch
// in op order; an rmw keeps the state it read under the lock and writes the next version.
func (th *thread) prepareWrite() {
	ds, load := th.run.ds, th.kind == "load"
	th.refresh() // no snapshot is held while waiting for a record's lock or the store's
	if !load {
		th.locks.take(th.run.state, th.cs)
	}
	if th.kind == "rmw" {
		th.prepareRmw()
		return
	}
	th.batch = th.batch[:0]
	for i, c := range th.cs {
		w := WriteOp{Key: th.keys[i], Delete: th.kind == "delete"}
		switch {
		case load:
			w.Value = ds.Value(th.bufs[i][:0], th.recs[i], 0)
		case w.Delete:
			th.locks.del(c)
		default:
			w.Value = ds.Value(th.bufs[i][:0], c, th.locks.put(c))
		}
		th.batch = append(th.batch, w)
	}
}

func (th *thread) prepareRmw() {
	th.refresh() // the read sees the record's last write
	c, s, ds := th.cs[0], th.locks.states[0], th.run.ds
	th.s1, th.exp = append(th.s1[:0], s), nil
	if s&1 == 1 && th.run.verify {
		th.exp = ds.Value(th.scratch[:0], c, writesOf(s)-1)
	}
	th.batch = append(th.batch[:0], WriteOp{Key: th.keys[0], Value: ds.Value(th.bufs[1][:0], c, th.locks.put(c))})
}

// call is the timed call of the unit.
func (th *thread) call() (err error) {
	switch {
	case th.run.st.OpenPerOp:
		return th.openGet()
	case th.kind == "get":
		th.vals[0], th.found[0], err = th.rd.Get(th.keys[0])
	case th.kind == "multi-get":
		return th.multiGet()
	case th.kind == "rmw":
		// The value read is copied: the write may remap what the reader pointed into.
		var v []byte
		if v, th.found[0], err = th.rd.Get(th.keys[0]); err == nil {
			th.vals[0] = append(th.bufs[0][:0], v...)
			err = th.rd.Refresh()
		}
		if err == nil {
			err = th.run.r.eng.Write(th.batch)
		}
	default:
		err = th.run.r.eng.Write(th.batch)
	}
	return err
}

func (th *thread) multiGet() (err error) {
	n := len(th.cs)
	if th.mg != nil {
		return th.mg.MultiGet(th.keys[:n], th.vals[:n], th.found[:n])
	}
	// No native multi-get: the request loops over get, copying each value as a caller must
	// (a reader's value is valid only until its next call).
	for i := 0; i < n && err == nil; i++ {
		var v []byte
		v, th.found[i], err = th.rd.Get(th.keys[i])
		th.bufs[i] = append(th.bufs[i][:0], v...)
		th.vals[i] = th.bufs[i]
	}
	return err
}

// openGet is the article 000 method: open the engine, read one key, close it, timed together.
func (th *thread) openGet() error {
	r := th.run.r
	e, err := r.desc.Open(r.args(th.run.st.Mode))
	if err != nil {
		return err
	}
	rd, err := e.Reader()
	if err == nil {
		var v []byte
		v, th.found[0], err = rd.Get(th.keys[0])
		th.vals[0] = append(th.bufs[0][:0], v...)
		err = errors.Join(err, rd.Close())
	}
	return errors.Join(err, e.Close())
}

// release ends a write: the locked records get their new states (a load's become present).
func (th *thread) release() {
	st := th.run.state
	switch {
	case !th.write:
	case th.kind != "load":
		st.unlock(th.locks.recs, th.locks.states)
	case st.cells != nil:
		for _, c := range th.cs {
			atomic.StoreUint32(&st.cells[c], 3)
		}
	}
	th.dirty = th.dirty || th.write
}

// verify checks every read of the unit against the states before and after the call (an rmw
// held the lock: its state did not change).
func (th *thread) verify() {
	for i, c := range th.cs {
		s2 := th.s1[i]
		if th.kind != "rmw" {
			s2 = th.run.state.load(c)
		}
		th.check(th.run.ds, th.scratch, th.exp, c, th.s1[i], s2, th.vals[i], th.found[i])
	}
}

// sample records one timed unit of ops operations that ran from t0 to t1. A step of one kind
// records into the interval histogram only; its kind's histogram is their sum.
func (th *thread) sample(t0, t1, due time.Duration, ops uint64, err error) {
	if err != nil {
		th.fail(err)
	}
	lat := t1 - t0
	if th.run.st.Rate != nil {
		lat = t1 - due
	}
	if th.run.mixed {
		Record(th.hists[th.kind], int64(lat))
	}
	if t1 >= th.ivEnd {
		th.flush(uint64(t1 / th.run.interval()))
	}
	Record(th.iv, int64(lat))
	if err != nil {
		th.ivErrs++
	}
	th.ivOps += ops
	th.ops += ops
	th.busy += uint64(t1 - t0)
	if th.requests++; th.requests%1024 == 0 {
		th.done.Store(th.ops)
	}
}

// flush hands the interval histogram to the collector and starts interval next.
func (th *thread) flush(next uint64) {
	if !th.run.mixed {
		th.hists[th.run.st.Kind].Merge(th.iv)
	}
	th.run.col.flush(th.id, th.ivIdx, th.iv, th.ivOps, th.ivErrs, next)
	th.ivIdx, th.ivOps, th.ivErrs, th.ivEnd = next, 0, 0, time.Duration(next+1)*th.run.interval()
	th.done.Store(th.ops)
}

func (th *thread) fail(err error) {
	var u *Unsupported
	if errors.As(err, &u) {
		msg := u.Error()
		th.run.unsupported.CompareAndSwap(nil, &msg)
		th.run.stop.Store(true)
		return
	}
	if th.errClasses == nil {
		th.errClasses = map[string]uint64{}
	}
	addErrorClass(th.errClasses, errorClass(err.Error()), 1)
	if th.errors++; th.firstError == "" {
		th.firstError = err.Error()
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
	// harness is what the collector allocated itself, taken out of the step's runtime counters.
	harness mem
}

func (c *collector) flush(th, idx uint64, h *hdrhistogram.Histogram, ops, errs, next uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m0 := memStats()
	if h.TotalCount() > 0 {
		if c.open[idx] == nil {
			c.open[idx] = NewHistogram()
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
		}
	}
	c.harness.add(memStats(), m0)
}

// scan visits records from sorted position p and checks them beside the engine's cursor,
// inside the timed call (keeping them for later would cost memory per record).
func (th *thread) scan(k uint64, due time.Duration) {
	run, p := th.run, th.recs[0]
	limit := uint64(th.s.scanLen(k))
	if p < run.positions {
		th.keys[0] = run.ds.Key(th.keys[0][:0], th.sorted(p))
	} else { // past the last key (a stored dataset's n counts repeated keys): expect nothing
		th.keys[0] = append(run.ds.Key(th.keys[0][:0], th.sorted(run.positions-1)), 0)
	}
	w := &th.walk
	w.q, w.seen, w.expected = p, 0, 0
	th.beforeRead()
	t0 := th.now()
	_, err := th.rd.Scan(th.keys[0], int(min(limit, math.MaxInt)), th.visit)
	t1 := th.now()
	th.sample(t0, t1, due, w.seen, err)
	if err != nil || run.flux || !th.run.verify {
		return
	}
	// Present records the engine did not return before the scan's length was reached.
	for ; w.q < run.positions && w.expected < limit; w.q++ {
		if run.state.load(run.ds.Canon(th.sorted(w.q)))&1 == 1 {
			w.expected++
			th.missing++
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
	if !th.run.verify {
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
			th.mismatches++
			return true
		case cmp > 0:
			if !run.flux {
				th.missing++
				w.expected++
			}
			continue
		}
		s1 := s
		if run.flux {
			s1 = lockBit
		}
		th.check(run.ds, th.scratch, nil, c, s1, s, v, true)
		w.q++
		w.expected++
		return true
	}
	th.mismatches++
	return true
}
