'use strict';
// Loads kvbench's worker core for Node (crates/kvbench-node: a Node-API addon over kvbench.h)
// and reads the ABI's numbers from it, as the Python worker does.
const path = require('path');
const fs = require('fs');

const REPO = path.resolve(__dirname, '..', '..', '..');

/**
 * Where the addon is: $KVBENCH_NODE_ADDON, else an installed copy's lib/ (scripts/install.sh),
 * else the release build of the checkout.
 */
function addonPath() {
  if (process.env.KVBENCH_NODE_ADDON) return process.env.KVBENCH_NODE_ADDON;
  const installed = path.join(REPO, 'lib', 'libkvbench_node.so');
  if (fs.existsSync(installed)) return installed;
  const target = process.env.CARGO_TARGET_DIR || path.join(REPO, 'target');
  return path.join(target, 'release', 'libkvbench_node.so');
}

let loaded;
function load() {
  if (loaded) return loaded;
  const p = addonPath();
  if (!fs.existsSync(p)) {
    throw new Error(`the worker core ${p} is missing: build it with drivers/node/build.sh (make node)`);
  }
  const m = { exports: {} };
  process.dlopen(m, p);
  const abi = m.exports.abi();
  const k = (name) => {
    if (!(name in abi)) throw new Error(`the worker core ${p} has no ${name}: rebuild it (make node)`);
    return abi[name];
  };
  loaded = { ...m.exports, path: p, KVB: new Proxy(abi, { get: (_, name) => k(name) }) };
  return loaded;
}

module.exports = { load, addonPath, REPO };
