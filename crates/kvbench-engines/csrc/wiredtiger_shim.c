/* Plain functions over WiredTiger 3.2's C API for kvbench's Rust FFI (src/wiredtiger.rs).
 *
 * WiredTiger's API is made of function pointers inside each handle (session->begin_transaction
 * (session, ...)); these wrappers turn the calls kvbench needs into ordinary functions. The
 * table is `key_format=u,value_format=u`, so keys and values travel as WT_ITEMs. A session and
 * its cursors belong to one thread at a time: the Rust side gives each reader its own session
 * and serialises the writer's with a mutex. Returned pointers stay valid until the cursor's
 * next call. */

#include <string.h>
#include <wiredtiger.h>

const char *kvb_wt_version(void) { return wiredtiger_version(NULL, NULL, NULL); }

const char *kvb_wt_strerror(int err) { return wiredtiger_strerror(err); }

int kvb_wt_notfound(void) { return WT_NOTFOUND; }

int kvb_wt_open(const char *home, const char *config, WT_CONNECTION **conn) {
  return wiredtiger_open(home, NULL, config, conn);
}

int kvb_wt_close(WT_CONNECTION *conn) { return conn->close(conn, NULL); }

int kvb_wt_session(WT_CONNECTION *conn, WT_SESSION **session) {
  return conn->open_session(conn, NULL, "isolation=snapshot", session);
}

int kvb_wt_session_close(WT_SESSION *s) { return s->close(s, NULL); }

int kvb_wt_create(WT_SESSION *s, const char *uri, const char *config) { return s->create(s, uri, config); }

int kvb_wt_cursor(WT_SESSION *s, const char *uri, WT_CURSOR **c) { return s->open_cursor(s, uri, NULL, NULL, c); }

int kvb_wt_begin(WT_SESSION *s) { return s->begin_transaction(s, NULL); }

/* config: NULL, or "sync=on" to write and fsync the log before returning. */
int kvb_wt_commit(WT_SESSION *s, const char *config) { return s->commit_transaction(s, config); }

int kvb_wt_rollback(WT_SESSION *s) { return s->rollback_transaction(s, NULL); }

int kvb_wt_checkpoint(WT_SESSION *s) { return s->checkpoint(s, NULL); }

static void kvb_item(WT_ITEM *it, const void *p, size_t len) {
  memset(it, 0, sizeof *it);
  it->data = p;
  it->size = len;
}

int kvb_wt_put(WT_CURSOR *c, const void *k, size_t kl, const void *v, size_t vl) {
  WT_ITEM key, value;
  kvb_item(&key, k, kl);
  kvb_item(&value, v, vl);
  c->set_key(c, &key);
  c->set_value(c, &value);
  return c->insert(c);
}

/* Removing an absent key is not an error (an overwrite cursor says 0 or WT_NOTFOUND). */
int kvb_wt_del(WT_CURSOR *c, const void *k, size_t kl) {
  WT_ITEM key;
  kvb_item(&key, k, kl);
  c->set_key(c, &key);
  int r = c->remove(c);
  return r == WT_NOTFOUND ? 0 : r;
}

/* The current record's key and value (memory owned by the cursor until its next call). */
static int kvb_current(WT_CURSOR *c, const void **k, size_t *kl, const void **v, size_t *vl) {
  WT_ITEM key, value;
  int r = c->get_key(c, &key);
  if (r == 0)
    r = c->get_value(c, &value);
  if (r == 0) {
    *k = key.data;
    *kl = key.size;
    *v = value.data;
    *vl = value.size;
  }
  return r;
}

/* 0 and the value, WT_NOTFOUND, or an error. */
int kvb_wt_get(WT_CURSOR *c, const void *k, size_t kl, const void **v, size_t *vl) {
  WT_ITEM key, value;
  kvb_item(&key, k, kl);
  c->set_key(c, &key);
  int r = c->search(c);
  if (r == 0)
    r = c->get_value(c, &value);
  if (r == 0) {
    *v = value.data;
    *vl = value.size;
  }
  return r;
}

/* Positions on the first record >= start (the first record when start is NULL). */
int kvb_wt_seek(WT_CURSOR *c, const void *start, size_t sl, const void **k, size_t *kl, const void **v,
                size_t *vl) {
  int r;
  c->reset(c);
  if (start == NULL) {
    r = c->next(c);
  } else {
    WT_ITEM key;
    int exact = 0;
    kvb_item(&key, start, sl);
    c->set_key(c, &key);
    r = c->search_near(c, &exact);
    if (r == 0 && exact < 0)
      r = c->next(c);
  }
  return r == 0 ? kvb_current(c, k, kl, v, vl) : r;
}

int kvb_wt_next(WT_CURSOR *c, const void **k, size_t *kl, const void **v, size_t *vl) {
  int r = c->next(c);
  return r == 0 ? kvb_current(c, k, kl, v, vl) : r;
}

/* Releases the cursor's position (and the snapshot an autocommit read holds with it). */
int kvb_wt_reset(WT_CURSOR *c) { return c->reset(c); }
