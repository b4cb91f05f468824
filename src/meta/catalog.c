/* The catalog store's front: picks the backend from the location given to
 * fl_catalog_open and forwards every call to it (catalog_int.h). */
#include "meta/catalog_int.h"
#include <stdlib.h>
#include <string.h>

bool fl_catalog_is_url(const char *where)
{
    return where && (!strncmp(where, "postgresql://", 13) || !strncmp(where, "postgres://", 11));
}

fl_catalog_t *fl_catalog_open(const char *where)
{
    return fl_catalog_is_url(where) ? fl_catalog_pg_open(where) : fl_catalog_sqlite_open(where);
}

void fl_catalog_close(fl_catalog_t *c)
{
    if (c) c->ops->close(c);
}

const char *fl_catalog_backend(const fl_catalog_t *c)
{
    return c->ops->name;
}

#define FL_CATALOG_WRAP(name, params, args) \
    fl_err_t fl_catalog_##name params { return c->ops->name args; }
FL_CATALOG_OPS(FL_CATALOG_WRAP)

void fl_namespace_free(fl_namespace_t *ns)
{
    if (!ns) return;
    free(ns->properties);
    ns->properties = NULL;
}

void fl_namespaces_free(fl_namespace_t *ns, size_t n)
{
    if (!ns) return;
    for (size_t i = 0; i < n; i++) free(ns[i].properties);
    free(ns);
}

void fl_iam_principals_free(fl_iam_principal_t *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++) free(p[i].doc);
    free(p);
}

void fl_iam_keys_free(fl_iam_key_t *k, size_t n)
{
    for (size_t i = 0; k && i < n; i++) free(k[i].session_policy);
    free(k);
}
