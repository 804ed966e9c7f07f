'use strict';
// Executes a job's steps over the worker core (core.js; docs/protocol.md, "Worker core"), as
// drivers/go/internal/worker does in Go.
//
// The core derives each step and each thread's units, verifies what was read and writes the
// step events; this module opens, prepares and closes the engine and runs the engine calls of
// the blocks of units the core hands the thread, each call between two performance.now() reads.
// A block costs two calls into the core (next, done), never one per operation. Node runs
// JavaScript on one thread: an ops step of more than one thread is unsupported (N/A).

const { performance, PerformanceObserver } = require('perf_hooks');
const v8 = require('v8');
const { kindOf, describe } = require('./engine');

// Units per block: one `next` and one `done` call into the core per this many units.
const BLOCK = 512;
// A scan hands its records to the core whenever its buffer passes this size.
const SCAN_FLUSH = 1 << 20;
// An open-loop wait sleeps until this close to the due time, then spins (a sleep ends late by
// the wake-up latency, which an open loop would count as latency).
const SPIN_MS = 0.1;
const NO_UNIT = 0xffffffff;
const EMPTY = Buffer.alloc(0);
const sleeper = new Int32Array(new SharedArrayBuffer(4));

const isPromise = (x) => x !== null && typeof x === 'object' && typeof x.then === 'function';

/** Sleep until SPIN_MS before `due` (performance.now() ms), then spin. */
function waitUntil(due) {
  const left = due - performance.now();
  if (left > SPIN_MS) Atomics.wait(sleeper, 0, 0, left - SPIN_MS);
  while (performance.now() < due);
}

/** The mean cost (ns) of what the timed loop adds to a call: two clock reads and storing them. */
function calibrate(n = 50000) {
  const t = new Float64Array(2 * BLOCK);
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const j = 2 * (i & (BLOCK - 1));
    t[j] = performance.now();
    t[j + 1] = performance.now();
  }
  return ((performance.now() - start) * 1e6) / n;
}

/** Garbage collections seen by a PerformanceObserver, for the step's runtime counters. */
class GcLog {
  constructor() {
    this.entries = [];
    this.obs = new PerformanceObserver((list) => this.entries.push(...list.getEntries()));
    this.obs.observe({ entryTypes: ['gc'] });
  }
  /** Collections that started in [t0, t1] (ms): their count and pause total. Entries arrive
   *  after the event loop turns: the caller awaits a turn first. */
  between(t0, t1) {
    const inside = this.entries.filter((e) => e.startTime >= t0 && e.startTime <= t1);
    this.entries = this.entries.filter((e) => e.startTime > t1);
    return { gc_count: inside.length, gc_pause_ns: Math.round(inside.reduce((s, e) => s + e.duration, 0) * 1e6) };
  }
  close() {
    this.obs.disconnect();
  }
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** One thread of an ops step: its core thread, its reader, the blocks the core gives it. */
class Thread {
  constructor(w, th, reader, mode) {
    this.w = w;
    this.th = th;
    this.rd = reader;
    this.mode = mode;
    this.times = w.times;
    this.gotLen = w.gotLen;
    this.got = [];
    this.scanBuf = w.scanBuf;
    this.scanned = 0;
    this.stopped = false;
    this.keys = w.keys;
    this.vals = w.vals;
    this.keyBufs = w.keyBufs;
  }

  async run() {
    for (;;) {
      const b = this.th.next();
      if (b === null || b === undefined) return;
      const nk = b.keyEnd[b.units - 1];
      if (this.gotLen.length < nk) this.w.gotLen = this.gotLen = new Int32Array(2 * nk);
      this.gotLen.fill(-1, 0, nk);
      this.got.length = 0;
      this.b = b;
      const ran = b.plain ? await this.gets(b) : await this.mixed(b);
      this.done(ran);
      if (this.stopped) return;
    }
  }

  done(units) {
    const got = this.got.length === 0 ? EMPTY : this.got.length === 1 ? this.got[0] : Buffer.concat(this.got);
    this.th.done(units, this.times, got, this.gotLen);
  }

  /** An engine error; true when the thread must stop. */
  fail(u, e, at) {
    if (this.th.error(u, kindOf(e), describe(e), at)) this.stopped = true;
    return this.stopped;
  }

  /** Hands the value read for key k to the core: MATCHED when it equals what the core expects
   *  (compared now, outside the timed span), else a copy for the core to check. */
  read(k, v) {
    if (v === undefined || v === null) return;
    const b = this.b;
    if (b.expKnown[k] === 1) {
      const e0 = b.expOff[k];
      const e1 = b.expOff[k + 1];
      if (v.length === e1 - e0 && b.exp.compare(v, 0, v.length, e0, e1) === 0) {
        this.gotLen[k] = this.w.MATCHED;
        return;
      }
    }
    this.got.push(Buffer.from(v)); // a copy: an engine may reuse the buffer at its next call
    this.gotLen[k] = v.length;
  }

  /** A plain block: unit u is a get of key u, no refresh, no due time. Returns the units run. */
  async gets(b) {
    const n = b.units;
    const key = b.key;
    const off = b.keyOff;
    const rd = this.rd;
    const times = this.times;
    for (let u = 0; u < n; u++) {
      // The key copied into a buffer kept per key length, not a subarray (an allocation per
      // get): every engine copies a key in, and the next get waits for this one.
      const len = off[u + 1] - off[u];
      const k = this.keyBufs[len] || (this.keyBufs[len] = Buffer.allocUnsafe(len));
      key.copy(k, 0, off[u], off[u + 1]);
      let t0 = 0;
      let v;
      try {
        t0 = performance.now();
        v = rd.get(k);
        if (isPromise(v)) v = await v;
      } catch (e) {
        const t1 = performance.now();
        times[2 * u] = t0;
        times[2 * u + 1] = t1;
        if (this.fail(u, e, t1)) return u + 1;
        continue;
      }
      const t1 = performance.now();
      times[2 * u] = t0;
      times[2 * u + 1] = t1;
      this.read(u, v);
    }
    return n;
  }

  /** A block of any units, one at a time: refresh, wait for the due time, run. */
  async mixed(b) {
    const K = this.w.K;
    const n = b.units;
    for (let u = 0; u < n; u++) {
      const k0 = u === 0 ? 0 : b.keyEnd[u - 1];
      const k1 = b.keyEnd[u];
      let t0 = performance.now();
      try {
        if (b.refresh[u] === 1 && this.rd) {
          const r = this.rd.refresh();
          if (isPromise(r)) await r;
        }
        if (b.due[u] >= 0) waitUntil(this.origin + b.due[u]);
        t0 = performance.now(); // a unit that fails is timed from here, a little more than its call
        switch (b.kind[u]) {
          case K.GET: await this.get(u, k0); break;
          case K.MULTI_GET: await this.multiGet(u, k0, k1); break;
          case K.SCAN: await this.scan(u, k0, b.scanLen[u]); break;
          case K.WRITE: await this.write(u, k0, k1); break;
          case K.RMW: await this.rmw(u, k0); break;
          case K.OPEN_GET: await this.openGet(u, k0); break;
          default: { // WAIT: the wait was all
            const t = performance.now();
            this.times[2 * u] = t;
            this.times[2 * u + 1] = t;
          }
        }
      } catch (e) {
        const t1 = performance.now();
        this.times[2 * u] = t0;
        this.times[2 * u + 1] = t1;
        if (this.fail(u, e, t1)) return u + 1;
      }
    }
    return n;
  }

  key(i) {
    return this.b.key.subarray(this.b.keyOff[i], this.b.keyOff[i + 1]);
  }

  value(i) {
    return this.b.val.subarray(this.b.valOff[i], this.b.valOff[i + 1]);
  }

  stamp(u, t0, t1) {
    this.times[2 * u] = t0;
    this.times[2 * u + 1] = t1;
  }

  async get(u, k) {
    const key = this.key(k);
    const t0 = performance.now();
    let v = this.rd.get(key);
    if (isPromise(v)) v = await v;
    this.stamp(u, t0, performance.now());
    this.read(k, v);
  }

  /** One request: the engine's own multi-get, else gets in a loop. */
  async multiGet(u, k0, k1) {
    const keys = this.keys;
    keys.length = 0;
    for (let i = k0; i < k1; i++) keys.push(this.key(i));
    const rd = this.rd;
    if (rd.multiGet) {
      const t0 = performance.now();
      let vs = rd.multiGet(keys);
      if (isPromise(vs)) vs = await vs;
      this.stamp(u, t0, performance.now());
      if (vs.length !== keys.length) throw new Error(`multiGet returned ${vs.length} values for ${keys.length} keys`);
      for (let i = 0; i < keys.length; i++) this.read(k0 + i, vs[i]);
      return;
    }
    const t0 = performance.now();
    for (let i = 0; i < keys.length; i++) {
      let v = rd.get(keys[i]);
      if (isPromise(v)) v = await v;
      this.read(k0 + i, v);
    }
    this.stamp(u, t0, performance.now());
  }

  /** Visits up to `limit` records from the unit's key into a buffer the core checks (u32le key
   *  length, key, u32le value length, value); a full buffer is handed over inside the timing,
   *  the rest after it. */
  async scan(u, k, limit) {
    const key = this.key(k);
    this.scanned = 0;
    const t0 = performance.now();
    let r = this.rd.scan(key, limit, this.visit);
    if (isPromise(r)) r = await r;
    this.stamp(u, t0, performance.now());
    this.flushScan();
  }

  visit = (k, v) => {
    const need = this.scanned + 8 + k.length + v.length;
    if (need > this.scanBuf.length) this.w.scanBuf = this.scanBuf = grow(this.scanBuf, this.scanned, need);
    let o = this.scanned;
    o = this.scanBuf.writeUInt32LE(k.length, o);
    o += k.copy(this.scanBuf, o);
    o = this.scanBuf.writeUInt32LE(v.length, o);
    o += v.copy(this.scanBuf, o);
    this.scanned = o;
    if (o >= SCAN_FLUSH) this.flushScan();
    return true;
  };

  flushScan() {
    this.th.scan(this.scanBuf, this.scanned);
    this.scanned = 0;
  }

  /** One batch of the unit's keys (vals[i] null: delete keys[i]). */
  async write(u, k0, k1) {
    const { keys, vals } = this;
    const n = k1 - k0;
    keys.length = n;
    vals.length = n;
    for (let i = 0; i < n; i++) {
      keys[i] = this.key(k0 + i);
      vals[i] = this.b.del[k0 + i] === 1 ? null : this.value(k0 + i);
    }
    const eng = this.w.eng;
    const t0 = performance.now();
    const r = eng.write(keys, vals, n);
    if (isPromise(r)) await r;
    this.stamp(u, t0, performance.now());
  }

  /** Reads the key, refreshes the reader and writes the unit's value, timed together. The value
   *  read is copied (read) before the write. */
  async rmw(u, k) {
    const { keys, vals } = this;
    keys.length = 1;
    vals.length = 1;
    keys[0] = this.key(k);
    vals[0] = this.value(k);
    const eng = this.w.eng;
    const t0 = performance.now();
    let v = this.rd.get(keys[0]);
    if (isPromise(v)) v = await v;
    this.read(k, v);
    let r = this.rd.refresh();
    if (isPromise(r)) await r;
    r = eng.write(keys, vals, 1);
    if (isPromise(r)) await r;
    this.stamp(u, t0, performance.now());
  }

  /** The article 000 method: open the engine, read one key, close it, timed together. */
  async openGet(u, k) {
    const key = this.key(k);
    const t0 = performance.now();
    let e = this.w.desc.open(this.w.args(this.mode));
    if (isPromise(e)) e = await e;
    let err = null;
    try {
      let rd = e.reader();
      if (isPromise(rd)) rd = await rd;
      try {
        let v = rd.get(key);
        if (isPromise(v)) v = await v;
        this.read(k, v);
      } finally {
        const r = rd.close();
        if (isPromise(r)) await r;
      }
    } catch (x) {
      err = x;
    }
    const r = e.close();
    if (isPromise(r)) await r;
    this.stamp(u, t0, performance.now());
    if (err) throw err;
  }
}

function grow(buf, used, need) {
  const b = Buffer.allocUnsafe(Math.max(need, 2 * buf.length));
  buf.copy(b, 0, 0, used);
  return b;
}

/** The engine of one job and the steps the core hands it. */
class Worker {
  constructor(addon, job, spec, desc, options) {
    this.job = job;
    this.spec = spec;
    this.desc = desc;
    this.options = options;
    this.eng = null;
    this.K = {};
    for (const name of ['END', 'OPEN', 'PREPARE', 'CLOSE', 'EVICTED', 'OPS', 'SETTLE', 'READ_WRITE', 'READ_ONLY',
      'SECONDARY', 'GET', 'MULTI_GET', 'SCAN', 'WRITE', 'RMW', 'OPEN_GET', 'WAIT', 'MATCHED']) {
      this.K[name] = addon.KVB[`KVB_${name}`];
    }
    this.MATCHED = this.K.MATCHED;
    this.modes = { [this.K.READ_WRITE]: 'read-write', [this.K.READ_ONLY]: 'read-only', [this.K.SECONDARY]: 'secondary' };
    // Buffers kept from one ops step to the next: what a step allocates is the engine's.
    this.times = new Float64Array(2 * BLOCK);
    this.gotLen = new Int32Array(4 * BLOCK);
    this.scanBuf = Buffer.allocUnsafe(64 << 10);
    this.keys = [];
    this.vals = [];
    this.keyBufs = [];
    this.gc = new GcLog();
  }

  args(mode) {
    const j = this.spec;
    const ds = j.dataset || {};
    return {
      dir: j.dir, options: this.options, sync: j.sync, mode, expectedRecords: ds.open_records || 0,
      expectedBytes: ds.open_bytes || 0, url: j.url || null, token: j.token || null,
    };
  }

  async run() {
    const K = this.K;
    try {
      for (;;) {
        const t0 = performance.now();
        const s = this.job.stepBegin();
        if (s.step === K.END) break;
        const rep = { wallNs: 0 };
        if (s.step === K.EVICTED) rep.wallNs = (performance.now() - t0) * 1e6; // the core evicted just now
        await this.step(s, rep);
        await this.internals(rep);
        if (this.job.stepEnd(rep)) break;
      }
      if (this.eng !== null) await this.eng.close(); // a job that stopped early: close what is open, untimed
    } finally {
      this.gc.close();
    }
  }

  async step(s, rep) {
    const K = this.K;
    const t0 = performance.now();
    const heap0 = v8.getHeapStatistics();
    try {
      switch (s.step) {
        case K.OPEN: await this.open(s, rep); break;
        case K.PREPARE: await this.prepare(rep); break;
        case K.CLOSE: await this.close(); break;
        case K.SETTLE: await this.settle(rep); break;
        case K.OPS: await this.ops(s, rep); break;
        default:
      }
    } catch (e) {
      rep.error = describe(e);
      rep.errorKind = kindOf(e);
    }
    const t1 = performance.now();
    if (!rep.wallNs) rep.wallNs = (t1 - t0) * 1e6;
    await turn(); // the gc entries of the step arrive after a turn of the event loop
    const heap1 = v8.getHeapStatistics();
    rep.runtime = JSON.stringify({
      ...this.gc.between(rep.opsStart ?? t0, t1), heap_used_bytes: heap1.used_heap_size,
      heap_total_bytes: heap1.total_heap_size, external_bytes: heap1.external_memory ?? 0,
      heap_used_delta_bytes: heap1.used_heap_size - heap0.used_heap_size,
    });
    delete rep.opsStart;
  }

  /** The engine's counters at the step's end, after its clock. */
  async internals(rep) {
    if (this.eng === null || typeof this.eng.internals !== 'function') return;
    try {
      let v = this.eng.internals();
      if (isPromise(v)) v = await v;
      if (v && Object.keys(v).length > 0) rep.internals = JSON.stringify(v);
    } catch {
      // optional counters: a store that cannot give them gives none
    }
  }

  async open(s, rep) {
    if (this.eng !== null) throw new Error('the engine is already open');
    const t0 = performance.now();
    let e = this.desc.open(this.args(this.modes[s.mode]));
    if (isPromise(e)) e = await e;
    rep.wallNs = (performance.now() - t0) * 1e6;
    this.eng = e;
    rep.settings = settingsJson(e);
  }

  async prepare(rep) {
    if (this.eng === null) throw new Error('prepare: the engine is not open');
    if (typeof this.eng.prepare !== 'function') return;
    const r = this.eng.prepare();
    if (isPromise(r)) await r;
    rep.settings = settingsJson(this.eng); // what prepare applied is what the phases run with
  }

  async close() {
    if (this.eng === null) throw new Error('close: the engine is not open');
    const e = this.eng;
    this.eng = null;
    const r = e.close();
    if (isPromise(r)) await r;
  }

  async settle(rep) {
    if (this.eng === null) throw new Error('settle: the engine is not open');
    if (typeof this.eng.settle !== 'function') {
      const { Unsupported } = require('./engine');
      throw new Unsupported('this engine has no settle (flush and compact) step');
    }
    let done = this.eng.settle();
    if (isPromise(done)) done = await done;
    rep.settled = String(done);
  }

  /** An ops step on this thread. More than one thread: unsupported (each thread says so). */
  async ops(s, rep) {
    const mode = this.modes[s.mode];
    if (s.threads > 1) return this.oneThreadOnly(s);
    const th = this.job.thread(0, BLOCK);
    if (!th) throw new Error('thread: no ops step is running');
    let reader = null;
    let thread = null;
    try {
      if (this.eng === null && !s.openPerOp) throw new Error('ops step: the engine is not open');
      if (s.reads && !s.openPerOp) {
        reader = this.eng.reader();
        if (isPromise(reader)) reader = await reader;
      }
      thread = new Thread(this, th, reader, mode);
    } catch (e) {
      th.error(NO_UNIT, kindOf(e), describe(e), performance.now());
    }
    const start = performance.now();
    rep.startUnixMs = performance.timeOrigin + start;
    rep.opsStart = start;
    th.setOrigin(start);
    if (thread) {
      thread.origin = start;
      await thread.run();
    }
    if (reader) {
      try {
        const r = reader.close();
        if (isPromise(r)) await r;
      } catch (e) {
        th.error(NO_UNIT, kindOf(e), describe(e), performance.now());
      }
    }
    th.end();
    if (this.job.finishDue()) {
      const t0 = performance.now();
      try {
        const r = this.eng.finishLoad();
        if (isPromise(r)) await r;
      } catch (e) {
        rep.finishError = describe(e);
      }
      rep.finishNs = (performance.now() - t0) * 1e6;
    }
    rep.wallNs = (performance.now() - start) * 1e6;
  }

  oneThreadOnly(s) {
    const msg = `the Node worker runs one JavaScript thread: a step of ${s.threads} threads cannot run`;
    for (let t = 0; t < s.threads; t++) {
      const th = this.job.thread(t, BLOCK);
      if (!th) continue;
      th.error(NO_UNIT, 'unsupported', msg, 0);
      th.end();
    }
  }
}

function settingsJson(e) {
  const s = e.settings();
  return JSON.stringify(Object.fromEntries(Object.keys(s).sort().map((k) => [k, String(s[k])])));
}

module.exports = { Worker, calibrate, BLOCK };
