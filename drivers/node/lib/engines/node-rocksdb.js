'use strict';
// `node-rocksdb`: RocksDB through the npm package `rocksdb` (the Level project's binding, with
// the RocksDB it bundles and ships prebuilt for linux-x64: not Debian's 7.8.3 that the Rust and
// Go rows link).
//
// Its API is abstract-leveldown's: callbacks, so each call here is wrapped in a promise the
// runner awaits inside the timing, as a user of the callback API awaits it. Keys and values as
// Buffers (asBuffer). A get is `db.get`, a batch of more than one write one `db.batch(ops,
// { sync })`, a multi-get `db.getMany`, a scan an iterator from the key (the binding fetches
// records in pages and hands them out one `next` at a time). `sync = none`: no fsync; otherwise
// each write is synced. Readers read the latest state (no snapshot). Read-only open: the
// binding's `readOnly`; no secondary open.
const { OptionError, Unsupported, packageVersion, loads, syncSetting } = require('../engine');

const AS_BUFFER = { asBuffer: true };
const NOT_FOUND = /^NotFound/;

/** The callback API's call as a promise: fn(...args, cb). */
function call(fn, self, ...args) {
  return new Promise((resolve, reject) => {
    fn.call(self, ...args, (err, v) => (err ? reject(err) : resolve(v)));
  });
}

class Reader {
  constructor(db) {
    this.db = db;
  }
  get(key) {
    return new Promise((resolve, reject) => {
      this.db.get(key, AS_BUFFER, (err, v) => {
        if (!err) resolve(v);
        else if (NOT_FOUND.test(err.message)) resolve(undefined);
        else reject(err);
      });
    });
  }
  multiGet(keys) {
    return call(this.db.getMany, this.db, keys, AS_BUFFER);
  }
  async scan(start, limit, visit) {
    const it = this.db.iterator({ gte: start, limit: limit > Number.MAX_SAFE_INTEGER ? -1 : limit, keyAsBuffer: true, valueAsBuffer: true });
    const next = () => new Promise((resolve, reject) => it.next((err, k, v) => (err ? reject(err) : resolve([k, v]))));
    let n = 0;
    try {
      for (;;) {
        const [k, v] = await next();
        if (k === undefined) break;
        visit(k, v);
        n++;
      }
    } finally {
      await call(it.end, it);
    }
    return n;
  }
  refresh() {}
  close() {}
}

/** The binding's open options for the row's options (a wrong value is an OptionError). */
function openOptions(args) {
  const o = args.options;
  const compression = o.text('compression') || 'snappy';
  if (compression !== 'snappy' && compression !== 'none') {
    throw new OptionError(`node-rocksdb compression: snappy or none (the binding has no other), got ${compression}`);
  }
  const sizes = {};
  for (const [name, binding, min] of [['block_cache', 'cacheSize', 0], ['write_buffer', 'writeBufferSize', 1]]) {
    const n = o.int(name);
    if (n === undefined) continue;
    // The binding reads these as 32-bit unsigned integers.
    if (n < min || n > 0xffffffff) throw new OptionError(`node-rocksdb ${name} must be ${min} to 4294967295 bytes, got ${n}`);
    sizes[binding] = n;
  }
  return { compression, open: { createIfMissing: args.mode === 'read-write', readOnly: args.mode === 'read-only', compression: compression === 'snappy', ...sizes } };
}

class Rocks {
  constructor(args) {
    if (args.mode === 'secondary') throw new Unsupported('secondary open (the binding has none)');
    const { compression, open } = openOptions(args);
    this.compression = compression;
    this.openOpts = open;
    this.mode = args.mode;
    this.sync = args.sync;
    this.writeOpts = { sync: args.sync !== 'none' };
    this.db = require('rocksdb')(args.dir);
    this.ops = [];
  }
  async opened() {
    await call(this.db.open, this.db, this.openOpts);
    return this;
  }
  write(keys, vals, n) {
    if (this.mode !== 'read-write') return Promise.reject(new Error(`node-rocksdb: opened ${this.mode}, cannot write`));
    if (n === 1) {
      return vals[0] === null ? call(this.db.del, this.db, keys[0], this.writeOpts) : call(this.db.put, this.db, keys[0], vals[0], this.writeOpts);
    }
    const ops = this.ops;
    ops.length = n;
    for (let i = 0; i < n; i++) {
      ops[i] = vals[i] === null ? { type: 'del', key: keys[i] } : { type: 'put', key: keys[i], value: vals[i] };
    }
    return call(this.db.batch, this.db, ops, this.writeOpts);
  }
  reader() {
    return new Reader(this.db);
  }
  finishLoad() {}
  async settle() {
    if (this.mode !== 'read-write') throw new Unsupported(`settle of a ${this.mode} open`);
    await call(this.db.compactRange, this.db, Buffer.alloc(1, 0), Buffer.alloc(256, 0xff));
    return `compactRange over every key (RocksDB flushes its memtable first); ${this.db.getProperty('rocksdb.num-files-at-level0')} files at L0 after`;
  }
  internals() {
    const out = {};
    const l0 = Number(this.db.getProperty('rocksdb.num-files-at-level0'));
    if (Number.isFinite(l0)) out['rocksdb.l0.files'] = l0;
    return out;
  }
  close() {
    return call(this.db.close, this.db);
  }
  settings() {
    const o = this.openOpts;
    return {
      sync: syncSetting(this.sync, 'write sync: false (no fsync)', 'write sync: true (WAL fsync per write)', 'write sync: true (WAL fsync per write)'),
      get: 'db.get with a callback, awaited (a promise per get)',
      write_batch: '1: put/del; more: db.batch(ops)',
      multi_get: 'db.getMany (one call; the binding loops over RocksDB Get)',
      compression: this.compression,
      block_cache: o.cacheSize === undefined ? 'binding default (8 MiB LRU)' : o.cacheSize === 0 ? 'disabled' : `${o.cacheSize} bytes LRU`,
      write_buffer: o.writeBufferSize === undefined ? 'binding default (4 MiB)' : `${o.writeBufferSize} bytes`,
      bloom_filter: '10 bits/key (the binding always sets it)',
      open_mode: o.readOnly ? 'read-only (readOnly: true)' : 'read-write',
      binding: version(),
    };
  }
}

/** The RocksDB the package bundles, from its own headers (the binding reports none at run time). */
function bundledRocksdb() {
  try {
    const path = require('path');
    const fs = require('fs');
    const dir = path.dirname(require.resolve('rocksdb'));
    const h = fs.readFileSync(path.join(dir, 'deps/rocksdb/rocksdb/include/rocksdb/version.h'), 'utf8');
    const part = (name) => (h.match(new RegExp(`#define ROCKSDB_${name} (\\d+)`)) || [])[1];
    return `RocksDB ${part('MAJOR')}.${part('MINOR')}.${part('PATCH')}`;
  } catch {
    return 'RocksDB (bundled; version not found)';
  }
}

function version() {
  return `${bundledRocksdb()} inside rocksdb ${packageVersion('rocksdb')} (npm, prebuilt)`;
}

module.exports = {
  name: 'node-rocksdb',
  description: 'RocksDB through the npm package rocksdb (the Level project\'s binding, its bundled RocksDB)',
  async: true,
  caps: { orderedScan: true, multiGet: true, batch: true, readOnlyOpen: true, persistent: true, delete: true },
  options: [
    { name: 'compression', kind: 'enum', default: 'snappy', doc: 'block compression of SST files (the binding offers snappy or none)', choices: ['none', 'snappy'] },
    { name: 'block_cache', kind: 'int', default: '', doc: 'LRU block cache capacity in bytes; 0 disables it (cacheSize; default: the binding\'s 8 MiB)' },
    { name: 'write_buffer', kind: 'int', default: '', doc: 'memtable size in bytes (writeBufferSize; default: the binding\'s 4 MiB, not RocksDB\'s 64 MiB)' },
  ],
  version,
  unavailable: () => loads('rocksdb'),
  open: (args) => new Rocks(args).opened(),
};
