//go:build !kvbench_only || kvbench_tokyocabinet

package engines

// #cgo LDFLAGS: -ltokyocabinet
// #include <stdlib.h>
// #include <stdbool.h>
// #include <stdint.h>
// #include <tcutil.h>
// #include <tchdb.h>
//
// /* TC keeps the last error per OS thread when its mutex is on, and a goroutine may move to
//    another thread between two cgo calls: a call and the read of its error code must be one
//    C call. */
// static void *kvb_get(TCHDB *h, const void *k, int ks, int *size, int *ecode) {
//     void *p = tchdbget(h, k, ks, size);
//     *ecode = p ? TCESUCCESS : tchdbecode(h);
//     return p;
// }
// static int kvb_out(TCHDB *h, const void *k, int ks) {
//     return tchdbout(h, k, ks) ? TCESUCCESS : tchdbecode(h);
// }
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func init() { register(tokyocabinetDescriptor) }

// go-tokyocabinet: Tokyo Cabinet's hash database (TCHDB, one .tch file) called through cgo,
// as article 004 called it from Go. Same knobs as the Rust `tokyocabinet-hash`, so the two
// rows differ only by the language they are called from.
var tokyocabinetDescriptor = &worker.Descriptor{
	Name:        "go-tokyocabinet",
	Description: "Tokyo Cabinet hash database (tchdb) through cgo; no ordered scan",
	Caps:        worker.Capabilities{Batch: true, ReadOnlyOpen: true, Persistent: true, Delete: true},
	Options: []worker.OptionSpec{
		{Name: "bnum", Kind: "int", Default: "0", Doc: "bucket array size; 0 = twice the records the plan loads (at least 131071, TC's default)"},
		{Name: "transaction", Kind: "enum", Default: "none", Doc: "none: a batch is a loop of puts (as the article); batch: a batch of more than one write is one TC transaction", Choices: []string{"none", "batch"}},
	},
	Version:     func() string { return "tokyocabinet " + C.GoString(C.tcversion) + " (cgo)" },
	Unavailable: available,
	Open:        openTokyoCabinet,
}

type tcEngine struct {
	hdb         *C.TCHDB
	sync, tran  string
	bnum        int64
	transaction bool
}

func openTokyoCabinet(a worker.OpenArgs) (worker.Engine, error) {
	if a.Mode == "secondary" {
		return nil, &worker.Unsupported{What: "secondary open"}
	}
	bnum, _ := a.Options.Int("bnum")
	if bnum <= 0 {
		bnum = max(int64(a.ExpectedRecords)*2, 131071)
	}
	e := &tcEngine{hdb: C.tchdbnew(), sync: a.Sync, tran: a.Options.Text("transaction"), bnum: bnum}
	e.transaction = e.tran == "batch"
	// The mutex lets reader goroutines share the handle; tuning must come before open.
	opts := C.uint8_t(0)
	if a.ExpectedBytes > 1<<30 {
		opts |= C.HDBTLARGE
	}
	if !C.tchdbsetmutex(e.hdb) || !C.tchdbtune(e.hdb, C.int64_t(bnum), -1, -1, opts) {
		return nil, e.fail("tune")
	}
	mode := C.int(C.HDBOWRITER | C.HDBOCREAT)
	switch {
	case a.Mode == "read-only":
		mode = C.HDBOREADER
	case a.Sync != "none":
		mode |= C.HDBOTSYNC // a transaction's commit syncs
	}
	path := C.CString(a.File("db.tch"))
	defer C.free(unsafe.Pointer(path))
	if !C.tchdbopen(e.hdb, path, mode) {
		return nil, e.fail("open")
	}
	return e, nil
}

// fail turns the handle's last error into a Go error; on a failed open it also frees the handle.
func (e *tcEngine) fail(what string) error {
	code := C.tchdbecode(e.hdb)
	err := fmt.Errorf("tokyocabinet %s: %s", what, C.GoString(C.tchdberrmsg(code)))
	if what == "tune" || what == "open" {
		C.tchdbdel(e.hdb)
	}
	return err
}

// tcEmpty stands in for an empty slice, whose data pointer may be nil.
var tcEmpty [1]byte

func cbytes(b []byte) (unsafe.Pointer, C.int) {
	if len(b) == 0 {
		return unsafe.Pointer(&tcEmpty), 0
	}
	return unsafe.Pointer(unsafe.SliceData(b)), C.int(len(b))
}

// apply writes one record; inTran: inside a transaction, whose commit does the syncing.
func (e *tcEngine) apply(w worker.WriteOp, inTran bool) error {
	k, ks := cbytes(w.Key)
	if w.Delete {
		if code := C.kvb_out(e.hdb, k, ks); code != C.TCESUCCESS && code != C.TCENOREC {
			return fmt.Errorf("tokyocabinet out: %s", C.GoString(C.tchdberrmsg(code)))
		}
		return nil
	}
	v, vs := cbytes(w.Value)
	if !C.tchdbput(e.hdb, k, ks, v, vs) {
		return e.fail("put")
	}
	if e.sync == "always" && !inTran && !bool(C.tchdbsync(e.hdb)) {
		return e.fail("sync")
	}
	return nil
}

func (e *tcEngine) Write(batch []worker.WriteOp) error {
	if e.transaction && len(batch) > 1 {
		return e.writeTransaction(batch)
	}
	for _, w := range batch {
		if err := e.apply(w, false); err != nil {
			return err
		}
	}
	if e.sync == "commit" && !C.tchdbsync(e.hdb) {
		return e.fail("sync")
	}
	return nil
}

func (e *tcEngine) writeTransaction(batch []worker.WriteOp) error {
	if !C.tchdbtranbegin(e.hdb) {
		return e.fail("tranbegin")
	}
	for _, w := range batch {
		if err := e.apply(w, true); err != nil {
			C.tchdbtranabort(e.hdb)
			return err
		}
	}
	if !C.tchdbtrancommit(e.hdb) {
		return e.fail("trancommit")
	}
	return nil
}

func (e *tcEngine) Reader() (worker.Reader, error) { return &tcReader{e: e}, nil }
func (e *tcEngine) FinishLoad() error              { return nil }

func (e *tcEngine) Close() error {
	defer C.tchdbdel(e.hdb)
	if !C.tchdbclose(e.hdb) {
		code := C.tchdbecode(e.hdb)
		return fmt.Errorf("tokyocabinet close: %s", C.GoString(C.tchdberrmsg(code)))
	}
	return nil
}

func (e *tcEngine) Settings() map[string]string {
	batch := "a batch is a loop of tchdbput/tchdbout, no transaction (as the article)"
	commit, always := "tchdbsync() after every batch", "tchdbsync() after every write"
	if e.transaction {
		batch = "a batch of more than one write is one transaction (tchdbtranbegin/commit)"
		commit = "opened with HDBOTSYNC: a transaction's commit syncs; tchdbsync() after a single write"
		always = commit
	}
	return map[string]string{
		"sync":        syncSetting(e.sync, "no sync calls; data reaches the file on close", commit, always),
		"transaction": e.tran + ": " + batch,
		"bnum":        fmt.Sprint(e.bnum),
		"threads":     "tchdbsetmutex (TC's internal rwlock)",
		"calls":       "cgo: one C call per put/get/out",
	}
}

// tcReader copies each value into its own buffer, so the C allocation is freed at once and
// the slice stays valid until the next Get.
type tcReader struct {
	worker.NoScan
	e   *tcEngine
	buf []byte
}

func (r *tcReader) Get(key []byte) ([]byte, bool, error) {
	k, ks := cbytes(key)
	var size, code C.int
	p := C.kvb_get(r.e.hdb, k, ks, &size, &code)
	if p == nil {
		if code == C.TCENOREC {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("tokyocabinet get: %s", C.GoString(C.tchdberrmsg(code)))
	}
	r.buf = append(r.buf[:0], unsafe.Slice((*byte)(p), int(size))...)
	C.free(p)
	return r.buf, true, nil
}

func (r *tcReader) Refresh() error { return nil }
func (r *tcReader) Close() error   { return nil }
