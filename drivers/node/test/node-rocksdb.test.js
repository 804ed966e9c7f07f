'use strict';
// What node-rocksdb adds beyond the conformance suite: the RocksDB it runs is named, its
// options reach the binding or are refused by name, and a read-only open refuses writes.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { find } = require('../lib/engines');
const { defaultOptions, OptionError } = require('../lib/engine');

const desc = find('node-rocksdb');
const skip = process.env.KVBENCH_NODE_REQUIRE_ENGINES === '1' ? false : desc.unavailable() || false;

function tmp(t) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'kvbench-node-rocksdb-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

const open = (dir, set = {}, mode = 'read-write') =>
  desc.open({ dir, options: defaultOptions(desc, set), sync: 'none', mode, expectedRecords: 10, expectedBytes: 1024 });

test('node-rocksdb names the RocksDB its package bundles (not the system library)', { skip }, () => {
  assert.match(desc.version(), /^RocksDB \d+\.\d+\.\d+ inside rocksdb 5\.2\.1 /);
});

test('node-rocksdb options reach the binding, and values it cannot take are refused by name', { skip }, async (t) => {
  const e = await open(tmp(t), { compression: 'none', block_cache: 0, write_buffer: 1 << 20 });
  const s = e.settings();
  assert.equal(s.compression, 'none');
  assert.equal(s.block_cache, 'disabled');
  assert.equal(s.write_buffer, `${1 << 20} bytes`);
  await e.close();
  for (const [set, name] of [[{ compression: 'zstd' }, /compression/], [{ write_buffer: 0 }, /write_buffer/], [{ block_cache: 2 ** 33 }, /block_cache/]]) {
    await assert.rejects(async () => open(tmp(t), set), (err) => err instanceof OptionError && name.test(err.message));
  }
});

test('node-rocksdb: a read-only open reads what was written and refuses writes; settle compacts', { skip }, async (t) => {
  const dir = tmp(t);
  let e = await open(dir);
  await e.write([Buffer.from('a'), Buffer.from('b')], [Buffer.from('1'), Buffer.from('2')], 2);
  assert.match(await e.settle(), /^compactRange over every key .*; 0 files at L0 after$/);
  await e.close();
  e = await open(dir, {}, 'read-only');
  assert.equal((await e.reader().get(Buffer.from('b'))).toString(), '2');
  await assert.rejects(async () => e.write([Buffer.from('c')], [Buffer.from('3')], 1), /cannot write/);
  await e.close();
});
