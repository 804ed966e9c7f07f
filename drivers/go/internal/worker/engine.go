// Package worker is the Go worker of kvbench: the engine interface every Go store implements,
// and a thin executor over kvbench's worker core (crates/kvbench-ffi/kvbench.h), which reads the
// job, derives the keys and op streams, verifies the reads and writes the events. The worker
// only opens the engine and times its calls.
package worker

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
)

// Capabilities of an engine, as Capabilities in Rust.
type Capabilities struct {
	OrderedScan, MultiGet, Batch, ReadOnlyOpen, SecondaryOpen, Persistent, BuildOnce, Delete bool
}

// Names are the capability names in Capabilities::names() order.
func (c Capabilities) Names() []string {
	out := []string{}
	for _, p := range []struct {
		on   bool
		name string
	}{{c.OrderedScan, "scan"}, {c.MultiGet, "multi-get"}, {c.Batch, "batch"}, {c.ReadOnlyOpen, "read-only"},
		{c.SecondaryOpen, "secondary"}, {c.Persistent, "persistent"}, {c.BuildOnce, "build-once"}, {c.Delete, "delete"}} {
		if p.on {
			out = append(out, p.name)
		}
	}
	return out
}

// Unsupported is returned by an engine for something it cannot do at all: the phase is N/A.
type Unsupported struct{ What string }

func (u *Unsupported) Error() string { return "unsupported: " + u.What }

// WriteOp is one write of a batch; Delete removes the key (deleting an absent key is no error).
type WriteOp struct {
	Key, Value []byte
	Delete     bool
}

// Reader holds the reads of one goroutine (a read transaction or snapshot where the engine has
// them).
type Reader interface {
	// Get returns the value of key and whether it was found. The slice stays valid until the
	// next call on this reader.
	Get(key []byte) ([]byte, bool, error)
	// Scan visits up to limit records in key order from the first key >= start; visit returns
	// false to stop. Returns the number visited.
	Scan(start []byte, limit int, visit func(k, v []byte) bool) (int, error)
	// Refresh is called after writes in a mixed phase: a reader holding a snapshot takes a new one.
	Refresh() error
	Close() error
}

// Engine is one open database.
type Engine interface {
	// Write applies the writes as one batch or transaction where the engine has them.
	Write(batch []WriteOp) error
	Reader() (Reader, error)
	// FinishLoad is called once after the load phase, inside its timing.
	FinishLoad() error
	Close() error
	// Settings are the knobs in effect (sync mapping above all), for the result file.
	Settings() map[string]string
}

// Writer is one goroutine's own write handle (a server engine's own connection or client),
// with Engine.Write's contract.
type Writer interface {
	Write(batch []WriteOp) error
	Close() error
}

// WriterOpener is an optional Engine interface, as Engine::writer in Rust: each goroutine that
// writes opens its own Writer (before its first timed write), so writing goroutines never
// share a client. Without it they write through Engine.Write.
type WriterOpener interface {
	Writer() (Writer, error)
}

// MultiGetter is an optional Reader interface: a native multi-get. It sets vals[i] and
// found[i] for keys[i]; the values stay valid until the next call on the reader.
type MultiGetter interface {
	MultiGet(keys, vals [][]byte, found []bool) error
}

// StableValues is an optional Reader interface: the values it returns stay valid until its
// Refresh or Close, not only until its next call (bbolt's lie in its read transaction's
// memory map). A block of plain gets then checks each value after the next get, so that the
// value's memory arrives during that get instead of holding up the loop.
type StableValues interface {
	StableValues()
}

// Preparer is an optional Engine interface: work that is not opening the engine (the
// `prepare` step).
type Preparer interface{ Prepare() error }

// Settler is an optional Engine interface: the untimed settle step. It brings the store to a
// settled state (flush what is buffered and compact, or wait until no compaction is pending)
// and says what it did. An engine without it answers "unsupported": the phase is N/A.
type Settler interface{ Settle() (string, error) }

// Internals is an optional Engine interface: the store's own counters (L0 files, compaction
// debt, pages...), named as the store names them. Read at each step's end and, during an ops
// step, every interval from a goroutine that runs no operations: it must be safe beside them.
// Never timed.
type Internals interface{ Internals() map[string]float64 }

// NoScan can be embedded by readers without ordered scan.
type NoScan struct{}

// Scan reports Unsupported.
func (NoScan) Scan([]byte, int, func(k, v []byte) bool) (int, error) {
	return 0, &Unsupported{"ordered scan"}
}

// OptionSpec describes one engine option, as --list declares it to kvbench.
type OptionSpec struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"` // bool, int, enum, text
	Default string   `json:"default"`
	Doc     string   `json:"doc"`
	Choices []string `json:"choices,omitempty"`
}

// Options are a job's options as kvbench resolved them (docs/protocol.md): every option of
// the engine, null where unset, integers for sizes. kvbench checked them against the specs;
// engines only read them.
type Options struct {
	values map[string]any
}

// ReadOptions takes a job's options; a value that is not null, true/false, an integer or a
// string means the job was not resolved by kvbench.
func ReadOptions(values map[string]any) (*Options, error) {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if !resolved(values[k]) {
			text, _ := json.Marshal(values[k])
			return nil, fmt.Errorf("job option `%s` = %s: kvbench writes null, true/false, integers or strings", k, text)
		}
	}
	return &Options{values: values}, nil
}

func resolved(v any) bool {
	switch v := v.(type) {
	case nil, bool, string:
		return true
	case json.Number:
		_, err := v.Int64()
		return err == nil
	}
	return false
}

// Bool is a boolean option (false when unset).
func (o *Options) Bool(name string) bool {
	b, _ := o.values[name].(bool)
	return b
}

// Int is an integer option; false when unset (the engine's own default applies).
func (o *Options) Int(name string) (int64, bool) {
	n, ok := o.values[name].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// Text is an enum or text option, other kinds as their JSON text ("" when unset).
func (o *Options) Text(name string) string {
	switch v := o.values[name].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// Effective is the options that are set (for hello).
func (o *Options) Effective() map[string]any {
	out := map[string]any{}
	for k, v := range o.values {
		if v != nil {
			out[k] = v
		}
	}
	return out
}

// OpenArgs is everything an engine needs to open its database.
type OpenArgs struct {
	Dir             string
	Options         *Options
	Sync            string // none, commit, always
	Mode            string // read-write, read-only, secondary
	ExpectedRecords uint64
	ExpectedBytes   uint64
	URL             string
	Token           string // a credential for a server kvbench started
}

// File is a path inside the job's directory.
func (a OpenArgs) File(name string) string { return filepath.Join(a.Dir, name) }

// Descriptor is what one registry line points at.
type Descriptor struct {
	Name, Description string
	Caps              Capabilities
	Options           []OptionSpec
	Version           func() string
	// Unavailable is "" when the engine can run here, else the reason it cannot.
	Unavailable func() string
	Open        func(OpenArgs) (Engine, error)
}
