'use strict';
// `node-classic-level`: LevelDB through classic-level (the Level project's binding, with its
// bundled LevelDB).
//
// Keys and values as Buffers (keyEncoding/valueEncoding 'buffer'). Its API is promises: a get is
// `await db.get(key)` (option `get = "sync"`: `db.getSync`, classic-level 3's synchronous
// read), a write batch one `await db.batch(ops, { sync })`, a multi-get `await db.getMany`, a
// scan an iterator from the key (`nextv` in pages). `sync = none`: no fsync; otherwise each batch
// is written with sync: true. Readers read the latest state (no snapshot): refresh has nothing
// to do. LevelDB has no read-only or secondary open.
const { OptionError, Unsupported, packageVersion, loads, syncSetting } = require('../engine');

const SCAN_PAGE = 1000;
const AS_BUFFERS = { keyEncoding: 'buffer', valueEncoding: 'buffer' };

class Reader {
  constructor(e) {
    this.db = e.db;
    if (e.syncGet) this.get = (key) => this.db.getSync(key, AS_BUFFERS);
  }
  get(key) {
    return this.db.get(key, AS_BUFFERS);
  }
  multiGet(keys) {
    return this.db.getMany(keys, AS_BUFFERS);
  }
  async scan(start, limit, visit) {
    const it = this.db.iterator({ gte: start, limit: limit > Number.MAX_SAFE_INTEGER ? -1 : limit, ...AS_BUFFERS });
    let n = 0;
    try {
      for (;;) {
        const page = await it.nextv(SCAN_PAGE);
        if (page.length === 0) break;
        for (const [k, v] of page) visit(k, v);
        n += page.length;
      }
    } finally {
      await it.close();
    }
    return n;
  }
  refresh() {}
  close() {}
}

class ClassicLevel {
  constructor(args) {
    if (args.mode !== 'read-write') throw new Unsupported(`${args.mode} open (LevelDB has none)`);
    const o = args.options;
    const get = o.text('get') || 'async';
    if (get !== 'async' && get !== 'sync') throw new OptionError(`node-classic-level get: async or sync, got ${get}`);
    this.syncGet = get === 'sync';
    this.compression = o.text('compression') || 'snappy';
    if (this.compression !== 'snappy' && this.compression !== 'none') {
      throw new OptionError(`node-classic-level compression: snappy or none, got ${this.compression}`);
    }
    this.cacheSize = o.int('block_cache');
    if (this.cacheSize !== undefined && this.cacheSize <= 0) throw new OptionError(`node-classic-level block_cache must be positive, got ${this.cacheSize}`);
    this.sync = args.sync;
    this.writeOpts = { sync: args.sync !== 'none' };
    const { ClassicLevel: Level } = require('classic-level');
    this.db = new Level(args.dir, AS_BUFFERS);
    this.openOpts = { compression: this.compression === 'snappy', ...(this.cacheSize ? { cacheSize: this.cacheSize } : {}) };
    this.ops = [];
  }
  async opened() {
    await this.db.open(this.openOpts);
    return this;
  }
  write(keys, vals, n) {
    if (n === 1) {
      return vals[0] === null ? this.db.del(keys[0], this.writeOpts) : this.db.put(keys[0], vals[0], this.writeOpts);
    }
    const ops = this.ops;
    ops.length = n;
    for (let i = 0; i < n; i++) {
      ops[i] = vals[i] === null ? { type: 'del', key: keys[i] } : { type: 'put', key: keys[i], value: vals[i] };
    }
    return this.db.batch(ops, this.writeOpts);
  }
  reader() {
    return new Reader(this);
  }
  finishLoad() {}
  async settle() {
    await this.db.compactRange(Buffer.alloc(0), Buffer.alloc(256, 0xff));
    return 'compactRange over every key (LevelDB flushes its memtable first)';
  }
  close() {
    return this.db.close();
  }
  settings() {
    return {
      sync: syncSetting(this.sync, 'write sync: false (no fsync)', 'write sync: true (fsync per write batch)', 'write sync: true (fsync per write batch)'),
      get: this.syncGet ? 'db.getSync (synchronous)' : 'await db.get (a promise per get)',
      write_batch: '1: await put/del; more: await db.batch(ops)',
      compression: this.compression,
      block_cache: this.cacheSize ? String(this.cacheSize) : 'library default (8 MiB)',
      binding: version(),
    };
  }
}

function version() {
  return `classic-level ${packageVersion('classic-level')} (bundled LevelDB)`;
}

module.exports = {
  name: 'node-classic-level',
  description: 'LevelDB through classic-level (the Level project\'s binding, its bundled LevelDB)',
  async: true,
  caps: { orderedScan: true, multiGet: true, batch: true, persistent: true, delete: true },
  options: [
    { name: 'get', kind: 'enum', default: 'async', doc: 'async: await db.get; sync: db.getSync', choices: ['async', 'sync'] },
    { name: 'compression', kind: 'enum', default: 'snappy', doc: 'block compression of table files', choices: ['none', 'snappy'] },
    { name: 'block_cache', kind: 'int', default: '', doc: 'LRU block cache capacity in bytes (cacheSize; default: the library\'s 8 MiB)' },
  ],
  version,
  unavailable: () => loads('classic-level'),
  open: (args) => new ClassicLevel(args).opened(),
};
