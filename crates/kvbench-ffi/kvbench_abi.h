/* The numbers of kvbench's worker-core ABI; kvbench.h includes this file.
 * Generated from crates/kvbench-worker/src/abi.rs: edit that, then run
 * `cargo run -p kvbench-ffi --bin abi-header`. */
#ifndef KVBENCH_ABI_H
#define KVBENCH_ABI_H

/* Step kinds (kvb_step.step). */
enum { KVB_END = 0, KVB_OPEN = 1, KVB_PREPARE = 2, KVB_CLOSE = 3, KVB_EVICTED = 4, KVB_OPS = 5, KVB_SETTLE = 6 };

/* Open modes (kvb_step.mode). */
enum { KVB_READ_WRITE = 0, KVB_READ_ONLY = 1, KVB_SECONDARY = 2 };

/* Unit kinds (kvb_block.kind). */
enum {
  KVB_GET = 1,       /* one key: get it */
  KVB_MULTI_GET = 2, /* its keys: one multi-get request (the engine's own, else gets in a loop) */
  KVB_SCAN = 3,      /* from its key, up to scan_len records in key order (kvb_scan) */
  KVB_WRITE = 4,     /* its keys: one write batch (each key as its del entry says: put val, delete, merge fields) */
  KVB_RMW = 5,       /* one key: get it, refresh the reader, write val; timed together */
  KVB_OPEN_GET = 6,  /* one key: open the engine (kvb_step.mode), get, close; timed together */
  KVB_WAIT = 7       /* nothing to run: wait until due, then ask kvb_next again */
};

/* A got_len entry (kvb_done): the value read was equal to the key's exp. */
enum { KVB_MATCHED = -2 };

/* A write's entry (kvb_block.del). */
enum {
  KVB_PUT = 0,         /* put val */
  KVB_DELETE = 1,      /* delete the key */
  KVB_MERGE_FIELDS = 2 /* val holds fields of the stored record: merge them in (engines with field-update) */
};

#endif
