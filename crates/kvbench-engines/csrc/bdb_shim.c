/* Plain functions over Berkeley DB 5.3 for kvbench's Rust FFI (src/bdb.rs).
 *
 * Berkeley DB's API is a table of function pointers inside each handle (db->put(db, ...)).
 * These wrappers turn the calls kvbench needs into ordinary functions. The handles have no
 * environment and no DB_THREAD flag: the Rust side serialises every call with a mutex, and
 * returned key/data pointers stay valid only until the next call on the same handle. */

#include <db.h>
#include <string.h>

const char *kvb_bdb_version(void) { return db_version(NULL, NULL, NULL); }

const char *kvb_bdb_strerror(int err) { return db_strerror(err); }

int kvb_bdb_notfound(void) { return DB_NOTFOUND; }

static void kvb_dbt(DBT *d, const void *p, u_int32_t len) {
  memset(d, 0, sizeof *d);
  d->data = (void *)p;
  d->size = len;
}

/* Open (creating unless read_only) a database file of type btree (hash == 0) or hash.
 * cache_bytes == 0 and pagesize == 0 keep Berkeley DB's defaults. On failure *err is set and
 * NULL returned. */
DB *kvb_bdb_open(const char *path, int hash, int read_only, unsigned long long cache_bytes, unsigned pagesize,
                 int *err) {
  DB *db = NULL;
  int r = db_create(&db, NULL, 0);
  if (r != 0) {
    *err = r;
    return NULL;
  }
  if (cache_bytes > 0) {
    u_int32_t gb = (u_int32_t)(cache_bytes >> 30);
    u_int32_t bytes = (u_int32_t)(cache_bytes & ((1ULL << 30) - 1));
    r = db->set_cachesize(db, gb, bytes, 1);
  }
  if (r == 0 && pagesize > 0)
    r = db->set_pagesize(db, pagesize);
  if (r == 0)
    r = db->open(db, NULL, path, NULL, hash ? DB_HASH : DB_BTREE, read_only ? DB_RDONLY : DB_CREATE, 0644);
  if (r != 0) {
    db->close(db, 0);
    *err = r;
    return NULL;
  }
  return db;
}

int kvb_bdb_close(DB *db) { return db->close(db, 0); }

int kvb_bdb_put(DB *db, const void *k, u_int32_t kl, const void *v, u_int32_t vl) {
  DBT key, data;
  kvb_dbt(&key, k, kl);
  kvb_dbt(&data, v, vl);
  return db->put(db, NULL, &key, &data, 0);
}

/* 0 and the value (memory owned by the handle until its next call), DB_NOTFOUND, or an error. */
int kvb_bdb_get(DB *db, const void *k, u_int32_t kl, const void **v, u_int32_t *vl) {
  DBT key, data;
  kvb_dbt(&key, k, kl);
  kvb_dbt(&data, NULL, 0);
  int r = db->get(db, NULL, &key, &data, 0);
  if (r == 0) {
    *v = data.data;
    *vl = data.size;
  }
  return r;
}

int kvb_bdb_del(DB *db, const void *k, u_int32_t kl) {
  DBT key;
  kvb_dbt(&key, k, kl);
  return db->del(db, NULL, &key, 0);
}

int kvb_bdb_sync(DB *db) { return db->sync(db, 0); }

DBC *kvb_bdb_cursor(DB *db, int *err) {
  DBC *c = NULL;
  int r = db->cursor(db, NULL, &c, 0);
  if (r != 0) {
    *err = r;
    return NULL;
  }
  return c;
}

/* Step a cursor: op 0 = first record, 1 = first record >= (k, kl), 2 = next record. On 0 the
 * record's key and value point into memory owned by the cursor until its next call. */
int kvb_bdb_cursor_get(DBC *c, int op, const void *k, u_int32_t kl, const void **ko, u_int32_t *kol, const void **vo,
                       u_int32_t *vol) {
  DBT key, data;
  kvb_dbt(&key, op == 1 ? k : NULL, op == 1 ? kl : 0);
  kvb_dbt(&data, NULL, 0);
  int r = c->get(c, &key, &data, op == 0 ? DB_FIRST : op == 1 ? DB_SET_RANGE : DB_NEXT);
  if (r == 0) {
    *ko = key.data;
    *kol = key.size;
    *vo = data.data;
    *vol = data.size;
  }
  return r;
}

int kvb_bdb_cursor_close(DBC *c) { return c->close(c); }
