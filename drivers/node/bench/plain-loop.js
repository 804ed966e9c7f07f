'use strict';
// The yardstick of bench/node-overhead.sh: a plain JavaScript loop of random gets on lmdb-js,
// what a person measuring lmdb-js by hand would write. It opens the environment the worker
// loaded with the same options as node-lmdb (binary keys and values, read-only), derives
// kvbench's default keys (record number, 16 decimal digits) for uniformly random records
// (xorshift), times every get between two performance.now() reads into a buffer, and touches
// each value (its length and first byte) as a caller using it would.
//   node plain-loop.js DIR RECORDS COUNT
const { performance } = require('perf_hooks');
const lmdb = require('lmdb');

const [dir, records, count] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const db = lmdb.open({ path: dir, encoding: 'binary', keyEncoding: 'binary', readOnly: true, cache: false, compression: false });
const times = new Float64Array(1024);
const key = Buffer.alloc(16);
let x = 0x7f4a7c15;
let found = 0;
let bytes = 0;
const start = performance.now();
for (let i = 0; i < count; i++) {
  x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; // xorshift32
  const r = x % records;
  key.write(String(r).padStart(16, '0'), 0, 'latin1');
  const t0 = performance.now();
  const v = db.get(key);
  const t1 = performance.now();
  times[(2 * i) & 1023] = t0;
  times[(2 * i + 1) & 1023] = t1;
  if (v !== undefined) {
    found++;
    bytes += v.length + (v[0] & 1);
  }
}
const secs = (performance.now() - start) / 1e3;
if (found !== count) {
  console.error(`plain-loop: ${count - found} of ${count} keys not found`);
  process.exit(1);
}
console.log(JSON.stringify({ ops: count, secs, ops_per_sec: Math.round(count / secs), bytes }));
db.close();
