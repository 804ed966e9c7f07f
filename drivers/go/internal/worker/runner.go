package worker

import (
	"bytes"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kvbench/kvbench/drivers/go/internal/plan"
)

// Version of the Go worker.
const Version = "0.1.0"

// MaxErrors stops a phase after this many engine errors.
const MaxErrors = 1000

// WorkerName is the `worker` field of hello.
func WorkerName() string {
	return fmt.Sprintf("go kvbench-go-worker %s (%s)", Version, runtime.Version())
}

var openModeDebug = map[string]string{"read-write": "ReadWrite", "read-only": "ReadOnly", "secondary": "Secondary"}

// tally is what one goroutine of a phase measured.
type tally struct {
	hist                    *hdrhistogram.Histogram
	byOp                    map[string]*hdrhistogram.Histogram
	ops, requests, errors   uint64
	mismatches, missing     uint64
	firstError, unsupported string
	busyNs                  uint64
}

func newTally() *tally { return &tally{hist: NewHistogram()} }

// sample records the time since t0 (taken just before the call).
func (t *tally) sample(d time.Duration) {
	ns := int64(d)
	if ns < 1 {
		ns = 1
	}
	t.busyNs += uint64(ns)
	Record(t.hist, ns)
}

// sampleAs is a sample of a mixed phase. (The Rust worker also keeps one histogram per
// operation kind, `latency_by_op`; the protocol does not list that field yet, so the Go worker,
// like the Python worker, does not emit it.)
func (t *tally) sampleAs(d time.Duration, _ string) { t.sample(d) }

// fail counts an error; true when the phase must stop.
func (t *tally) fail(err error) bool {
	if u, ok := err.(*Unsupported); ok {
		t.unsupported = u.What
		return true
	}
	t.errors++
	if t.firstError == "" {
		t.firstError = Describe(err)
	}
	return t.errors >= MaxErrors
}

func (t *tally) check(p *plan.Plan, expected uint32, found []byte, ok bool) {
	switch {
	case expected == plan.None:
		if ok {
			t.mismatches++
		}
	case !ok:
		t.missing++
	case !bytes.Equal(p.Value(expected), found):
		t.mismatches++
	}
}

func (t *tally) merge(o *tally) {
	t.hist.Merge(o.hist)
	t.ops += o.ops
	t.busyNs += o.busyNs
	t.requests += o.requests
	t.errors += o.errors
	t.mismatches += o.mismatches
	t.missing += o.missing
	if t.firstError == "" {
		t.firstError = o.firstError
	}
	if t.unsupported == "" {
		t.unsupported = o.unsupported
	}
}

// Runner executes one job.
type Runner struct {
	job     *Job
	desc    *Descriptor
	plan    *plan.Plan
	options *Options
	emit    func(any)
	engine  Engine
	mode    string
}

// RunJob runs job on desc (nil: unknown engine), emitting events. It returns false when the
// job could not go on (the error event has then been emitted).
func RunJob(job *Job, desc *Descriptor, known []string, emit func(any)) bool {
	fail := func(message, phase string) bool {
		emit(NewError(message, phase))
		return false
	}
	if job.Protocol != ProtocolVersion {
		return fail(fmt.Sprintf("job protocol %d but this worker speaks %d", job.Protocol, ProtocolVersion), "")
	}
	if desc == nil {
		return fail(fmt.Sprintf("engine %s is not a Go engine (known: %s)", job.Engine, joinNames(known)), "")
	}
	if why := desc.Unavailable(); why != "" {
		return fail(fmt.Sprintf("engine %s unavailable: %s", desc.Name, why), "")
	}
	p, err := plan.Open(job.Plan)
	if err != nil {
		return fail(err.Error(), "")
	}
	defer p.Close()
	options, err := ParseOptions(desc.Name, desc.Options, job.Options)
	if err != nil {
		return fail(err.Error(), "")
	}
	overhead := CalibrateTimer()
	r := &Runner{job: job, desc: desc, plan: p, options: options, emit: emit, mode: "read-write"}

	usage0 := UsageNow()
	t0 := time.Now()
	if err := r.open("read-write"); err != nil {
		return fail("open failed: "+Describe(err), "open")
	}
	openNs := time.Since(t0)
	settings := map[string]string{}
	for k, v := range r.engine.Settings() {
		settings[k] = v
	}
	settings["worker.timing"] = "time.Now()/time.Since() (monotonic) around each call; samples recorded into the HdrHistogram inline, as in the Rust worker"
	emit(Hello{Event: "hello", Protocol: ProtocolVersion, Worker: WorkerName(), Engine: desc.Name, Version: desc.Version(),
		Capabilities: desc.Caps.Names(), Options: options.Effective(), Settings: settings, TimerOverheadNs: F64(overhead)})
	emit(PhaseEvent{"phase", r.single("open", openNs, usage0)})

	for i := range job.Phases {
		ph := &job.Phases[i]
		res := r.phase(ph)
		emit(PhaseEvent{"phase", res})
		if ph.Kind == "load" && res.Status == "failed" {
			return fail("load failed: "+res.Reason, ph.Name)
		}
		if r.engine == nil {
			return fail("engine could not be reopened", ph.Name)
		}
	}

	usage0 = UsageNow()
	t0 = time.Now()
	cerr := r.close()
	closeNs := time.Since(t0)
	res := r.single("close", closeNs, usage0)
	if cerr != nil {
		res.Status = "failed"
		res.Reason = Describe(cerr)
	}
	emit(PhaseEvent{"phase", res})
	emit(DoneEvent{"done"})
	return true
}

func joinNames(n []string) string {
	s := ""
	for i, x := range n {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}

func (r *Runner) args(mode string) OpenArgs {
	return OpenArgs{Dir: r.job.Dir, Options: r.options, Sync: r.job.Sync, Mode: mode, URL: r.job.URL,
		ExpectedRecords: r.plan.Records, ExpectedBytes: r.plan.RawBytes + r.plan.UpdateValues*2*1024}
}

func (r *Runner) open(mode string) error {
	e, err := r.desc.Open(r.args(mode))
	if err != nil {
		return err
	}
	r.engine = e
	r.mode = mode
	return nil
}

func (r *Runner) close() error {
	e := r.engine
	r.engine = nil
	if e == nil {
		return nil
	}
	return e.Close()
}

func (r *Runner) reopen(mode string, evict bool) (time.Duration, int, error) {
	if err := r.close(); err != nil {
		return 0, 0, err
	}
	n := 0
	if evict {
		var err error
		if n, err = Evict(r.job.Dir); err != nil {
			return 0, 0, err
		}
	}
	t0 := time.Now()
	err := r.open(mode)
	return time.Since(t0), n, err
}

func (r *Runner) single(name string, d time.Duration, usage0 Usage) *PhaseResult {
	ns := d.Nanoseconds()
	if ns < 1 {
		ns = 1
	}
	h := NewHistogram()
	Record(h, ns)
	res := &PhaseResult{Name: name, Kind: name, Status: "ok", Ops: 1, Requests: 1, Unit: name, ElapsedNs: uint64(d.Nanoseconds()),
		WallNs: uint64(d.Nanoseconds()), OpsPerSec: F64(1e9 / float64(ns)), Latency: Summarize(h), Threads: 1, Batch: 1, Cache: "-"}
	fillUsage(res, usage0)
	return res
}

func hasKind(ops plan.OpList, kind uint32) bool {
	for i := 0; i < ops.Len(); i++ {
		if ops.At(i).Kind == kind {
			return true
		}
	}
	return false
}

func writes(kind string) bool {
	return kind == "load" || kind == "update" || kind == "delete" || kind == "mixed"
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

func (r *Runner) phase(ph *JobPhase) *PhaseResult {
	caps := r.desc.Caps
	res := &PhaseResult{Name: ph.Name, Kind: ph.Kind, Status: "ok", Unit: "op", Threads: uint32(max1(ph.Threads)),
		Batch: uint32(max1(ph.Batch)), Cache: ph.Cache}
	na := func(why string) *PhaseResult {
		res.Status = "n/a"
		res.Reason = why
		return res
	}
	ops, ok := r.plan.Ops(ph.PlanPhase)
	if !ok {
		res.Status = "failed"
		res.Reason = fmt.Sprintf("plan has no phase %d", ph.PlanPhase)
		return res
	}
	k := ph.Kind
	switch {
	case k == "scan" && !caps.OrderedScan:
		return na("engine has no ordered scan")
	case (k == "update" || k == "delete" || k == "mixed") && caps.BuildOnce:
		return na("engine is written once (build-once): no updates or deletes")
	case k == "delete" && !caps.Delete:
		return na("engine cannot delete")
	case k == "mixed" && !caps.Delete && hasKind(ops, plan.Delete):
		return na("engine cannot delete")
	case k == "mixed" && !caps.OrderedScan && hasKind(ops, plan.Scan):
		return na("engine has no ordered scan")
	case k == "multi-get" && !caps.MultiGet:
		res.Notes = append(res.Notes, "no native multi-get: each request loops over get")
	}
	if writes(k) && r.job.OpenMode != "read-write" && k != "load" {
		return na(fmt.Sprintf("reads use a %s open; writes are not possible", openModeDebug[r.job.OpenMode]))
	}
	want := r.job.OpenMode
	if writes(k) {
		want = "read-write"
	}
	if want == "read-only" && !caps.ReadOnlyOpen {
		return na("engine has no read-only open")
	}
	if want == "secondary" && !caps.SecondaryOpen {
		return na("engine has no secondary open")
	}
	if !caps.Persistent && ((k == "get" && ph.OpenPer == "operation") || ph.Cache == "cold") {
		return na("engine is not persistent: a reopen would find it empty")
	}
	if want != r.mode || ph.Cache == "cold" {
		d, evicted, err := r.reopen(want, ph.Cache == "cold")
		if err != nil {
			res.Status = "failed"
			res.Reason = "reopen failed: " + Describe(err)
			if r.engine == nil {
				if r.open("read-write") != nil {
					r.engine = nil
				}
			}
			return res
		}
		if ph.Cache == "cold" {
			res.Cache = fmt.Sprintf("cold: %d files evicted with posix_fadvise(DONTNEED)", evicted)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("reopened %s in %.3f ms before the phase", openModeDebug[want], float64(d.Nanoseconds())/1e6))
	}
	if k == "mixed" && ph.Threads > 1 {
		res.Notes = append(res.Notes, "mixed phases run on one thread so reads can be checked exactly")
		res.Threads = 1
	}
	if ph.Rate > 0 {
		res.Notes = append(res.Notes, "the Go worker has no open loop yet: this phase ran closed-loop")
	}

	usage0 := UsageNow()
	t0 := time.Now()
	var t *tally
	switch {
	case k == "get" && ph.OpenPer == "operation":
		res.Unit = "open+op+close"
		res.Notes = append(res.Notes, "each sample opens the database, reads one key and closes it")
		t = r.openPerOp(ops, ph)
	case k == "load" || k == "update" || k == "delete":
		if ph.Batch > 1 {
			res.Unit = "batch"
		}
		t = r.writes(ops, ph)
	case k == "mixed":
		t = r.mixed(ops, ph)
	default:
		if k != "get" {
			res.Unit = "request"
		}
		t = r.reads(ops, ph)
	}
	wall := time.Since(t0)
	elapsed := time.Duration(t.busyNs)
	if k == "load" && t.errors == 0 && r.engine != nil {
		tf := time.Now()
		if err := r.engine.FinishLoad(); err != nil {
			t.fail(err)
		}
		fin := time.Since(tf)
		elapsed += fin
		wall += fin
		if fin > time.Millisecond {
			res.Notes = append(res.Notes, fmt.Sprintf("includes %.1f ms to finish the load", float64(fin.Nanoseconds())/1e6))
		}
	}
	if ph.OpenPer == "operation" && r.engine == nil {
		if err := r.open(r.mode); err != nil {
			t.fail(err)
		}
	}
	res.ElapsedNs = uint64(elapsed.Nanoseconds())
	res.WallNs = uint64(wall.Nanoseconds())
	fillUsage(res, usage0)
	res.Ops, res.Requests, res.Errors, res.Mismatches, res.Missing = t.ops, t.requests, t.errors, t.mismatches, t.missing
	secs := elapsed.Seconds()
	if secs < 1e-9 {
		secs = 1e-9
	}
	res.OpsPerSec = F64(float64(t.ops) / secs)
	res.Latency = Summarize(t.hist)
	switch {
	case t.unsupported != "":
		return na("unsupported: " + t.unsupported)
	case t.firstError != "":
		res.Status = "failed"
		res.Reason = fmt.Sprintf("%d errors; first: %s", t.errors, t.firstError)
	case t.mismatches+t.missing > 0:
		res.Status = "failed"
		res.Reason = fmt.Sprintf("verification failed: %d wrong values, %d missing keys", t.mismatches, t.missing)
	}
	return res
}

type progressor struct {
	r    *Runner
	name string
	last time.Time
}

func (p *progressor) maybe(done, total int) {
	if time.Since(p.last).Milliseconds() >= p.r.job.ProgressMs {
		p.last = time.Now()
		p.r.emit(Progress{Event: "progress", Phase: p.name, Done: uint64(done), Total: uint64(total)})
	}
}

func (r *Runner) writes(ops plan.OpList, ph *JobPhase) *tally {
	e := r.engine
	p := r.plan
	batch := max1(ph.Batch)
	t := newTally()
	buf := make([]WriteOp, 0, batch)
	prog := &progressor{r: r, name: ph.Name, last: time.Now()}
	n := ops.Len()
	for i := 0; i < n; {
		buf = buf[:0]
		for j := i; j < i+batch && j < n; j++ {
			o := ops.At(j)
			w := WriteOp{Key: p.Key(o.Key)}
			if o.Kind == plan.Put {
				w.Value = p.Value(o.Value)
			} else {
				w.Delete = true
			}
			buf = append(buf, w)
		}
		i += len(buf)
		t0 := time.Now()
		err := e.Write(buf)
		t.sample(time.Since(t0))
		t.requests++
		t.ops += uint64(len(buf))
		if err != nil && (t.fail(err) || t.unsupported != "") {
			break
		}
		prog.maybe(i, n)
	}
	return t
}

func (r *Runner) reads(ops plan.OpList, ph *JobPhase) *tally {
	per := 1
	if ph.Kind == "multi-get" {
		per = max1(ph.KeysPerRequest)
	}
	total := ops.Len()
	requests := total / per
	threads := max1(ph.Threads)
	if threads > max1(requests) {
		threads = max1(requests)
	}
	var done atomic.Uint64
	tallies := make([]*tally, threads)
	var wg sync.WaitGroup
	for th := 0; th < threads; th++ {
		a, b := requests*th/threads, requests*(th+1)/threads
		wg.Add(1)
		go func(th, a, b int) {
			defer wg.Done()
			t := newTally()
			tallies[th] = t
			rd, err := r.engine.Reader()
			if err != nil {
				t.fail(err)
				return
			}
			switch ph.Kind {
			case "get":
				getLoop(r.plan, ops, a, b, rd, t, &done)
			case "multi-get":
				multiGetLoop(r.plan, ops, per, a, b, rd, t, &done)
			default:
				scanLoop(r.plan, ph.PlanPhase, ops, a, b, rd, t, &done)
			}
			if err := rd.Close(); err != nil {
				t.fail(err)
			}
		}(th, a, b)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	ticker := time.NewTicker(time.Duration(max1(int(r.job.ProgressMs))) * time.Millisecond)
	defer ticker.Stop()
loop:
	for {
		select {
		case <-finished:
			break loop
		case <-ticker.C:
			r.emit(Progress{Event: "progress", Phase: ph.Name, Done: done.Load() * uint64(per), Total: uint64(total)})
		}
	}
	all := newTally()
	var busiest uint64
	for _, t := range tallies {
		if t.busyNs > busiest {
			busiest = t.busyNs
		}
		all.merge(t)
	}
	// Threads run side by side: the phase took as long as its busiest thread.
	all.busyNs = busiest
	return all
}

const progressEvery = 1024

func getLoop(p *plan.Plan, ops plan.OpList, a, b int, rd Reader, t *tally, done *atomic.Uint64) {
	for i := a; i < b; i++ {
		o := ops.At(i)
		key := p.Key(o.Key)
		t0 := time.Now()
		v, ok, err := rd.Get(key)
		t.sample(time.Since(t0))
		t.ops++
		t.requests++
		if err != nil {
			if t.fail(err) || t.unsupported != "" {
				break
			}
		} else {
			t.check(p, o.Value, v, ok)
		}
		if i%progressEvery == 0 {
			done.Add(progressEvery)
		}
	}
}

func multiGetLoop(p *plan.Plan, ops plan.OpList, per, a, b int, rd Reader, t *tally, done *atomic.Uint64) {
	keys := make([][]byte, per)
	vals := make([][]byte, per)
	found := make([]bool, per)
	for req := a; req < b; req++ {
		for n := 0; n < per; n++ {
			keys[n] = p.Key(ops.At(req*per + n).Key)
		}
		var err error
		t0 := time.Now()
		// No Go engine has a native multi-get: a request loops over get, copying each value
		// (the reader's slice is only valid until its next call), as a caller would.
		for n := 0; n < per && err == nil; n++ {
			var v []byte
			v, found[n], err = rd.Get(keys[n])
			vals[n] = append(vals[n][:0], v...)
		}
		t.sample(time.Since(t0))
		t.ops += uint64(per)
		t.requests++
		if err != nil {
			if t.fail(err) || t.unsupported != "" {
				break
			}
		} else {
			for n := 0; n < per; n++ {
				t.check(p, ops.At(req*per+n).Value, vals[n], found[n])
			}
		}
		done.Add(1)
	}
}

func scanLoop(p *plan.Plan, phase int, ops plan.OpList, a, b int, rd Reader, t *tally, done *atomic.Uint64) {
	unique := p.UniqueRecords
	expect := p.ScanExpect(phase)
	if !expect.OK {
		t.fail(fmt.Errorf("plan has no scan expectations for phase %d", phase))
		return
	}
	for i := a; i < b; i++ {
		o := ops.At(i)
		start := p.Key(p.Sorted(uint64(o.Key)))
		// Verification walks the expected sorted positions beside the engine's cursor, inside
		// the timed scan (docs/methodology.md).
		pos := uint64(o.Key)
		var bad, seen uint64
		t0 := time.Now()
		_, err := rd.Scan(start, int(o.Aux), func(k, v []byte) bool {
			for pos < unique && expect.At(pos) == plan.None {
				pos++
			}
			seen++
			if pos >= unique {
				bad++
				return false
			}
			ev := expect.At(pos)
			if !bytes.Equal(k, p.Key(p.Sorted(pos))) || (ev != plan.None && !bytes.Equal(v, p.Value(ev))) {
				bad++
			}
			pos++
			return true
		})
		t.sample(time.Since(t0))
		t.requests++
		t.ops += seen
		if err != nil {
			if t.fail(err) || t.unsupported != "" {
				break
			}
		} else {
			t.mismatches += bad
			t.missing += sub(uint64(o.Aux), seen)
		}
		done.Add(1)
	}
}

func (r *Runner) mixed(ops plan.OpList, ph *JobPhase) *tally {
	e := r.engine
	p := r.plan
	t := newTally()
	rd, err := e.Reader()
	if err != nil {
		t.fail(err)
		return t
	}
	dirty := false
	prog := &progressor{r: r, name: ph.Name, last: time.Now()}
	var prev []byte
	n := ops.Len()
	for i := 0; i < n; i++ {
		o := ops.At(i)
		key := p.Key(o.Key)
		var err error
		switch o.Kind {
		case plan.Get, plan.Scan:
			if dirty {
				if e := rd.Refresh(); e != nil {
					t.fail(e)
				}
				dirty = false
			}
			if o.Kind == plan.Get {
				t0 := time.Now()
				v, ok, gerr := rd.Get(key)
				t.sampleAs(time.Since(t0), "read")
				err = gerr
				if err == nil {
					t.check(p, o.Value, v, ok)
				}
			} else {
				start := p.Key(p.Sorted(uint64(o.Key)))
				prev = prev[:0]
				var disorder uint64
				t0 := time.Now()
				_, err = rd.Scan(start, int(o.Aux), func(k, _ []byte) bool {
					if bytes.Compare(k, prev) < 0 {
						disorder++
					}
					prev = append(prev[:0], k...)
					return true
				})
				t.sampleAs(time.Since(t0), "scan")
				t.mismatches += disorder
			}
		default:
			w := []WriteOp{{Key: key}}
			kind := "update"
			if o.Kind == plan.Put {
				w[0].Value = p.Value(o.Value)
			} else {
				w[0].Delete = true
				kind = "delete"
			}
			dirty = true
			t0 := time.Now()
			err = e.Write(w)
			t.sampleAs(time.Since(t0), kind)
		}
		t.ops++
		t.requests++
		if err != nil && (t.fail(err) || t.unsupported != "") {
			break
		}
		prog.maybe(i, n)
	}
	if err := rd.Close(); err != nil {
		t.fail(err)
	}
	return t
}

// openPerOp is the article 000 method: open, read one key, close, for every operation.
func (r *Runner) openPerOp(ops plan.OpList, ph *JobPhase) *tally {
	t := newTally()
	if err := r.close(); err != nil {
		t.fail(err)
		return t
	}
	args := r.args(r.mode)
	prog := &progressor{r: r, name: ph.Name, last: time.Now()}
	var val []byte
	n := ops.Len()
	for i := 0; i < n; i++ {
		o := ops.At(i)
		key := r.plan.Key(o.Key)
		var found bool
		t0 := time.Now()
		err := func() error {
			e, err := r.desc.Open(args)
			if err != nil {
				return err
			}
			rd, err := e.Reader()
			if err != nil {
				_ = e.Close()
				return err
			}
			v, ok, err := rd.Get(key)
			val, found = append(val[:0], v...), ok
			if cerr := rd.Close(); err == nil {
				err = cerr
			}
			if cerr := e.Close(); err == nil {
				err = cerr
			}
			return err
		}()
		t.sample(time.Since(t0))
		t.ops++
		t.requests++
		if err != nil {
			if t.fail(err) {
				break
			}
		} else {
			t.check(r.plan, o.Value, val, found)
		}
		prog.maybe(i, n)
	}
	return t
}

// SortedNames returns the registry's names sorted (for messages).
func SortedNames(ds []*Descriptor) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.Name)
	}
	sort.Strings(out)
	return out
}
