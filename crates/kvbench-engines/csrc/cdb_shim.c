/* Plain functions over TinyCDB for kvbench's Rust FFI (src/tinycdb.rs).
 *
 * TinyCDB's handles are structs the caller allocates, some accessors are macros, and a lookup
 * writes its result into the handle. These wrappers allocate the handles on the heap, turn the
 * macros into calls, and look up on a private copy of the read handle so that several threads
 * can share one open database (the copy shares the read-only memory map). */

#include <cdb.h>
#include <stdlib.h>

#define KVB_STR2(x) #x
#define KVB_STR(x) KVB_STR2(x)

const char *kvb_cdb_version(void) { return KVB_STR(TINYCDB_VERSION); }

/* Start building a database into `fd` (open for writing, empty). NULL on failure (errno). */
struct cdb_make *kvb_cdb_make_new(int fd) {
  struct cdb_make *m = malloc(sizeof *m);
  if (m == NULL)
    return NULL;
  if (cdb_make_start(m, fd) < 0) {
    free(m);
    return NULL;
  }
  return m;
}

/* cdb_make_put with a mode (0 add, 1 replace, 2 insert): < 0 on error (errno), else as
 * cdb_make_put documents (1 when the key already existed). */
int kvb_cdb_make_put(struct cdb_make *m, const void *key, unsigned klen, const void *val, unsigned vlen,
                     int mode) {
  return cdb_make_put(m, key, klen, val, vlen, (enum cdb_put_mode)mode);
}

/* Write the index and release the builder's memory (also on error). 0 on success. */
int kvb_cdb_make_finish(struct cdb_make *m) {
  int r = cdb_make_finish(m);
  free(m);
  return r;
}

/* Open a built database on `fd` (mapped into memory). NULL on failure (errno). */
struct cdb *kvb_cdb_open(int fd) {
  struct cdb *c = malloc(sizeof *c);
  if (c == NULL)
    return NULL;
  if (cdb_init(c, fd) != 0) {
    free(c);
    return NULL;
  }
  return c;
}

/* Find the first record of `key`: 1 found (value pointer into the map and its length), 0 not
 * found, < 0 error. Thread-safe: the lookup state lives in a copy on the stack. */
int kvb_cdb_get(const struct cdb *c, const void *key, unsigned klen, const void **val, unsigned *vlen) {
  struct cdb local = *c;
  int r = cdb_find(&local, key, klen);
  if (r > 0) {
    *vlen = cdb_datalen(&local);
    *val = cdb_get(&local, cdb_datalen(&local), cdb_datapos(&local));
    if (*val == NULL)
      return -1;
  }
  return r;
}

/* Unmap and free (the caller closes the file descriptor). */
void kvb_cdb_close(struct cdb *c) {
  cdb_free(c);
  free(c);
}
