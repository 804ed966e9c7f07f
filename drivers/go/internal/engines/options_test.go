package engines

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// resolved gives d's options as kvbench writes them into a job: `given` (integers as
// json.Number), every other option at its declared default, sizes as integers. In a run
// kvbench resolves them (crates/kvbench-model/src/options.rs); engine tests have no
// kvbench, so this test aid fills the defaults the same way.
func resolved(t *testing.T, d *worker.Descriptor, given map[string]any) *worker.Options {
	t.Helper()
	o, err := worker.ReadOptions(resolvedValues(t, d, given))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// resolvedValues is the options map of a job, as resolved describes.
func resolvedValues(t *testing.T, d *worker.Descriptor, given map[string]any) map[string]any {
	t.Helper()
	values := map[string]any{}
	for _, s := range d.Options {
		values[s.Name] = declaredDefault(t, s)
	}
	maps.Copy(values, given)
	return values
}

func declaredDefault(t *testing.T, s worker.OptionSpec) any {
	switch {
	case s.Default == "":
		return nil
	case s.Kind == "bool":
		return s.Default == "true"
	case s.Kind != "int":
		return s.Default
	}
	shift := map[byte]int{'k': 10, 'm': 20, 'g': 30}[s.Default[len(s.Default)-1]]
	n, err := strconv.ParseInt(strings.TrimRight(s.Default, "kmg"), 10, 64)
	if err != nil {
		t.Fatalf("option %s: default %q is not an integer or size", s.Name, s.Default)
	}
	return json.Number(strconv.FormatInt(n<<shift, 10))
}

// Every option a Go engine declares has a default of its own kind, which kvbench can resolve.
func TestDeclaredDefaultsAreOfTheirKind(t *testing.T) {
	for _, d := range Registry {
		for _, s := range d.Options {
			v := declaredDefault(t, s)
			if s.Kind == "enum" && v != nil && !slices.Contains(s.Choices, v.(string)) {
				t.Errorf("%s option %s: default %q is not one of %v", d.Name, s.Name, s.Default, s.Choices)
			}
		}
	}
}
