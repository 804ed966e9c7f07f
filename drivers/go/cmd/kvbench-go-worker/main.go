// Command kvbench-go-worker is kvbench's Go worker.
//
//	kvbench-go-worker --job JOB   run one job, JSON Lines events on stdout (docs/protocol.md)
//	kvbench-go-worker --list      the Go engines as a JSON array
//
// Exit status: 0 after a `done` event, 1 after an `error` event, 2 for a bad command line.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/kvbench/kvbench/drivers/go/internal/engines"
	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

type listed struct {
	Name         string              `json:"name"`
	Description  string              `json:"description"`
	Version      string              `json:"version"`
	Capabilities []string            `json:"capabilities"`
	Options      []worker.OptionSpec `json:"options"`
	Available    bool                `json:"available"`
	Why          string              `json:"why"`
}

func list() []listed {
	out := []listed{}
	for _, d := range engines.Registry {
		why := d.Unavailable()
		opts := d.Options
		if opts == nil {
			opts = []worker.OptionSpec{}
		}
		out = append(out, listed{d.Name, d.Description, d.Version(), d.Caps.Names(), opts, why == "", why})
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
	version := flag.Bool("version", false, "print the worker's version")
	flag.Parse()
	switch {
	case *version:
		fmt.Println("kvbench-go-worker " + worker.Version)
		return
	case *doList:
		b, _ := json.MarshalIndent(list(), "", "  ")
		fmt.Println(string(b))
		return
	case *job == "":
		flag.Usage()
		os.Exit(2)
	}
	em := worker.NewEmitter(protocolStdout())
	j, err := worker.LoadJob(*job)
	if err != nil {
		em.Emit(map[string]string{"event": "error", "message": err.Error()})
		os.Exit(1)
	}
	ok := func() (ok bool) {
		defer func() {
			if p := recover(); p != nil {
				fmt.Fprintf(os.Stderr, "panic: %v\n%s", p, debug.Stack())
				em.Emit(map[string]string{"event": "error", "message": fmt.Sprintf("go worker crashed: %v", p)})
				ok = false
			}
		}()
		return worker.RunJob(j, engines.Find(j.Engine), em.Emit)
	}()
	if !ok {
		os.Exit(1)
	}
}
