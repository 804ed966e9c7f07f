package engines

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// build.sh links go-NAME alone with the tags kvbench_only,kvbench_NAME: every engine's file
// must carry its own engine's tag, or kvbench would run the engine with a worker that lacks it.
func TestEveryEngineFileCarriesItsEnginesTag(t *testing.T) {
	tag := regexp.MustCompile(`(?m)^//go:build .*!kvbench_only \|\| kvbench_([a-z0-9]+)\)?$`)
	name := regexp.MustCompile(`Name:\s+"(go-[a-z0-9]+)"`)
	files, _ := filepath.Glob("*.go")
	tagged := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "registry.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tm, nm := tag.FindSubmatch(src), name.FindSubmatch(src)
		if tm == nil || nm == nil {
			t.Errorf("%s: want a `//go:build !kvbench_only || kvbench_NAME` line and a descriptor", f)
			continue
		}
		if "go-"+string(tm[1]) != string(nm[1]) {
			t.Errorf("%s: tag kvbench_%s, engine %s", f, tm[1], nm[1])
		}
		tagged[string(nm[1])] = true
	}
	for _, d := range Registry {
		if !tagged[d.Name] {
			t.Errorf("%s is registered by no tagged file", d.Name)
		}
	}
}
