// Command kvbench-go-worker is kvbench's Go worker.
//
//	kvbench-go-worker --job JOB   run one job, JSON Lines events on stdout (docs/protocol.md)
//	kvbench-go-worker --list      the Go engines as a JSON array
//
// KVBENCH_GO_CPUPROFILE=FILE writes a CPU profile of the job (docs/methodology.md).
// Exit status: 0 after a `done` event, 1 after an `error` event, 2 for a bad command line.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"

	"golang.org/x/sys/unix"

	"github.com/kvbench/kvbench/drivers/go/internal/engines"
	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// coreBuild is the hash of the worker core's library, set by build.sh: Go's build cache does
// not see a rebuilt core, a new value makes it link the worker again.
var coreBuild string

func list() []map[string]any {
	out := []map[string]any{}
	for _, d := range engines.Registry {
		why := d.Unavailable()
		out = append(out, map[string]any{"name": d.Name, "description": d.Description, "version": d.Version(),
			"capabilities": d.Caps.Names(), "options": append([]worker.OptionSpec{}, d.Options...),
			"available": why == "", "why": why})
	}
	return out
}

// protocolStdout keeps stdout for events only: it returns a duplicate of file descriptor 1
// for them, and anything else written to file descriptor 1 goes to stderr instead.
func protocolStdout() int {
	fd, err := unix.Dup(1)
	if err != nil {
		return 1
	}
	_ = unix.Dup3(2, 1, 0)
	return fd
}

func main() {
	job := flag.String("job", "", "run the job file `JOB`; JSON Lines events on stdout")
	doList := flag.Bool("list", false, "print the Go engines as a JSON array")
	flag.Parse()
	switch {
	case *doList:
		b, _ := json.MarshalIndent(list(), "", "  ")
		fmt.Println(string(b))
		return
	case *job == "":
		flag.Usage()
		os.Exit(2)
	}
	if path := os.Getenv("KVBENCH_GO_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if !worker.Run(*job, protocolStdout(), engines.Find) {
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}
