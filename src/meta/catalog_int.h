/* Private to meta/: the catalog-store backends behind meta/catalog.h.
 *
 * FL_CATALOG_OPS lists every backend operation once: the dispatch table, the
 * public fl_catalog_NAME wrappers (catalog.c) and each backend's table (its
 * static functions sq_NAME in sqlite.c, pg_NAME in postgres.c) are all
 * generated from it, so an operation that one backend lacks does not
 * compile. Adding an operation: declare fl_catalog_NAME in catalog.h, add
 * its X(...) line here, write sq_NAME and pg_NAME (the statement text in
 * catalog_sql.h when both dialects agree, a PostgreSQL override in
 * postgres.c when not), and a migration in each backend's one list.
 * tests/unit/test_catalog.c runs every test against both backends. */
#ifndef FL_META_CATALOG_INT_H
#define FL_META_CATALOG_INT_H
#include "meta/catalog.h"

#define FL_CATALOG_OPS(X)                                                                                        \
    X(bucket_create, (fl_catalog_t *c, fl_tbucket_t *b), (c, b))                                                 \
    X(bucket_get, (fl_catalog_t *c, const char *name, fl_tbucket_t *out), (c, name, out))                       \
    X(bucket_list, (fl_catalog_t *c, const char *prefix, const char *after, int max, fl_tbucket_t **out,         \
                    size_t *n, bool *more), (c, prefix, after, max, out, n, more))                               \
    X(bucket_delete, (fl_catalog_t *c, const char *name), (c, name))                                             \
    X(ns_create, (fl_catalog_t *c, fl_namespace_t *ns), (c, ns))                                                 \
    X(ns_get, (fl_catalog_t *c, const char *bucket, const char *name, fl_namespace_t *out), (c, bucket, name, out)) \
    X(ns_list, (fl_catalog_t *c, const char *bucket, const char *prefix, const char *after, int max,             \
                fl_namespace_t **out, size_t *n, bool *more), (c, bucket, prefix, after, max, out, n, more))     \
    X(ns_set_properties, (fl_catalog_t *c, const char *bucket, const char *name, const char *properties_json),   \
      (c, bucket, name, properties_json))                                                                        \
    X(ns_delete, (fl_catalog_t *c, const char *bucket, const char *name), (c, bucket, name))                     \
    X(table_create, (fl_catalog_t *c, fl_table_t *t), (c, t))                                                    \
    X(table_get, (fl_catalog_t *c, const char *bucket, const char *ns, const char *name, fl_table_t *out),       \
      (c, bucket, ns, name, out))                                                                                \
    X(bucket_table_get, (fl_catalog_t *c, const char *bucket, const char *ns, const char *name, fl_tbucket_t *b, \
                         fl_table_t *t, bool *found), (c, bucket, ns, name, b, t, found))                        \
    X(table_get_by_arn, (fl_catalog_t *c, const char *arn, fl_table_t *out), (c, arn, out))                      \
    X(table_get_by_warehouse, (fl_catalog_t *c, const char *warehouse, fl_table_t *out), (c, warehouse, out))    \
    X(table_list, (fl_catalog_t *c, const char *bucket, const char *ns, const char *kind, const char *prefix,    \
                   const char *after_ns, const char *after_name, int max, fl_table_t **out, size_t *n,           \
                   bool *more), (c, bucket, ns, kind, prefix, after_ns, after_name, max, out, n, more))          \
    X(table_swap, (fl_catalog_t *c, fl_table_swap_t *swaps, size_t n), (c, swaps, n))                            \
    X(table_rename, (fl_catalog_t *c, const char *bucket, const char *ns, const char *name, const char *new_ns,  \
                     const char *new_name, const char *expect_id, const char *expect_token),                     \
      (c, bucket, ns, name, new_ns, new_name, expect_id, expect_token))                                          \
    X(table_delete, (fl_catalog_t *c, const char *bucket, const char *ns, const char *name,                      \
                     const char *expect_id, const char *expect_token), (c, bucket, ns, name, expect_id, expect_token)) \
    X(doc_put, (fl_catalog_t *c, const char *arn, const char *kind, const char *json), (c, arn, kind, json))     \
    X(doc_get, (fl_catalog_t *c, const char *arn, const char *kind, char **json_out), (c, arn, kind, json_out))  \
    X(doc_delete, (fl_catalog_t *c, const char *arn, const char *kind), (c, arn, kind))                          \
    X(doc_list, (fl_catalog_t *c, const char *arn, const char *kind_prefix, char ***kinds, char ***jsons,        \
                 size_t *n), (c, arn, kind_prefix, kinds, jsons, n))                                             \
    X(maint_claim, (fl_catalog_t *c, const char *arn, const char *type, const char *owner, int64_t now_ms,       \
                    int64_t lease_ms), (c, arn, type, owner, now_ms, lease_ms))                                  \
    X(maint_heartbeat, (fl_catalog_t *c, const char *arn, const char *owner, int64_t now_ms, int64_t lease_ms),  \
      (c, arn, owner, now_ms, lease_ms))                                                                         \
    X(maint_release, (fl_catalog_t *c, const char *arn, const char *owner), (c, arn, owner))                     \
    X(maint_release_owner, (fl_catalog_t *c, const char *owner, int *freed), (c, owner, freed))                  \
    X(maint_run_add, (fl_catalog_t *c, fl_maint_run_t *r, const char *job_doc), (c, r, job_doc))                 \
    X(maint_runs, (fl_catalog_t *c, const char *arn, int64_t before_id, int max, fl_maint_run_t **out,           \
                   size_t *n), (c, arn, before_id, max, out, n))                                                 \
    X(principal_create, (fl_catalog_t *c, fl_iam_principal_t *p), (c, p))                                       \
    X(principal_get, (fl_catalog_t *c, const char *account, const char *kind, const char *name,                  \
                      fl_iam_principal_t *out), (c, account, kind, name, out))                                   \
    X(principal_list, (fl_catalog_t *c, const char *account, const char *kind, fl_iam_principal_t **out,         \
                       size_t *n), (c, account, kind, out, n))                                                   \
    X(principal_delete, (fl_catalog_t *c, const char *account, const char *kind, const char *name),              \
      (c, account, kind, name))                                                                                  \
    X(key_create, (fl_catalog_t *c, fl_iam_key_t *k), (c, k))                                                    \
    X(key_get, (fl_catalog_t *c, const char *akid, fl_iam_key_t *out), (c, akid, out))                           \
    X(key_list, (fl_catalog_t *c, const char *account, const char *kind, const char *name, fl_iam_key_t **out,   \
                 size_t *n), (c, account, kind, name, out, n))                                                   \
    X(key_set_status, (fl_catalog_t *c, const char *akid, const char *status), (c, akid, status))                \
    X(key_touch, (fl_catalog_t *c, const char *akid, int64_t now_ms), (c, akid, now_ms))                         \
    X(key_delete, (fl_catalog_t *c, const char *akid), (c, akid))                                                \
    X(key_prune, (fl_catalog_t *c, int64_t now_ms), (c, now_ms))                                                 \
    X(iam_policy_put, (fl_catalog_t *c, const char *account, const char *kind, const char *name,                 \
                       const char *policy_name, const char *doc), (c, account, kind, name, policy_name, doc))    \
    X(iam_policy_delete, (fl_catalog_t *c, const char *account, const char *kind, const char *name,              \
                          const char *policy_name), (c, account, kind, name, policy_name))                       \
    X(iam_policy_list, (fl_catalog_t *c, const char *account, const char *kind, const char *name,                \
                        const char *policy_name, char ***names, char ***docs, size_t *n),                        \
      (c, account, kind, name, policy_name, names, docs, n))                                                     \
    X(ping, (fl_catalog_t *c), (c))                                                                             \
    X(signal, (fl_catalog_t *c, const char *topic), (c, topic))                                                  \
    X(watch, (fl_catalog_t *c, const char *topic, fl_catalog_changed_fn fn, void *ud, fl_catalog_watch_t **out), \
      (c, topic, fn, ud, out))                                                                                   \
    X(unwatch, (fl_catalog_t *c, fl_catalog_watch_t *w), (c, w))                                               \
    X(write_count, (fl_catalog_t *c, uint64_t *out), (c, out))

typedef struct fl_catalog_ops {
    const char *name;                  /* "sqlite", "postgresql" */
    void (*close)(fl_catalog_t *c);
#define FL_CATALOG_OP_FIELD(name, params, args) fl_err_t(*name) params;
    FL_CATALOG_OPS(FL_CATALOG_OP_FIELD)
#undef FL_CATALOG_OP_FIELD
} fl_catalog_ops_t;

/* One handle for either backend: ops, and the one state pointer it uses. */
struct fl_catalog {
    const fl_catalog_ops_t *ops;
    struct fl_sqlite *db;              /* sqlite.c */
    struct fl_pg *pg;                  /* postgres.c */
};

/* A backend's ops table from its prefix: every PREFIX_NAME must exist. */
#define FL_CATALOG_OP_INIT_sq(name, params, args) .name = sq_##name,
#define FL_CATALOG_OP_INIT_pg(name, params, args) .name = pg_##name,

fl_catalog_t *fl_catalog_sqlite_open(const char *path);
fl_catalog_t *fl_catalog_pg_open(const char *url);
#endif
