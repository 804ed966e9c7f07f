package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ProtocolVersion is the worker protocol this worker speaks.
const ProtocolVersion = 1

// JobPhase is one phase of a job.
type JobPhase struct {
	Name           string
	Kind           string
	PlanPhase      int
	Threads        int
	Batch          int
	KeysPerRequest int
	Cache          string
	OpenPer        string
	Rate           float64 // 0: closed loop
}

// Job is the job file kvbench writes.
type Job struct {
	Protocol   int
	Engine     string
	Label      string
	Options    map[string]any
	Plan       string
	Dir        string
	Sync       string
	OpenMode   string
	URL        string
	Phases     []JobPhase
	ProgressMs int64
}

type fieldReader struct {
	obj   map[string]any
	where string
	err   error
}

func (f *fieldReader) fail(format string, a ...any) {
	if f.err == nil {
		f.err = fmt.Errorf("%s: "+format, append([]any{f.where}, a...)...)
	}
}

func (f *fieldReader) get(key string, required bool) (any, bool) {
	v, ok := f.obj[key]
	if !ok && required {
		f.fail("missing field `%s`", key)
	}
	return v, ok
}

func (f *fieldReader) str(key string, required bool, def string) string {
	v, ok := f.get(key, required)
	if !ok {
		return def
	}
	s, isStr := v.(string)
	if !isStr {
		f.fail("`%s` = %s: expected a string", key, compact(v))
	}
	return s
}

func (f *fieldReader) choice(key string, required bool, def string, choices ...string) string {
	v, ok := f.get(key, required)
	if !ok {
		return def
	}
	s, _ := v.(string)
	for _, c := range choices {
		if s == c {
			return s
		}
	}
	f.fail("`%s` = %s: expected one of %s", key, compact(v), strings.Join(choices, ", "))
	return def
}

func (f *fieldReader) uint(key string, required bool, def int64, bits int) int64 {
	v, ok := f.get(key, required)
	if !ok {
		return def
	}
	n, isNum := v.(json.Number)
	if isNum {
		if u, err := strconv.ParseUint(string(n), 10, bits); err == nil {
			return int64(u)
		}
	}
	f.fail("`%s` = %s: expected an integer", key, compact(v))
	return def
}

// ParseJob reads a job from its JSON text, with the Rust types' defaults.
func ParseJob(text []byte) (*Job, error) {
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("job: expected a JSON object")
	}
	f := &fieldReader{obj: obj, where: "job"}
	j := &Job{}
	j.Protocol = int(f.uint("protocol", true, 0, 32))
	j.Engine = f.str("engine", true, "")
	j.Label = f.str("label", true, "")
	if v, ok := obj["options"]; ok {
		m, isMap := v.(map[string]any)
		if !isMap {
			f.fail("`options`: expected an object")
		}
		j.Options = m
	}
	if j.Options == nil {
		j.Options = map[string]any{}
	}
	j.Plan = f.str("plan", true, "")
	j.Dir = f.str("dir", true, "")
	j.Sync = f.choice("sync", true, "commit", "none", "commit", "always")
	j.OpenMode = f.choice("open_mode", false, "read-write", "read-write", "read-only", "secondary")
	if v, ok := obj["url"]; ok && v != nil {
		j.URL = f.str("url", false, "")
	}
	j.ProgressMs = f.uint("progress_ms", false, 200, 64)
	raw, ok := f.get("phases", true)
	list, isList := raw.([]any)
	if ok && !isList {
		f.fail("`phases`: expected an array")
	}
	for i, p := range list {
		pm, isMap := p.(map[string]any)
		pf := &fieldReader{obj: pm, where: fmt.Sprintf("job: phases[%d]", i)}
		if !isMap {
			pf.fail("expected an object")
		}
		ph := JobPhase{
			Name:           pf.str("name", true, ""),
			Kind:           pf.choice("kind", true, "get", "load", "get", "multi-get", "scan", "update", "delete", "mixed"),
			PlanPhase:      int(pf.uint("plan_phase", true, 0, 64)),
			Threads:        int(pf.uint("threads", false, 1, 32)),
			Batch:          int(pf.uint("batch", false, 1, 32)),
			KeysPerRequest: int(pf.uint("keys_per_request", false, 1, 32)),
			Cache:          pf.choice("cache", false, "warm", "warm", "cold"),
			OpenPer:        pf.choice("open_per", false, "phase", "phase", "operation"),
		}
		if v, ok := pm["rate"]; ok && v != nil {
			n, isNum := v.(json.Number)
			r, err := n.Float64()
			if !isNum || err != nil || r <= 0 {
				pf.fail("`rate` = %s: expected a positive number", compact(v))
			}
			ph.Rate = r
		}
		if pf.err != nil {
			return nil, pf.err
		}
		j.Phases = append(j.Phases, ph)
	}
	if f.err != nil {
		return nil, f.err
	}
	return j, nil
}

// LoadJob reads a job file.
func LoadJob(path string) (*Job, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("job file %s: %v", path, err)
	}
	j, err := ParseJob(text)
	if err != nil {
		return nil, fmt.Errorf("job file %s: %v", path, err)
	}
	return j, nil
}

// F64 is a float that always serialises with a fraction or exponent (as serde_json does) and
// never as NaN or infinity.
type F64 float64

// MarshalJSON writes 0.0 rather than 0.
func (f F64) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		x = 0
	}
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return []byte(s), nil
}

// Latency is the summary of one histogram.
type Latency struct {
	MinNs   uint64 `json:"min_ns"`
	MeanNs  F64    `json:"mean_ns"`
	P50Ns   uint64 `json:"p50_ns"`
	P90Ns   uint64 `json:"p90_ns"`
	P99Ns   uint64 `json:"p99_ns"`
	P999Ns  uint64 `json:"p999_ns"`
	MaxNs   uint64 `json:"max_ns"`
	StdevNs F64    `json:"stdev_ns"`
	Hdr     string `json:"hdr"`
}

// PhaseResult is one phase's result, fields in the Rust order.
type PhaseResult struct {
	Name         string              `json:"name"`
	Kind         string              `json:"kind"`
	Status       string              `json:"status"`
	Reason       string              `json:"reason,omitempty"`
	Ops          uint64              `json:"ops"`
	Requests     uint64              `json:"requests"`
	Unit         string              `json:"unit"`
	Errors       uint64              `json:"errors"`
	Mismatches   uint64              `json:"mismatches"`
	Missing      uint64              `json:"missing"`
	ElapsedNs    uint64              `json:"elapsed_ns"`
	WallNs       uint64              `json:"wall_ns"`
	OpsPerSec    F64                 `json:"ops_per_sec"`
	Latency      *Latency            `json:"latency,omitempty"`
	LatencyByOp  map[string]*Latency `json:"latency_by_op,omitempty"`
	Threads      uint32              `json:"threads"`
	Batch        uint32              `json:"batch"`
	Cache        string              `json:"cache"`
	CPUUserNs    uint64              `json:"cpu_user_ns"`
	CPUSysNs     uint64              `json:"cpu_sys_ns"`
	MaxRssKb     uint64              `json:"max_rss_kb"`
	IOReadBytes  uint64              `json:"io_read_bytes"`
	IOWriteBytes uint64              `json:"io_write_bytes"`
	Notes        []string            `json:"notes,omitempty"`
}

// Hello is the first event.
type Hello struct {
	Event           string            `json:"event"`
	Protocol        int               `json:"protocol"`
	Worker          string            `json:"worker"`
	Engine          string            `json:"engine"`
	Version         string            `json:"version"`
	Capabilities    []string          `json:"capabilities"`
	Options         map[string]any    `json:"options"`
	Settings        map[string]string `json:"settings"`
	TimerOverheadNs F64               `json:"timer_overhead_ns"`
}

// Progress reports a running phase.
type Progress struct {
	Event string `json:"event"`
	Phase string `json:"phase"`
	Done  uint64 `json:"done"`
	Total uint64 `json:"total"`
}

// PhaseEvent carries one result.
type PhaseEvent struct {
	Event  string       `json:"event"`
	Result *PhaseResult `json:"result"`
}

// ErrorEvent ends a job that cannot go on.
type ErrorEvent struct {
	Event   string  `json:"event"`
	Phase   *string `json:"phase"`
	Message string  `json:"message"`
}

// DoneEvent ends a finished job.
type DoneEvent struct {
	Event string `json:"event"`
}

// NewError builds an error event; phase "" is null.
func NewError(message, phase string) ErrorEvent {
	e := ErrorEvent{Event: "error", Message: message}
	if phase != "" {
		p := phase
		e.Phase = &p
	}
	return e
}

// Emitter writes one event per line, at once.
type Emitter struct {
	mu  sync.Mutex
	out io.Writer
}

// NewEmitter writes events to out (unbuffered: each line is one write).
func NewEmitter(out io.Writer) *Emitter { return &Emitter{out: out} }

// Emit writes one event.
func (e *Emitter) Emit(ev any) {
	b, err := json.Marshal(ev)
	if err != nil {
		b, _ = json.Marshal(NewError("go worker: event does not serialise: "+err.Error(), ""))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.out.Write(append(b, '\n'))
}
