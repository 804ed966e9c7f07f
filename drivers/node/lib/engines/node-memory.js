'use strict';
// `node-memory`: a Map in the worker's memory, the reference for tests (not persistent).
// `corrupt_every = N` returns a wrong value at every N-th get, to prove mismatches are counted.
const { OptionError, Unsupported } = require('../engine');

const stores = new Map(); // by directory: open-per-operation and reopen see the same data

class Reader {
  constructor(e) {
    this.e = e;
  }
  get(key) {
    const v = this.e.data.get(key.toString('latin1'));
    if (v === undefined) return undefined;
    if (this.e.corruptEvery > 0 && ++this.e.gets % this.e.corruptEvery === 0) return Buffer.concat([v, Buffer.from('!')]);
    return v;
  }
  multiGet(keys) {
    return keys.map((k) => this.get(k));
  }
  scan(start, limit, visit) {
    const sorted = [...this.e.data.keys()].sort();
    const from = start.toString('latin1');
    let i = sorted.findIndex((k) => k >= from);
    let n = 0;
    for (; i >= 0 && i < sorted.length && n < limit; i++, n++) {
      visit(Buffer.from(sorted[i], 'latin1'), this.e.data.get(sorted[i]));
    }
    return n;
  }
  refresh() {}
  close() {}
}

class Memory {
  constructor(args) {
    if (args.mode === 'secondary') throw new Unsupported('secondary open (a Map has no secondary instances)');
    if (!stores.has(args.dir)) stores.set(args.dir, new Map());
    this.data = stores.get(args.dir);
    this.corruptEvery = args.options.int('corrupt_every') || 0;
    if (this.corruptEvery < 0) throw new OptionError(`corrupt_every must be >= 0, got ${this.corruptEvery}`);
    this.gets = 0;
    this.readOnly = args.mode === 'read-only';
  }
  write(keys, vals, n) {
    if (this.readOnly) throw new Error('node-memory: a read-only open cannot write');
    for (let i = 0; i < n; i++) {
      const k = keys[i].toString('latin1');
      if (vals[i] === null) this.data.delete(k);
      else this.data.set(k, Buffer.from(vals[i]));
    }
  }
  reader() {
    return new Reader(this);
  }
  finishLoad() {}
  close() {}
  settings() {
    return { store: 'a JavaScript Map (latin1 strings as keys)', sync: 'none (in memory)', corrupt_every: String(this.corruptEvery) };
  }
}

module.exports = {
  name: 'node-memory',
  description: 'a JavaScript Map: the Node worker\'s test oracle (not persistent)',
  caps: { orderedScan: true, multiGet: true, batch: true, readOnlyOpen: true, delete: true },
  options: [{ name: 'corrupt_every', kind: 'int', default: '0', doc: 'return a wrong value at every N-th get (tests)' }],
  version: () => `JavaScript Map (Node ${process.version})`,
  unavailable: () => null,
  open: (args) => new Memory(args),
};
