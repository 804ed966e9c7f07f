package engines

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// The engines article 004 added (go-boltdb, go-tokyocabinet in both transaction modes), each
// under every sync mode: puts, one-batch overwrites, deletes and a reopen, checked against a
// map after every step.
func TestArticle004EnginesAgainstAMap(t *testing.T) {
	variants := []struct {
		engine string
		opts   map[string]any
	}{
		{"go-boltdb", map[string]any{}},
		{"go-tokyocabinet", map[string]any{}},
		{"go-tokyocabinet", map[string]any{"transaction": "batch"}},
	}
	for _, v := range variants {
		for _, sync := range []string{"none", "commit", "always"} {
			v, sync := v, sync
			t.Run(fmt.Sprintf("%s%v/%s", v.engine, v.opts, sync), func(t *testing.T) {
				d := Find(v.engine)
				if why := d.Unavailable(); why != "" {
					t.Skip(why)
				}
				o := resolved(t, d, v.opts)
				args := worker.OpenArgs{Dir: t.TempDir(), Options: o, Sync: sync, Mode: "read-write", ExpectedRecords: 200}
				runMapScript(t, d, args)
			})
		}
	}
}

// runMapScript writes one put at a time, overwrites everything in one batch, deletes every
// third key in another, and reopens, comparing every key with the map each time.
func runMapScript(t *testing.T, d *worker.Descriptor, args worker.OpenArgs) {
	t.Helper()
	e, err := d.Open(args)
	if err != nil {
		t.Fatal(err)
	}
	oracle := map[string][]byte{}
	key := func(i int) []byte { return []byte(fmt.Sprintf("key-%04d", i)) }
	write := func(batch []worker.WriteOp) {
		if err := e.Write(batch); err != nil {
			t.Fatal(err)
		}
		for _, w := range batch {
			if w.Delete {
				delete(oracle, string(w.Key))
			} else {
				oracle[string(w.Key)] = w.Value
			}
		}
	}
	for i := 0; i < 200; i++ {
		write([]worker.WriteOp{{Key: key(i), Value: bytes.Repeat([]byte{byte(i)}, i%900)}})
	}
	check(t, e, oracle, 220, "after puts")
	var overwrite, deletes []worker.WriteOp
	for i := 0; i < 200; i++ {
		overwrite = append(overwrite, worker.WriteOp{Key: key(i), Value: []byte(fmt.Sprintf("v2-%d", i))})
		if i%3 == 0 {
			deletes = append(deletes, worker.WriteOp{Key: key(i), Delete: true})
		}
	}
	write(overwrite)
	check(t, e, oracle, 220, "after the one-batch overwrite")
	write(append(deletes, worker.WriteOp{Key: []byte("never-written"), Delete: true}))
	check(t, e, oracle, 220, "after deletes")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = d.Open(args); err != nil {
		t.Fatal(err)
	}
	check(t, e, oracle, 220, "after reopen")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

func check(t *testing.T, e worker.Engine, oracle map[string][]byte, n int, when string) {
	t.Helper()
	r, err := e.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("key-%04d", i)
		v, ok, err := r.Get([]byte(k))
		if err != nil {
			t.Fatal(err)
		}
		want, wantOK := oracle[k]
		if ok != wantOK || !bytes.Equal(v, want) {
			t.Fatalf("%s: %s: found %v %q, want %v %q", when, k, ok, v, wantOK, want)
		}
	}
}

// Settings say which write method a Tokyo Cabinet row used: the article's loop unless the
// scenario asked for a transaction per batch.
func TestTokyoCabinetSettingsStateTheTransactionMode(t *testing.T) {
	d := Find("go-tokyocabinet")
	if why := d.Unavailable(); why != "" {
		t.Skip(why)
	}
	for mode, want := range map[string]string{"": "none: a batch is a loop", "batch": "batch: a batch of more than one write is one transaction"} {
		given := map[string]any{}
		if mode != "" {
			given["transaction"] = mode
		}
		o := resolved(t, d, given)
		e, err := d.Open(worker.OpenArgs{Dir: t.TempDir(), Options: o, Sync: "commit", Mode: "read-write"})
		if err != nil {
			t.Fatal(err)
		}
		got := e.Settings()["transaction"]
		if !strings.HasPrefix(got, want) {
			t.Fatalf("transaction %q: settings say %q", mode, got)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Tokyo Cabinet's error code is per OS thread and a goroutine may change threads between two
// cgo calls: absent keys read from many goroutines must all come back as "not found", never
// as an error (reading the code in a second call failed this way).
func TestTokyoCabinetAbsentKeysFromManyGoroutines(t *testing.T) {
	d := Find("go-tokyocabinet")
	if why := d.Unavailable(); why != "" {
		t.Skip(why)
	}
	o := resolved(t, d, nil)
	e, err := d.Open(worker.OpenArgs{Dir: t.TempDir(), Options: o, Sync: "none", Mode: "read-write"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Write([]worker.WriteOp{{Key: []byte("present"), Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func(g int) {
			r, _ := e.Reader()
			defer r.Close()
			for i := 0; i < 20000; i++ {
				_, found, err := r.Get([]byte(fmt.Sprintf("absent-%d-%d", g, i)))
				if err != nil || found {
					errs <- fmt.Errorf("goroutine %d, get %d: found %v, err %v", g, i, found, err)
					return
				}
				if v, found, err := r.Get([]byte("present")); err != nil || !found || string(v) != "v" {
					errs <- fmt.Errorf("goroutine %d: present key: %q %v %v", g, v, found, err)
					return
				}
			}
			errs <- nil
		}(g)
	}
	// Every goroutine ends before the deferred Close.
	var first error
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		t.Fatal(first)
	}
}
