package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad job files are refused with the file, the line or step, the field and what is allowed.
func TestBadJobsNameTheField(t *testing.T) {
	head := `{"protocol": 3, "engine": "go-memory", "label": "m", "dir": "/tmp", "sync": "none",
  "dataset": {"generator": "synthetic", "key": {"kind": "decimal", "width": 8},
              "value": {"min": 1, "max": 9}, "loaded": 10, "total": 10},
  "steps": [`
	for body, want := range map[string][]string{
		`{"step": "ops", "index": 0, "kind": "get", "count": "ten", "dist": {"name": "uniform", "n": 10}}]}`: {"line 5", "steps.count", "uint64"},
		`{"step": "ops", "index": 0, "kind": "fetch", "count": 1, "dist": {"name": "uniform", "n": 10}}]}`:   {"steps[0]", "`kind` = \"fetch\"", "get"},
		`{"step": "ops", "index": 0, "kind": "get", "count": 1, "dist": {"name": "pareto", "n": 10}}]}`:      {"steps[0]", "dist.name", "zipfian"},
		`{"step": "open", "index": 0, "mode": "read-write"}`:                                                 {"line 5", "ends early"},
		`{"step": "open", "index": 0, "mode": "read-mostly"}]}`:                                              {"steps[0]", "`mode` = \"read-mostly\"", "read-only"},
		`{"step": "close", "index": 0}], "protocol": 2}`:                                                     {"`protocol` = 2", "speaks 3"},
	} {
		path := filepath.Join(t.TempDir(), "job.json")
		if err := os.WriteFile(path, []byte(head+"\n  "+body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadJob(path)
		for _, w := range append(want, path) {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want %q", body, err, w)
			}
		}
	}
}
