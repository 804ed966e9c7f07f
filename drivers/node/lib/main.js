'use strict';
// The command line of the Node worker: --list, --job JOB, --version.
const fs = require('fs');
const core = require('./core');
const { Options, capNames, describe } = require('./engine');
const { registry, find } = require('./engines');

const VERSION = '0.1.0';

function describeEngine(d) {
  const why = d.unavailable();
  return {
    name: d.name, description: d.description, version: d.version(), capabilities: capNames(d.caps),
    options: d.options, available: why === null, why: why || '',
  };
}

/** Events of one job: through the core once the job is open (its events and ours in one
 *  stream), written directly on the descriptor before that. */
class Events {
  constructor(fd) {
    this.fd = fd;
    this.job = null;
  }
  emit(ev) {
    const line = JSON.stringify(ev);
    if (this.job === null) fs.writeSync(this.fd, `${line}\n`);
    else this.job.emit(line);
  }
  close() {
    if (this.job !== null) this.job.free();
    this.job = null;
  }
}

class JobError extends Error {}

/** The job's engine and options; JobError when it cannot run here. */
function engineOf(path, spec) {
  const desc = find(spec.engine);
  if (!desc) {
    throw new JobError(`job file ${path}: engine ${spec.engine} is not a Node engine (known: ${registry.map((d) => d.name).join(', ')})`);
  }
  const why = desc.unavailable();
  if (why) throw new JobError(`job file ${path}: engine ${desc.name} unavailable: ${why}`);
  try {
    return { desc, options: new Options(spec.options || {}) };
  } catch (e) {
    throw new JobError(`job file ${path}: ${describe(e)}`);
  }
}

async function run(path, events, addon) {
  const { Worker, calibrate } = require('./runner');
  const job = new addon.Job(path, events.fd);
  events.job = job;
  const bad = job.error();
  if (bad) throw new JobError(bad);
  const spec = JSON.parse(fs.readFileSync(path, 'utf8')); // the core has read and checked it
  const { desc, options } = engineOf(path, spec);
  events.emit({
    event: 'hello', protocol: addon.protocol(), worker: `node kvbench-node-worker ${VERSION} (Node ${process.version})`,
    engine: desc.name, version: desc.version(), capabilities: capNames(desc.caps), options: options.effective(),
    timer_overhead_ns: calibrate(),
  });
  await new Worker(addon, job, spec, desc, options).run();
  events.emit({ event: 'done' });
}

const USAGE = 'usage: kvbench-node-worker (--job JOB | --list | --version)';

async function main(argv) {
  if (argv.length === 1 && (argv[0] === '--list' || argv[0] === '--version')) {
    const out = argv[0] === '--list' ? JSON.stringify(registry.map(describeEngine), null, 2) : `kvbench-node-worker ${VERSION}`;
    process.stdout.write(`${out}\n`);
    return 0;
  }
  if (argv.length !== 2 || argv[0] !== '--job') {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  let addon;
  let events;
  try {
    addon = core.load();
    events = new Events(addon.eventsFd());
  } catch (e) {
    process.stdout.write(`${JSON.stringify({ event: 'error', message: describe(e) })}\n`);
    return 1;
  }
  try {
    await run(argv[1], events, addon);
    return 0;
  } catch (e) {
    if (!(e instanceof JobError)) process.stderr.write(`${e && e.stack}\n`);
    const msg = e instanceof JobError ? e.message : `node worker crashed: ${describe(e)}`;
    events.emit({ event: 'error', message: msg });
    return 1;
  } finally {
    events.close();
  }
}

module.exports = { main, describeEngine, VERSION };
