// Package engines holds every Go engine, one file each. Each file adds its engine to Registry
// and carries the build constraint `!kvbench_only || kvbench_<file>`: built with the tags
// `kvbench_only,kvbench_<file>`, a worker links that engine alone (build.sh), as a program
// using the library would, without the other engines' dependencies (their package
// initialisation leaves heap that every garbage collection marks again).
package engines

import (
	"fmt"
	"log"
	"runtime/debug"
	"sort"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// Registry lists the Go engines linked into this binary, by name.
var Registry []*worker.Descriptor

// register adds an engine to Registry, in name order (called by each engine's file).
func register(d *worker.Descriptor) {
	Registry = append(Registry, d)
	sort.Slice(Registry, func(i, j int) bool { return Registry[i].Name < Registry[j].Name })
}

// Find returns the engine called name, nil when there is none.
func Find(name string) *worker.Descriptor {
	for _, d := range Registry {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// Names of every engine, in registry order.
func Names() []string {
	out := []string{}
	for _, d := range Registry {
		out = append(out, d.Name)
	}
	return out
}

// moduleVersion is the version of a Go module compiled into this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				if m.Replace != nil {
					return path + " " + m.Replace.Version
				}
				return path + " " + m.Version
			}
		}
	}
	return path + " (version unknown)"
}

func available() string { return "" }

func syncSetting(sync, none, commit, always string) string {
	switch sync {
	case "none":
		return none
	case "always":
		return always
	}
	return commit
}

// quietLogger drops Pebble's (v1 and v2) informational lines (one per WAL replayed at every open) and
// keeps its errors, on stderr (the job's log).
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{}) {}
func (quietLogger) Errorf(format string, args ...interface{}) {
	log.Printf("pebble: "+format, args...)
}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	log.Fatal(fmt.Sprintf("pebble: "+format, args...))
}
