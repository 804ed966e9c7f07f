/* kvbench's worker core, for the Go and Python workers (docs/protocol.md, "Worker core").
 *
 * The library (kvbench-worker's code) reads the job, derives keys, values and op streams, keeps
 * the record states, verifies every read, keeps the histograms and the timeline, and writes the
 * step events. A worker only opens its engine, runs the engine calls of each block it is given
 * between two reads of its own clock, and hands back the times and what was read. Times are ns
 * after the ops step's start, on the worker's clock: this library reads no clock.
 *
 * Every pointer a call returns stays valid until the next call on the same handle. Strings in
 * are NUL-terminated UTF-8. No call blocks except kvb_next (it may wait for a record another
 * thread is writing).
 */
#ifndef KVBENCH_H
#define KVBENCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct kvb_job kvb_job;
typedef struct kvb_thread kvb_thread;

/* The numbers: step kinds, open modes, unit kinds, KVB_MATCHED (generated from the Rust source). */
#include "kvbench_abi.h"

/* Open the job file and the plan it names; write step events on file descriptor events_fd.
 * Never NULL: on a bad job kvb_job_error says why. */
kvb_job *kvb_job_open(const char *path, int events_fd);
/* NULL, or why the job cannot run (names the file and the field). */
const char *kvb_job_error(const kvb_job *job);
void kvb_job_free(kvb_job *job);
/* Write one event line (a JSON object without the newline) among the library's own events. */
void kvb_emit(kvb_job *job, const char *json);

typedef struct {
  int32_t step;         /* KVB_* step kind; KVB_END: no more steps */
  int32_t mode;         /* open modes: KVB_OPEN, and KVB_OPS with open_per_op */
  uint32_t threads;     /* KVB_OPS: threads to run, each with its kvb_thread */
  uint8_t reads;        /* KVB_OPS: each thread needs a reader */
  uint8_t open_per_op;  /* KVB_OPS: units are KVB_OPEN_GET; no open engine is needed */
  uint32_t interval_ms; /* KVB_OPS: how often to hand in the engine's internals (kvb_internals) */
} kvb_step;

/* The next step. KVB_EVICTED: the library evicted the job's files; report it with kvb_step_end.
 * KVB_SETTLE: untimed, bring the store to a settled state (flush and compact, or wait until no
 * compaction is pending) and say what was done in kvb_report.settled; an engine that has no such
 * step reports error_kind "unsupported" (the phase is then N/A). */
const kvb_step *kvb_step_begin(kvb_job *job);

typedef struct {
  uint64_t wall_ns;        /* the step's wall time (ops: from the threads' start to their end) */
  uint64_t start_unix_ns;  /* ops: the host's clock at the step's start */
  uint64_t finish_ns;      /* ops: time in finish-load (part of wall_ns) */
  const char *error;       /* NULL, or why the step failed (open, prepare, close) */
  const char *error_kind;  /* "store", "unsupported", "option" or "io" */
  const char *finish_error;/* NULL, or finish-load's error (counted as an engine error) */
  const char *settings;    /* NULL, or a JSON object of strings: the engine's settings */
  const char *runtime;     /* NULL, or a JSON object of numbers: the runtime's own counters */
  const char *settled;     /* KVB_SETTLE: what the engine did, in words */
  const char *internals;   /* NULL, or a JSON object of numbers: the engine's own counters at the
                              step's end (read after the step's clock, never timed) */
} kvb_report;

/* During an ops step, from one thread that runs no units (never from a timed one): the engine's
 * own counters, a JSON object of numbers, read t_ns after the step's start on the worker's clock.
 * A worker calls it about every kvb_step.interval_ms, and stops before it ends the step. An
 * empty object or an engine without internals: no call is needed. */
void kvb_internals(kvb_job *job, int64_t t_ns, const char *json);

/* After an ops step's threads ended: 1 when the worker must now call the engine's finish-load,
 * timed, and report it in kvb_report.finish_ns and finish_error. */
int kvb_finish_due(kvb_job *job);

/* The protocol version for the worker's hello event. */
uint32_t kvb_protocol(void);

/* The i-th constant of kvbench_abi.h (0 <= i): its name ("KVB_GET") and value; 0 past the last.
 * For a worker that cannot read this header (the Python worker reads its numbers here). */
int kvb_abi_constant(size_t i, const char **name, int64_t *value);

/* Emit the step's event. Returns 1 when the job stops here (a failed step that ends it). */
int kvb_step_end(kvb_job *job, const kvb_report *report);

/* Thread t (0 <= t < threads) of the running ops step; max_units bounds a block. NULL outside
 * an ops step. */
kvb_thread *kvb_thread_new(kvb_job *job, uint32_t t, uint32_t max_units);
/* From now on the times handed to kvb_done and kvb_error are on the worker's clock and the
 * core subtracts origin_ns, the step's start on that clock (default 0: times are already after
 * the start). Due times stay after the start. */
void kvb_set_origin(kvb_thread *th, int64_t origin_ns);
/* Merge the thread's counters into the step and free it. */
void kvb_thread_end(kvb_thread *th);

typedef struct {
  uint32_t units;           /* 0: the thread is done */
  const uint8_t *kind;      /* per unit: KVB_GET ... KVB_WAIT */
  const uint8_t *refresh;   /* per unit: 1 = refresh the reader first (untimed; before waiting) */
  const int64_t *due;       /* per unit: ns after the start it is due; -1 = at once */
  const uint32_t *key_end;  /* per unit: one past its last key (its keys follow the previous unit's) */
  const uint64_t *scan_len; /* per unit: KVB_SCAN's limit, at most 2^62 (0 for other kinds) */
  const uint8_t *key;       /* all keys, packed */
  const uint32_t *key_off;  /* per key + 1: key i is key[key_off[i] .. key_off[i+1]] */
  const uint8_t *val;       /* values to write, packed (KVB_WRITE, KVB_RMW) */
  const uint32_t *val_off;  /* per key + 1, as key_off */
  const uint8_t *del;       /* per key of a KVB_WRITE: KVB_PUT, KVB_DELETE or KVB_MERGE_FIELDS */
  const uint8_t *const *exp;/* per key: NULL, or the bytes a KVB_GET must read (see kvb_done) */
  const uint32_t *exp_len;  /* per key: exp's length */
  uint8_t plain;            /* 1: unit u is a KVB_GET of key u, no refresh, no due (one loop may
                               run them all) */
} kvb_block;

/* The thread's next block of units. With writers on several threads it may wait for a record
 * another thread is writing: a worker whose store makes a writer wait for open snapshots lets
 * its reader's snapshot go first (the last unit then asked for a refresh anyway). */
const kvb_block *kvb_next(kvb_thread *th);

/* The block ran. t holds 2 values per unit (start, end; a KVB_WAIT unit's are ignored). got_len
 * holds one entry per key of the block: the length of the value a reading unit (GET,
 * MULTI_GET, RMW, OPEN_GET) got for it, or -1 (not found, a unit that failed or did not run, a
 * key of a unit that reads nothing). got is the values found, in key order, packed: its length
 * is the sum of got_len's non-negative entries. units_run < units when the worker stopped
 * after kvb_error returned 1; the units not run are undone.
 * A worker may compare a value found for a key whose exp is not NULL right after its call
 * (outside the timed span, while the engine's buffer is valid and in cache): when equal, it
 * sets got_len to KVB_MATCHED and hands nothing back; otherwise it hands the value back as
 * above and the core counts the mismatch. The comparison is the only check a worker makes.
 * The core is done with t, got and got_len when kvb_done returns (it copies what it counts
 * beside the calling thread). */
void kvb_done(kvb_thread *th, uint32_t units_run, const int64_t *t, const uint8_t *got, const int32_t *got_len);
/* Room for need bytes of the current block's values read, the first keep bytes (already
 * written there) kept; valid until the next call on th. A worker that reads its values into
 * it and hands it to kvb_done as got saves the core a copy; any other buffer works too. NULL
 * when the memory cannot be had. */
uint8_t *kvb_got(kvb_thread *th, size_t keep, size_t need);

/* Unit u of the current block failed at at_ns (after its end time is taken; u = UINT32_MAX: not
 * in a unit, e.g. the reader did not open). kind: "store", "unsupported", "option" or "io".
 * The unit's values are not checked. Returns 1 when the thread must stop. */
int kvb_error(kvb_thread *th, uint32_t u, const char *kind, const char *msg, int64_t at_ns);

/* Records a KVB_SCAN unit visited, in order: each is a u32 key length (little-endian), the key,
 * a u32 value length, the value. Call it whenever a buffer fills (inside the timed scan) and once
 * more at the end; they are checked as they come. */
void kvb_scan(kvb_thread *th, const uint8_t *recs, size_t len);

#endif
