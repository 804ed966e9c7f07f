//go:build !kvbench_only || kvbench_etcd

package engines

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvbench/kvbench/drivers/go/internal/worker"
)

func init() { register(etcdDescriptor) }

// go-etcd: an etcd cluster (Raft) through etcd's official Go client. kvbench starts the
// cluster (crates/kvbench-engines/src/servers/etcdcluster.rs) or the job names one by url. A get is a
// linearizable Range (confirmed by the leader); a write batch is one Txn of Puts and Deletes
// (windows of txn_ops, etcd's --max-txn-ops); a scan is a Range over the key prefix in pages.
// Each client (one per reading and per writing goroutine) talks to one member, clients spread over the members,
// as etcd's benchmark tool does (option balance = per-request: every client round-robins).
// Durability is etcd's own: every commit is fsynced to a quorum's write-ahead log before it is
// acknowledged, whatever `sync` asks; settings say so.
var etcdDescriptor = &worker.Descriptor{
	Name:        "go-etcd",
	Description: "etcd cluster (Raft) via go.etcd.io/etcd/client/v3: linearizable Range, Txn batches, ordered range scans",
	Caps:        worker.Capabilities{OrderedScan: true, Batch: true, Persistent: true, Delete: true},
	Options: []worker.OptionSpec{
		{Name: "prefix", Kind: "text", Default: "kvb/", Doc: "prefix of every key: kvbench's namespace; the first open of a job deletes the keys under it"},
		{Name: "txn_ops", Kind: "int", Default: "128", Doc: "operations per transaction (etcd's --max-txn-ops, default 128); a larger batch is several transactions"},
		{Name: "scan_page", Kind: "int", Default: "1000", Doc: "records per Range request of a scan"},
		{Name: "timeout_ms", Kind: "int", Default: "15000", Doc: "bound of one request in ms: a request to a lost member fails after it (then a pinned client moves to the next member)"},
		{Name: "serializable", Kind: "bool", Default: "false", Doc: "serializable reads (served by any member, possibly stale) instead of linearizable"},
		{Name: "balance", Kind: "enum", Default: "per-client", Choices: []string{"per-client", "per-request"},
			Doc: "per-client: each client talks to one member, clients spread over the members (as etcd's benchmark tool); per-request: every client round-robins over all members (fails over)"},
	},
	Version:     func() string { return moduleVersion("go.etcd.io/etcd/client/v3") },
	Unavailable: available,
	Open:        openEtcd,
}

type etcdEngine struct {
	endpoints []string
	perClient bool
	clients   atomic.Uint64
	mu        sync.Mutex // guards client when a lost member makes the writer move
	client    *clientv3.Client
	prefix    []byte
	txnOps    int
	page      int
	// timeout bounds one request, so a lost member costs errors, not a hang (the client
	// retries a read against an unreachable member until the deadline).
	timeout  time.Duration
	readOpts []clientv3.OpOption
	settings map[string]string
}

// etcdEndpoints splits "http://h:p,http://h:p" (or bare h:p) into the client's endpoints.
func etcdEndpoints(url string) []string {
	var out []string
	for _, e := range strings.Split(url, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// newClient connects the next client: with per-client balance to one member (client k to
// member k mod n, the writer first), otherwise to all of them.
func (e *etcdEngine) newClient() (*clientv3.Client, error) {
	eps := e.endpoints
	if e.perClient {
		k := e.clients.Add(1) - 1
		eps = []string{e.endpoints[k%uint64(len(e.endpoints))]}
	}
	return clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
}

func openEtcd(a worker.OpenArgs) (worker.Engine, error) {
	endpoints := etcdEndpoints(a.URL)
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("go-etcd needs a cluster: kvbench starts one, or give url = \"http://HOST:PORT,...\"")
	}
	txnOps, _ := a.Options.Int("txn_ops")
	page, _ := a.Options.Int("scan_page")
	if txnOps < 1 || page < 1 {
		return nil, fmt.Errorf("go-etcd options txn_ops = %d, scan_page = %d: both must be at least 1", txnOps, page)
	}
	timeoutMs, _ := a.Options.Int("timeout_ms")
	if timeoutMs < 1 || timeoutMs > 3_600_000 {
		return nil, fmt.Errorf("go-etcd option timeout_ms = %d: must be 1 to 3600000", timeoutMs)
	}
	e := &etcdEngine{endpoints: endpoints, perClient: a.Options.Text("balance") == "per-client",
		prefix: []byte(a.Options.Text("prefix")), txnOps: int(txnOps), page: int(page), settings: map[string]string{},
		timeout: time.Duration(timeoutMs) * time.Millisecond}
	cli, err := e.newClient()
	if err != nil {
		return nil, fmt.Errorf("go-etcd: cannot connect to %s: %w", a.URL, err)
	}
	e.client = cli
	if err := e.describe(a); err != nil {
		_ = cli.Close()
		return nil, err
	}
	if err := e.clearOnce(a.Dir); err != nil {
		_ = cli.Close()
		return nil, err
	}
	return e, nil
}

func (e *etcdEngine) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.timeout)
}

// describe records the cluster and the settings in effect.
func (e *etcdEngine) describe(a worker.OpenArgs) error {
	c, cancel := e.ctx()
	defer cancel()
	ep := e.client.Endpoints()[0]
	st, err := e.client.Status(c, ep)
	if err != nil {
		return fmt.Errorf("go-etcd: status of %s: %w", ep, err)
	}
	members, err := e.client.MemberList(c)
	if err != nil {
		return fmt.Errorf("go-etcd: member list: %w", err)
	}
	s := e.settings
	s["url"] = a.URL
	s["request_timeout"] = fmt.Sprintf("%d ms", e.timeout.Milliseconds())
	s["server_version"] = st.Version
	s["members"] = fmt.Sprint(len(members.Members))
	s["durability"] = "etcd fsyncs every commit to a quorum's write-ahead log before acknowledging it"
	if a.Sync == "none" {
		s["durability"] += " (stronger than sync=none asked: etcd has no switch for it)"
	}
	s["reads"] = "linearizable Range (confirmed by the leader)"
	if a.Options.Bool("serializable") {
		e.readOpts = []clientv3.OpOption{clientv3.WithSerializable()}
		s["reads"] = "serializable Range (any member, possibly stale)"
	}
	s["balance"] = "every client round-robins over all members"
	if e.perClient {
		s["balance"] = "each client talks to one member; clients spread over the members"
	}
	s["batch"] = fmt.Sprintf("one Txn per %d operations (a larger batch is not atomic as a whole)", e.txnOps)
	s["keys"] = fmt.Sprintf("prefix %q + the key's bytes", e.prefix)
	return nil
}

// clearOnce deletes the keys under the prefix on the first open of a job (a marker file in
// the job's directory remembers it), so a reopen keeps the data.
func (e *etcdEngine) clearOnce(dir string) error {
	marker := filepath.Join(dir, ".kvbench-go-etcd-namespace")
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	c, cancel := e.ctx()
	defer cancel()
	resp, err := e.client.Delete(c, string(e.prefix), clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("go-etcd: clearing the prefix %q: %w", e.prefix, err)
	}
	e.settings["cleared"] = fmt.Sprintf("%d earlier keys under the prefix", resp.Deleted)
	return os.WriteFile(marker, e.prefix, 0o644)
}

func (e *etcdEngine) key(k []byte) string {
	return string(e.prefix) + string(k)
}

// lastWrites keeps the last write of each key, in order: etcd refuses a Txn that names a key
// twice, and the last write decides the state anyway.
func lastWrites(batch []worker.WriteOp) []worker.WriteOp {
	last := make(map[string]int, len(batch))
	for i, w := range batch {
		last[string(w.Key)] = i
	}
	if len(last) == len(batch) {
		return batch
	}
	out := make([]worker.WriteOp, 0, len(last))
	for i, w := range batch {
		if last[string(w.Key)] == i {
			out = append(out, w)
		}
	}
	return out
}

// Write is for callers without a goroutine of their own: the worker gives each writing
// goroutine its own client (Writer).
func (e *etcdEngine) Write(batch []worker.WriteOp) error {
	return e.txns(batch, e.commit)
}

// txns sends batch as Txns of at most txn_ops operations, each through commit.
func (e *etcdEngine) txns(batch []worker.WriteOp, commit func([]clientv3.Op) error) error {
	for len(batch) > 0 {
		n := min(e.txnOps, len(batch))
		ops := make([]clientv3.Op, 0, n)
		for _, w := range lastWrites(batch[:n]) {
			if w.Delete {
				ops = append(ops, clientv3.OpDelete(e.key(w.Key)))
			} else {
				ops = append(ops, clientv3.OpPut(e.key(w.Key), string(w.Value)))
			}
		}
		if err := commit(ops); err != nil {
			return err
		}
		batch = batch[n:]
	}
	return nil
}

func (e *etcdEngine) commit(ops []clientv3.Op) error {
	c, cancel := e.ctx()
	defer cancel()
	e.mu.Lock()
	cli := e.client
	e.mu.Unlock()
	err := do(c, cli, ops)
	if err != nil && e.perClient && lost(err) {
		// Move the writer to the next member; the error still counts.
		if fresh, cerr := e.newClient(); cerr == nil {
			e.mu.Lock()
			if e.client == cli {
				e.client = fresh
				fresh = nil
			}
			e.mu.Unlock()
			_ = cli.Close()
			if fresh != nil {
				_ = fresh.Close()
			}
		}
	}
	return err
}

// do sends ops as one request: a single Put or Delete, or a Txn.
func do(c context.Context, cli *clientv3.Client, ops []clientv3.Op) error {
	if len(ops) == 1 {
		_, err := cli.Do(c, ops[0])
		return err
	}
	_, err := cli.Txn(c).Then(ops...).Commit()
	return err
}

// Writer gives each writing goroutine its own client (its own gRPC connection, pinned like a
// reader's), so writers never queue on one shared connection.
func (e *etcdEngine) Writer() (worker.Writer, error) {
	cli, err := e.newClient()
	if err != nil {
		return nil, err
	}
	return &etcdWriter{etcdReader{e: e, client: cli}}, nil
}

// etcdWriter is a goroutine's client for writes; it moves to the next member as a reader does.
type etcdWriter struct{ r etcdReader }

func (w *etcdWriter) Write(batch []worker.WriteOp) error {
	return w.r.e.txns(batch, func(ops []clientv3.Op) error {
		c, cancel := w.r.e.ctx()
		defer cancel()
		return w.r.failover(do(c, w.r.client, ops))
	})
}

func (w *etcdWriter) Close() error { return w.r.client.Close() }

// Reader gives each reading goroutine its own client (its own gRPC connection), as the other
// server engines give each thread its own connection.
func (e *etcdEngine) Reader() (worker.Reader, error) {
	cli, err := e.newClient()
	if err != nil {
		return nil, err
	}
	return &etcdReader{e: e, client: cli}, nil
}

func (e *etcdEngine) FinishLoad() error { return nil }

func (e *etcdEngine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.client.Close()
}

func (e *etcdEngine) Settings() map[string]string { return e.settings }

type etcdReader struct {
	e      *etcdEngine
	client *clientv3.Client
}

// lost is true for errors that mean the member is gone, not that the request was wrong.
func lost(err error) bool {
	c := status.Code(err)
	return c == codes.Unavailable || c == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded)
}

// failover moves a reader pinned to a lost member to the next one (per-client balance; with
// per-request balance the client itself skips members that are down). The error still counts.
func (r *etcdReader) failover(err error) error {
	if err != nil && r.e.perClient && lost(err) {
		if cli, cerr := r.e.newClient(); cerr == nil {
			_ = r.client.Close()
			r.client = cli
		}
	}
	return err
}

func (r *etcdReader) Get(key []byte) ([]byte, bool, error) {
	c, cancel := r.e.ctx()
	defer cancel()
	resp, err := r.client.Get(c, r.e.key(key), r.e.readOpts...)
	if err != nil || len(resp.Kvs) == 0 {
		return nil, false, r.failover(err)
	}
	return resp.Kvs[0].Value, true, nil
}

// Scan reads pages of scan_page records from the first key >= start within the prefix.
func (r *etcdReader) Scan(start []byte, limit int, visit func(k, v []byte) bool) (int, error) {
	end := clientv3.GetPrefixRangeEnd(string(r.e.prefix))
	from := r.e.key(start)
	n := 0
	for n < limit {
		page := min(r.e.page, limit-n)
		opts := append([]clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(int64(page))}, r.e.readOpts...)
		c, cancel := r.e.ctx()
		resp, err := r.client.Get(c, from, opts...)
		cancel()
		if err != nil {
			return n, r.failover(err)
		}
		for _, kv := range resp.Kvs {
			n++
			if !visit(bytes.TrimPrefix(kv.Key, r.e.prefix), kv.Value) {
				return n, nil
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return n, nil
		}
		// The next page starts just after the last key seen.
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return n, nil
}

// Refresh does nothing: reads are linearizable (or explicitly serializable), never a snapshot.
func (r *etcdReader) Refresh() error { return nil }

func (r *etcdReader) Close() error { return r.client.Close() }
