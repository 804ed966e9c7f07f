package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/kvbench/kvbench/drivers/go/internal/plan"
)

// Version of the Go worker.
const Version = "0.2.0"

// Preparer is an optional Engine interface: work that is not opening the engine (the
// `prepare` step).
type Preparer interface{ Prepare() error }

// Usage is a step's process counters (docs/protocol.md "step").
type Usage struct {
	CPUUserNs    uint64 `json:"cpu_user_ns"`
	CPUSysNs     uint64 `json:"cpu_sys_ns"`
	MaxRssKb     uint64 `json:"max_rss_kb"`
	IOReadBytes  uint64 `json:"io_read_bytes"`
	IOWriteBytes uint64 `json:"io_write_bytes"`
}

// Interval is one timeline interval of an ops step.
type Interval struct {
	TMs uint64 `json:"t_ms"`
	Ops uint64 `json:"ops"`
	// Errors counts the engine errors in the interval (a fault's timeline).
	Errors uint64 `json:"errors,omitempty"`
	Hdr    string `json:"hdr"`
}

// StepResult is the raw counters of one step, as job.rs StepResult.
type StepResult struct {
	Event     string  `json:"event"`
	Index     int     `json:"index"`
	Step      string  `json:"step"`
	Error     *string `json:"error"`
	ErrorKind string  `json:"error_kind,omitempty"`
	WallNs    uint64  `json:"wall_ns"`
	// StartUnixNs is the host's clock when the step's clock started (ops steps), to place
	// outside events (a kill) on its timeline.
	StartUnixNs uint64            `json:"start_unix_ns,omitempty"`
	Settings    map[string]string `json:"settings,omitempty"`
	Evicted     uint64            `json:"evicted"`
	Ops         uint64            `json:"ops"`
	Requests    uint64            `json:"requests"`
	Errors      uint64            `json:"errors"`
	FirstError  string            `json:"first_error,omitempty"`
	// ErrorClasses counts the errors by class (errorClass), as job.rs error_classes.
	ErrorClasses map[string]uint64 `json:"error_classes,omitempty"`
	Mismatches   uint64            `json:"mismatches"`
	Missing      uint64            `json:"missing"`
	BusyNs       uint64            `json:"busy_ns"`
	BusyMaxNs    uint64            `json:"busy_max_ns"`
	Hist         map[string]string `json:"hist,omitempty"`
	Intervals    []Interval        `json:"intervals,omitempty"`
	Usage        Usage             `json:"usage"`
	Runtime      map[string]F64    `json:"runtime,omitempty"`
}

// F64 is a float that always prints with a fraction or an exponent, as serde_json does (so
// the Rust side reads an event back to the same JSON value).
type F64 float64

// MarshalJSON writes 3.0 rather than 3.
func (f F64) MarshalJSON() ([]byte, error) {
	b := strconv.AppendFloat(nil, float64(f), 'g', -1, 64)
	if !bytes.ContainsAny(b, ".eEIN") {
		b = append(b, ".0"...)
	}
	return b, nil
}

func (r *StepResult) fail(kind string, err error) {
	msg := err.Error()
	r.Error, r.ErrorKind = &msg, kind
}

type runner struct {
	job   *Job
	desc  *Descriptor
	opts  *Options
	ds    *plan.Dataset
	state *state
	eng   Engine
	emit  func(any)
}

// RunJob runs a job on desc (nil: not a Go engine), emitting events; false when it could not
// start (an error event has then been emitted).
func RunJob(job *Job, desc *Descriptor, emit func(any)) bool {
	r, err := start(job, desc)
	if err != nil {
		emit(map[string]string{"event": "error", "message": err.Error()})
		return false
	}
	if r.ds.File != nil {
		defer r.ds.File.Close()
	}
	emit(map[string]any{"event": "hello", "protocol": ProtocolVersion, "engine": desc.Name,
		"worker":  fmt.Sprintf("go kvbench-go-worker %s (%s)", Version, runtime.Version()),
		"version": desc.Version(), "capabilities": desc.Caps.Names(), "options": r.opts.Effective(),
		"timer_overhead_ns": F64(CalibrateTimer())})
	r.emit = emit
	for i := range job.Steps {
		res := r.step(&job.Steps[i])
		emit(res)
		if res.Error != nil && job.Steps[i].Stop {
			break
		}
	}
	if r.eng != nil {
		_ = r.eng.Close()
	}
	emit(map[string]string{"event": "done"})
	return true
}

func start(job *Job, desc *Descriptor) (*runner, error) {
	if desc == nil {
		return nil, fmt.Errorf("engine %s is not a Go engine (see --list)", job.Engine)
	}
	if why := desc.Unavailable(); why != "" {
		return nil, fmt.Errorf("engine %s unavailable: %s", desc.Name, why)
	}
	opts, err := ReadOptions(job.Options)
	if err != nil {
		return nil, err
	}
	d := job.Dataset
	ds := &plan.Dataset{Generator: d.Generator, KeyKind: d.Key.Kind, Width: d.Key.Width, Min: d.Value.Min,
		Max: d.Value.Max, Random: d.Value.Content == "random", Loaded: d.Loaded, Total: d.Total,
		PoolSeed: d.PoolSeed, ValueSeed: d.ValueSeed}
	if job.Plan != nil {
		if ds.File, err = plan.Open(*job.Plan); err != nil {
			return nil, err
		}
	}
	if d.Generator == "stored" {
		if ds.File == nil {
			return nil, fmt.Errorf("dataset `stored` needs a plan file (`plan` is null)")
		}
		ds.KeyKind = "stored"
	}
	ds.Init()
	return &runner{job: job, desc: desc, opts: opts, ds: ds, state: &state{ds: ds}}, nil
}

func (r *runner) args(mode string) OpenArgs {
	a := OpenArgs{Dir: r.job.Dir, Options: r.opts, Sync: r.job.Sync, Mode: mode,
		ExpectedRecords: r.job.Dataset.OpenRecords, ExpectedBytes: r.job.Dataset.OpenBytes}
	if r.job.URL != nil {
		a.URL = *r.job.URL
	}
	return a
}

// step runs one step; usage and Go's allocation counters cover it, taken outside its timing.
func (r *runner) step(s *Step) *StepResult {
	res := &StepResult{Event: "step", Index: s.Index, Step: s.Step}
	u0 := usageNow()
	m0 := memStats()
	t0 := time.Now()
	switch {
	case s.Step == "evict":
		n, err := Evict(r.job.Dir)
		if res.Evicted = uint64(n); err != nil {
			res.fail("io", err)
		}
	case s.Step == "ops":
		r.ops(s, res)
	case s.Step == "open":
		if r.eng != nil {
			res.fail("store", fmt.Errorf("the engine is already open"))
			break
		}
		e, err := r.desc.Open(r.args(s.Mode))
		if err != nil {
			res.fail(kindOf(err), err)
			break
		}
		r.eng, res.Settings = e, e.Settings()
	case r.eng == nil:
		res.fail("store", fmt.Errorf("%s: the engine is not open", s.Step))
	case s.Step == "close":
		err := r.eng.Close()
		if r.eng = nil; err != nil {
			res.fail("store", err)
		}
	default:
		if p, ok := r.eng.(Preparer); ok {
			if err := p.Prepare(); err != nil {
				res.fail(kindOf(err), err)
			} else {
				// What prepare applied is what the phases run with.
				res.Settings = r.eng.Settings()
			}
		}
	}
	if s.Step != "ops" {
		res.WallNs = uint64(time.Since(t0))
	}
	if res.Runtime == nil {
		res.Runtime = memStats().since(m0)
	}
	res.Usage = usageNow().since(u0)
	return res
}

type mem struct{ alloc, mallocs uint64 }

func memStats() mem {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return mem{m.TotalAlloc, m.Mallocs}
}

func (m *mem) add(after, before mem) {
	m.alloc += after.alloc - before.alloc
	m.mallocs += after.mallocs - before.mallocs
}

func (m mem) since(b mem) map[string]F64 {
	sub := func(a, b uint64) F64 { return F64(a - min(a, b)) }
	return map[string]F64{"alloc_bytes": sub(m.alloc, b.alloc), "mallocs": sub(m.mallocs, b.mallocs)}
}

func kindOf(err error) string {
	var u *Unsupported
	if errors.As(err, &u) {
		return "unsupported"
	}
	return "store"
}

func usageNow() Usage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	u := Usage{CPUUserNs: uint64(ru.Utime.Nano()), CPUSysNs: uint64(ru.Stime.Nano()), MaxRssKb: uint64(ru.Maxrss)}
	if f, err := os.Open("/proc/self/io"); err == nil {
		defer f.Close()
		text, _ := io.ReadAll(f)
		for _, line := range strings.Split(string(text), "\n") {
			_, _ = fmt.Sscanf(line, "read_bytes: %d", &u.IOReadBytes)
			_, _ = fmt.Sscanf(line, "write_bytes: %d", &u.IOWriteBytes)
		}
	}
	return u
}

func (u Usage) since(b Usage) Usage {
	sub := func(a, b uint64) uint64 { return a - min(a, b) }
	return Usage{sub(u.CPUUserNs, b.CPUUserNs), sub(u.CPUSysNs, b.CPUSysNs), u.MaxRssKb,
		sub(u.IOReadBytes, b.IOReadBytes), sub(u.IOWriteBytes, b.IOWriteBytes)}
}

// Evict writes back and drops every file below dir from the page cache (fdatasync, then
// posix_fadvise DONTNEED: no root needed). Returns how many files were evicted.
func Evict(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		// Dirty pages cannot be dropped: write them back first.
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return fmt.Errorf("fdatasync %s: %v", p, err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("posix_fadvise %s: %v", p, err)
		}
		n++
		return nil
	})
	return n, err
}

// ops runs an ops step on st.Threads goroutines. Go's allocation counters cover the timed
// loop only (not the harness's setup, progress events or interval encoding).
func (r *runner) ops(st *Step, res *StepResult) {
	if r.eng == nil && !st.OpenPerOp {
		res.fail("store", fmt.Errorf("ops step %q: the engine is not open", st.Name))
		return
	}
	run := r.newRun(st)
	if run.positions == 0 && (st.Kind == "scan" || slices.Contains(st.Kinds, "scan")) {
		res.fail("io", fmt.Errorf("scans over keys not in record order need the plan file's SORTED section"))
		return
	}
	threads, err := run.threads()
	if err != nil {
		res.fail(kindOf(err), err)
		return
	}
	// The threads start before the counters and the clock, and wait for the gate.
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for _, th := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			th.loop()
		}()
	}
	stopProgress := r.progress(st, threads)
	m0 := memStats()
	run.start = time.Now()
	res.StartUnixNs = uint64(run.start.UnixNano())
	close(gate)
	wg.Wait()
	if st.Finish && run.unsupported.Load() == nil {
		t0 := time.Now()
		if err := r.eng.FinishLoad(); err != nil {
			threads[0].fail(err)
		}
		threads[0].busy += uint64(time.Since(t0))
	}
	res.WallNs = uint64(time.Since(run.start))
	m0.add(stopProgress(), mem{})
	for _, th := range threads {
		if th.rd != nil {
			if err := th.rd.Close(); err != nil {
				th.fail(err)
			}
		}
	}
	m0.add(run.col.harness, mem{})
	res.Runtime = memStats().since(m0)
	run.collect(threads, res)
}

func (run *opsRun) threads() ([]*thread, error) {
	threads := make([]*thread, run.st.Threads)
	for i := range threads {
		th, err := run.newThread(uint64(i))
		if threads[i] = th; err != nil {
			for _, t := range threads[:i] {
				_ = t.rd.Close()
			}
			return nil, err
		}
	}
	return threads, nil
}

func (r *runner) newRun(st *Step) *opsRun {
	run := &opsRun{r: r, st: st, ds: r.ds, state: r.state, unit: unitSize(st), mixed: st.Kind == "mixed",
		verify: st.Verify == nil || *st.Verify}
	for _, k := range append([]string{st.Kind}, st.Kinds...) {
		run.writes = run.writes || isWrite(k) || k == "rmw"
	}
	if run.writes {
		r.state.materialise()
	}
	run.flux = run.writes && st.Threads > 1
	run.positions = r.ds.File.Positions()
	if r.job.Dataset.Ordered {
		run.positions = r.ds.Total
	}
	run.col = collector{open: map[uint64]*hdrhistogram.Histogram{}, ops: map[uint64]uint64{}, errs: map[uint64]uint64{}, marks: make([]uint64, st.Threads), ms: r.job.IntervalMs}
	return run
}

// progress emits progress events every progress_ms until the returned stop is called; stop
// returns what the events allocated.
func (r *runner) progress(st *Step, threads []*thread) func() mem {
	done := make(chan struct{})
	var allocated mem
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Duration(max(r.job.ProgressMs, 1)) * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				m0 := memStats()
				var n uint64
				for _, th := range threads {
					n += th.done.Load()
				}
				r.emit(map[string]any{"event": "progress", "index": st.Index, "done": n, "total": st.Count})
				allocated.add(memStats(), m0)
			}
		}
	}()
	return func() mem { close(done); wg.Wait(); return allocated }
}

// collect merges the threads' counters into the step's result.
func (run *opsRun) collect(threads []*thread, res *StepResult) {
	hists := map[string]*hdrhistogram.Histogram{}
	for _, th := range threads {
		th.flush(^uint64(0))
		res.Ops, res.Requests, res.Errors = res.Ops+th.ops, res.Requests+th.requests, res.Errors+th.errors
		res.Mismatches, res.Missing = res.Mismatches+th.mismatches, res.Missing+th.missing
		res.BusyNs, res.BusyMaxNs = res.BusyNs+th.busy, max(res.BusyMaxNs, th.busy)
		if res.FirstError == "" {
			res.FirstError = th.firstError
		}
		for class, n := range th.errClasses {
			if res.ErrorClasses == nil {
				res.ErrorClasses = map[string]uint64{}
			}
			addErrorClass(res.ErrorClasses, class, n)
		}
		for k, h := range th.hists {
			if hists[k] == nil {
				hists[k] = NewHistogram()
			}
			hists[k].Merge(h)
		}
	}
	res.Hist = map[string]string{}
	for k, h := range hists {
		if h.TotalCount() > 0 {
			res.Hist[k] = Encode(h)
		}
	}
	slices.SortFunc(run.col.out, func(a, b Interval) int { return int(a.TMs) - int(b.TMs) })
	res.Intervals = run.col.out
	if u := run.unsupported.Load(); u != nil {
		res.fail("unsupported", errors.New(*u))
	}
}

// NewEmitter writes events to out, one JSON object and one write per line.
func NewEmitter(out io.Writer) func(any) {
	var mu sync.Mutex
	return func(ev any) {
		b, err := json.Marshal(ev)
		if err != nil {
			b, _ = json.Marshal(map[string]string{"event": "error", "message": "go worker: event does not serialise: " + err.Error()})
		}
		mu.Lock()
		defer mu.Unlock()
		_, _ = out.Write(append(b, '\n'))
	}
}
