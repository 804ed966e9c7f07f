'use strict';
const fs = require('fs');
const path = require('path');
// What every Node engine implements and shares, as drivers/go/internal/worker/engine.go.
//
// A descriptor: { name, description, caps, options: [OptionSpec], version(), unavailable()
// (null when it can run here, else why not), open(args) -> engine }.
// An engine: write(keys, vals, n) applies n writes as one batch or transaction where the store
// has them (vals[i] === null deletes keys[i]; deleting an absent key is no error); reader();
// finishLoad(); close(); settings() -> {string: string}; optional prepare(), settle() -> words,
// internals() -> {name: number}.
// A reader: get(key) -> Buffer | undefined; scan(start, limit, visit(k, v)) -> count visited;
// refresh() (a reader holding a snapshot takes a new one); close(); optional multiGet(keys) ->
// array of Buffer | undefined.
// An engine whose `async` is true may return promises from any of these (classic-level's
// API is promises only): the runner awaits them, inside the timing, as its users do.

/** Something the engine cannot do at all: the phase is N/A. */
class Unsupported extends Error {
  constructor(what) {
    super(`unsupported: ${what}`);
    this.kind = 'unsupported';
  }
}

/** An option value the engine refuses. */
class OptionError extends Error {
  constructor(msg) {
    super(`invalid option: ${msg}`);
    this.kind = 'option';
  }
}

/** The error kind kvbench.h names: store, unsupported, option or io. */
function kindOf(e) {
  return (e && e.kind) || 'store';
}

function describe(e) {
  if (e instanceof Error) return e.message || String(e);
  return String(e);
}

// Capability names in Capabilities::names() order.
const CAPS = [
  ['orderedScan', 'scan'], ['multiGet', 'multi-get'], ['batch', 'batch'], ['readOnlyOpen', 'read-only'],
  ['secondaryOpen', 'secondary'], ['persistent', 'persistent'], ['buildOnce', 'build-once'], ['delete', 'delete'],
];

function capNames(caps) {
  return CAPS.filter(([k]) => caps[k]).map(([, n]) => n);
}

/**
 * A job's options as kvbench resolved them (docs/protocol.md): every option of the engine,
 * null where unset, integers for sizes.
 */
class Options {
  constructor(values) {
    for (const k of Object.keys(values).sort()) {
      const v = values[k];
      if (!(v === null || typeof v === 'boolean' || typeof v === 'string' || Number.isInteger(v))) {
        throw new Error(`job option \`${k}\` = ${JSON.stringify(v)}: kvbench writes null, true/false, integers or strings`);
      }
    }
    this.values = values;
  }
  bool(name) { return this.values[name] === true; }
  /** An integer option; undefined when unset (the engine's own default applies). */
  int(name) { return Number.isInteger(this.values[name]) ? this.values[name] : undefined; }
  text(name) {
    const v = this.values[name];
    return v === null || v === undefined ? '' : String(v);
  }
  /** The options that are set (for hello). */
  effective() {
    return Object.fromEntries(Object.entries(this.values).filter(([, v]) => v !== null));
  }
}

/** The options a job would carry when none is set: every spec null. */
function defaultOptions(desc, set = {}) {
  const values = Object.fromEntries(desc.options.map((o) => [o.name, null]));
  return new Options({ ...values, ...set });
}

/** The version of an installed npm package. */
function packageVersion(name) {
  try {
    // Not require(`${name}/package.json`): a package's exports map may not list it (lmdb's).
    for (let dir = path.dirname(require.resolve(name)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
      const file = path.join(dir, 'package.json');
      if (fs.existsSync(file)) {
        const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
        if (pkg.name === name) return pkg.version;
      }
    }
  } catch {
    // not installed
  }
  return 'not installed';
}

/** null when the package loads here, else why not. */
function loads(name) {
  try {
    require(name);
    return null;
  } catch (e) {
    return `${name} does not load: ${describe(e).split('\n')[0]} (drivers/node/build.sh installs it)`;
  }
}

function syncSetting(sync, none, commit, always) {
  return sync === 'none' ? none : sync === 'always' ? always : commit;
}

module.exports = { Unsupported, OptionError, Options, kindOf, describe, capNames, defaultOptions, packageVersion, loads, syncSetting };
