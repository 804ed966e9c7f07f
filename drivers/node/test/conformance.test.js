'use strict';
// The conformance suite for Node engines: the same cases as crates/kvbench-engines/src/
// conformance.rs and drivers/python/tests/test_conformance.py, checked against a Map oracle.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { registry } = require('../lib/engines');
const { defaultOptions, capNames, Unsupported } = require('../lib/engine');

const isPromise = (x) => x !== null && typeof x === 'object' && typeof x.then === 'function';
const settle = async (x) => (isPromise(x) ? await x : x);

// Binary keys with a zero byte inside, in an order that differs from insertion order.
function key(i) {
  const b = Buffer.alloc(10);
  b.write('k\0', 0, 'latin1');
  b.writeUInt32BE(Number((BigInt(i) * 2654435761n) & 0xffffffffn) % 100000, 2);
  b.writeUInt32BE(i, 6);
  return b;
}

function value(i, version) {
  const n = (i * 37 + version * 11) % 300;
  const b = Buffer.alloc(n);
  for (let j = 0; j < n; j++) b[j] = (j ^ i ^ version) & 0xff;
  return b;
}

const hex = (b) => (b === undefined || b === null ? undefined : Buffer.from(b).toString('hex'));

function args(dir, options, sync = 'commit', mode = 'read-write') {
  return { dir, options, sync, mode, expectedRecords: 1000, expectedBytes: 1 << 20 };
}

async function write(e, pairs) {
  await settle(e.write(pairs.map((p) => p[0]), pairs.map((p) => p[1]), pairs.length));
}

async function scanAll(r, start, limit) {
  const out = [];
  await settle(r.scan(start, limit, (k, v) => out.push([hex(k), hex(v)])));
  return out;
}

async function checkReads(e, oracle, probe, caps, where) {
  const r = await settle(e.reader());
  try {
    for (const k of probe) assert.equal(hex(await settle(r.get(k))), oracle.get(hex(k)), `${where}: get ${hex(k)}`);
    if (r.multiGet) {
      const got = (await settle(r.multiGet(probe))).map(hex);
      assert.deepEqual(got, probe.map((k) => oracle.get(hex(k))), `${where}: multiGet`);
    }
    if (caps.includes('scan')) {
      const sorted = [...oracle.keys()].sort();
      assert.deepEqual(await scanAll(r, Buffer.alloc(0), 2 ** 62), sorted.map((k) => [k, oracle.get(k)]), `${where}: full scan`);
      const mid = sorted[Math.floor(sorted.length / 2)];
      const want = sorted.filter((k) => k >= mid).slice(0, 7);
      assert.deepEqual((await scanAll(r, Buffer.from(mid, 'hex'), 7)).map((p) => p[0]), want, `${where}: scan of 7 from the middle`);
      assert.deepEqual(await scanAll(r, Buffer.from(mid, 'hex'), 0), [], `${where}: scan of 0`);
    }
  } finally {
    await settle(r.close());
  }
}

function tmp(t) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'kvbench-node-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

for (const desc of registry) {
  // make test sets KVBENCH_NODE_REQUIRE_ENGINES=1: an engine that does not load fails there instead of skipping.
  const skip = process.env.KVBENCH_NODE_REQUIRE_ENGINES === '1' ? false : desc.unavailable() || false;
  test(`conformance: ${desc.name}`, { skip }, async (t) => {
    const caps = capNames(desc.caps);
    const options = defaultOptions(desc);
    const oracle = new Map();
    const probe = Array.from({ length: 260 }, (_, i) => key(i));
    const dir = tmp(t);
    const put = async (e, pairs) => {
      await write(e, pairs);
      for (const [k, v] of pairs) {
        if (v === null) oracle.delete(hex(k));
        else oracle.set(hex(k), hex(v));
      }
    };

    let e = await settle(desc.open(args(dir, options)));
    // Load 200 records in batches of 50, and one with an empty value.
    for (let c = 0; c < 200; c += 50) await put(e, Array.from({ length: 50 }, (_, j) => [key(c + j), value(c + j, 0)]));
    await put(e, [[key(200), Buffer.alloc(0)]]);
    await settle(e.finishLoad());
    await checkReads(e, oracle, probe, caps, 'after load');

    if (!caps.includes('build-once')) {
      for (let i = 0; i < 200; i += 3) await put(e, [[key(i), value(i, 1)]]);
      if (caps.includes('delete')) {
        for (let i = 0; i < 200; i += 7) await put(e, [[key(i), null]]);
        await put(e, [[key(9999), null]]); // deleting an absent key is not an error
      }
      await checkReads(e, oracle, probe, caps, 'after overwrite/delete');
      // A reader refreshed after a write sees it.
      const r = await settle(e.reader());
      await put(e, [[key(1), Buffer.from('fresh')]]);
      await settle(r.refresh());
      assert.equal(hex(await settle(r.get(key(1)))), hex(Buffer.from('fresh')), 'a refreshed reader does not see a write made after it was created');
      await settle(r.close());
    }
    assert.equal(typeof e.settings(), 'object');
    await settle(e.close());

    if (caps.includes('persistent')) {
      e = await settle(desc.open(args(dir, options, 'none')));
      await checkReads(e, oracle, probe, caps, 'after reopen');
      await settle(e.close());
      for (const mode of ['read-only', 'secondary']) {
        if (caps.includes(mode)) {
          e = await settle(desc.open(args(dir, options, 'none', mode)));
          await checkReads(e, oracle, probe, caps, mode);
          await settle(e.close());
        } else {
          await assert.rejects(async () => settle((await settle(desc.open(args(dir, options, 'commit', mode)))).close()), Unsupported, `${mode} open`);
        }
      }
    }
  });

  test(`every sync mode opens and writes: ${desc.name}`, { skip }, async (t) => {
    const options = defaultOptions(desc);
    for (const sync of ['none', 'commit', 'always']) {
      const dir = path.join(tmp(t), sync);
      fs.mkdirSync(dir);
      const e = await settle(desc.open(args(dir, options, sync)));
      await write(e, [[Buffer.from('a'), Buffer.from('1')], [Buffer.from('b'), Buffer.from('2')]]);
      await settle(e.finishLoad());
      const r = await settle(e.reader());
      assert.equal(hex(await settle(r.get(Buffer.from('b')))), hex(Buffer.from('2')), sync);
      await settle(r.close());
      assert.match(JSON.stringify(e.settings()), /sync/, `${sync}: settings state the sync mapping`);
      await settle(e.close());
    }
  });
}
