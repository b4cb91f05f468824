/* floe sink's Prometheus metrics (sink/metrics.h). */
#include "sink/metrics.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "net/http.h"
#include "net/metrics.h"

/* upper bounds (seconds) of the batch commit latency histogram */
static const double bucket_s[] = { 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 };
#define N_BUCKETS (sizeof bucket_s / sizeof bucket_s[0])

typedef struct held {
    char *topic;
    int32_t partition;
    int64_t next;
} held_t;

struct fl_sink_metrics {
    _Atomic uint64_t records, bytes, bad, dead_lettered;
    _Atomic uint64_t snapshots, rows, files, file_bytes;
    _Atomic uint64_t batches_ok, batches_failed, batch_ms_sum;
    _Atomic uint64_t batch_buckets[N_BUCKETS + 1];   /* the last is +Inf */
    _Atomic int64_t last_commit_ms;                  /* wall clock of the last landed batch, 0 none */
    _Atomic int64_t mem, mem_peak;
    _Atomic uint64_t mem_cuts, pauses;
    _Atomic int paused;
    pthread_mutex_t mu;                              /* guards rk, held and slots */
    rd_kafka_t *rk;
    held_t *held;
    size_t n_held, cap_held;
    uint32_t *slots;                                 /* open addressing over held: index + 1, 0 empty */
    size_t n_slots;                                  /* a power of two, at least twice cap_held */
    fl_http_server_t *srv;
};

void fl_sink_metrics_record(fl_sink_metrics_t *m, int64_t bytes)
{
    atomic_fetch_add_explicit(&m->records, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->bytes, (uint64_t)bytes, memory_order_relaxed);
}

void fl_sink_metrics_bad(fl_sink_metrics_t *m, bool dead_lettered)
{
    atomic_fetch_add_explicit(&m->bad, 1, memory_order_relaxed);
    if (dead_lettered) atomic_fetch_add_explicit(&m->dead_lettered, 1, memory_order_relaxed);
}

void fl_sink_metrics_snapshot(fl_sink_metrics_t *m, int64_t rows, int64_t files, int64_t bytes)
{
    atomic_fetch_add_explicit(&m->snapshots, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->rows, (uint64_t)(rows > 0 ? rows : 0), memory_order_relaxed);
    atomic_fetch_add_explicit(&m->files, (uint64_t)(files > 0 ? files : 0), memory_order_relaxed);
    atomic_fetch_add_explicit(&m->file_bytes, (uint64_t)(bytes > 0 ? bytes : 0), memory_order_relaxed);
}

void fl_sink_metrics_batch(fl_sink_metrics_t *m, bool ok, int64_t ms)
{
    if (ms < 0) ms = 0;
    atomic_fetch_add_explicit(ok ? &m->batches_ok : &m->batches_failed, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->batch_ms_sum, (uint64_t)ms, memory_order_relaxed);
    size_t b = 0;
    while (b < N_BUCKETS && (double)ms / 1000.0 > bucket_s[b]) b++;
    atomic_fetch_add_explicit(&m->batch_buckets[b], 1, memory_order_relaxed);
    if (ok) atomic_store_explicit(&m->last_commit_ms, fl_now_ms(), memory_order_relaxed);
}

void fl_sink_metrics_memory(fl_sink_metrics_t *m, int64_t bytes)
{
    atomic_store_explicit(&m->mem, bytes, memory_order_relaxed);
    if (bytes > atomic_load_explicit(&m->mem_peak, memory_order_relaxed))   /* one writer: the consume loop */
        atomic_store_explicit(&m->mem_peak, bytes, memory_order_relaxed);
}

void fl_sink_metrics_memory_cut(fl_sink_metrics_t *m)
{
    atomic_fetch_add_explicit(&m->mem_cuts, 1, memory_order_relaxed);
}

void fl_sink_metrics_paused(fl_sink_metrics_t *m, bool on)
{
    atomic_store_explicit(&m->paused, on ? 1 : 0, memory_order_relaxed);
    if (on) atomic_fetch_add_explicit(&m->pauses, 1, memory_order_relaxed);
}

static size_t held_hash(const char *topic, int32_t partition)
{
    uint64_t h = 1469598103934665603ULL ^ (uint32_t)partition;
    for (const unsigned char *c = (const unsigned char *)topic; *c; c++) h = (h ^ *c) * 1099511628211ULL;
    return (size_t)(h ^ (h >> 29));
}

/* The slot of (topic, partition): its entry's, or the empty one it would take. m->mu held. */
static uint32_t *held_slot(const fl_sink_metrics_t *m, const char *topic, int32_t partition)
{
    size_t mask = m->n_slots - 1;
    for (size_t i = held_hash(topic, partition) & mask;; i = (i + 1) & mask) {
        uint32_t *s = &m->slots[i];
        if (!*s || (m->held[*s - 1].partition == partition && !strcmp(m->held[*s - 1].topic, topic))) return s;
    }
}

/* The next offset held for (topic, partition), -1 unknown. m->mu held. */
static int64_t held_next(const fl_sink_metrics_t *m, const char *topic, int32_t partition)
{
    if (!m->n_held) return -1;
    uint32_t *s = held_slot(m, topic, partition);
    return *s ? m->held[*s - 1].next : -1;
}

void fl_sink_metrics_committed(fl_sink_metrics_t *m, const char *topic, int32_t partition, int64_t next)
{
    pthread_mutex_lock(&m->mu);
    uint32_t *s = m->n_slots ? held_slot(m, topic, partition) : NULL;
    if (!s || !*s) {
        if (m->n_held >= FL_SINK_METRICS_MAX_PARTITIONS) goto out;   /* shown without it */
        if (m->n_held == m->cap_held) {
            m->cap_held = m->cap_held ? m->cap_held * 2 : 16;
            m->held = fl_realloc(m->held, m->cap_held * sizeof *m->held);
            free(m->slots);
            m->n_slots = m->cap_held * 2;
            m->slots = fl_calloc(m->n_slots, sizeof *m->slots);
            for (size_t i = 0; i < m->n_held; i++)
                *held_slot(m, m->held[i].topic, m->held[i].partition) = (uint32_t)i + 1;
        }
        m->held[m->n_held] = (held_t){ fl_strdup(topic), partition, -1 };
        s = held_slot(m, topic, partition);
        *s = (uint32_t)++m->n_held;
    }
    if (next > m->held[*s - 1].next) m->held[*s - 1].next = next;
out:
    pthread_mutex_unlock(&m->mu);
}

void fl_sink_metrics_consumer(fl_sink_metrics_t *m, rd_kafka_t *rk)
{
    pthread_mutex_lock(&m->mu);
    m->rk = rk;
    pthread_mutex_unlock(&m->mu);
}

/* ---- rendering ---- */

static fl_err_t counter(fl_buf_t *out, const char *name, const char *help, _Atomic uint64_t *v)
{
    return fl_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", name, help, name, name,
                         atomic_load_explicit(v, memory_order_relaxed));
}

static fl_err_t render_totals(fl_sink_metrics_t *m, fl_buf_t *out)
{
    static const char *const fam[8][2] = {
        { "floe_sink_records_total", "Records consumed from Kafka." },
        { "floe_sink_record_bytes_total", "Value bytes of the records consumed." },
        { "floe_sink_bad_records_total", "Records that could not be written (errors.tolerance)." },
        { "floe_sink_dead_letter_records_total", "Bad records produced to the dead-letter topic." },
        { "floe_sink_snapshots_total", "Table snapshots committed." },
        { "floe_sink_rows_committed_total", "Rows in the committed snapshots." },
        { "floe_sink_files_written_total", "Data files in the committed snapshots." },
        { "floe_sink_file_bytes_written_total", "Bytes of the data files in the committed snapshots." },
    };
    _Atomic uint64_t *vals[8] = { &m->records, &m->bytes, &m->bad, &m->dead_lettered,
                                  &m->snapshots, &m->rows, &m->files, &m->file_bytes };
    fl_err_t e = FL_OK;
    for (int f = 0; f < 8 && !e; f++) e = counter(out, fam[f][0], fam[f][1], vals[f]);
    if (!e)
        e = fl_buf_printf(out, "# HELP floe_sink_batches_total Batch commits (files, table snapshots, group offsets).\n"
                               "# TYPE floe_sink_batches_total counter\n"
                               "floe_sink_batches_total{result=\"ok\"} %" PRIu64 "\n"
                               "floe_sink_batches_total{result=\"failed\"} %" PRIu64 "\n",
                          atomic_load(&m->batches_ok), atomic_load(&m->batches_failed));
    if (!e)
        e = fl_buf_adds(out, "# HELP floe_sink_batch_commit_seconds Time from a batch's hand-over to its commit.\n"
                             "# TYPE floe_sink_batch_commit_seconds histogram\n");
    uint64_t cum = 0;
    for (size_t b = 0; b <= N_BUCKETS && !e; b++) {
        cum += atomic_load(&m->batch_buckets[b]);
        if (b < N_BUCKETS)
            e = fl_buf_printf(out, "floe_sink_batch_commit_seconds_bucket{le=\"%g\"} %" PRIu64 "\n", bucket_s[b], cum);
        else
            e = fl_buf_printf(out, "floe_sink_batch_commit_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n"
                                   "floe_sink_batch_commit_seconds_sum %.3f\n"
                                   "floe_sink_batch_commit_seconds_count %" PRIu64 "\n",
                              cum, atomic_load(&m->batch_ms_sum) / 1000.0, cum);
    }
    if (!e) e = counter(out, "floe_sink_memory_cuts_total", "Batches cut because memory reached floe.memory.max-bytes.",
                        &m->mem_cuts);
    if (!e) e = counter(out, "floe_sink_pauses_total", "Times the assignment was paused for memory.", &m->pauses);
    if (!e)
        e = fl_buf_printf(out, "# HELP floe_sink_memory_bytes Rows and row groups held, not yet committed.\n"
                               "# TYPE floe_sink_memory_bytes gauge\nfloe_sink_memory_bytes %" PRId64 "\n"
                               "# HELP floe_sink_memory_peak_bytes The most floe_sink_memory_bytes has been.\n"
                               "# TYPE floe_sink_memory_peak_bytes gauge\nfloe_sink_memory_peak_bytes %" PRId64 "\n"
                               "# HELP floe_sink_paused Whether the assignment is paused for memory (1).\n"
                               "# TYPE floe_sink_paused gauge\nfloe_sink_paused %d\n",
                          atomic_load(&m->mem), atomic_load(&m->mem_peak), atomic_load(&m->paused));
    if (!e)
        e = fl_buf_printf(out, "# HELP floe_sink_last_commit_timestamp_seconds When the last batch landed (0: none yet).\n"
                               "# TYPE floe_sink_last_commit_timestamp_seconds gauge\n"
                               "floe_sink_last_commit_timestamp_seconds %.3f\n",
                          atomic_load(&m->last_commit_ms) / 1000.0);
    return e;
}

/* Per assigned partition: position, held offset, high watermark and lags.
 * Called with m->mu held. */
static fl_err_t render_partitions(fl_sink_metrics_t *m, fl_buf_t *out)
{
    rd_kafka_topic_partition_list_t *l = NULL;
    int n = 0;
    if (m->rk && !rd_kafka_assignment(m->rk, &l) && l) {
        rd_kafka_position(m->rk, l);
        n = l->cnt;
    }
    fl_err_t e = fl_buf_printf(out, "# HELP floe_sink_partitions_assigned Partitions this member owns.\n"
                                    "# TYPE floe_sink_partitions_assigned gauge\nfloe_sink_partitions_assigned %d\n", n);
    static const char *const fam[5][2] = {
        { "floe_sink_partition_position", "Next offset the sink reads." },
        { "floe_sink_partition_committed_offset", "Next offset not yet in the tables (as this member knows)." },
        { "floe_sink_partition_high_watermark", "The partition's end offset, as last fetched." },
        { "floe_sink_partition_lag", "Records in the partition not yet in the tables." },
        { "floe_sink_partition_consumer_lag", "Records in the partition not yet read." },
    };
    /* each partition's five figures, once (-1: not known yet) */
    int64_t (*v)[5] = fl_calloc(n ? (size_t)n : 1, sizeof *v);
    for (int i = 0; i < n; i++) {
        const rd_kafka_topic_partition_t *p = &l->elems[i];
        int64_t lo = -1, hi = -1, pos = p->offset >= 0 ? p->offset : -1;
        int64_t held = held_next(m, p->topic, p->partition);
        rd_kafka_get_watermark_offsets(m->rk, p->topic, p->partition, &lo, &hi);
        v[i][0] = pos;
        v[i][1] = held;
        v[i][2] = hi;
        v[i][3] = hi >= 0 && held >= 0 ? (hi > held ? hi - held : 0) : -1;
        v[i][4] = hi >= 0 && pos >= 0 ? (hi > pos ? hi - pos : 0) : -1;
    }
    for (int f = 0; f < 5 && !e; f++) {
        e = fl_buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n", fam[f][0], fam[f][1], fam[f][0]);
        for (int i = 0; i < n && !e; i++) {
            const rd_kafka_topic_partition_t *p = &l->elems[i];
            if (v[i][f] < 0) continue;
            e = fl_buf_printf(out, "%s{topic=\"%s\",partition=\"%d\"} %" PRId64 "\n", fam[f][0], p->topic,
                              (int)p->partition, v[i][f]);
        }
    }
    free(v);
    if (l) rd_kafka_topic_partition_list_destroy(l);
    return e;
}

static fl_err_t render(void *arg, fl_buf_t *out)
{
    fl_sink_metrics_t *m = arg;
    fl_err_t e = render_totals(m, out);
    if (e) return e;
    pthread_mutex_lock(&m->mu);
    e = render_partitions(m, out);
    pthread_mutex_unlock(&m->mu);
    return e;
}

/* ---- life cycle ---- */

fl_sink_metrics_t *fl_sink_metrics_new(void)
{
    fl_sink_metrics_t *m = fl_calloc(1, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    fl_metrics_add_source(render, m);
    return m;
}

/* Everything but /metrics and /health (which the server answers itself). */
static void not_found(fl_http_conn_t *c, fl_http_req_t *req, void *ud)
{
    (void)req;
    (void)ud;
    static const char body[] = "floe sink serves /metrics and /health\n";
    fl_http_resp_status(c, 404);
    fl_http_resp_header(c, "Content-Type", "text/plain");
    fl_http_resp_send(c, body, sizeof body - 1);
}

fl_err_t fl_sink_metrics_listen(fl_sink_metrics_t *m, const char *addr)
{
    fl_http_server_cfg_t cfg = {
        .name = "sink", .listen = addr, .handler = not_found, .max_connections = FL_SINK_METRICS_MAX_CONNECTIONS,
    };
    m->srv = fl_http_server_start(&cfg);
    if (!m->srv) return FL_ERR_IO;
    fl_info("sink: metrics on http://%s/metrics (port %d)", addr, fl_http_server_port(m->srv));
    return FL_OK;
}

int fl_sink_metrics_port(const fl_sink_metrics_t *m)
{
    return m->srv ? fl_http_server_port(m->srv) : 0;
}

void fl_sink_metrics_free(fl_sink_metrics_t *m)
{
    if (!m) return;
    if (m->srv) fl_http_server_stop(m->srv, 1000);
    fl_metrics_remove_source(render, m);
    for (size_t i = 0; i < m->n_held; i++) free(m->held[i].topic);
    free(m->held);
    free(m->slots);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
