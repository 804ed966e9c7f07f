package worker

/*
#include <stdlib.h>
#include "kvbench.h"
*/
import "C"

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kvbench/kvbench/drivers/go/internal/cpu"
)

const (
	// blockUnits bounds a block: one kvb_next and one kvb_done per this many units.
	blockUnits = 256
	// scanFlush is how many bytes of scanned records are handed to the core at once.
	scanFlush = 1 << 20
	// spin is how long before a due time waiting stops sleeping: a sleep ends late by the
	// kernel's wake-up latency, which an open loop would count as latency.
	spin = int64(100 * time.Microsecond)
	// noUnit is kvb_error's unit for an error outside every unit.
	noUnit = math.MaxUint32
)

// buffers are a thread's buffers, kept by the runner from one ops step to the next: what a
// step allocates is the engine's.
type buffers struct {
	times      []int64 // per unit: start, end
	got        []byte  // the values read, packed
	gotLen     []int32 // per key of the block: the length of the value read, -1 = none
	scanned    []byte  // scanned records not yet handed to the core
	batch      []WriteOp
	keys, vals [][]byte
	found      []bool
}

// thread is one goroutine of an ops step: it runs the blocks its kvb_thread hands out.
type thread struct {
	*buffers
	r    *runner
	c    *C.kvb_thread
	rd   Reader
	wr   Writer      // the goroutine's own writer (WriterOpener), opened at its first write
	mg   MultiGetter // rd's native multi-get, if it has one
	err  error       // the reader did not open
	mode string      // open mode of open_per_op
	// shared: the step runs several threads, so kvb_next may wait for a record another
	// thread holds.
	shared bool
	start  time.Time
	b      block
	stable bool                   // rd's values outlive its next call (StableValues)
	visit  func(k, v []byte) bool // th.record, bound once (not per scan)
}

func (r *runner) newThread(s *C.kvb_step, t uint32) *thread {
	for len(r.bufs) <= int(t) {
		r.bufs = append(r.bufs, &buffers{times: make([]int64, 2*blockUnits), got: make([]byte, 0, 64<<10),
			gotLen: make([]int32, 0, blockUnits)})
	}
	th := &thread{buffers: r.bufs[t], r: r, c: C.kvb_thread_new(r.job, C.uint32_t(t), blockUnits), mode: modes[s.mode],
		shared: s.threads > 1}
	if th.c == nil {
		panic("kvb_thread_new: no ops step is running")
	}
	th.visit = th.record
	switch {
	case s.open_per_op == 1:
	case r.eng == nil:
		th.err = errors.New("ops step: the engine is not open")
	case s.reads == 1:
		th.rd, th.err = r.eng.Reader()
		th.mg, _ = th.rd.(MultiGetter)
		_, th.stable = th.rd.(StableValues)
	}
	return th
}

// run runs the thread's blocks, then closes its reader.
func (th *thread) run() {
	if th.err != nil {
		th.fail(noUnit, th.err, 0)
	} else {
		for th.block() {
		}
	}
	if th.rd != nil {
		if err := th.rd.Close(); err != nil {
			th.fail(noUnit, err, th.now())
		}
	}
	if th.wr != nil {
		if err := th.wr.Close(); err != nil {
			th.fail(noUnit, err, th.now())
		}
	}
	C.kvb_thread_end(th.c)
}

func (th *thread) now() int64 { return int64(time.Since(th.start)) }

// fail reports an engine error; true when the thread must stop.
func (th *thread) fail(u uint32, err error, at int64) bool {
	kind, msg := C.CString(kindOf(err)), C.CString(err.Error())
	defer C.free(unsafe.Pointer(kind))
	defer C.free(unsafe.Pointer(msg))
	return C.kvb_error(th.c, C.uint32_t(u), kind, msg, C.int64_t(at)) == 1
}

// block runs the next block of units; false when the thread is done.
func (th *thread) block() bool {
	c := C.kvb_next(th.c)
	if c == nil || c.units == 0 {
		return false
	}
	n := int(c.units)
	th.b.set(c)
	th.got, th.gotLen = th.got[:0], th.gotLen[:0]
	for range len(th.b.keyOff) - 1 {
		th.gotLen = append(th.gotLen, -1)
	}
	defer th.release()
	if c.plain == 1 {
		ran, stop := th.gets(n)
		th.done(ran)
		return !stop
	}
	for u := 0; u < n; u++ {
		if th.unit(u) {
			th.done(u + 1)
			return false
		}
	}
	th.done(n)
	return true
}

// gets runs a plain block (kvb_block.plain), unit u a get of key u; it returns the units run
// and whether the thread must stop. The lines of what the core expects are asked for before
// each call; with a StableValues reader, those of the value after it, and the value is
// compared after the next get: both arrive while that get runs. The block's slices are taken
// once, cut to n.
func (th *thread) gets(n int) (int, bool) {
	b := &th.b
	exp, expLen, keyOff, keys := b.exp[:n], b.expLen[:n], b.keyOff[:n+1], b.keyBuf
	times := th.times[:2*n]
	var last held // on the stack: no write barrier per get
	for u := range n {
		cpu.Prefetch(exp[u], int(expLen[u]))
		key := keys[keyOff[u]:keyOff[u+1]:keyOff[u+1]]
		t0 := th.now()
		val, found, err := th.rd.Get(key)
		t1 := th.now()
		times[2*u], times[2*u+1] = t0, t1
		found = found && err == nil
		if th.stable {
			cpu.Prefetch(unsafe.Pointer(unsafe.SliceData(val)), len(val))
			if last.set {
				th.read(last.k, last.val, last.found)
			}
			last = held{k: u, val: val, found: found, set: true}
		} else {
			th.read(u, val, found)
		}
		if err != nil && th.fail(uint32(u), err, t1) {
			th.hand(&last)
			return u + 1, true
		}
	}
	th.hand(&last)
	return n, false
}

// held is a plain get's value not yet handed to the core (see gets).
type held struct {
	k          int
	val        []byte
	found, set bool
}

// hand hands a held value to the core, if any.
func (th *thread) hand(h *held) {
	if h.set {
		h.set = false
		th.read(h.k, h.val, h.found)
	}
}

// release lets the reader's snapshot go before the next kvb_next when that may wait for a
// record another thread is writing, since the write may wait for this snapshot (bbolt's does
// when it grows the file). Only writes beside other threads make records wait, and then every
// unit asks for a refresh: the next one would have refreshed anyway.
func (th *thread) release() {
	if n := len(th.b.refresh); th.shared && n > 0 && th.b.refresh[n-1] == 1 && th.rd != nil {
		if err := th.rd.Refresh(); err != nil {
			th.fail(noUnit, err, th.now())
		}
	}
}

func (th *thread) done(units int) {
	C.kvb_done(th.c, C.uint32_t(units), (*C.int64_t)(ptr(th.times)), (*C.uint8_t)(ptr(th.got)), (*C.int32_t)(ptr(th.gotLen)))
}

// ptr is the address of s's first element, for C (nil when s is empty).
func ptr[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// unit runs unit u of the block; true when the thread must stop.
func (th *thread) unit(u int) bool {
	b := &th.b
	if b.refresh[u] == 1 && th.rd != nil {
		if err := th.rd.Refresh(); err != nil && th.fail(uint32(u), err, th.now()) {
			th.skip(u)
			return true
		}
	}
	if b.due[u] >= 0 {
		th.wait(b.due[u])
	}
	k0, k1 := b.first(u), int(b.keyEnd[u])
	var err error
	switch b.kind[u] {
	case C.KVB_GET:
		err = th.get(u, k0)
	case C.KVB_MULTI_GET:
		err = th.multiGet(u, k0, k1)
	case C.KVB_SCAN:
		err = th.scan(u, b.key(k0), b.scanLen[u])
	case C.KVB_WRITE:
		err = th.write(u, k0, k1)
	case C.KVB_RMW:
		err = th.rmw(u, k0)
	case C.KVB_OPEN_GET:
		err = th.openGet(u, k0)
	default: // KVB_WAIT: the wait was all
		th.skip(u)
	}
	return err != nil && th.fail(uint32(u), err, th.times[2*u+1])
}

// skip fills in the times of a unit that ran no engine call.
func (th *thread) skip(u int) {
	now := th.now()
	th.times[2*u], th.times[2*u+1] = now, now
}

// wait sleeps until due, then spins for the last 100 µs. It sleeps in nanosleep without timer
// slack, not in time.Sleep: Go's timers wake up to a millisecond late, and the kernel lets a
// sleep run its slack (50 µs) late, which an open loop would count as latency. The slack is set
// before each sleep: a goroutine may move to another thread.
func (th *thread) wait(due int64) {
	for left := due - th.now(); left > 0; left = due - th.now() {
		if left > spin {
			_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
			ts := unix.NsecToTimespec(left - spin)
			_ = unix.Nanosleep(&ts, nil)
		}
	}
}

// read hands the value read for key k to the core: KVB_MATCHED when it equals the value the
// core expects (compared now, while the engine's buffer is valid and in cache), else a copy
// for the core to check.
func (th *thread) read(k int, val []byte, found bool) {
	if !found {
		return
	}
	if e, known := th.b.expected(k); known && bytes.Equal(val, e) {
		th.gotLen[k] = C.KVB_MATCHED
		return
	}
	th.got = append(th.got, val...)
	th.gotLen[k] = int32(len(val))
}

func (th *thread) get(u, k int) error {
	key := th.b.key(k)
	t0 := th.now()
	val, found, err := th.rd.Get(key)
	t1 := th.now()
	th.times[2*u], th.times[2*u+1] = t0, t1
	th.read(k, val, found && err == nil)
	return err
}

// multiGet is one request: the engine's own multi-get, else gets in a loop that copy each
// value as a caller must.
func (th *thread) multiGet(u, k0, k1 int) error {
	keys := th.keys[:0]
	for i := k0; i < k1; i++ {
		keys = append(keys, th.b.key(i))
	}
	th.keys = keys
	if th.mg != nil {
		return th.nativeMultiGet(u, k0, keys)
	}
	var err error
	t0 := th.now()
	for i := 0; i < len(keys) && err == nil; i++ {
		val, found, e := th.rd.Get(keys[i])
		th.read(k0+i, val, found && e == nil)
		err = e
	}
	t1 := th.now()
	th.times[2*u], th.times[2*u+1] = t0, t1
	return err
}

func (th *thread) nativeMultiGet(u, k0 int, keys [][]byte) error {
	n := len(keys)
	for len(th.vals) < n {
		th.vals, th.found = append(th.vals, nil), append(th.found, false)
	}
	t0 := th.now()
	err := th.mg.MultiGet(keys, th.vals[:n], th.found[:n])
	t1 := th.now()
	th.times[2*u], th.times[2*u+1] = t0, t1
	for i := range n {
		th.read(k0+i, th.vals[i], th.found[i] && err == nil)
	}
	return err
}

// scan hands the records it visits to the core as the buffer fills and once at the end.
func (th *thread) scan(u int, key []byte, limit uint64) error {
	th.scanned = th.scanned[:0]
	t0 := th.now()
	_, err := th.rd.Scan(key, int(min(limit, math.MaxInt)), th.visit)
	t1 := th.now()
	th.times[2*u], th.times[2*u+1] = t0, t1
	th.flushScan()
	return err
}

// record appends a scanned record: u32le key length, key, u32le value length, value.
func (th *thread) record(k, v []byte) bool {
	s := binary.LittleEndian.AppendUint32(th.scanned, uint32(len(k)))
	s = append(s, k...)
	s = binary.LittleEndian.AppendUint32(s, uint32(len(v)))
	th.scanned = append(s, v...)
	if len(th.scanned) >= scanFlush {
		th.flushScan()
	}
	return true
}

func (th *thread) flushScan() {
	C.kvb_scan(th.c, (*C.uint8_t)(ptr(th.scanned)), C.size_t(len(th.scanned)))
	th.scanned = th.scanned[:0]
}

// write is one batch of the unit's keys.
func (th *thread) write(u, k0, k1 int) error {
	b, batch := &th.b, th.batch[:0]
	for i := k0; i < k1; i++ {
		batch = append(batch, WriteOp{Key: b.key(i), Value: b.value(i), Delete: b.del[i] == 1})
	}
	th.batch = batch
	w, err := th.writer()
	if err != nil {
		return err
	}
	t0 := th.now()
	err = w.Write(batch)
	t1 := th.now()
	th.times[2*u], th.times[2*u+1] = t0, t1
	return err
}

// rmw reads the key, refreshes the reader and writes the unit's value, timed together. The
// value read is copied first: the write may remap what the reader pointed into.
func (th *thread) rmw(u, k int) error {
	key := th.b.key(k)
	w, err := th.writer()
	if err != nil {
		return err
	}
	t0 := th.now()
	val, found, err := th.rd.Get(key)
	th.read(k, val, found && err == nil)
	if err == nil {
		err = th.rd.Refresh()
	}
	if err == nil {
		th.batch = append(th.batch[:0], WriteOp{Key: key, Value: th.b.value(k)})
		err = w.Write(th.batch)
	}
	t1 := th.now()
	th.times[2*u], th.times[2*u+1] = t0, t1
	return err
}

// writer is the goroutine's own writer, opened (untimed) at its first write when the engine
// has them; otherwise the engine, shared by every goroutine.
func (th *thread) writer() (interface{ Write([]WriteOp) error }, error) {
	if th.wr != nil {
		return th.wr, nil
	}
	o, ok := th.r.eng.(WriterOpener)
	if !ok {
		return th.r.eng, nil
	}
	w, err := o.Writer()
	if err != nil {
		return nil, err
	}
	th.wr = w
	return w, nil
}

// openGet is the article 000 method: open the engine, read one key, close it, timed together.
func (th *thread) openGet(u, k int) error {
	a := th.r.args
	a.Mode = th.mode
	t0 := th.now()
	err := th.openGetCall(a, k)
	t1 := th.now()
	th.times[2*u], th.times[2*u+1] = t0, t1
	return err
}

func (th *thread) openGetCall(a OpenArgs, k int) error {
	e, err := th.r.desc.Open(a)
	if err != nil {
		return err
	}
	rd, err := e.Reader()
	if err != nil {
		return errors.Join(err, e.Close())
	}
	val, found, err := rd.Get(th.b.key(k))
	th.read(k, val, found && err == nil)
	return errors.Join(err, rd.Close(), e.Close())
}

// block is a kvb_block's arrays as Go slices over the core's memory (valid until the next
// kvb_next on the thread).
type block struct {
	kind, refresh, keyBuf, valBuf, del []byte
	due                                []int64
	keyEnd, keyOff, valOff, expLen     []uint32
	scanLen                            []uint64
	exp                                []unsafe.Pointer
}

// view is n elements at p (nil when p is NULL).
func view[T any](p unsafe.Pointer, n int) []T {
	if p == nil || n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(p), n)
}

func (b *block) set(c *C.kvb_block) {
	n := int(c.units)
	b.kind = view[byte](unsafe.Pointer(c.kind), n)
	b.refresh = view[byte](unsafe.Pointer(c.refresh), n)
	b.due = view[int64](unsafe.Pointer(c.due), n)
	b.keyEnd = view[uint32](unsafe.Pointer(c.key_end), n)
	b.scanLen = view[uint64](unsafe.Pointer(c.scan_len), n)
	keys := int(b.keyEnd[n-1])
	b.keyOff = view[uint32](unsafe.Pointer(c.key_off), keys+1)
	b.valOff = view[uint32](unsafe.Pointer(c.val_off), keys+1)
	b.del = view[byte](unsafe.Pointer(c.del), keys)
	b.exp = view[unsafe.Pointer](unsafe.Pointer(c.exp), keys)
	b.expLen = view[uint32](unsafe.Pointer(c.exp_len), keys)
	b.keyBuf, b.valBuf = nil, nil
	if len(b.keyOff) > keys {
		b.keyBuf = view[byte](unsafe.Pointer(c.key), int(b.keyOff[keys]))
	}
	if len(b.valOff) > keys {
		b.valBuf = view[byte](unsafe.Pointer(c.val), int(b.valOff[keys]))
	}
}

// first is unit u's first key.
func (b *block) first(u int) int {
	if u == 0 {
		return 0
	}
	return int(b.keyEnd[u-1])
}

// key is key i, capped so that an engine appending to it cannot write over the next.
func (b *block) key(i int) []byte {
	return b.keyBuf[b.keyOff[i]:b.keyOff[i+1]:b.keyOff[i+1]]
}

// expected is what a get of key i must read, and whether the core knows it.
func (b *block) expected(i int) ([]byte, bool) {
	if i >= len(b.exp) || b.exp[i] == nil {
		return nil, false
	}
	return unsafe.Slice((*byte)(b.exp[i]), b.expLen[i]), true
}

func (b *block) value(i int) []byte {
	return b.valBuf[b.valOff[i]:b.valOff[i+1]:b.valOff[i+1]]
}
