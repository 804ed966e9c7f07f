package worker

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../crates/kvbench-ffi
#cgo LDFLAGS: ${SRCDIR}/../../../../target/release/libkvbench_ffi.a -ldl -lpthread -lm
#include <stdlib.h>
#include "kvbench.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
	"unsafe"
)

// Version of the Go worker.
const Version = "0.3.0"

// jobFile is what the worker reads of the job itself: what opening the engine needs. The
// core has read and checked the whole file before.
type jobFile struct {
	Engine  string         `json:"engine"`
	Options map[string]any `json:"options"`
	Dir     string         `json:"dir"`
	Sync    string         `json:"sync"`
	URL     *string        `json:"url"`
	Token   *string        `json:"token"`
	Dataset struct {
		OpenRecords uint64 `json:"open_records"`
		OpenBytes   uint64 `json:"open_bytes"`
	} `json:"dataset"`
}

// runner runs one job's steps as the core hands them out.
type runner struct {
	job  *C.kvb_job
	desc *Descriptor
	args OpenArgs
	eng  Engine
	bufs []*buffers // per thread, kept from one ops step to the next
}

// report is a step's outcome before it is handed to kvb_step_end.
type report struct {
	wall, finish         time.Duration
	startUnix            int64
	err, kind, finishErr string
	settings             map[string]string
	allocBytes, mallocs  uint64
	settled              string
	internals            map[string]float64
}

// Run runs the job file at path on the engine find returns for its name, writing the events
// on file descriptor fd; false after an error event.
func Run(path string, fd int, find func(string) *Descriptor) (ok bool) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	r := &runner{job: C.kvb_job_open(cpath, C.int(fd))}
	defer C.kvb_job_free(r.job)
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "panic: %v\n%s", p, debug.Stack())
			ok = r.fail(fmt.Sprintf("go worker crashed: %v", p))
		}
	}()
	if msg := C.kvb_job_error(r.job); msg != nil {
		return r.fail(C.GoString(msg))
	}
	if err := r.start(path, find); err != nil {
		return r.fail(err.Error())
	}
	for s := C.kvb_step_begin(r.job); s.step != C.KVB_END; s = C.kvb_step_begin(r.job) {
		if r.step(s) {
			break
		}
	}
	if r.eng != nil {
		_ = r.eng.Close()
	}
	r.emit(map[string]string{"event": "done"})
	return true
}

// start finds the engine and emits hello.
func (r *runner) start(path string, find func(string) *Descriptor) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var j jobFile
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	if err := d.Decode(&j); err != nil {
		return fmt.Errorf("job file %s: %v", path, err)
	}
	if r.desc = find(j.Engine); r.desc == nil {
		return fmt.Errorf("engine %s is not a Go engine (see --list)", j.Engine)
	}
	if why := r.desc.Unavailable(); why != "" {
		return fmt.Errorf("engine %s unavailable: %s", j.Engine, why)
	}
	opts, err := ReadOptions(j.Options)
	if err != nil {
		return err
	}
	r.args = OpenArgs{Dir: j.Dir, Options: opts, Sync: j.Sync, ExpectedRecords: j.Dataset.OpenRecords,
		ExpectedBytes: j.Dataset.OpenBytes, URL: deref(j.URL), Token: deref(j.Token)}
	r.emit(map[string]any{"event": "hello", "protocol": uint32(C.kvb_protocol()), "engine": r.desc.Name,
		"worker":  fmt.Sprintf("go kvbench-go-worker %s (%s)", Version, runtime.Version()),
		"version": r.desc.Version(), "capabilities": r.desc.Caps.Names(), "options": opts.Effective(),
		"timer_overhead_ns": calibrateTimer()})
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// emit writes one event among the core's.
func (r *runner) emit(ev any) {
	b, err := json.Marshal(ev)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"event": "error", "message": "go worker: event does not serialise: " + err.Error()})
	}
	cs := C.CString(string(b))
	defer C.free(unsafe.Pointer(cs))
	C.kvb_emit(r.job, cs)
}

// fail emits an error event: the job could not run.
func (r *runner) fail(msg string) bool {
	r.emit(map[string]string{"event": "error", "message": msg})
	return false
}

var modes = map[C.int32_t]string{C.KVB_READ_WRITE: "read-write", C.KVB_READ_ONLY: "read-only", C.KVB_SECONDARY: "secondary"}

// step runs one step and reports it; true when the job stops here. Go's allocation counters
// cover the step (for ops: its threads' run, not their setup).
func (r *runner) step(s *C.kvb_step) bool {
	var rep report
	m0 := memStats()
	t0 := time.Now()
	switch s.step {
	case C.KVB_OPEN:
		r.open(modes[s.mode], &rep)
	case C.KVB_PREPARE:
		r.prepare(&rep)
	case C.KVB_CLOSE:
		r.close(&rep)
	case C.KVB_SETTLE:
		r.settle(&rep)
	case C.KVB_OPS:
		m0 = r.ops(s, &rep)
	}
	if s.step != C.KVB_OPS {
		rep.wall = time.Since(t0)
	}
	m1 := memStats()
	rep.allocBytes, rep.mallocs = m1.alloc-min(m1.alloc, m0.alloc), m1.mallocs-min(m1.mallocs, m0.mallocs)
	if in, ok := r.eng.(Internals); ok { // after the step's clock and counters: never timed
		rep.internals = in.Internals()
	}
	return r.end(&rep)
}

func (r *runner) open(mode string, rep *report) {
	if r.eng != nil {
		rep.fail(errors.New("the engine is already open"))
		return
	}
	a := r.args
	a.Mode = mode
	e, err := r.desc.Open(a)
	if err != nil {
		rep.fail(err)
		return
	}
	r.eng, rep.settings = e, e.Settings()
}

func (r *runner) prepare(rep *report) {
	if r.eng == nil {
		rep.fail(errors.New("prepare: the engine is not open"))
		return
	}
	p, ok := r.eng.(Preparer)
	if !ok {
		return
	}
	if err := p.Prepare(); err != nil {
		rep.fail(err)
		return
	}
	rep.settings = r.eng.Settings() // what prepare applied is what the phases run with
}

func (r *runner) close(rep *report) {
	if r.eng == nil {
		rep.fail(errors.New("close: the engine is not open"))
		return
	}
	err := r.eng.Close()
	if r.eng = nil; err != nil {
		rep.fail(err)
	}
}

// settle runs the engine's settle step (untimed for the phases: the core notes its time).
func (r *runner) settle(rep *report) {
	if r.eng == nil {
		rep.fail(errors.New("settle: the engine is not open"))
		return
	}
	s, ok := r.eng.(Settler)
	if !ok {
		rep.fail(&Unsupported{"this engine has no settle (flush and compact) step"})
		return
	}
	done, err := s.Settle()
	if err != nil {
		rep.fail(err)
		return
	}
	rep.settled = done
}

func (rep *report) fail(err error) {
	rep.err, rep.kind = err.Error(), kindOf(err)
}

func kindOf(err error) string {
	var u *Unsupported
	if errors.As(err, &u) {
		return "unsupported"
	}
	return "store"
}

// cstr is s as a C string (NULL when empty), added to the strings to free.
func cstr(s string, free *[]*C.char) *C.char {
	if s == "" {
		return nil
	}
	cs := C.CString(s)
	*free = append(*free, cs)
	return cs
}

// end hands the step's report to the core; true when the job stops here.
func (r *runner) end(rep *report) bool {
	var free []*C.char
	defer func() {
		for _, cs := range free {
			C.free(unsafe.Pointer(cs))
		}
	}()
	counters, _ := json.Marshal(map[string]uint64{"alloc_bytes": rep.allocBytes, "mallocs": rep.mallocs})
	c := C.kvb_report{wall_ns: C.uint64_t(rep.wall), start_unix_ns: C.uint64_t(rep.startUnix),
		finish_ns: C.uint64_t(rep.finish), error: cstr(rep.err, &free), error_kind: cstr(rep.kind, &free),
		finish_error: cstr(rep.finishErr, &free), runtime: cstr(string(counters), &free),
		settled: cstr(rep.settled, &free)}
	if rep.settings != nil {
		settings, _ := json.Marshal(rep.settings)
		c.settings = cstr(string(settings), &free)
	}
	if len(rep.internals) > 0 {
		internals, _ := json.Marshal(rep.internals)
		c.internals = cstr(string(internals), &free)
	}
	return C.kvb_step_end(r.job, &c) == 1
}

type mem struct{ alloc, mallocs uint64 }

func memStats() mem {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return mem{m.TotalAlloc, m.Mallocs}
}

// ops runs an ops step: its threads start before the clock and wait for the gate. Returns
// Go's allocation counters at the start.
func (r *runner) ops(s *C.kvb_step, rep *report) mem {
	threads := make([]*thread, s.threads)
	for t := range threads {
		threads[t] = r.newThread(s, uint32(t))
	}
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for _, th := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			th.run()
		}()
	}
	m0 := memStats()
	start := time.Now()
	for _, th := range threads {
		th.start = start
	}
	stop := r.sample(time.Duration(s.interval_ms)*time.Millisecond, start)
	close(gate)
	wg.Wait()
	stop()
	if C.kvb_finish_due(r.job) == 1 {
		t0 := time.Now()
		if err := r.eng.FinishLoad(); err != nil {
			rep.finishErr = err.Error()
		}
		rep.finish = time.Since(t0)
	}
	rep.wall, rep.startUnix = time.Since(start), start.UnixNano()
	return m0
}

// sample hands the engine's internals to the core every interval of an ops step, from a
// goroutine of its own (never a timed one), until the returned function is called; it returns
// once that goroutine has ended. An engine without internals: nothing runs.
func (r *runner) sample(every time.Duration, start time.Time) (stop func()) {
	in, ok := r.eng.(Internals)
	if !ok || every <= 0 {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-tick.C:
				r.handIn(in.Internals(), now.Sub(start))
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// handIn gives the core one sample of the engine's internals, at t after the step's start.
func (r *runner) handIn(values map[string]float64, t time.Duration) {
	if len(values) == 0 {
		return
	}
	b, err := json.Marshal(values)
	if err != nil {
		return
	}
	cs := C.CString(string(b))
	defer C.free(unsafe.Pointer(cs))
	C.kvb_internals(r.job, C.int64_t(t), cs)
}

// calibrateTimer is the mean cost (ns) of what the op loop adds to each call: two clock reads
// and storing them, over 200 000 iterations.
func calibrateTimer() float64 {
	const n = 200_000
	times := make([]int64, 512)
	start := time.Now()
	for i := 0; i < n; i++ {
		j := 2 * (i & 255)
		times[j] = int64(time.Since(start))
		times[j+1] = int64(time.Since(start))
	}
	return float64(time.Since(start).Nanoseconds()) / n
}
