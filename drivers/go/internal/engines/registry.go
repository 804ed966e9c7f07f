// Package engines holds every Go engine, one file each; Registry has one line per engine.
package engines

import (
	"runtime/debug"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// Registry lists every Go engine, one line each.
var Registry = []*worker.Descriptor{
	memoryDescriptor,
	bboltDescriptor,
	boltdbDescriptor,
	goleveldbDescriptor,
	pebbleDescriptor,
	pogrebDescriptor,
	badgerDescriptor,
	tokyocabinetDescriptor,
	etcdDescriptor,
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
