'use strict';
// The Node engines, one file each, in name order.
const registry = [
  require('./node-better-sqlite3'),
  require('./node-classic-level'),
  require('./node-lmdb'),
  require('./node-memory'),
  require('./node-rocksdb'),
].sort((a, b) => a.name.localeCompare(b.name));

function find(name) {
  return registry.find((d) => d.name === name) || null;
}

module.exports = { registry, find };
