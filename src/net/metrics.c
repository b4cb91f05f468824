/* HTTP metrics: fixed slots updated with relaxed atomics.
 *
 * Op slots are appended under a mutex (rare: first sight of an op) and
 * published by a release store of the slot count; the request path scans the
 * published slots by pointer (ops are literals in practice), then by name.
 * Status counters live in an open-addressed table keyed (op index, status),
 * claimed by compare-and-swap. Histogram buckets are stored per bucket and
 * made cumulative when rendered. */
#include "net/metrics.h"
#include "base/limits.h"
#include "base/mem.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const double bucket_le[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                    0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
static const int64_t bucket_ns[] = { 500000, 1000000, 2500000, 5000000, 10000000, 25000000,
                                     50000000, 100000000, 250000000, 500000000, 1000000000,
                                     2500000000LL, 5000000000LL, 10000000000LL };
#define NBUCKETS (sizeof bucket_ns / sizeof bucket_ns[0])
#define SERIES_SLOTS 512 /* power of two, > 2 * FL_HTTP_METRICS_MAX_SERIES */
#define OP_NAME_MAX 64

typedef struct op_slot {
    _Atomic(const char *) key; /* pointer last seen for this op */
    char name[OP_NAME_MAX];
    _Atomic uint64_t buckets[NBUCKETS + 1]; /* last: +Inf */
    _Atomic uint64_t sum_ns;
    _Atomic uint64_t count;
} op_slot_t;

struct fl_metrics {
    char *server;
    fl_metrics_t *next;
    pthread_mutex_t mu; /* op slot insertion */
    _Atomic int nops;
    op_slot_t ops[FL_HTTP_METRICS_MAX_OPS + 1];
    _Atomic uint32_t series_key[SERIES_SLOTS]; /* (op << 16 | status) + 1; 0 = free */
    _Atomic uint64_t series_count[SERIES_SLOTS];
    _Atomic int nseries;
    _Atomic uint64_t overflow;
    _Atomic uint64_t bytes_in, bytes_out;
    _Atomic int64_t conns;
    _Atomic int64_t parked, active;
    _Atomic uint64_t evicted;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static fl_metrics_t *reg_head;
static struct { fl_metrics_source_fn fn; void *arg; } sources[FL_METRICS_MAX_SOURCES];

void fl_metrics_add_source(fl_metrics_source_fn fn, void *arg)
{
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < FL_METRICS_MAX_SOURCES; i++)
        if (!sources[i].fn) {
            sources[i].fn = fn;
            sources[i].arg = arg;
            break;
        }
    pthread_mutex_unlock(&reg_mu);
}

void fl_metrics_remove_source(fl_metrics_source_fn fn, void *arg)
{
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < FL_METRICS_MAX_SOURCES; i++)
        if (sources[i].fn == fn && sources[i].arg == arg) sources[i].fn = NULL, sources[i].arg = NULL;
    pthread_mutex_unlock(&reg_mu);
}

fl_metrics_t *fl_metrics_new(const char *server)
{
    fl_metrics_t *m = fl_calloc(1, sizeof *m);
    m->server = fl_strdup(server ? server : "http");
    pthread_mutex_init(&m->mu, NULL);
    fl_strlcpy(m->ops[0].name, "unknown", OP_NAME_MAX);
    fl_strlcpy(m->ops[1].name, "other", OP_NAME_MAX);
    atomic_store(&m->nops, 2);
    pthread_mutex_lock(&reg_mu);
    m->next = reg_head;
    reg_head = m;
    pthread_mutex_unlock(&reg_mu);
    return m;
}

void fl_metrics_free(fl_metrics_t *m)
{
    if (!m) return;
    pthread_mutex_lock(&reg_mu);
    for (fl_metrics_t **pp = &reg_head; *pp; pp = &(*pp)->next)
        if (*pp == m) { *pp = m->next; break; }
    pthread_mutex_unlock(&reg_mu);
    pthread_mutex_destroy(&m->mu);
    free(m->server);
    free(m);
}

static int op_index(fl_metrics_t *m, const char *op)
{
    if (!op || !*op) return 0;
    int n = atomic_load_explicit(&m->nops, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(&m->ops[i].key, memory_order_relaxed) == op) return i;
    for (int i = 0; i < n; i++)
        if (strncmp(m->ops[i].name, op, OP_NAME_MAX - 1) == 0) {
            atomic_store_explicit(&m->ops[i].key, op, memory_order_relaxed);
            return i;
        }
    int idx = 1; /* "other" when full */
    pthread_mutex_lock(&m->mu);
    n = atomic_load_explicit(&m->nops, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        if (strncmp(m->ops[i].name, op, OP_NAME_MAX - 1) == 0) { idx = i; goto out; }
    if (n < FL_HTTP_METRICS_MAX_OPS) {
        fl_strlcpy(m->ops[n].name, op, OP_NAME_MAX);
        atomic_store_explicit(&m->ops[n].key, op, memory_order_relaxed);
        atomic_store_explicit(&m->nops, n + 1, memory_order_release);
        idx = n;
    }
out:
    pthread_mutex_unlock(&m->mu);
    return idx;
}

static _Atomic uint64_t *series(fl_metrics_t *m, int op, int status)
{
    if (status < 0 || status > 999) status = 0;
    uint32_t key = ((uint32_t)op << 16 | (uint32_t)status) + 1;
    uint32_t h = key * 2654435761u;
    for (uint32_t i = 0; i < SERIES_SLOTS; i++) {
        uint32_t s = (h + i) & (SERIES_SLOTS - 1);
        uint32_t k = atomic_load_explicit(&m->series_key[s], memory_order_acquire);
        if (k == key) return &m->series_count[s];
        if (k != 0) continue;
        if (atomic_fetch_add(&m->nseries, 1) >= FL_HTTP_METRICS_MAX_SERIES) {
            atomic_fetch_sub(&m->nseries, 1);
            return &m->overflow;
        }
        uint32_t zero = 0;
        if (atomic_compare_exchange_strong(&m->series_key[s], &zero, key))
            return &m->series_count[s];
        atomic_fetch_sub(&m->nseries, 1);
        if (zero == key) return &m->series_count[s];
    }
    return &m->overflow;
}

void fl_metrics_request(fl_metrics_t *m, const char *op, int status, int64_t dur_ns,
                        uint64_t bytes_in, uint64_t bytes_out)
{
    int oi = op_index(m, op);
    op_slot_t *o = &m->ops[oi];
    size_t b = 0;
    while (b < NBUCKETS && dur_ns > bucket_ns[b]) b++;
    if (dur_ns < 0) dur_ns = 0;
    atomic_fetch_add_explicit(&o->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&o->sum_ns, (uint64_t)dur_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&o->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(series(m, oi, status), 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->bytes_in, bytes_in, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->bytes_out, bytes_out, memory_order_relaxed);
}

void fl_metrics_conn_add(fl_metrics_t *m, int delta)
{
    atomic_fetch_add_explicit(&m->conns, delta, memory_order_relaxed);
}

void fl_metrics_conn_state(fl_metrics_t *m, int parked, int active)
{
    atomic_store_explicit(&m->parked, parked, memory_order_relaxed);
    atomic_store_explicit(&m->active, active, memory_order_relaxed);
}

void fl_metrics_conn_evicted(fl_metrics_t *m)
{
    atomic_fetch_add_explicit(&m->evicted, 1, memory_order_relaxed);
}

/* Label values: escape backslash, quote and newline. */
static fl_err_t add_label(fl_buf_t *out, const char *s)
{
    fl_err_t e = FL_OK;
    for (; *s && !e; s++) {
        if (*s == '\\' || *s == '"') e = fl_buf_addc(out, '\\'), e = e ? e : fl_buf_addc(out, *s);
        else if (*s == '\n') e = fl_buf_adds(out, "\\n");
        else e = fl_buf_addc(out, *s);
    }
    return e;
}

static fl_err_t labels(fl_buf_t *out, const fl_metrics_t *m, const char *op)
{
    fl_err_t e = fl_buf_adds(out, "{server=\"");
    if (!e) e = add_label(out, m->server);
    if (!e && op) e = fl_buf_adds(out, "\",op=\"");
    if (!e && op) e = add_label(out, op);
    if (!e) e = fl_buf_addc(out, '"');
    return e;
}

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

fl_err_t fl_metrics_render(fl_buf_t *out)
{
    fl_err_t e = FL_OK;
    pthread_mutex_lock(&reg_mu);
    e = fl_buf_adds(out, "# HELP floe_http_requests_total HTTP requests by server, operation and status.\n"
                         "# TYPE floe_http_requests_total counter\n");
    for (fl_metrics_t *m = reg_head; m && !e; m = m->next) {
        for (int s = 0; s < SERIES_SLOTS && !e; s++) {
            uint32_t k = atomic_load_explicit(&m->series_key[s], memory_order_acquire);
            if (!k) continue;
            k--;
            e = fl_buf_adds(out, "floe_http_requests_total");
            if (!e) e = labels(out, m, m->ops[k >> 16].name);
            if (!e) e = fl_buf_printf(out, ",status=\"%u\"} %llu\n", k & 0xffff,
                                      (unsigned long long)LD(m->series_count[s]));
        }
        uint64_t ov = LD(m->overflow);
        if (ov && !e) {
            e = fl_buf_adds(out, "floe_http_requests_total");
            if (!e) e = labels(out, m, "other");
            if (!e) e = fl_buf_printf(out, ",status=\"other\"} %llu\n", (unsigned long long)ov);
        }
    }
    if (!e) e = fl_buf_adds(out, "# HELP floe_http_request_duration_seconds HTTP request latency.\n"
                                 "# TYPE floe_http_request_duration_seconds histogram\n");
    for (fl_metrics_t *m = reg_head; m && !e; m = m->next) {
        int n = atomic_load_explicit(&m->nops, memory_order_acquire);
        for (int i = 0; i < n && !e; i++) {
            const op_slot_t *o = &m->ops[i];
            uint64_t cnt = LD(o->count);
            if (!cnt) continue;
            uint64_t cum = 0;
            for (size_t b = 0; b <= NBUCKETS && !e; b++) {
                cum += LD(o->buckets[b]);
                e = fl_buf_adds(out, "floe_http_request_duration_seconds_bucket");
                if (!e) e = labels(out, m, o->name);
                if (!e && b < NBUCKETS) e = fl_buf_printf(out, ",le=\"%g\"} %llu\n", bucket_le[b],
                                                          (unsigned long long)cum);
                else if (!e) e = fl_buf_printf(out, ",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
            }
            if (!e) e = fl_buf_adds(out, "floe_http_request_duration_seconds_sum");
            if (!e) e = labels(out, m, o->name);
            if (!e) e = fl_buf_printf(out, "} %.9f\n", (double)LD(o->sum_ns) / 1e9);
            if (!e) e = fl_buf_adds(out, "floe_http_request_duration_seconds_count");
            if (!e) e = labels(out, m, o->name);
            if (!e) e = fl_buf_printf(out, "} %llu\n", (unsigned long long)cum);
        }
    }
    static const char *const fam[6][2] = {
        { "floe_http_bytes_received_total", "counter" },
        { "floe_http_bytes_sent_total", "counter" },
        { "floe_http_connections", "gauge" },
        { "floe_http_connections_parked", "gauge" },
        { "floe_http_connections_active", "gauge" },
        { "floe_http_connections_evicted_total", "counter" },
    };
    for (int f = 0; f < 6 && !e; f++) {
        e = fl_buf_printf(out, "# TYPE %s %s\n", fam[f][0], fam[f][1]);
        for (fl_metrics_t *m = reg_head; m && !e; m = m->next) {
            long long v = f == 0 ? (long long)LD(m->bytes_in)
                        : f == 1 ? (long long)LD(m->bytes_out)
                        : f == 2 ? (long long)LD(m->conns)
                        : f == 3 ? (long long)LD(m->parked)
                        : f == 4 ? (long long)LD(m->active) : (long long)LD(m->evicted);
            e = fl_buf_adds(out, fam[f][0]);
            if (!e) e = labels(out, m, NULL);
            if (!e) e = fl_buf_printf(out, "} %lld\n", v);
        }
    }
    for (int i = 0; i < FL_METRICS_MAX_SOURCES && !e; i++)
        if (sources[i].fn) e = sources[i].fn(sources[i].arg, out);
    pthread_mutex_unlock(&reg_mu);
    return e;
}
