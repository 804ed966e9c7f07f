package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// ProtocolVersion is the worker protocol this worker speaks (docs/protocol.md).
const ProtocolVersion = 3

// Job is the job file kvbench writes: one engine variant, fully resolved steps.
type Job struct {
	Protocol   int            `json:"protocol"`
	Engine     string         `json:"engine"`
	Label      string         `json:"label"`
	Options    map[string]any `json:"options"`
	Dir        string         `json:"dir"`
	Sync       string         `json:"sync"`
	URL        *string        `json:"url"`
	Token      *string        `json:"token"`
	Dataset    JobDataset     `json:"dataset"`
	Plan       *string        `json:"plan"`
	ProgressMs uint64         `json:"progress_ms"`
	IntervalMs uint64         `json:"interval_ms"`
	Steps      []Step         `json:"steps"`
}

// JobDataset is the dataset as the worker derives it (plan-format.md "Records").
type JobDataset struct {
	Generator string `json:"generator"`
	Key       struct {
		Kind  string `json:"kind"`
		Width int    `json:"width"`
	} `json:"key"`
	Value struct {
		Min     uint64 `json:"min"`
		Max     uint64 `json:"max"`
		Content string `json:"content"`
	} `json:"value"`
	Loaded      uint64 `json:"loaded"`
	Total       uint64 `json:"total"`
	Ordered     bool   `json:"ordered"`
	PoolSeed    uint64 `json:"pool_seed"`
	ValueSeed   uint64 `json:"value_seed"`
	OpenRecords uint64 `json:"open_records"`
	OpenBytes   uint64 `json:"open_bytes"`
}

// Step is one step of a job; the fields after Mode belong to `ops` steps.
type Step struct {
	Step           string   `json:"step"`
	Index          int      `json:"index"`
	Stop           bool     `json:"stop"`
	Mode           string   `json:"mode"`
	Name           string   `json:"name"`
	Kind           string   `json:"kind"`
	Count          uint64   `json:"count"`
	Threads        uint64   `json:"threads"`
	Batch          uint64   `json:"batch"`
	KeysPerRequest uint64   `json:"keys_per_request"`
	Kinds          []string `json:"kinds"`
	Thresholds     []uint64 `json:"thresholds"`
	Dist           Dist     `json:"dist"`
	RecSeed        uint64   `json:"rec_seed"`
	KindSeed       uint64   `json:"kind_seed"`
	LenSeed        uint64   `json:"len_seed"`
	PermSeed       uint64   `json:"perm_seed"`
	Scan           struct {
		Min uint64 `json:"min"`
		Max uint64 `json:"max"`
	} `json:"scan"`
	InsertBase uint64   `json:"insert_base"`
	Last       uint64   `json:"last"`
	Rate       *float64 `json:"rate"`
	OpenPerOp  bool     `json:"open_per_op"`
	Finish     bool     `json:"finish"`
	Verify     *bool    `json:"verify"`
}

// Dist is how an ops step picks records (plan-format.md "Operation streams").
type Dist struct {
	Name   string  `json:"name"`
	N      uint64  `json:"n"`
	Start  uint64  `json:"start"`
	Record uint64  `json:"record"`
	Items  uint64  `json:"items"`
	Count  uint64  `json:"count"`
	Zetan  float64 `json:"zetan"`
	Eta    float64 `json:"eta"`
	Theta  float64 `json:"theta"`
	Alpha  float64 `json:"alpha"`
}

var (
	opKinds    = []string{"load", "get", "multi-get", "scan", "update", "insert", "delete", "rmw", "mixed"}
	mixedKinds = []string{"get", "update", "insert", "scan", "rmw", "delete"}
	distNames  = []string{"sequential", "shuffle", "load-order", "uniform", "hot", "zipfian", "latest"}
	openModes  = []string{"read-write", "read-only", "secondary"}
)

// LoadJob reads a job file; errors name the file, the line or step and the field.
func LoadJob(path string) (*Job, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("job file %s: %v", path, err)
	}
	j := &Job{ProgressMs: 200, IntervalMs: 1000}
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	if err = d.Decode(j); err == nil {
		err = j.check()
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("job file %s line %d: the JSON ends early", path, 1+bytes.Count(text, []byte("\n")))
	case errors.As(err, &syn):
		return nil, fmt.Errorf("job file %s line %d: %v", path, 1+bytes.Count(text[:syn.Offset], []byte("\n")), err)
	case errors.As(err, &typ):
		return nil, fmt.Errorf("job file %s line %d: field `%s`: %s is not a %s", path,
			1+bytes.Count(text[:typ.Offset], []byte("\n")), typ.Field, typ.Value, typ.Type)
	case err != nil:
		return nil, fmt.Errorf("job file %s: %v", path, err)
	}
	return j, nil
}

func oneOf(field, v string, allowed []string) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	return fmt.Errorf("`%s` = %q: expected one of %v", field, v, allowed)
}

// check refuses what the worker cannot run: another protocol, or a name it branches on that
// it does not know. kvbench writes and validates the job (docs/protocol.md), so the worker
// does not check the rest again.
func (j *Job) check() error {
	if j.Protocol != ProtocolVersion {
		return fmt.Errorf("`protocol` = %d but this worker speaks %d", j.Protocol, ProtocolVersion)
	}
	errs := []error{oneOf("sync", j.Sync, []string{"none", "commit", "always"}),
		oneOf("dataset.generator", j.Dataset.Generator, []string{"synthetic", "json-docs", "stored"}),
		oneOf("dataset.key.kind", j.Dataset.Key.Kind, []string{"u32be", "u64be", "decimal", "ycsb"})}
	for i := range j.Steps {
		if err := j.Steps[i].check(); err != nil {
			errs = append(errs, fmt.Errorf("steps[%d]: %v", i, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Step) check() error {
	if s.Mode == "" {
		s.Mode = "read-write"
	}
	s.Threads, s.Batch, s.KeysPerRequest = max(s.Threads, 1), max(s.Batch, 1), max(s.KeysPerRequest, 1)
	if s.Step != "ops" {
		return errors.Join(oneOf("step", s.Step, []string{"open", "prepare", "close", "evict", "ops"}), oneOf("mode", s.Mode, openModes))
	}
	errs := []error{oneOf("kind", s.Kind, opKinds), oneOf("dist.name", s.Dist.Name, distNames), oneOf("mode", s.Mode, openModes)}
	for _, k := range s.Kinds {
		errs = append(errs, oneOf("kinds[]", k, mixedKinds))
	}
	return errors.Join(errs...)
}
