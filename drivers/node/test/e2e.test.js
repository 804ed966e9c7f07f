'use strict';
// End to end: the Go worker's every-step job (drivers/go/testdata/every-step.json: every step
// and op kind) through `bin/kvbench-node-worker --job` on every Node engine, asserting the raw
// counters the core reports (every read verified, exact counts of what was done).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { registry, find } = require('../lib/engines');
const { capNames } = require('../lib/engine');

const WORKER = path.join(__dirname, '..', 'bin', 'kvbench-node-worker');
const TESTDATA = path.join(__dirname, '..', '..', 'go', 'testdata');

function tmp(t) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'kvbench-node-e2e-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

/** every-step.json for `engine`, one thread per step (Node runs JavaScript on one thread), its
 *  read-only steps read-write for an engine without read-only opens; then `edit`. */
function everyStep(dir, engine, options = {}, edit = () => {}) {
  // Seeds are u64: kept as text through JavaScript's doubles (see run).
  const text = fs.readFileSync(path.join(TESTDATA, 'every-step.json'), 'utf8').replace(/([:[,\s])(\d{16,})(?=[\s,\]}])/g, '$1"u64:$2"');
  const job = JSON.parse(text);
  const desc = find(engine);
  job.dir = path.join(dir, 'db');
  fs.mkdirSync(job.dir);
  job.engine = job.label = engine;
  job.options = Object.fromEntries(desc.options.map((o) => [o.name, options[o.name] ?? null]));
  for (const s of job.steps) {
    if (s.threads) s.threads = 1;
    if (s.mode === 'read-only' && !desc.caps.readOnlyOpen) s.mode = 'read-write';
  }
  edit(job);
  return job;
}

function run(dir, job) {
  const file = path.join(dir, 'job.json');
  fs.writeFileSync(file, JSON.stringify(job).replace(/"u64:(\d+)"/g, '$1'));
  const out = spawnSync(WORKER, ['--job', file], { encoding: 'utf8', timeout: 120000 });
  const events = out.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  return { status: out.status, stderr: out.stderr, events, steps: events.filter((e) => e.event === 'step') };
}

/** Timed units of an ops step: batches for writes, requests for multi-get. */
function units(s) {
  const b = Math.max(s.batch || 1, 1);
  if (['load', 'update', 'insert', 'delete'].includes(s.kind)) return Math.ceil(s.count / b);
  if (s.kind === 'multi-get') return Math.floor(s.count / Math.max(s.keys_per_request || 1, 1));
  return s.count;
}

for (const desc of registry) {
  const skip = process.env.KVBENCH_NODE_REQUIRE_ENGINES === '1' ? false : desc.unavailable() || false;
  test(`every step and op kind, every read verified: ${desc.name}`, { skip }, (t) => {
    const dir = tmp(t);
    const job = everyStep(dir, desc.name);
    const r = run(dir, job);
    assert.equal(r.status, 0, `${r.stderr}\n${JSON.stringify(r.events.at(-1))}`);
    const hello = r.events[0];
    assert.equal(hello.event, 'hello');
    assert.deepEqual(hello.capabilities, capNames(desc.caps));
    assert.ok(hello.timer_overhead_ns > 0 && hello.timer_overhead_ns < 1e6, `timer_overhead_ns ${hello.timer_overhead_ns}`);
    assert.deepEqual(r.events.at(-1), { event: 'done' });
    assert.deepEqual(r.steps.map((s) => s.index), job.steps.map((_, i) => i));
    for (const [i, s] of job.steps.entries()) {
      const e = r.steps[i];
      const where = `step ${i} ${s.step} ${s.name || ''}`;
      assert.equal(e.error, null, `${where}: ${e.error}`);
      assert.deepEqual([e.errors ?? 0, e.mismatches ?? 0, e.missing ?? 0], [0, 0, 0], where);
      if (s.step === 'evict' && desc.caps.persistent) assert.ok(e.evicted > 0, `${where}: no file evicted`);
      if (s.step !== 'ops') continue;
      assert.equal(e.requests, units(s), `${where}: requests`);
      if (s.kind !== 'scan' && s.kind !== 'mixed') assert.equal(e.ops, s.count, `${where}: ops`);
      assert.ok(Object.keys(e.hist).length > 0 && e.intervals.length > 0, `${where}: histograms and intervals`);
      assert.ok(e.runtime && 'gc_count' in e.runtime && 'heap_used_bytes' in e.runtime, `${where}: runtime counters`);
    }
  });
}

test('a wrong value is counted as a mismatch, exactly as many as the engine returned', (t) => {
  const dir = tmp(t);
  const job = everyStep(dir, 'node-memory', { corrupt_every: 7 }, (j) => {
    j.steps = [j.steps[0], ...j.steps.filter((s) => ['load', 'get'].includes(s.name))];
    j.steps.forEach((s, i) => { s.index = i; });
  });
  const r = run(dir, job);
  assert.equal(r.status, 0, r.stderr);
  const get = r.steps.at(-1);
  assert.equal(get.mismatches, Math.floor(2000 / 7));
  assert.equal(get.missing, 0);
});

test('a step of two threads is unsupported (N/A), and the job goes on', (t) => {
  const dir = tmp(t);
  const job = everyStep(dir, 'node-memory', {}, (j) => {
    j.steps = [j.steps[0], ...j.steps.filter((s) => ['load', 'get', 'multi-get'].includes(s.name))];
    j.steps.forEach((s, i) => { s.index = i; });
    j.steps[2].threads = 2;
  });
  const r = run(dir, job);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.steps[2].error_kind, 'unsupported');
  assert.match(r.steps[2].first_error, /one JavaScript thread/);
  assert.equal(r.steps[2].requests, 0);
  assert.equal(r.steps[3].error, null);
  assert.equal(r.steps[3].requests, 100);
  assert.equal(r.steps[3].mismatches + r.steps[3].missing, 0);
});

test('--list names every engine with its options, available or why not', () => {
  const out = spawnSync(WORKER, ['--list'], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  const list = JSON.parse(out.stdout);
  assert.deepEqual(list.map((e) => e.name), ['node-better-sqlite3', 'node-classic-level', 'node-lmdb', 'node-memory', 'node-rocksdb']);
  for (const e of list) {
    assert.ok(e.available || e.why, `${e.name}: unavailable without a reason`);
    for (const o of e.options) assert.ok(['bool', 'int', 'enum', 'text'].includes(o.kind), `${e.name}.${o.name}: kind ${o.kind}`);
  }
});

test('a bad command line exits 2; a bad job file is an error event naming it', (t) => {
  assert.equal(spawnSync(WORKER, ['--nope'], { encoding: 'utf8' }).status, 2);
  const dir = tmp(t);
  const file = path.join(dir, 'job.json');
  fs.writeFileSync(file, '{"protocol": 4, "engine": ');
  const out = spawnSync(WORKER, ['--job', file], { encoding: 'utf8' });
  assert.equal(out.status, 1);
  const ev = JSON.parse(out.stdout.trim().split('\n').at(-1));
  assert.equal(ev.event, 'error');
  assert.match(ev.message, /job\.json/);
});
