// Package worker is the Go worker of kvbench: the engine interface every Go store implements,
// and the executor of a job's resolved steps (docs/protocol.md) that times and verifies every
// operation. kvbench decides everything else.
package worker

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// NoScan can be embedded by readers without ordered scan.
type NoScan struct{}

// Scan reports Unsupported.
func (NoScan) Scan([]byte, int, func(k, v []byte) bool) (int, error) {
	return 0, &Unsupported{"ordered scan"}
}

// OptionSpec describes one engine option.
type OptionSpec struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"` // bool, int, enum, text
	Default string   `json:"default"`
	Doc     string   `json:"doc"`
	Choices []string `json:"choices,omitempty"`
}

func (s OptionSpec) describeKind() string {
	switch s.Kind {
	case "bool":
		return "true or false"
	case "int":
		return "an integer (sizes may say 64m, 1g)"
	case "text":
		return "a string"
	}
	return "one of " + strings.Join(s.Choices, ", ")
}

// ParseSize reads `123`, `64k`, `64m`, `1g` (powers of 1024).
func ParseSize(s string) (int64, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	shift := 0
	if i := strings.IndexAny(s, "kmg"); i >= 0 && i == len(s)-1 {
		shift = map[byte]int{'k': 10, 'm': 20, 'g': 30}[s[i]]
		s = strings.TrimSpace(s[:i])
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n << shift, err == nil
}

// Options are the validated options of one engine variant.
type Options struct {
	values map[string]any
	specs  []OptionSpec
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ParseOptions checks the job's options against the engine's specs (same rules and messages
// as Options::parse in Rust).
func ParseOptions(engine string, specs []OptionSpec, given map[string]any) (*Options, error) {
	for _, k := range slices.Sorted(maps.Keys(given)) {
		i := slices.IndexFunc(specs, func(s OptionSpec) bool { return s.Name == k })
		if i < 0 {
			return nil, fmt.Errorf("engine %s has no option `%s` (options: %s)", engine, k, optionNames(specs))
		}
		if !specs[i].accepts(given[k]) {
			return nil, fmt.Errorf("engine %s option `%s` = %s: expected %s", engine, k, compact(given[k]), specs[i].describeKind())
		}
	}
	return &Options{values: given, specs: specs}, nil
}

func optionNames(specs []OptionSpec) string {
	names := []string{}
	for _, s := range specs {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (s OptionSpec) accepts(v any) bool {
	str, isStr := v.(string)
	switch s.Kind {
	case "bool":
		_, ok := v.(bool)
		return ok
	case "int":
		if isStr {
			_, ok := ParseSize(str)
			return ok
		}
		n, ok := v.(json.Number)
		_, err := n.Int64()
		return ok && err == nil
	case "enum":
		return isStr && slices.Contains(s.Choices, str)
	}
	return isStr
}

func (o *Options) raw(name string) any {
	if v, ok := o.values[name]; ok {
		return v
	}
	for _, s := range o.specs {
		if s.Name == name && s.Default != "" {
			if s.Kind == "bool" {
				return s.Default == "true"
			}
			return s.Default
		}
	}
	return nil
}

// Bool is a boolean option (false when unset).
func (o *Options) Bool(name string) bool {
	b, _ := o.raw(name).(bool)
	return b
}

// Int is an integer or size option.
func (o *Options) Int(name string) (int64, bool) {
	switch v := o.raw(name).(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case string:
		return ParseSize(v)
	}
	return 0, false
}

// Text is a string option ("" when unset).
func (o *Options) Text(name string) string {
	switch v := o.raw(name).(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return compact(v)
	}
}

// Effective is the options as given plus every non-empty default (for hello).
func (o *Options) Effective() map[string]any {
	out := map[string]any{}
	for k, v := range o.values {
		out[k] = v
	}
	for _, s := range o.specs {
		if v := o.raw(s.Name); v != nil {
			out[s.Name] = v
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
