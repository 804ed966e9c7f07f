package engines

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

// The engines' tests run go-etcd against a real 3-member cluster started here from the
// system's etcd (kvbench itself starts it from Rust: crates/kvbench-engines/src/servers/etcdcluster.rs).
// Without etcd installed the go-etcd subtests are skipped with the reason.

// testCluster is a 3-member etcd cluster started by a test.
type testCluster struct {
	url  string
	dir  string
	cmds []*exec.Cmd
}

func (c *testCluster) stop() {
	for _, cmd := range c.cmds {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// The cluster the engines' shared tests use, started on first need.
var etcdTest struct {
	once sync.Once
	c    *testCluster
	why  string
}

// loopbackPorts returns n distinct free loopback ports (listeners held until all are chosen).
func loopbackPorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startEtcd starts 3 members; on failure the reason (etcd missing, not healthy in time).
func startEtcd() (*testCluster, string) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, "etcd is not installed (apt-get install etcd-server): go-etcd is not tested"
	}
	dir, err := os.MkdirTemp("", "kvbench-go-etcd-")
	if err != nil {
		return nil, err.Error()
	}
	c := &testCluster{dir: dir}
	ports, err := loopbackPorts(6)
	if err != nil {
		return nil, err.Error()
	}
	var initial, clients []string
	for i := 0; i < 3; i++ {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i+1]))
		clients = append(clients, fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]))
	}
	for i := 0; i < 3; i++ {
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		cmd := exec.Command(bin, "--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(dir, fmt.Sprint(i)),
			"--listen-client-urls", clients[i], "--advertise-client-urls", clients[i],
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new")
		log, err := os.Create(filepath.Join(dir, fmt.Sprintf("m%d.log", i)))
		if err != nil {
			c.stop()
			return nil, err.Error()
		}
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			c.stop()
			return nil, err.Error()
		}
		c.cmds = append(c.cmds, cmd)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, ep := range clients {
		for !healthy(ep) {
			if time.Now().After(deadline) {
				c.stop()
				return nil, "etcd cluster not healthy within 30 s"
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	c.url = strings.Join(clients, ",")
	return c, ""
}

func healthy(endpoint string) bool {
	resp, err := http.Get(endpoint + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return strings.Contains(strings.ReplaceAll(buf.String(), " ", ""), `"health":"true"`)
}

// serverURL is the url an engine's test opens with: the test cluster for go-etcd (skipping the
// test when etcd is missing), "" for the embedded engines.
func serverURL(t *testing.T, engine string) string {
	if engine != "go-etcd" {
		return ""
	}
	etcdTest.once.Do(func() { etcdTest.c, etcdTest.why = startEtcd() })
	if etcdTest.c == nil {
		fmt.Println("skip:", etcdTest.why)
		t.Skip(etcdTest.why)
	}
	return etcdTest.c.url
}

func TestMain(m *testing.M) {
	code := m.Run()
	if etcdTest.c != nil {
		etcdTest.c.stop()
	}
	os.Exit(code)
}

// A member crashes (SIGKILL): the writer, pinned to it, gets errors, moves to the next member
// and writes again within the request timeout; reads from the others go on; nothing is lost.
func TestEtcdSurvivesACrashedMember(t *testing.T) {
	serverURL(t, "go-etcd") // skips without etcd
	c, why := startEtcd()
	if c == nil {
		t.Fatal(why)
	}
	defer c.stop()
	o := resolved(t, etcdDescriptor, nil)
	e, err := etcdDescriptor.Open(worker.OpenArgs{Dir: t.TempDir(), Options: o, Sync: "commit", Mode: "read-write", URL: c.url})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Write([]worker.WriteOp{{Key: []byte("before"), Value: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	_ = c.cmds[0].Process.Kill() // the writer's member (clients are spread from member 0)
	t0, failed := time.Now(), 0
	for e.Write([]worker.WriteOp{{Key: []byte("after"), Value: []byte("2")}}) != nil {
		failed++
		if time.Since(t0) > 40*time.Second {
			t.Fatalf("no write succeeded within 40 s of the crash (%d failed)", failed)
		}
	}
	t.Logf("crash: %d failed writes, writing again after %.1f s", failed, time.Since(t0).Seconds())
	r, err := e.Reader() // the next member in the rotation, alive
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, k := range []string{"before", "after"} {
		if _, ok, err := r.Get([]byte(k)); err != nil || !ok {
			t.Fatalf("%s after the crash: found %v, %v", k, ok, err)
		}
	}
}

// Batches larger than a transaction, duplicate keys inside one batch (etcd refuses them in one
// Txn), scans that cross pages, and the namespace cleared on a job's first open only.
func TestEtcdBatchesScansAndNamespace(t *testing.T) {
	url := serverURL(t, "go-etcd")
	o := resolved(t, etcdDescriptor, map[string]any{"scan_page": json.Number("7"), "txn_ops": json.Number("5")})
	dir := t.TempDir()
	args := worker.OpenArgs{Dir: dir, Options: o, Sync: "none", Mode: "read-write", URL: url}
	e, err := etcdDescriptor.Open(args)
	if err != nil {
		t.Fatal(err)
	}
	var batch []worker.WriteOp
	for i := 0; i < 23; i++ {
		batch = append(batch, worker.WriteOp{Key: []byte(fmt.Sprintf("s%02d", i)), Value: []byte("old")})
	}
	// The same key twice in one transaction window: the last write wins.
	batch = append(batch, worker.WriteOp{Key: []byte("s00"), Value: []byte("new")}, worker.WriteOp{Key: []byte("s22"), Delete: true})
	if err := e.Write(batch); err != nil {
		t.Fatal(err)
	}
	r, err := e.Reader()
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := r.Get([]byte("s00")); err != nil || !ok || string(v) != "new" {
		t.Fatalf("s00 = %q %v %v", v, ok, err)
	}
	var keys []string
	n, err := r.Scan([]byte("s03"), 100, func(k, _ []byte) bool { keys = append(keys, string(k)); return true })
	if err != nil || n != 19 || keys[0] != "s03" || keys[18] != "s21" {
		t.Fatalf("scan from s03: %d %v %v", n, keys, err)
	}
	if s := e.Settings(); !strings.Contains(s["durability"], "fsyncs every commit") || s["members"] != "3" {
		t.Fatalf("settings %v", s)
	}
	_ = r.Close()
	_ = e.Close()
	// A reopen in the same job keeps the data; a new job's first open clears it.
	for _, c := range []struct {
		dir  string
		want bool
	}{{dir, true}, {t.TempDir(), false}} {
		e, err := etcdDescriptor.Open(worker.OpenArgs{Dir: c.dir, Options: o, Sync: "none", Mode: "read-write", URL: url})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := e.Reader()
		_, ok, err := r.Get([]byte("s05"))
		if err != nil || ok != c.want {
			t.Fatalf("dir %s: found %v, want %v (%v)", c.dir, ok, c.want, err)
		}
		_ = r.Close()
		_ = e.Close()
	}
	if _, err := etcdDescriptor.Open(worker.OpenArgs{Dir: dir, Options: o, Sync: "none", Mode: "read-write"}); err == nil ||
		!strings.Contains(err.Error(), "needs a cluster") {
		t.Fatalf("open without url: %v", err)
	}
}

// Each writing goroutine gets a client of its own (issue 32 item 4), pinned to a member of its
// own, and what one writes the others read.
func TestEtcdWritersHaveClientsOfTheirOwn(t *testing.T) {
	url := serverURL(t, "go-etcd")
	o := resolved(t, etcdDescriptor, nil)
	e, err := etcdDescriptor.Open(worker.OpenArgs{Dir: t.TempDir(), Options: o, Sync: "none", Mode: "read-write", URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var ws [2]*etcdWriter
	for i := range ws {
		w, err := e.(worker.WriterOpener).Writer()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ws[i] = w.(*etcdWriter)
		key := []byte(fmt.Sprintf("writer%d", i))
		if err := w.Write([]worker.WriteOp{{Key: key, Value: key}}); err != nil {
			t.Fatal(err)
		}
	}
	shared := e.(*etcdEngine).client
	if ws[0].r.client == ws[1].r.client || ws[0].r.client == shared {
		t.Fatal("writers share a client")
	}
	if a, b := ws[0].r.client.Endpoints(), ws[1].r.client.Endpoints(); len(a) != 1 || (len(e.(*etcdEngine).endpoints) > 1 && a[0] == b[0]) {
		t.Fatalf("writers are not pinned to members of their own: %v and %v", a, b)
	}
	r, err := e.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range ws {
		key := []byte(fmt.Sprintf("writer%d", i))
		if v, ok, err := r.Get(key); err != nil || !ok || !bytes.Equal(v, key) {
			t.Fatalf("%s: %q found %v, %v", key, v, ok, err)
		}
	}
}
