/* Pieces of the appender shared with rewrites (iceberg/rewrite.c): snapshot
 * ids, the main ref, summary figures and the partition-tuple key. Internal to
 * src/iceberg; pure functions over borrowed values, any thread. */
#ifndef FL_ICEBERG_APPEND_INT_H
#define FL_ICEBERG_APPEND_INT_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "base/buf.h"
#include "iceberg/transform.h"

/* A random positive snapshot id not used by md's snapshots. */
int64_t fl_append_new_snapshot_id(json_t *md);
/* md's snapshot with this id (borrowed), or NULL. */
json_t *fl_append_find_snapshot(json_t *md, int64_t id);
/* main's snapshot id (refs.main, else current-snapshot-id), or -1. */
int64_t fl_append_main_snapshot(json_t *md);
/* A snapshot summary's numeric string value; *ok = false when absent. */
int64_t fl_append_summary_i64(json_t *snap, const char *key, bool *ok);
/* Table property key of md (borrowed), or NULL. */
const char *fl_append_prop(json_t *md, const char *key);
/* Table property key of md as a positive integer; def when absent or not one. */
int64_t fl_append_prop_i64(json_t *md, const char *key, int64_t def);
/* o[k] = the decimal string of v. */
void fl_append_set_num(json_t *o, const char *k, int64_t v);
/* Append one partition value to a tuple key (null-tagged, length-prefixed
 * single-value binary): equal tuples give equal keys. */
void fl_append_key_append(fl_buf_t *k, const fl_ice_value_t *v);
#endif
