'use strict';
// `node-better-sqlite3`: SQLite through better-sqlite3 12.x (its bundled SQLite; 13.x crashes
// on Node 20), used as a key-value store as the Rust `sqlite` and Python `py-sqlite3` engines.
//
// One table `kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID` in `kv.sqlite`. Writes go
// through one connection, one transaction per batch (`db.transaction` around prepared
// INSERT OR REPLACE / DELETE statements). Every reader opens its own read-only connection (in
// WAL mode readers never wait for the writer); a get is one prepared SELECT (`pluck().get`).
// sync none: synchronous=OFF; commit/always: synchronous=FULL.
const path = require('path');
const { OptionError, Unsupported, packageVersion, loads } = require('../engine');

const FILE = 'kv.sqlite';
const SYNC = { none: ['OFF', 'synchronous=OFF (no fsync while running)'], commit: ['FULL', 'synchronous=FULL (fsync at every commit)'], always: ['FULL', 'synchronous=FULL (fsync at every commit; a batch is one transaction)'] };

function connect(file, readOnly, kib) {
  const Database = require('better-sqlite3');
  const db = new Database(file, { readonly: readOnly, fileMustExist: readOnly, timeout: 10000 });
  if (kib !== undefined) db.pragma(`cache_size=-${kib}`);
  return db;
}

class Reader {
  constructor(e) {
    this.conn = connect(e.file, true, e.kib);
    const one = this.conn.prepare('SELECT v FROM kv WHERE k = ?').pluck();
    this.get = (key) => one.get(key);
    this.scanStmt = this.conn.prepare('SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT ?').raw();
  }
  scan(start, limit, visit) {
    let n = 0;
    for (const [k, v] of this.scanStmt.iterate(start, Math.min(limit, Number.MAX_SAFE_INTEGER))) {
      visit(k, v);
      n++;
    }
    return n;
  }
  refresh() {}
  close() {
    this.conn.close();
  }
}

class Sqlite {
  constructor(args) {
    if (args.mode === 'secondary') throw new Unsupported('secondary open (SQLite has no secondary instances)');
    const o = args.options;
    this.file = path.join(args.dir, FILE);
    const bytes = o.int('cache_size');
    if (bytes !== undefined && bytes <= 0) throw new OptionError(`node-better-sqlite3 cache_size must be positive bytes, got ${bytes}`);
    this.kib = bytes === undefined ? undefined : Math.ceil(bytes / 1024);
    this.journal = o.text('journal_mode') || 'wal';
    if (this.journal !== 'wal' && this.journal !== 'delete') throw new OptionError(`node-better-sqlite3 journal_mode: wal or delete, got ${this.journal}`);
    this.readOnly = args.mode === 'read-only';
    this.sync = SYNC[args.sync] || SYNC.commit;
    this.db = connect(this.file, this.readOnly, this.kib);
    if (!this.readOnly) {
      this.db.pragma(`journal_mode=${this.journal}`);
      this.db.pragma(`synchronous=${this.sync[0]}`);
      this.db.exec('CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID');
      const put = this.db.prepare('INSERT OR REPLACE INTO kv(k, v) VALUES (?, ?)');
      const del = this.db.prepare('DELETE FROM kv WHERE k = ?');
      this.batch = this.db.transaction((keys, vals, n) => {
        for (let i = 0; i < n; i++) {
          if (vals[i] === null) del.run(keys[i]);
          else put.run(keys[i], vals[i]);
        }
      });
    }
    this.readers = new Set();
  }
  write(keys, vals, n) {
    if (this.readOnly) throw new Error('node-better-sqlite3: a read-only open cannot write');
    this.batch(keys, vals, n);
  }
  reader() {
    const r = new Reader(this);
    this.readers.add(r);
    const close = r.close.bind(r);
    r.close = () => {
      this.readers.delete(r);
      close();
    };
    return r;
  }
  finishLoad() {}
  close() {
    for (const r of [...this.readers]) r.close();
    if (!this.readOnly && this.journal === 'wal') this.db.pragma('wal_checkpoint(TRUNCATE)');
    this.db.close();
  }
  settings() {
    return {
      table: 'kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID',
      sync: this.readOnly ? 'read-only connection' : this.sync[1],
      journal_mode: this.journal,
      cache_size: this.kib === undefined ? 'library default (2000 KiB)' : `${this.kib} KiB per connection`,
      write_batch: 'one transaction per batch (db.transaction, prepared INSERT OR REPLACE / DELETE)',
      reader: 'a read-only connection per reader, prepared SELECT (pluck().get)',
      binding: version(),
    };
  }
}

/** null when the native binding loads (require alone does not load it), else why not. */
function nativeLoads() {
  try {
    const Database = require('better-sqlite3');
    new Database(':memory:').close();
    return null;
  } catch (e) {
    return `better-sqlite3's native binding does not load: ${String(e.message).split('\n')[0]} (drivers/node/build.sh builds it)`;
  }
}

function version() {
  let lib = '';
  try {
    const Database = require('better-sqlite3');
    const db = new Database(':memory:');
    lib = `, SQLite ${db.prepare('SELECT sqlite_version()').pluck().get()}`;
    db.close();
  } catch {
    // not installed: the package version says so
  }
  return `better-sqlite3 ${packageVersion('better-sqlite3')}${lib}`;
}

module.exports = {
  name: 'node-better-sqlite3',
  description: 'SQLite through better-sqlite3 (its bundled SQLite): one WITHOUT ROWID table as a key-value store',
  caps: { orderedScan: true, batch: true, readOnlyOpen: true, persistent: true, delete: true },
  options: [
    { name: 'journal_mode', kind: 'enum', default: 'wal', doc: 'PRAGMA journal_mode (WAL lets readers run beside the writer)', choices: ['wal', 'delete'] },
    { name: 'cache_size', kind: 'int', default: '', doc: 'page cache per connection in bytes (PRAGMA cache_size=-KiB; default: the library\'s 2000 KiB)' },
  ],
  version,
  unavailable: () => loads('better-sqlite3') || nativeLoads(),
  open: (args) => new Sqlite(args),
};
