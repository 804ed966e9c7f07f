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
	"runtime/debug"
	"runtime/pprof"

	"golang.org/x/sys/unix"

	"github.com/kvbench/kvbench/drivers/go/internal/engines"
	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

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

// protocolStdout keeps stdout for events only: anything else written to file descriptor 1
// goes to stderr instead.
func protocolStdout() *os.File {
	fd, err := unix.Dup(1)
	if err != nil {
		return os.Stdout
	}
	_ = unix.Dup3(2, 1, 0)
	return os.NewFile(uintptr(fd), "events")
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
	if !run(*job, worker.NewEmitter(protocolStdout())) {
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// run runs the job file; false after an error event (a panic becomes one).
func run(path string, emit func(any)) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "panic: %v\n%s", p, debug.Stack())
			emit(map[string]string{"event": "error", "message": fmt.Sprintf("go worker crashed: %v", p)})
			ok = false
		}
	}()
	j, err := worker.LoadJob(path)
	if err != nil {
		emit(map[string]string{"event": "error", "message": err.Error()})
		return false
	}
	return worker.RunJob(j, engines.Find(j.Engine), emit)
}
