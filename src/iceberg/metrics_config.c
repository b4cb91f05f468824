/* Metrics modes from table properties (see metrics_config.h), following
 * Java's MetricsConfig.from: an explicit default applies to every column;
 * without one, tables with at most max-inferred-column-defaults top-level
 * columns use truncate(16) everywhere, wider ones use truncate(16) for the
 * leaves under the first N top-level columns and none for the rest; then
 * order-preserving sort columns are promoted, then per-column overrides win. */
#include "iceberg/metrics_config.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "base/buf.h"
#include "base/mem.h"
#include "format/parquet.h"
#include "iceberg/transform.h"

#define PROP_DEFAULT "write.metadata.metrics.default"
#define PROP_COLUMN "write.metadata.metrics.column."
#define PROP_MAX_INFERRED "write.metadata.metrics.max-inferred-column-defaults"
#define MAX_INFERRED_DEFAULT 100

static const fl_metrics_mode_t DEFAULT_MODE = { FL_METRICS_TRUNCATE, 16 };
static const fl_metrics_mode_t NONE_MODE = { FL_METRICS_NONE, 0 };

bool fl_metrics_mode_parse(const char *s, fl_metrics_mode_t *out)
{
    if (!s) return false;
    if (!strcasecmp(s, "none")) { *out = (fl_metrics_mode_t){ FL_METRICS_NONE, 0 }; return true; }
    if (!strcasecmp(s, "counts")) { *out = (fl_metrics_mode_t){ FL_METRICS_COUNTS, 0 }; return true; }
    if (!strcasecmp(s, "full")) { *out = (fl_metrics_mode_t){ FL_METRICS_FULL, 0 }; return true; }
    if (strncasecmp(s, "truncate(", 9)) return false;
    const char *p = s + 9;
    long long v = 0;
    size_t digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        v = v * 10 + (*p - '0');
        if (v > INT32_MAX) return false;   /* Java: NumberFormatException */
    }
    if (!digits || p[0] != ')' || p[1] || v <= 0) return false;
    *out = (fl_metrics_mode_t){ FL_METRICS_TRUNCATE, (int)v };
    return true;
}

/* ---------------- leaves with Java's full column names ---------------- */

typedef struct leaf {
    int32_t id;
    fl_type_kind_t type;
    char *name;                 /* "info.b", "tags.element", "m.key" */
    size_t top;                 /* index of the top-level column it is under */
} leaf_t;

typedef struct leaves {
    leaf_t *v;
    size_t n, cap;
} leaves_t;

static void collect(const fl_field_t *f, fl_buf_t *path, size_t top, leaves_t *out)
{
    size_t mark = path->len;
    for (uint32_t i = 0; i < f->n_children; i++) {
        const fl_field_t *c = &f->children[i];
        const char *nm = f->kind == FL_TYPE_LIST ? "element"
                         : f->kind == FL_TYPE_MAP ? (i == 0 ? "key" : "value")
                                                  : (c->name ? c->name : "");
        path->len = mark;
        if (mark) fl_buf_addc(path, '.');
        fl_buf_adds(path, nm);
        if (fl_type_is_nested(c->kind)) {
            collect(c, path, top, out);
            continue;
        }
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 16;
            out->v = fl_realloc(out->v, out->cap * sizeof *out->v);
        }
        leaf_t *l = &out->v[out->n++];
        l->id = c->id;
        l->type = c->kind;
        l->name = fl_malloc(path->len + 1);
        memcpy(l->name, path->ptr, path->len);
        l->name[path->len] = 0;
        l->top = top;
    }
    path->len = mark;
}

static const char *prop(json_t *props, const char *key)
{
    json_t *v = json_object_get(props, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int max_inferred(json_t *props)
{
    const char *s = prop(props, PROP_MAX_INFERRED);
    if (!s) return MAX_INFERRED_DEFAULT;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > INT32_MAX) return MAX_INFERRED_DEFAULT;
    return (int)v;
}

static bool preserves_order(const char *transform)
{
    fl_ice_transform_t t;
    if (!transform || fl_ice_transform_parse(fl_slice_cstr(transform), &t)) return false;
    return t.kind != FL_ICE_T_BUCKET && t.kind != FL_ICE_T_VOID;
}

static int cmp_col(const void *a, const void *b)
{
    int32_t x = ((const fl_metrics_col_t *)a)->field_id, y = ((const fl_metrics_col_t *)b)->field_id;
    return (x > y) - (x < y);
}

void fl_metrics_policy_build(json_t *md, const fl_field_t *root, fl_metrics_policy_t *out)
{
    memset(out, 0, sizeof *out);
    json_t *props = json_object_get(md, "properties");
    leaves_t L = { 0 };
    fl_buf_t path;
    fl_buf_init(&path, 0);
    size_t n_top = root ? root->n_children : 0;
    for (size_t t = 0; t < n_top; t++) {
        const fl_field_t *c = &root->children[t];
        path.len = 0;
        fl_buf_adds(&path, c->name ? c->name : "");
        if (fl_type_is_nested(c->kind)) {
            collect(c, &path, t, &L);
        } else {
            fl_field_t one = *c;    /* a leaf at the top: collect through a 1-child parent */
            fl_field_t parent = { .kind = FL_TYPE_STRUCT, .children = &one, .n_children = 1 };
            path.len = 0;
            collect(&parent, &path, t, &L);
        }
    }
    fl_buf_free(&path);

    out->n = L.n;
    out->cols = fl_calloc(L.n ? L.n : 1, sizeof *out->cols);
    for (size_t i = 0; i < L.n; i++) {
        out->cols[i].field_id = L.v[i].id;
        out->cols[i].type = L.v[i].type;
    }

    /* default mode */
    fl_metrics_mode_t def = DEFAULT_MODE;
    const char *configured = prop(props, PROP_DEFAULT);
    int limit = max_inferred(props);
    if (configured) {
        if (!fl_metrics_mode_parse(configured, &def)) def = DEFAULT_MODE;
        for (size_t i = 0; i < L.n; i++) out->cols[i].mode = def;
    } else if (n_top <= (size_t)limit) {
        for (size_t i = 0; i < L.n; i++) out->cols[i].mode = def;
    } else {
        for (size_t i = 0; i < L.n; i++) out->cols[i].mode = L.v[i].top < (size_t)limit ? DEFAULT_MODE : NONE_MODE;
        def = NONE_MODE;
    }
    out->fallback = def;

    /* order-preserving columns of the default sort order */
    fl_metrics_mode_t sorted = (def.kind == FL_METRICS_NONE || def.kind == FL_METRICS_COUNTS) ? DEFAULT_MODE : def;
    json_t *sid = json_object_get(md, "default-sort-order-id");
    json_t *orders = json_object_get(md, "sort-orders");
    size_t k;
    json_t *o;
    json_array_foreach(orders, k, o) {
        if (!json_is_integer(sid) || json_integer_value(json_object_get(o, "order-id")) != json_integer_value(sid))
            continue;
        size_t j;
        json_t *sf;
        json_array_foreach(json_object_get(o, "fields"), j, sf) {
            if (!preserves_order(json_string_value(json_object_get(sf, "transform")))) continue;
            json_int_t src = json_integer_value(json_object_get(sf, "source-id"));
            for (size_t i = 0; i < L.n; i++)
                if (L.v[i].id == src) out->cols[i].mode = sorted;
        }
    }

    /* per-column overrides */
    const char *key;
    json_t *val;
    size_t plen = strlen(PROP_COLUMN);
    json_object_foreach(props, key, val) {
        if (strncmp(key, PROP_COLUMN, plen) || !json_is_string(val)) continue;
        const char *name = key + plen;
        fl_metrics_mode_t m;
        if (!fl_metrics_mode_parse(json_string_value(val), &m)) m = def;
        for (size_t i = 0; i < L.n; i++)
            if (!strcmp(L.v[i].name, name)) out->cols[i].mode = m;
    }

    for (size_t i = 0; i < L.n; i++) free(L.v[i].name);
    free(L.v);
    qsort(out->cols, out->n, sizeof *out->cols, cmp_col);
}

void fl_metrics_policy_free(fl_metrics_policy_t *p)
{
    if (!p) return;
    free(p->cols);
    memset(p, 0, sizeof *p);
}

fl_metrics_mode_t fl_metrics_policy_mode(const fl_metrics_policy_t *p, int32_t field_id)
{
    fl_metrics_col_t key = { .field_id = field_id };
    const fl_metrics_col_t *c = p->n ? bsearch(&key, p->cols, p->n, sizeof *p->cols, cmp_col) : NULL;
    return c ? c->mode : p->fallback;
}

static bool truncates(fl_type_kind_t t)
{
    return t == FL_TYPE_STRING || t == FL_TYPE_BINARY || t == FL_TYPE_FIXED;
}

int fl_metrics_policy_writer_truncate(const fl_metrics_policy_t *p)
{
    for (size_t i = 0; i < p->n; i++) {
        const fl_metrics_mode_t *m = &p->cols[i].mode;
        if (!truncates(p->cols[i].type)) continue;
        if (m->kind == FL_METRICS_FULL || (m->kind == FL_METRICS_TRUNCATE && m->len > 16)) return -1;
    }
    if (p->fallback.kind == FL_METRICS_FULL || (p->fallback.kind == FL_METRICS_TRUNCATE && p->fallback.len > 16))
        return -1;
    return 16;
}

static void drop_bounds(fl_col_metrics_t *c)
{
    fl_buf_free(&c->lower);
    fl_buf_free(&c->upper);
    c->has_lower = c->has_upper = false;
}

size_t fl_metrics_policy_apply(const fl_metrics_policy_t *p, fl_col_metrics_t *m, size_t n)
{
    size_t kept = 0;
    fl_buf_t tmp;
    fl_buf_init(&tmp, 0);
    for (size_t i = 0; i < n; i++) {
        fl_col_metrics_t *c = &m[i];
        fl_metrics_col_t key = { .field_id = c->field_id };
        const fl_metrics_col_t *pc = p->n ? bsearch(&key, p->cols, p->n, sizeof *p->cols, cmp_col) : NULL;
        fl_metrics_mode_t mode = pc ? pc->mode : p->fallback;
        if (mode.kind == FL_METRICS_NONE) {
            drop_bounds(c);
            continue;
        }
        if (mode.kind == FL_METRICS_COUNTS) {
            drop_bounds(c);
        } else if (mode.kind == FL_METRICS_TRUNCATE && pc && truncates(pc->type)) {
            bool str = pc->type == FL_TYPE_STRING;
            if (c->has_lower) {
                if (fl_pq_trunc_lower(str, c->lower.ptr, c->lower.len, mode.len, &tmp) == FL_OK) {
                    fl_buf_t t = c->lower; c->lower = tmp; tmp = t;
                } else {
                    fl_buf_free(&c->lower);
                    c->has_lower = false;
                }
            }
            if (c->has_upper) {
                if (fl_pq_trunc_upper(str, c->upper.ptr, c->upper.len, mode.len, &tmp)) {
                    fl_buf_t t = c->upper; c->upper = tmp; tmp = t;
                } else {
                    fl_buf_free(&c->upper);
                    c->has_upper = false;
                }
            }
        }
        if (kept != i) m[kept] = *c;
        kept++;
    }
    fl_buf_free(&tmp);
    if (kept < n) memset(m + kept, 0, (n - kept) * sizeof *m);
    return kept;
}
