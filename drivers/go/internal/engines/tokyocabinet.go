//go:build cgo

package engines

// #cgo LDFLAGS: -ltokyocabinet
// #include <stdlib.h>
// #include <stdbool.h>
// #include <stdint.h>
// #include <tcutil.h>
// #include <tchdb.h>
//
// /* With a mutex, Tokyo Cabinet keeps error codes per OS thread, and a goroutine can move to
//    another thread between two cgo calls: each helper reads the code on the thread that
//    failed. They return 0 on success, else TC's error code. */
// static int kvb_code(TCHDB *h, bool ok) { return ok ? 0 : tchdbecode(h); }
// static int kvb_open(TCHDB *h, const char *path, int64_t bnum, uint8_t opts, int mode) {
//     if (!tchdbsetmutex(h) || !tchdbtune(h, bnum, -1, -1, opts)) return tchdbecode(h);
//     return kvb_code(h, tchdbopen(h, path, mode));
// }
// static int kvb_put(TCHDB *h, const void *k, int ks, const void *v, int vs) {
//     return kvb_code(h, tchdbput(h, k, ks, v, vs));
// }
// static int kvb_out(TCHDB *h, const void *k, int ks) { return kvb_code(h, tchdbout(h, k, ks)); }
// static int kvb_sync(TCHDB *h) { return kvb_code(h, tchdbsync(h)); }
// static int kvb_tranbegin(TCHDB *h) { return kvb_code(h, tchdbtranbegin(h)); }
// static int kvb_trancommit(TCHDB *h) { return kvb_code(h, tchdbtrancommit(h)); }
// static int kvb_close(TCHDB *h) { return kvb_code(h, tchdbclose(h)); }
// static void *kvb_get(TCHDB *h, const void *k, int ks, int *sp, int *code) {
//     void *v = tchdbget(h, k, ks, sp);
//     *code = v ? 0 : tchdbecode(h);
//     return v;
// }
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

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
	mode := C.int(C.HDBOWRITER | C.HDBOCREAT)
	switch {
	case a.Mode == "read-only":
		mode = C.HDBOREADER
	case a.Sync != "none":
		mode |= C.HDBOTSYNC // a transaction's commit syncs
	}
	path := C.CString(a.File("db.tch"))
	defer C.free(unsafe.Pointer(path))
	if err := tcCheck(C.kvb_open(e.hdb, path, C.int64_t(bnum), opts, mode), "open"); err != nil {
		C.tchdbdel(e.hdb)
		return nil, err
	}
	return e, nil
}

// tcCheck turns a helper's return code into an error (nil for 0).
func tcCheck(code C.int, what string) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("tokyocabinet %s: %s", what, C.GoString(C.tchdberrmsg(code)))
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
		if code := C.kvb_out(e.hdb, k, ks); code != C.TCENOREC {
			return tcCheck(code, "out")
		}
		return nil
	}
	v, vs := cbytes(w.Value)
	if err := tcCheck(C.kvb_put(e.hdb, k, ks, v, vs), "put"); err != nil {
		return err
	}
	if e.sync == "always" && !inTran {
		return tcCheck(C.kvb_sync(e.hdb), "sync")
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
	if e.sync == "commit" {
		return tcCheck(C.kvb_sync(e.hdb), "sync")
	}
	return nil
}

func (e *tcEngine) writeTransaction(batch []worker.WriteOp) error {
	if err := tcCheck(C.kvb_tranbegin(e.hdb), "tranbegin"); err != nil {
		return err
	}
	for _, w := range batch {
		if err := e.apply(w, true); err != nil {
			C.tchdbtranabort(e.hdb)
			return err
		}
	}
	return tcCheck(C.kvb_trancommit(e.hdb), "trancommit")
}

func (e *tcEngine) Reader() (worker.Reader, error) { return &tcReader{e: e}, nil }
func (e *tcEngine) FinishLoad() error              { return nil }

func (e *tcEngine) Close() error {
	defer C.tchdbdel(e.hdb)
	return tcCheck(C.kvb_close(e.hdb), "close")
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
		return nil, false, tcCheck(code, "get")
	}
	r.buf = append(r.buf[:0], unsafe.Slice((*byte)(p), int(size))...)
	C.free(p)
	return r.buf, true, nil
}

func (r *tcReader) Refresh() error { return nil }
func (r *tcReader) Close() error   { return nil }
