'use strict';
// `node-lmdb`: LMDB through lmdb-js (npm `lmdb`, which bundles its own LMDB).
//
// One environment in the job directory, its root database, keys and values as binary (no
// msgpack). Each write batch is one synchronous write transaction (`transactionSync` around
// `putSync`/`removeSync`): lmdb-js's default `put` is asynchronous, batched per event-loop
// turn, and a timed loop that never yields would never see it commit. `sync = none` opens
// with noSync; otherwise each commit is flushed before it returns (overlappingSync off: with
// it on, lmdb-js returns from a commit before the flush). A get is `db.get` on lmdb-js's
// shared read transaction; a reader's refresh resets it (`resetReadTxn`), as the writes do.
// Read-only opens use readOnly; LMDB has no secondary instances.
const path = require('path');
const { OptionError, Unsupported, packageVersion, loads, syncSetting } = require('../engine');

const MAX_READERS = 126;

function lmdb() {
  return require('lmdb');
}

class Reader {
  constructor(e) {
    this.db = e.db;
    this.fast = e.fast;
  }
  get(key) {
    return this.fast ? this.db.getBinaryFast(key) : this.db.get(key);
  }
  scan(start, limit, visit) {
    let n = 0;
    for (const { key, value } of this.db.getRange({ start, limit })) {
      visit(key, value);
      n++;
    }
    return n;
  }
  refresh() {
    this.db.resetReadTxn();
  }
  close() {}
}

class Lmdb {
  constructor(args) {
    const o = args.options;
    if (args.mode === 'secondary') throw new Unsupported('secondary open (LMDB has no secondary instances)');
    this.readOnly = args.mode === 'read-only';
    let mapSize = o.int('map_size');
    if (mapSize === undefined) mapSize = Math.max(1 << 30, args.expectedBytes * 4);
    else if (mapSize <= 0) throw new OptionError(`node-lmdb map_size must be positive, got ${mapSize}`);
    const read = o.text('read') || 'get';
    if (read !== 'get' && read !== 'get-binary-fast') throw new OptionError(`node-lmdb read: get or get-binary-fast, got ${read}`);
    this.fast = read === 'get-binary-fast';
    this.noSync = args.sync === 'none' && !this.readOnly;
    this.mapSize = mapSize;
    this.db = lmdb().open({
      path: path.join(args.dir, 'lmdb'), encoding: 'binary', keyEncoding: 'binary', mapSize, maxReaders: MAX_READERS,
      readOnly: this.readOnly, noSync: this.noSync, overlappingSync: false, cache: false, compression: false,
    });
    this.dirty = false;
    this.sync = args.sync;
  }
  write(keys, vals, n) {
    this.dirty = true;
    const db = this.db;
    db.transactionSync(() => {
      for (let i = 0; i < n; i++) {
        if (vals[i] === null) db.removeSync(keys[i]);
        else db.putSync(keys[i], vals[i]);
      }
    });
  }
  reader() {
    return new Reader(this);
  }
  finishLoad() {}
  async close() {
    if (this.noSync && this.dirty) await this.db.flushed;
    await this.db.close();
  }
  settings() {
    return {
      sync: this.readOnly ? 'read-only environment (readOnly)' : syncSetting(this.sync,
        'noSync (MDB_NOSYNC)', 'fsync at commit (overlappingSync off)', 'fsync at commit (overlappingSync off; a batch is one transaction)'),
      map_size: String(this.mapSize),
      encoding: 'binary keys and values (no msgpack), no object cache, no compression',
      write_batch: 'one transactionSync per batch (putSync/removeSync)',
      reader: this.fast ? 'getBinaryFast (a buffer reused by the next get)' : 'get (a Buffer per value) on the shared read transaction',
      max_readers: String(MAX_READERS),
      binding: version(),
    };
  }
}

function version() {
  let lib = '';
  try {
    const v = lmdb().version;
    lib = ` (LMDB ${v.major}.${v.minor}.${v.patch})`;
  } catch {
    // not installed: the package version says so
  }
  return `lmdb-js ${packageVersion('lmdb')}${lib}`;
}

module.exports = {
  name: 'node-lmdb',
  description: 'LMDB through lmdb-js (npm lmdb, its bundled LMDB)',
  caps: { orderedScan: true, batch: true, readOnlyOpen: true, persistent: true, delete: true },
  options: [
    { name: 'map_size', kind: 'int', default: '', doc: 'memory map size in bytes (mapSize; default: max(1 GiB, 4 x the plan\'s bytes))' },
    { name: 'read', kind: 'enum', default: 'get', doc: 'get: db.get, a Buffer per value; get-binary-fast: getBinaryFast, one buffer reused', choices: ['get', 'get-binary-fast'] },
  ],
  version,
  unavailable: () => loads('lmdb'),
  open: (args) => new Lmdb(args),
};
