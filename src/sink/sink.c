/* floe sink's run loop: consumer, routing, per-table appenders, commits with
 * the offsets in the snapshot summary (see sink.h for the protocol). */
#include "sink/sink.h"
#include "sink/metrics.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <librdkafka/rdkafka.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/buf.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "format/json_rows.h"
#include "iceberg/append.h"
#include "iceberg/io.h"
#include "iceberg/rest_client.h"
#include "iceberg/rest_ops.h"
#include "sink/convert.h"
#include "sink/handoff.h"
#include "sink/registry.h"

#define KAFKA_TIMEOUT_MS 30000
#define FL_SINK_TX_ENDPOINT "POST /v1/{prefix}/transactions/commit"

/* librdkafka before 2.3.0 asserts in rd_kafka_destroy of a cooperative-sticky consumer that
 * joined its group but never had an assignment (its NULL assignor state; librdkafka issue 4312,
 * fixed in 2.3.0; Debian 12 ships 2.0.2): a member stopped during a rebalance aborted on its way
 * out. Such a consumer is closed and then left to the process exit, kept reachable here so that
 * leak checkers do not count it. */
static rd_kafka_t *unassigned_consumer;

typedef struct tp {
    char *topic;
    int32_t partition;
    int64_t start;              /* first offset consumed since the last commit, -1 none */
    int64_t next;               /* last consumed offset + 1, -1 none */
    int64_t fstart;             /* first offset of the batch being committed (committer), -1 none */
    const void *floor_tbl;      /* the direct path's table floor_off was read for ... */
    uint64_t floor_gen;         /* ... at this offsets generation (sink_t.offsets_gen) */
    int64_t floor_off;          /* that table's offset for this partition (records below are in it) */
    uint64_t sought;            /* sink_t.seeks when it was last sought (a rewind) */
} tp_t;

/* A partition's range in a batch handed to the committer. */
typedef struct pos {
    char *topic;
    int32_t partition;
    int64_t start, next;
} pos_t;

typedef struct tbl {
    char *name;                 /* as routed ("ns.table") */
    fl_rest_ident_t ident;
    fl_io_t *io;
    fl_rest_ops_ctx_t ctx;
    fl_table_ops_t ops;
    fl_appender_t *ap;
    fl_vec_t batch;
    json_t *offsets;            /* the group's map as this process last saw it on the table */
    json_t *pending;            /* the map the commit in flight writes */
    json_t *last_schema;        /* the last Connect schema checked for evolution (evolve-schema-enabled) */
    int64_t rows;               /* rows since the last commit */
    int64_t batch_bytes;        /* value bytes of the rows in batch (not yet Parquet) */
    int64_t held;               /* what this table counts in sink_t.mem: batch_bytes + its row groups in the making */
    const fl_field_t *direct_for; /* the schema direct was decided for */
    bool direct;                /* fl_sink_direct_usable(that schema) */
} tbl_t;

/* The committer thread: one batch at a time is committed there (its files
 * closed and uploaded, one snapshot per table, then the Kafka group offsets)
 * while the consume loop fills the next one. The main thread hands a batch
 * over (busy) only when the previous one was collected; mu guards busy, done
 * and quit. While busy, tables/pos/failed/err and the tables' appenders are
 * the committer's; after done the main thread takes them back. */
typedef struct committer {
    pthread_t th;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool busy, done, quit;
    tbl_t **tables;
    size_t n_tables;
    pos_t *pos;
    size_t n_pos;
    bool failed;
    char err[1024];
    int64_t took_ms;            /* how long the last batch took (committer thread) */
} committer_t;

typedef struct sink {
    const fl_sink_config_t *cfg;
    char key[512];              /* floe.offsets.<group> */
    rd_kafka_t *rk, *dlq;
    fl_rest_client_t *rest;
    fl_sink_registry_t *reg;    /* AvroConverter: the schema registry, else NULL */
    fl_sink_metrics_t *mx;      /* /metrics (sink/metrics.h) */
    fl_io_opts_t ioo;
    tbl_t **tables;             /* open for the batch being filled */
    size_t n_tables;
    tbl_t **spare;              /* open, not in the batch (committed earlier; taken again on use) */
    size_t n_spare;
    committer_t cm;
    tp_t *tps;
    size_t n_tps;
    json_t *absent;             /* table name -> when it was found missing (mono ms): not asked again for a while */
    int64_t last_commit;
    int64_t batch_first_ms;     /* when the open batch's first record was produced (mono; first_ms), -1 none */
    int64_t took_ms[4];         /* the last commits' durations: how early a batch is cut */
    unsigned n_took;
    size_t last_tp;             /* index of the partition of the last record (records come in runs) */
    uint64_t offsets_gen;       /* bumped whenever a table's offsets map may change */
    uint64_t seeks;             /* bumped by every seek_all: records polled before it, of a partition it moved, are stale */
    int64_t full_poll_ms;       /* when a poll last found a full array queued (a backlog being read) */
    int64_t kick_ms;            /* when the fetcher was last woken (kick_fetcher) */
    size_t kick_tp;             /* the partition it asked about, round robin */
    uint64_t rebalances;        /* bumped by every rebalance callback */
    bool fatal;                 /* stop without committing */
    bool rewound;               /* the batch was dropped while a record was being processed */
    char fatal_msg[1024];
    int dlq_failures;
    int64_t records, dlq_records, commits;
    int64_t batch_records, batch_bytes;   /* consumed since the last commit (floe.commit.max-*) */
    int64_t mem;                  /* memory the open batch's tables hold (Σ tbl_t.held) */
    int64_t inflight_mem;         /* ... and the batch handed to the committer held (until collected) */
    bool paused;                  /* the assignment is paused: memory over floe.memory.max-bytes */
    uint64_t paused_at;           /* ... as it was after this many rebalances */
    json_t *kmeta_src, *kmeta_schema;     /* KafkaMetadataTransform: the last record schema and it transformed */
    int64_t fault_after_commits;  /* test fault point (FLOE_SINK_FAULT=after-table-commit:N), 0 off */
    int64_t fault_tx_refused;     /* test fault point (FLOE_SINK_FAULT=tx-refused:N): the Nth transaction
                                   * carries a requirement that cannot hold; the process exits after it */
    bool tx;                      /* commit a batch's tables in one transaction (the catalog offers it) */
    bool ever_assigned;           /* the group gave this member an assignment (even an empty one) */
    int64_t txs;                  /* transactions sent */
    int64_t retry_ms;             /* back-off while the catalog is unreachable; 0 when it answers */
    bool direct_cfg;              /* records may take the direct path (plain JSON, one static table) */
    fl_buf_t direct_tmp;          /* its scratch */
} sink_t;

/* Stop the sink without committing the open batch; the message says why. */
__attribute__((format(printf, 2, 3))) static void set_fatal(sink_t *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->fatal_msg, sizeof s->fatal_msg, fmt, ap);
    va_end(ap);
    s->fatal = true;
}

static json_t *find_snapshot(json_t *md, int64_t id)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(md, "snapshots"), i, x)
        if ((int64_t)json_integer_value(json_object_get(x, "snapshot-id")) == id) return x;
    return NULL;
}

/* main's snapshot id, or -1 */
static int64_t main_snapshot(json_t *md)
{
    json_t *r = json_object_get(json_object_get(md, "refs"), "main");
    json_t *v = r ? json_object_get(r, "snapshot-id") : json_object_get(md, "current-snapshot-id");
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

void fl_sink_offsets_key(const char *group, char *buf, size_t n) { snprintf(buf, n, "floe.offsets.%s", group); }

json_t *fl_sink_table_offsets(json_t *md, int64_t snap_id, const char *key)
{
    return fl_sink_table_offsets_cut(md, snap_id, key, NULL);
}

/* The value of summary key in the nearest snapshot from id back that has it (borrowed), or
 * NULL; *cut (may be NULL) when the walk met a snapshot the metadata no longer holds. */
static const char *summary_back(json_t *md, int64_t id, const char *key, bool *cut)
{
    if (cut) *cut = false;
    for (int steps = 0; id >= 0 && steps < FL_SINK_MAX_ANCESTRY; steps++) {
        json_t *sn = find_snapshot(md, id);
        if (!sn) {
            if (cut) *cut = true;
            return NULL;
        }
        const char *v = json_string_value(json_object_get(json_object_get(sn, "summary"), key));
        if (v) return v;
        json_t *pp = json_object_get(sn, "parent-snapshot-id");
        id = json_is_integer(pp) ? (int64_t)json_integer_value(pp) : -1;
    }
    return NULL;
}

json_t *fl_sink_table_offsets_cut(json_t *md, int64_t snap_id, const char *key, bool *cut)
{
    const char *v = summary_back(md, snap_id, key, cut);
    json_t *m = v ? json_loads(v, 0, NULL) : NULL;
    if (json_is_object(m)) return m;
    json_decref(m);
    return json_object();
}

static int64_t map_get(json_t *m, const char *topic, int32_t partition)
{
    char p[16];
    snprintf(p, sizeof p, "%d", (int)partition);
    json_t *v = json_object_get(json_object_get(m, topic), p);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static void map_set(json_t *m, const char *topic, int32_t partition, int64_t off)
{
    char p[16];
    snprintf(p, sizeof p, "%d", (int)partition);
    json_t *t = json_object_get(m, topic);
    if (!t) {
        t = json_object();
        json_object_set_new(m, topic, t);
    }
    json_object_set_new(t, p, json_integer(off));
}

/* ---- tables ---- */

static void tbl_free(tbl_t *t)
{
    if (!t) return;
    if (t->ap) {
        fl_append_abort(t->ap);
        fl_append_free(t->ap);
    }
    fl_vec_free(&t->batch);
    fl_rest_ops_ctx_free(&t->ctx);
    fl_io_free(t->io);
    fl_rest_ident_free(&t->ident);
    json_decref(t->offsets);
    json_decref(t->pending);
    json_decref(t->last_schema);
    free(t->name);
    free(t);
}

/* Drops every open table of the main thread and what it has written since
 * the last commit (not the committer's). */
static void drop_tables(sink_t *s)
{
    s->offsets_gen++;   /* a table freed here may be allocated again at the same address */
    for (size_t i = 0; i < s->n_tables; i++) tbl_free(s->tables[i]);
    s->n_tables = 0;
    s->mem = 0;
    for (size_t i = 0; i < s->n_spare; i++) tbl_free(s->spare[i]);
    s->n_spare = 0;
}

/* Drops the open tables named name (both lists). */
static void forget_table(sink_t *s, const char *name)
{
    s->offsets_gen++;
    for (size_t i = 0; i < s->n_tables;)
        if (!strcmp(s->tables[i]->name, name)) {
            s->mem -= s->tables[i]->held;
            tbl_free(s->tables[i]);
            s->tables[i] = s->tables[--s->n_tables];
        } else {
            i++;
        }
    for (size_t i = 0; i < s->n_spare;)
        if (!strcmp(s->spare[i]->name, name)) { tbl_free(s->spare[i]); s->spare[i] = s->spare[--s->n_spare]; }
        else i++;
}

/* "day(ts)" etc. into a partition spec over schema (top-level columns). NULL
 * (with a warning) when it cannot be built: the table is made unpartitioned,
 * as the Iceberg sink does. */
static json_t *partition_spec(const char *spec, json_t *schema)
{
    json_t *fields = json_array();
    int depth = 0;
    const char *p = spec, *start = spec;
    int field_id = 1000;
    for (;; p++) {
        if (*p == '(') depth++;
        if (*p == ')') depth--;
        if (*p && (*p != ',' || depth > 0)) continue;
        char item[256];
        size_t n = (size_t)(p - start);
        while (n && (*start == ' ')) { start++; n--; }
        while (n && start[n - 1] == ' ') n--;
        if (!n || n >= sizeof item) goto bad;
        memcpy(item, start, n);
        item[n] = 0;
        char fn[32] = "", col[200] = "", arg[32] = "";
        const char *col_name = item, *transform = "identity", *suffix = "";
        char tbuf[48];
        char *lp = strchr(item, '(');
        if (lp) {
            size_t fl = (size_t)(lp - item);
            if (fl >= sizeof fn) goto bad;
            memcpy(fn, item, fl);
            char *rp = strrchr(lp, ')');
            if (!rp) goto bad;
            *rp = 0;
            char *comma = strchr(lp + 1, ',');
            if (comma) {
                *comma = 0;
                snprintf(arg, sizeof arg, "%s", comma + 1 + strspn(comma + 1, " "));
            }
            snprintf(col, sizeof col, "%s", lp + 1 + strspn(lp + 1, " "));
            for (size_t k = strlen(col); k && col[k - 1] == ' '; k--) col[k - 1] = 0;
            col_name = col;
            if (!strcmp(fn, "year") || !strcmp(fn, "years")) { transform = "year"; suffix = "_year"; }
            else if (!strcmp(fn, "month") || !strcmp(fn, "months")) { transform = "month"; suffix = "_month"; }
            else if (!strcmp(fn, "day") || !strcmp(fn, "days")) { transform = "day"; suffix = "_day"; }
            else if (!strcmp(fn, "hour") || !strcmp(fn, "hours")) { transform = "hour"; suffix = "_hour"; }
            else if (!strcmp(fn, "bucket") && *arg) { snprintf(tbuf, sizeof tbuf, "bucket[%d]", atoi(arg)); transform = tbuf; suffix = "_bucket"; }
            else if (!strcmp(fn, "truncate") && *arg) { snprintf(tbuf, sizeof tbuf, "truncate[%d]", atoi(arg)); transform = tbuf; suffix = "_trunc"; }
            else goto bad;
        }
        int source = -1;
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(schema, "fields"), i, f)
            if (!strcmp(json_string_value(json_object_get(f, "name")), col_name))
                source = (int)json_integer_value(json_object_get(f, "id"));
        if (source < 0) goto bad;
        char pname[sizeof item + 16];
        snprintf(pname, sizeof pname, "%s%s", col_name, suffix);
        json_array_append_new(fields, json_pack("{s:i,s:i,s:s,s:s}", "source-id", source, "field-id", field_id++,
                                                "name", pname, "transform", transform));
        if (!*p) break;
        start = p + 1;
    }
    return json_pack("{s:i,s:o}", "spec-id", 0, "fields", fields);
bad:
    fl_warn("sink: partition-by \"%s\" cannot be applied (columns: the first record's); creating the table unpartitioned", spec);
    json_decref(fields);
    return NULL;
}

/* Creates the table (and its namespace levels) from its first record. */
static fl_err_t auto_create(sink_t *s, tbl_t *t, json_t *value, json_t *schema, char *err, size_t errlen)
{
    fl_rest_error_t re;
    memset(&re, 0, sizeof re);
    for (size_t l = 1; l <= t->ident.nns; l++) {
        fl_rest_ident_t ns;
        fl_rest_ident_make((const char *const *)t->ident.ns, l, NULL, &ns);
        fl_err_t e = fl_rest_create_namespace(s->rest, &ns, NULL, &re);
        fl_rest_ident_free(&ns);
        if (e && e != FL_ERR_EXISTS)
            return fl_err_fmt(err, errlen, e, "creating namespace of %s: %s", t->name, re.message);
    }
    json_t *sch = NULL;
    fl_err_t e = fl_sink_infer_schema(value, schema, s->cfg->force_optional, &sch, err, errlen);
    if (e) return e;
    const char *pb = fl_sink_config_partition_by(s->cfg, t->name);
    json_t *spec = pb ? partition_spec(pb, sch) : NULL;
    json_t *props = json_deep_copy(s->cfg->create_props);
    if (!json_object_get(props, "format-version")) json_object_set_new(props, "format-version", json_string("2"));
    fl_rest_create_t req = { .schema = sch, .partition_spec = spec, .properties = props };
    fl_rest_table_t out;
    memset(&out, 0, sizeof out);
    e = fl_rest_create_table(s->rest, &t->ident, &req, &out, &re);
    fl_rest_table_free(&out);
    json_decref(sch);
    json_decref(spec);
    json_decref(props);
    if (e == FL_ERR_EXISTS) return FL_OK;   /* another member made it first */
    if (e) return fl_err_fmt(err, errlen, e, "creating table %s: HTTP %d %s", t->name, re.status, re.message);
    fl_info("sink: created table %s from its first record", t->name);
    return FL_OK;
}

static fl_err_t kafka_conf(json_t *props, rd_kafka_conf_t *conf, char *err, size_t errlen);

typedef struct takeover {
    const char *key, *was, *now, *ours; /* the Java sink's summary key: read before, to write; our offsets key */
} takeover_t;

/* The takeover commits only on the table state its control-topic read started from: two
 * members opening the table at once would otherwise both commit the same files. */
static fl_err_t takeover_summary(void *arg, json_t *md, json_t *parent, json_t *summary, char *err, size_t errlen)
{
    const takeover_t *tk = arg;
    int64_t pid = parent && json_is_integer(json_object_get(parent, "snapshot-id"))
                      ? (int64_t)json_integer_value(json_object_get(parent, "snapshot-id")) : -1;
    const char *v = summary_back(md, pid, tk->key, NULL);
    if (!v || strcmp(v, tk->was) || summary_back(md, pid, tk->ours, NULL))
        return fl_err_fmt(err, errlen, FL_ERR_CONFLICT, "the table moved on meanwhile (another member took it over?)");
    json_object_set_new(summary, tk->key, json_string(tk->now));
    return FL_OK;
}

/* Before floe sink first commits to a table the Kafka Connect Iceberg sink committed to
 * (its kafka.connect.offsets.<control-topic>.<group> summary key, and no floe.offsets of
 * ours): the data files that sink announced on its control topic and did not commit are
 * committed now, in their own snapshot (sink/handoff.h). Fails with FL_ERR_IO and the like
 * when Kafka or the catalog cannot be reached (the sink waits and tries again), else with
 * FL_ERR_PRECONDITION or FL_ERR_CONFLICT, which stop the sink. */
static fl_err_t take_over(sink_t *s, tbl_t *t, char *err, size_t errlen)
{
    const fl_sink_config_t *c = s->cfg;
    const char *topic = fl_sink_config_get(c, "iceberg.control.topic");
    const char *jg = fl_sink_config_get(c, "iceberg.connect.group-id");
    if (!topic) topic = "control-iceberg";
    fl_buf_t key, group;
    fl_buf_init(&key, 0);
    fl_buf_init(&group, 0);
    if (jg) fl_buf_adds(&group, jg);
    else fl_buf_printf(&group, "connect-%s", c->name);
    fl_buf_printf(&key, "kafka.connect.offsets.%s.%s", topic, group.ptr);
    json_t *md = fl_append_metadata(t->ap);
    const char *v = summary_back(md, main_snapshot(md), key.ptr, NULL);
    fl_err_t e = FL_OK;
    json_t *from = v ? json_loads(v, 0, NULL) : NULL;
    if (!json_is_object(from)) goto out; /* not a table the Java sink committed to */
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char hg[512];
    snprintf(hg, sizeof hg, "%s-floe-takeover", s->cfg->group_id);
    if ((e = kafka_conf(c->consumer, conf, err, errlen))) {
        rd_kafka_conf_destroy(conf);
        goto out;
    }
    rd_kafka_conf_set(conf, "group.id", hg, NULL, 0);
    const char *loc = json_string_value(json_object_get(md, "location"));
    fl_sink_handoff_t h;
    char herr[1024] = "";
    if ((e = fl_sink_handoff_read(conf, topic, from, group.ptr, t->name, loc ? loc : "", &h, herr, sizeof herr))) {
        e = fl_err_fmt(err, errlen, e, "taking table %s over from the Kafka Connect sink: %s", t->name, herr);
        goto out;
    }
    if (h.n_files) {
        char *offs = json_dumps(h.offsets, JSON_COMPACT | JSON_SORT_KEYS);
        char *was = fl_strdup(v); /* md (and v in it) is replaced when the commit re-bases */
        takeover_t tk = { .key = key.ptr, .was = was, .now = offs, .ours = s->key };
        int64_t snap = -1;
        size_t n = h.n_files;
        if (!(e = fl_append_add_files(t->ap, h.files, h.n_files, herr, sizeof herr)))
            e = fl_append_commit_fn(t->ap, takeover_summary, &tk, &snap, herr, sizeof herr);
        if (e == FL_ERR_CONFLICT) {
            fl_info("sink: table %s: not taken over from the Kafka Connect sink here: %s", t->name, herr);
            e = FL_OK;
        } else if (e) {
            fl_err_fmt(err, errlen, e, "taking table %s over from the Kafka Connect sink: %s", t->name, herr);
        } else {
            fl_info("sink: table %s: committed %zu data files (%zu events) the Kafka Connect sink had announced on "
                    "%s and not committed, snapshot %" PRId64, t->name, n, h.events, topic, snap);
        }
        free(was);
        free(offs);
    } else {
        fl_info("sink: table %s: the Kafka Connect sink left no uncommitted data files on %s", t->name, topic);
    }
    fl_sink_handoff_free(&h);
out:
    json_decref(from);
    fl_buf_free(&key);
    fl_buf_free(&group);
    /* not a record's fault: a failure here stops the sink (or, unreachable, is waited out),
     * never sends the record that opened the table to the dead-letter topic */
    return e == FL_ERR_INVALID || e == FL_ERR_NOT_FOUND ? FL_ERR_PRECONDITION : e;
}

/* The open table named name, opening (and, when allowed, creating) it. NULL
 * with *e set when it cannot be: FL_ERR_NOT_FOUND / FL_ERR_INVALID are the
 * record's fault, anything else the catalog's. */
static tbl_t *table_get(sink_t *s, const char *name, json_t *value, json_t *schema, fl_err_t *e, char *err,
                        size_t errlen)
{
    for (size_t i = 0; i < s->n_tables; i++)
        if (!strcmp(s->tables[i]->name, name)) return s->tables[i];
    for (size_t i = 0; i < s->n_spare; i++)
        if (!strcmp(s->spare[i]->name, name)) {   /* committed earlier, idle: no catalog round trip */
            tbl_t *t = s->spare[i];
            s->spare[i] = s->spare[--s->n_spare];
            s->tables = fl_realloc(s->tables, (s->n_tables + 1) * sizeof *s->tables);
            s->tables[s->n_tables++] = t;
            return t;
        }
    json_t *when = json_object_get(s->absent, name);
    if (when && fl_mono_ms() - (int64_t)json_integer_value(when) < FL_SINK_ABSENT_TABLE_MS) {
        *e = fl_err_fmt(err, errlen, FL_ERR_NOT_FOUND, "table %s does not exist%s", name,
                        s->cfg->auto_create ? "" : " (iceberg.tables.auto-create-enabled is false)");
        return NULL;
    }
    while (s->n_spare && s->n_tables + s->n_spare >= FL_SINK_MAX_TABLES) tbl_free(s->spare[--s->n_spare]);
    if (s->n_tables >= FL_SINK_MAX_TABLES) {
        *e = fl_err_fmt(err, errlen, FL_ERR_TOO_LARGE, "more than %d tables open at once", FL_SINK_MAX_TABLES);
        return NULL;
    }
    tbl_t *t = fl_calloc(1, sizeof *t);
    t->name = fl_strdup(name);
    fl_rest_error_t re;
    memset(&re, 0, sizeof re);
    if (fl_rest_ident_parse(name, true, &t->ident) || !t->ident.nns) {
        *e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "\"%s\" is not a table name (namespace.table)", name);
        goto fail;
    }
    *e = fl_rest_load_table(s->rest, &t->ident, &t->ctx.last, &re);
    if (*e == FL_ERR_NOT_FOUND && s->cfg->auto_create && value) {
        if ((*e = auto_create(s, t, value, schema, err, errlen))) goto fail;
        memset(&re, 0, sizeof re);
        *e = fl_rest_load_table(s->rest, &t->ident, &t->ctx.last, &re);
    }
    if (*e) {
        if (*e == FL_ERR_NOT_FOUND && json_object_size(s->absent) < FL_SINK_MAX_TABLES)
            json_object_set_new(s->absent, name, json_integer(fl_mono_ms()));
        if (*e == FL_ERR_NOT_FOUND)
            fl_err_fmt(err, errlen, *e, "table %s does not exist%s", name,
                       s->cfg->auto_create ? "" : " (iceberg.tables.auto-create-enabled is false)");
        else
            fl_err_fmt(err, errlen, *e, "loading table %s: HTTP %d %s", name, re.status, re.message);
        goto fail;
    }
    if (fl_io_new(t->ctx.last.config, &s->ioo, &t->io)) {
        *e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "cannot set up the file IO of table %s", name);
        goto fail;
    }
    t->ctx.client = s->rest;
    t->ctx.ident = &t->ident;
    t->ctx.io = t->io;
    fl_rest_table_ops(&t->ctx, &t->ops);
    fl_append_opts_t ao = { .max_row_group_bytes = FL_SINK_ROW_GROUP_BYTES };
    if ((*e = fl_append_open(&t->ap, &t->ops, &ao, err, errlen))) goto fail;
    json_t *md = fl_append_metadata(t->ap);
    bool cut = false;
    t->offsets = fl_sink_table_offsets_cut(md, main_snapshot(md), s->key, &cut);
    if (cut && !json_object_size(t->offsets))
        fl_warn("sink: table %s has no %s in its retained history (expired after a rewrite that did not carry "
                "it?): its records are resumed from the Kafka group offsets", name, s->key);
    if (!json_object_size(t->offsets) && (*e = take_over(s, t, err, errlen))) goto fail;
    fl_vec_init(&t->batch, fl_append_schema(t->ap));
    s->retry_ms = 0;
    s->offsets_gen++;
    s->tables = fl_realloc(s->tables, (s->n_tables + 1) * sizeof *s->tables);
    s->tables[s->n_tables++] = t;
    return t;
fail:
    tbl_free(t);
    return NULL;
}

/* ---- partitions ---- */

static tp_t *tp_find(sink_t *s, const char *topic, int32_t partition, bool add)
{
    size_t h = s->last_tp;
    if (h < s->n_tps && s->tps[h].partition == partition && !strcmp(s->tps[h].topic, topic)) return &s->tps[h];
    for (size_t i = 0; i < s->n_tps; i++)
        if (s->tps[i].partition == partition && !strcmp(s->tps[i].topic, topic)) {
            s->last_tp = i;
            return &s->tps[i];
        }
    if (!add) return NULL;
    s->tps = fl_realloc(s->tps, (s->n_tps + 1) * sizeof *s->tps);
    tp_t *p = &s->tps[s->n_tps++];
    p->topic = fl_strdup(topic);
    p->partition = partition;
    p->start = p->next = p->fstart = -1;
    p->floor_tbl = NULL;
    p->sought = 0;
    s->last_tp = s->n_tps - 1;
    return p;
}

static void tp_remove(sink_t *s, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < s->n_tps; i++)
        if (s->tps[i].partition == partition && !strcmp(s->tps[i].topic, topic)) {
            free(s->tps[i].topic);
            s->tps[i] = s->tps[--s->n_tps];
            return;
        }
}

/* Seeks every partition of l to its offset. A partition left where it was would skip the
 * dropped batch (a gap), so the seek is tried FL_SINK_SEEK_ATTEMPTS times (librdkafka can time
 * one out at once, e.g. right after an earlier seek of it) and then stops the sink, whose
 * restart resumes from the tables' offsets. Per-partition errors count as much as the call's. */
static void seek_all(sink_t *s, rd_kafka_topic_partition_list_t *l)
{
    s->seeks++;
    for (int i = 0; i < l->cnt; i++) {
        tp_t *p = tp_find(s, l->elems[i].topic, l->elems[i].partition, false);
        if (p) p->sought = s->seeks;
    }
    rd_kafka_topic_partition_list_t *cur = l, *left = NULL;   /* left: owned, what is still to seek */
    for (int attempt = 1;; attempt++) {
        char why[512] = "";
        rd_kafka_error_t *ke = rd_kafka_seek_partitions(s->rk, cur, KAFKA_TIMEOUT_MS);
        bool all_failed = ke != NULL;   /* the call failed: none is known to have moved */
        if (ke) {
            snprintf(why, sizeof why, "%s", rd_kafka_error_string(ke));
            rd_kafka_error_destroy(ke);
        }
        rd_kafka_topic_partition_list_t *next = rd_kafka_topic_partition_list_new(cur->cnt);
        for (int i = 0; i < cur->cnt; i++) {
            rd_kafka_topic_partition_t *p = &cur->elems[i];
            if (!all_failed && !p->err) continue;
            rd_kafka_topic_partition_list_add(next, p->topic, p->partition)->offset = p->offset;
            if (p->err && !why[0])
                snprintf(why, sizeof why, "%s-%d: %s", p->topic, (int)p->partition, rd_kafka_err2str(p->err));
        }
        if (left) rd_kafka_topic_partition_list_destroy(left);
        cur = left = next;
        if (!left->cnt) break;
        if (attempt >= FL_SINK_SEEK_ATTEMPTS) {
            set_fatal(s, "seek failed %d times: %s", attempt, why);
            break;
        }
        fl_warn("sink: seeking %d partition(s) failed (%s); trying again", left->cnt, why);
        usleep((useconds_t)attempt * 200000);
    }
    rd_kafka_topic_partition_list_destroy(left);
}

/* ---- commit ---- */

typedef struct commit_arg {
    sink_t *s;
    tbl_t *t;
    const pos_t *pos;
    size_t n_pos;
} commit_arg_t;

/* Per attempt: the table's map on the parent, checked against what this
 * process last saw and merged with the batch's positions. Committer thread. */
static fl_err_t summary_cb(void *arg, json_t *md, json_t *parent, json_t *summary, char *err, size_t errlen)
{
    commit_arg_t *ca = arg;
    sink_t *s = ca->s;
    tbl_t *t = ca->t;
    int64_t pid = parent ? (int64_t)json_integer_value(json_object_get(parent, "snapshot-id")) : -1;
    json_t *cur = fl_sink_table_offsets(md, pid, s->key);
    for (size_t i = 0; i < ca->n_pos; i++) {
        const pos_t *p = &ca->pos[i];
        int64_t seen = map_get(t->offsets, p->topic, p->partition);
        int64_t now = map_get(cur, p->topic, p->partition);
        if (now > seen) {
            fl_err_t e = fl_err_fmt(err, errlen, FL_ERR_CONFLICT,
                                    "fenced: table %s already holds %s-%d up to offset %" PRId64
                                    " (this process last saw %" PRId64 ")", t->name, p->topic, (int)p->partition, now, seen);
            json_decref(cur);
            return e;
        }
        if (p->next > now) map_set(cur, p->topic, p->partition, p->next);
    }
    char *txt = json_dumps(cur, JSON_COMPACT | JSON_SORT_KEYS);
    json_object_set_new(summary, s->key, json_string(txt));
    free(txt);
    json_decref(t->pending);
    t->pending = cur;
    return FL_OK;
}

static fl_err_t flush_batch(tbl_t *t, char *err, size_t errlen)
{
    if (!t->batch.len) return FL_OK;
    fl_err_t e = fl_append_write(t->ap, &t->batch, err, errlen);
    fl_vec_clear(&t->batch);
    return e;
}

/* Main thread: t took a row of `bytes` value bytes; its rows go to Parquet every
 * FL_SINK_BATCH_ROWS rows or FL_SINK_BATCH_BYTES bytes. What t holds in memory is
 * counted in s->mem (floe.memory.max-bytes). */
static void table_took(sink_t *s, tbl_t *t, int64_t bytes)
{
    t->rows++;
    t->batch_bytes += bytes;
    t->held += bytes;
    s->mem += bytes;
    if (t->batch.len >= FL_SINK_BATCH_ROWS || t->batch_bytes >= FL_SINK_BATCH_BYTES) {
        char err[1024];
        if (flush_batch(t, err, sizeof err)) set_fatal(s, "writing %s: %s", t->name, err);
        t->batch_bytes = 0;
        s->mem -= t->held;
        t->held = fl_append_buffered(t->ap);
        s->mem += t->held;
    }
    fl_sink_metrics_memory(s->mx, s->mem + s->inflight_mem);
}

static void dlq_flush(sink_t *s)
{
    if (!s->dlq) return;
    rd_kafka_flush(s->dlq, KAFKA_TIMEOUT_MS);
    if (rd_kafka_outq_len(s->dlq) > 0 || s->dlq_failures) {
        set_fatal(s, "the dead-letter topic did not take %d record(s)",
                 s->dlq_failures + rd_kafka_outq_len(s->dlq));
    }
}

/* A number of a snapshot summary (strings there), 0 when absent. */
static int64_t summary_num(json_t *sum, const char *key)
{
    const char *v = json_string_value(json_object_get(sum, key));
    return v ? strtoll(v, NULL, 10) : 0;
}

/* After a table's snapshot landed: what the process knows of it, a log line. */
static void table_committed(sink_t *s, tbl_t *t, int64_t rows, int64_t sid, int64_t t0, const char *how)
{
    json_decref(t->offsets);
    t->offsets = t->pending;
    t->pending = NULL;
    t->rows = 0;
    s->commits++;
    json_t *snap = sid >= 0 ? find_snapshot(fl_append_metadata(t->ap), sid) : NULL;
    json_t *sum = snap ? json_object_get(snap, "summary") : NULL;
    fl_sink_metrics_snapshot(s->mx, rows, summary_num(sum, "added-data-files"), summary_num(sum, "added-files-size"));
    fl_info("sink: committed %" PRId64 " rows to %s (snapshot %" PRId64 ", %" PRId64 " ms%s)", rows, t->name, sid,
            fl_mono_ms() - t0, how);
}

/* The catalog does not have POST {p}/transactions/commit: 404 for the route (not for a table
 * of the transaction), 405, 406 or 501. */
static bool tx_unsupported(const fl_rest_error_t *re)
{
    if (re->status == 404)
        return strcmp(re->type, "NoSuchTableException") && strcmp(re->type, "NoSuchNamespaceException");
    return re->status == 405 || re->status == 406 || re->status == 501;
}

/* Settles every prepared table of a transaction with outcome o; the first failure into err. */
static fl_err_t settle_all(tbl_t **ts, size_t n, fl_append_outcome_t o, char *err, size_t errlen)
{
    fl_err_t first = FL_OK;
    for (size_t i = 0; i < n; i++) {
        char e2[512] = "";
        fl_err_t e = fl_append_settle(ts[i]->ap, o, e2, sizeof e2);
        if (e && !first) first = fl_err_fmt(err, errlen, e, "%s: %s", ts[i]->name, e2);
    }
    return first;
}

/* Committer thread: commits the batch's n (>= 2) tables in one transaction: every table's
 * snapshot lands, or none. A 409 re-bases every table (its summary is checked and merged
 * again) and retries. Returns 0 when it landed, 1 when the catalog has no transactions (every
 * table is left ready for its own commit), -1 when it failed (why in err; the caller hands
 * the failure to the main thread, which rewinds). */
static int commit_tx(sink_t *s, const committer_t *c, tbl_t **ts, size_t n, char *err, size_t errlen)
{
    int64_t t0 = fl_mono_ms();
    int64_t *sids = fl_calloc(n, sizeof *sids), *rows = fl_calloc(n, sizeof *rows);
    int rc = -1;
    for (size_t i = 0; i < n; i++) rows[i] = ts[i]->rows;
    for (int attempt = 1;; attempt++) {
        json_t *changes = json_array();
        fl_err_t e = FL_OK;
        for (size_t i = 0; i < n && !e; i++) {
            tbl_t *t = ts[i];
            commit_arg_t ca = { s, t, c->pos, c->n_pos };
            json_t *reqs, *upd;
            if ((e = fl_append_prepare(t->ap, summary_cb, &ca, &reqs, &upd, &sids[i], err, errlen))) break;
            if (s->fault_tx_refused > 0 && s->txs + 1 == s->fault_tx_refused && i == n - 1)
                json_array_append_new(reqs, json_pack("{s:s,s:s,s:I}", "type", "assert-ref-snapshot-id", "ref",
                                                      "main", "snapshot-id", (json_int_t)1));
            json_t *nsa = json_array();
            for (size_t k = 0; k < t->ident.nns; k++) json_array_append_new(nsa, json_string(t->ident.ns[k]));
            json_array_append_new(changes, json_pack("{s:{s:o,s:s},s:o,s:o}", "identifier", "namespace", nsa, "name",
                                                     t->ident.name, "requirements", reqs, "updates", upd));
        }
        if (e) {
            json_decref(changes);
            fl_error("sink: preparing the transaction failed: %s", err);
            goto out;
        }
        bool unknown = false;
        fl_rest_error_t re;
        memset(&re, 0, sizeof re);
        s->txs++;
        e = fl_rest_commit_transaction(s->rest, changes, &unknown, &re);
        json_decref(changes);
        if (!e) {
            settle_all(ts, n, FL_APPEND_LANDED, err, errlen);
            for (size_t i = 0; i < n; i++) table_committed(s, ts[i], rows[i], sids[i], t0, ", one transaction");
            rc = 0;
            goto out;
        }
        if (tx_unsupported(&re)) {
            fl_info("sink: the catalog has no multi-table transactions (HTTP %d: %s): committing table by table",
                    re.status, re.message);
            s->tx = false;
            settle_all(ts, n, FL_APPEND_SINGLE, err, errlen);
            rc = 1;
            goto out;
        }
        if (s->fault_tx_refused > 0 && s->txs == s->fault_tx_refused) {
            fl_warn("sink: FLOE_SINK_FAULT: the transaction was refused (HTTP %d: %s); exiting", re.status,
                    re.message);
            _exit(137);
        }
        if (e == FL_ERR_CONFLICT && attempt < FL_SINK_TX_ATTEMPTS) {
            if (settle_all(ts, n, FL_APPEND_CONFLICT, err, errlen)) goto out;
            usleep((useconds_t)(attempt * 20000));
            continue;
        }
        if (unknown && !settle_all(ts, n, FL_APPEND_UNKNOWN, err, errlen)) {
            for (size_t i = 0; i < n; i++) table_committed(s, ts[i], rows[i], sids[i], t0, ", one transaction");
            rc = 0;
            goto out;
        }
        if (!unknown) settle_all(ts, n, FL_APPEND_DROP, err, errlen);
        snprintf(err, errlen, "the transaction over %zu tables failed%s (HTTP %d): %s", n,
                 unknown ? " and did not land" : "", re.status, re.message);
        fl_error("sink: %s", err);
        goto out;
    }
out:
    free(sids);
    free(rows);
    return rc;
}

/* Committer thread: commits the handed-over batch: its tables' files
 * closed and uploaded, one snapshot per table (all in one transaction where
 * the catalog offers it), then the Kafka group offsets. The first failure
 * stops it (c->failed, c->err; the main thread rewinds): the tables that
 * committed keep their part, and their offsets stop it from landing twice. */
static void commit_batch(sink_t *s, committer_t *c)
{
    int64_t t_start = fl_mono_ms();
    char err[1024] = "";
    bool ok = false;
    size_t n = c->n_tables;   /* every table handed over has rows */
    for (size_t i = 0; i < n; i++) {
        tbl_t *t = c->tables[i];
        fl_err_t e = flush_batch(t, err, sizeof err);
        if (e) {
            fl_error("sink: writing to %s failed: %s", t->name, err);
            goto out;
        }
    }
    if (n >= 2 && s->tx) {
        int r = commit_tx(s, c, c->tables, n, err, sizeof err);
        if (r < 0) goto out;
        if (r == 0 && s->fault_after_commits > 0 && s->commits >= s->fault_after_commits) {
            fl_warn("sink: FLOE_SINK_FAULT: exiting after a table commit, before the group offsets");
            _exit(137);
        }
    }
    for (size_t i = 0; i < n; i++) {
        tbl_t *t = c->tables[i];
        if (!t->rows) continue;   /* committed in the transaction */
        int64_t t0 = fl_mono_ms(), sid = -1, rows = t->rows;
        commit_arg_t ca = { s, t, c->pos, c->n_pos };
        fl_err_t e = fl_append_commit_fn(t->ap, summary_cb, &ca, &sid, err, sizeof err);
        if (e) {
            fl_error("sink: commit to %s failed: %s", t->name, err);
            goto out;
        }
        if (s->fault_after_commits > 0 && s->commits + 1 >= s->fault_after_commits) {
            fl_warn("sink: FLOE_SINK_FAULT: exiting after a table commit, before the group offsets");
            _exit(137);
        }
        table_committed(s, t, rows, sid, t0, "");
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)c->n_pos + 1);
    for (size_t i = 0; i < c->n_pos; i++)
        rd_kafka_topic_partition_list_add(l, c->pos[i].topic, c->pos[i].partition)->offset = c->pos[i].next;
    rd_kafka_resp_err_t ke = rd_kafka_commit(s->rk, l, 0);
    if (ke) fl_warn("sink: committing the Kafka group offsets failed (the tables hold them): %s", rd_kafka_err2str(ke));
    rd_kafka_topic_partition_list_destroy(l);
    for (size_t i = 0; i < c->n_pos; i++) fl_sink_metrics_committed(s->mx, c->pos[i].topic, c->pos[i].partition, c->pos[i].next);
    c->took_ms = fl_mono_ms() - t_start;
    ok = true;
out:
    fl_sink_metrics_batch(s->mx, ok, fl_mono_ms() - t_start);
    if (!ok) {
        c->failed = true;
        snprintf(c->err, sizeof c->err, "%s", err);
    }
}

static void *committer_main(void *arg)
{
    sink_t *s = arg;
    committer_t *c = &s->cm;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->quit && !(c->busy && !c->done)) pthread_cond_wait(&c->cv, &c->mu);
        if (!(c->busy && !c->done)) break;
        pthread_mutex_unlock(&c->mu);
        commit_batch(s, c);
        pthread_mutex_lock(&c->mu);
        c->done = true;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* max per partition of src into dst */
static void map_merge_max(json_t *dst, json_t *src)
{
    const char *topic, *part;
    json_t *parts, *v;
    json_object_foreach(src, topic, parts) {
        json_object_foreach(parts, part, v) {
            int32_t pn = (int32_t)atoi(part);
            if (json_is_integer(v) && json_integer_value(v) > map_get(dst, topic, pn))
                map_set(dst, topic, pn, (int64_t)json_integer_value(v));
        }
    }
}

/* Main thread: waits for the batch in the committer and takes its tables
 * back. On success the tables of the open batch learn what it committed (so
 * their own commit is not fenced by it, and builds on its snapshot) and the
 * partitions' fstart is cleared; on failure they keep fstart (the caller
 * rewinds) and the batch's tables are dropped. False: it failed (why in the
 * committer's err). */
static bool committer_wait(sink_t *s)
{
    committer_t *c = &s->cm;
    if (!c->busy) return true;
    pthread_mutex_lock(&c->mu);
    while (!c->done) pthread_cond_wait(&c->cv, &c->mu);
    c->busy = c->done = false;
    pthread_mutex_unlock(&c->mu);
    s->inflight_mem = 0;
    fl_sink_metrics_memory(s->mx, s->mem);
    bool ok = !c->failed;
    s->offsets_gen++;   /* the tables coming back and the open ones' merged maps */
    if (ok) s->took_ms[s->n_took++ % 4] = c->took_ms;
    for (size_t i = 0; i < c->n_tables; i++) {
        tbl_t *t = c->tables[i];
        if (!ok) { tbl_free(t); continue; }
        tbl_t *open = NULL;
        for (size_t k = 0; k < s->n_tables; k++)
            if (!strcmp(s->tables[k]->name, t->name)) open = s->tables[k];
        if (!open) {
            s->tables = fl_realloc(s->tables, (s->n_tables + 1) * sizeof *s->tables);
            s->tables[s->n_tables++] = t;
            continue;
        }
        map_merge_max(open->offsets, t->offsets);
        fl_append_adopt_base(open->ap, t->ap);
        for (size_t k = 0; k < s->n_spare; k++)
            if (!strcmp(s->spare[k]->name, t->name)) { tbl_free(s->spare[k]); s->spare[k] = s->spare[--s->n_spare]; break; }
        s->spare = fl_realloc(s->spare, (s->n_spare + 1) * sizeof *s->spare);
        s->spare[s->n_spare++] = t;
    }
    c->n_tables = 0;
    for (size_t i = 0; i < c->n_pos; i++) free(c->pos[i].topic);
    free(c->pos);
    c->pos = NULL;
    c->n_pos = 0;
    if (ok)
        for (size_t i = 0; i < s->n_tps; i++) s->tps[i].fstart = -1;
    return ok;
}

/* Forget the open batch (and the committer's, if it is still in flight):
 * the appenders' files are deleted, the tables reopened (with their offsets
 * reloaded) on next use, and every partition read again from the first
 * offset not committed. */
static void rewind_all(sink_t *s, const char *why)
{
    char whybuf[1024];
    snprintf(whybuf, sizeof whybuf, "%s", why);   /* why may be the committer's err */
    committer_wait(s);
    drop_tables(s);
    s->rewound = true;
    s->batch_first_ms = -1;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)s->n_tps + 1);
    for (size_t i = 0; i < s->n_tps; i++) {
        int64_t from = s->tps[i].fstart >= 0 ? s->tps[i].fstart : s->tps[i].start;
        if (from >= 0) rd_kafka_topic_partition_list_add(l, s->tps[i].topic, s->tps[i].partition)->offset = from;
        s->tps[i].start = s->tps[i].next = s->tps[i].fstart = -1;
    }
    if (l->cnt) {
        fl_warn("sink: re-reading %d partition(s) from the last commit: %s", l->cnt, whybuf);
        seek_all(s, l);
    }
    rd_kafka_topic_partition_list_destroy(l);
}

/* Main thread: collects the batch in flight (rewinding if it failed) and
 * hands the open one to the committer: its tables with rows and its
 * partitions' ranges. The consume loop goes on filling the next batch. */
static void commit_start(sink_t *s)
{
    if (s->fatal) return;
    if (!committer_wait(s)) {
        rewind_all(s, s->cm.err);
        return;
    }
    s->last_commit = fl_mono_ms();
    s->batch_records = s->batch_bytes = 0;
    s->batch_first_ms = -1;
    bool any = false;
    for (size_t i = 0; i < s->n_tps; i++) any |= s->tps[i].start >= 0;
    if (!any) return;
    dlq_flush(s);
    if (s->fatal) return;
    committer_t *c = &s->cm;
    c->failed = false;
    c->err[0] = 0;
    c->tables = fl_realloc(c->tables, (s->n_tables + 1) * sizeof *c->tables);
    for (size_t i = 0; i < s->n_tables;) {
        if (s->tables[i]->rows) {
            tbl_t *t = s->tables[i];
            s->inflight_mem += t->held;   /* freed once the committer closed its files */
            s->mem -= t->held;
            t->held = t->batch_bytes = 0;
            c->tables[c->n_tables++] = t;
            s->tables[i] = s->tables[--s->n_tables];
        } else {
            i++;
        }
    }
    c->pos = fl_calloc(s->n_tps + 1, sizeof *c->pos);
    for (size_t i = 0; i < s->n_tps; i++) {
        tp_t *p = &s->tps[i];
        if (p->start < 0) continue;
        c->pos[c->n_pos++] = (pos_t){ fl_strdup(p->topic), p->partition, p->start, p->next };
        p->fstart = p->start;
        p->start = -1;
    }
    pthread_mutex_lock(&c->mu);
    c->busy = true;
    c->done = false;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Whether the committer is idle or done (the open batch can be handed over
 * without waiting). */
static bool committer_free(sink_t *s)
{
    pthread_mutex_lock(&s->cm.mu);
    bool f = !s->cm.busy || s->cm.done;
    pthread_mutex_unlock(&s->cm.mu);
    return f;
}

/* librdkafka before 2.1 looks at a partition whose prefetch was full again only when its broker
 * thread next wakes, about a second later (2.1 added fetch.queue.backoff.ms for this wait), so a
 * backlog drained at one prefetch a second. Any request through that thread wakes it, and it then
 * finds the drained queue fetchable: while a backlog is being read (a full poll in the last 200 ms)
 * and the queue runs dry, the sink asks for a partition's watermarks (one small request), at most
 * every 20 ms, round robin over the partitions it reads (so each broker's thread in turn). */
static void kick_fetcher(sink_t *s)
{
    if (rd_kafka_version() >= 0x020100ff || s->paused || !s->n_tps) return;
    int64_t now = fl_mono_ms();
    if (now - s->full_poll_ms > FL_SINK_KICK_WINDOW_MS || now - s->kick_ms < FL_SINK_KICK_EVERY_MS) return;
    s->kick_ms = now;
    const tp_t *p = &s->tps[s->kick_tp++ % s->n_tps];
    int64_t lo, hi;
    rd_kafka_query_watermark_offsets(s->rk, p->topic, p->partition, &lo, &hi, FL_SINK_KICK_EVERY_MS);
}

/* Milliseconds until the open batch is due (0: now). A batch is cut when
 * its first record is commit-interval old less the recent commits' duration
 * and a twentieth of the interval (at most half the interval), so that it is queryable about one interval
 * after its first record was produced (first_ms), or at the interval since the last cut, or
 * at the configured record/byte caps (*cap: then the consume loop waits for
 * the committer, so a batch holds no more than the cap); a batch due by time
 * while the previous one is still being committed waits (the loop does not). */
static int64_t commit_due_in(sink_t *s, bool *cap)
{
    const fl_sink_config_t *c = s->cfg;
    *cap = (c->commit_max_records && s->batch_records >= c->commit_max_records) ||
           (c->commit_max_bytes && s->batch_bytes >= c->commit_max_bytes);
    if (*cap) return 0;
    int64_t now = fl_mono_ms(), in = c->commit_interval_ms - (now - s->last_commit);
    if (s->batch_first_ms >= 0) {
        int64_t lead = 0;
        for (unsigned i = 0; i < 4 && i < s->n_took; i++) lead = s->took_ms[i] > lead ? s->took_ms[i] : lead;
        lead += c->commit_interval_ms / 20; /* a margin: a commit may take longer than the last few */
        if (lead > c->commit_interval_ms / 2) lead = c->commit_interval_ms / 2;
        int64_t first = c->commit_interval_ms - lead - (now - s->batch_first_ms);
        if (first < in) in = first;
    }
    return in > 0 ? in : 0;
}

/* Whether the memory held (open batch, and the batch in flight until the
 * committer's files are closed) reached floe.memory.max-bytes. */
static bool over_memory(const sink_t *s)
{
    return s->cfg->memory_max && s->mem + s->inflight_mem >= s->cfg->memory_max;
}

/* Pauses (on) or resumes every assigned partition. Paused, the consume loop
 * goes on polling (rebalances, the committer's progress) but takes no record:
 * back-pressure while memory is over the cap. Called again while over: after a
 * rebalance it pauses the partitions assigned meanwhile, else it does nothing. */
static void set_paused(sink_t *s, bool on)
{
    if (on && s->paused && s->paused_at == s->rebalances) return;
    s->paused_at = s->rebalances;
    rd_kafka_topic_partition_list_t *l = NULL;
    if (!rd_kafka_assignment(s->rk, &l) && l) {
        rd_kafka_resp_err_t ke = on ? rd_kafka_pause_partitions(s->rk, l) : rd_kafka_resume_partitions(s->rk, l);
        if (ke) fl_warn("sink: %s partitions: %s", on ? "pausing" : "resuming", rd_kafka_err2str(ke));
        rd_kafka_topic_partition_list_destroy(l);
    }
    if (on != s->paused) {
        fl_debug("sink: %s (memory held %" PRId64 " + %" PRId64 " in flight, cap %" PRId64 ")",
                 on ? "paused" : "resumed", s->mem, s->inflight_mem, s->cfg->memory_max);
        fl_sink_metrics_paused(s->mx, on);
    }
    s->paused = on;
}

/* Main thread, every pass of the consume loop: memory at the cap cuts the open
 * batch as soon as the committer is free (its commit closes the files and frees
 * what they hold), and pauses the partitions until it is under the cap again. */
static void memory_backpressure(sink_t *s)
{
    if (!over_memory(s)) {
        if (s->paused) set_paused(s, false);
        return;
    }
    if (committer_free(s)) {
        if (s->mem > 0) fl_sink_metrics_memory_cut(s->mx);
        commit_start(s);   /* collects the batch in flight, hands this one over */
    }
    if (over_memory(s)) set_paused(s, true);
    else if (s->paused) set_paused(s, false);
}

/* Commits the open batch and waits for it (rebalances, schema changes,
 * stop): afterwards nothing is in flight. A failure rewinds. */
static void commit_all(sink_t *s)
{
    commit_start(s);
    if (!committer_wait(s)) rewind_all(s, s->cm.err);
}

/* ---- records ---- */

static void dlq_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    sink_t *s = opaque;
    if (m->err) {
        s->dlq_failures++;
        fl_error("sink: dead-letter produce failed: %s", rd_kafka_err2str(m->err));
    }
}

/* A record that cannot be written: stop (tolerance none) or set it aside. */
static void bad_record(sink_t *s, const rd_kafka_message_t *m, const char *why)
{
    const char *topic = rd_kafka_topic_name(m->rkt);
    if (!s->cfg->tolerance_all) {
        set_fatal(s, "record %s-%d@%" PRId64 ": %s (errors.tolerance=none)", topic,
                 (int)m->partition, (int64_t)m->offset, why);
        return;
    }
    if (s->cfg->errors_log || !s->dlq)
        fl_warn("sink: record %s-%d@%" PRId64 " skipped: %s", topic, (int)m->partition, (int64_t)m->offset, why);
    s->dlq_records++;
    fl_sink_metrics_bad(s->mx, s->dlq != NULL);
    if (!s->dlq) return;
    char part[16], off[32];
    snprintf(part, sizeof part, "%d", (int)m->partition);
    snprintf(off, sizeof off, "%" PRId64, (int64_t)m->offset);
    rd_kafka_headers_t *h = NULL;
    rd_kafka_headers_t *src = NULL;
    if (!rd_kafka_message_headers(m, &src) && src) h = rd_kafka_headers_copy(src);
    else h = rd_kafka_headers_new(6);
    rd_kafka_header_add(h, "__connect.errors.topic", -1, topic, -1);
    rd_kafka_header_add(h, "__connect.errors.partition", -1, part, -1);
    rd_kafka_header_add(h, "__connect.errors.offset", -1, off, -1);
    rd_kafka_header_add(h, "__connect.errors.connector.name", -1, s->cfg->name, -1);
    rd_kafka_header_add(h, "__connect.errors.exception.class.name", -1, "floe.sink.RecordError", -1);
    rd_kafka_header_add(h, "__connect.errors.exception.message", -1, why, -1);
    rd_kafka_resp_err_t e;
    for (int tries = 0;; tries++) {
        e = rd_kafka_producev(s->dlq, RD_KAFKA_V_TOPIC(s->cfg->dlq_topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                              RD_KAFKA_V_KEY(m->key, m->key_len), RD_KAFKA_V_VALUE(m->payload, m->len),
                              RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL || tries > 100) break;
        rd_kafka_poll(s->dlq, 100);
    }
    if (e) {
        rd_kafka_headers_destroy(h);
        set_fatal(s, "cannot send record %s-%d@%" PRId64 " to %s: %s", topic,
                 (int)m->partition, (int64_t)m->offset, s->cfg->dlq_topic, rd_kafka_err2str(e));
    }
    rd_kafka_poll(s->dlq, 0);
}

/* Tables a record goes to: names into out (up to cap), count returned; -1
 * with why filled when it has no route. */
static int route(sink_t *s, json_t *value, const char **out, size_t cap, char *buf, size_t bufn, char *why,
                 size_t whyn)
{
    const fl_sink_config_t *c = s->cfg;
    if (c->dynamic) {
        const char *v = fl_sink_route_value(value, c->route_field, true, buf, bufn);
        if (!v || !*v) {
            snprintf(why, whyn, "route field %s is missing or null", c->route_field);
            return -1;
        }
        out[0] = v;
        return 1;
    }
    size_t n = 0;
    if (!c->route_field) {
        for (size_t i = 0; i < c->n_tables && n < cap; i++) out[n++] = c->tables[i].table;
        return (int)n;
    }
    const char *v = fl_sink_route_value(value, c->route_field, false, buf, bufn);
    if (!v) {
        snprintf(why, whyn, "route field %s is missing or null", c->route_field);
        return -1;
    }
    for (size_t i = 0; i < c->n_tables && n < cap; i++)
        if (c->tables[i].has_regex && !regexec(&c->tables[i].regex, v, 0, NULL, 0)) out[n++] = c->tables[i].table;
    return (int)n;
}

/* Adds columns the record has and the table lacks (evolve-schema-enabled):
 * the open batch is committed first, the schema change committed, the table
 * reopened. */
static fl_err_t evolve(sink_t *s, tbl_t **tp, json_t *value, json_t *schema, char *err, size_t errlen)
{
    tbl_t *t = *tp;
    /* dry run on the appender's schema: nothing to add (only nulls or empty
     * values among the new fields) means no commit and no reopen */
    {
        json_t *md = fl_append_metadata(t->ap);
        json_t *st = NULL, *x;
        size_t i;
        int cur = (int)json_integer_value(json_object_get(md, "current-schema-id"));
        json_array_foreach(json_object_get(md, "schemas"), i, x)
            if ((int)json_integer_value(json_object_get(x, "schema-id")) == cur) st = json_deep_copy(x);
        int next = (int)json_integer_value(json_object_get(md, "last-column-id")) + 1;
        size_t n = st ? fl_sink_evolve_struct(st, value, schema, s->cfg->case_insensitive, &next) : 0;
        json_decref(st);
        if (!n) return FL_OK;
    }
    char *name = fl_strdup(t->name);
    commit_all(s);
    fl_err_t e = FL_OK;
    if (s->fatal) { e = fl_err_fmt(err, errlen, FL_ERR_IO, "%s", s->fatal_msg); goto out; }
    if (s->rewound) goto out;
    for (int attempt = 0; attempt < 5; attempt++) {
        fl_rest_table_t cur;
        memset(&cur, 0, sizeof cur);
        fl_rest_error_t re;
        memset(&re, 0, sizeof re);
        if ((e = fl_rest_load_table(s->rest, &t->ident, &cur, &re))) {
            e = fl_err_fmt(err, errlen, e, "loading %s: %s", name, re.message);
            goto out;
        }
        json_t *md = cur.metadata;
        int sid = (int)json_integer_value(json_object_get(md, "current-schema-id"));
        int last = (int)json_integer_value(json_object_get(md, "last-column-id"));
        json_t *st = NULL;
        size_t i;
        json_t *x;
        int max_sid = 0;
        json_array_foreach(json_object_get(md, "schemas"), i, x) {
            int id = (int)json_integer_value(json_object_get(x, "schema-id"));
            if (id == sid) st = json_deep_copy(x);
            if (id > max_sid) max_sid = id;
        }
        if (!st) { fl_rest_table_free(&cur); e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s has no current schema", name); goto out; }
        int next = last + 1;
        size_t added = fl_sink_evolve_struct(st, value, schema, s->cfg->case_insensitive, &next);
        if (!added) { json_decref(st); fl_rest_table_free(&cur); e = FL_OK; break; }   /* another member added them */
        json_object_set_new(st, "schema-id", json_integer(max_sid + 1));
        json_t *reqs = json_pack("[{s:s,s:i},{s:s,s:i}]", "type", "assert-current-schema-id", "current-schema-id", sid,
                                 "type", "assert-last-assigned-field-id", "last-assigned-field-id", last);
        json_t *ups = json_pack("[{s:s,s:o,s:i},{s:s,s:i}]", "action", "add-schema", "schema", st, "last-column-id",
                                next - 1, "action", "set-current-schema", "schema-id", -1);
        bool unknown = false;
        memset(&re, 0, sizeof re);
        e = fl_rest_commit(s->rest, &t->ident, reqs, ups, NULL, &unknown, &re);
        json_decref(reqs);
        json_decref(ups);
        fl_rest_table_free(&cur);
        if (!e) { fl_info("sink: added %zu column(s) to %s", added, name); break; }
        if (e != FL_ERR_CONFLICT && !unknown) { e = fl_err_fmt(err, errlen, e, "evolving %s: %s", name, re.message); goto out; }
        e = fl_err_fmt(err, errlen, e, "evolving %s kept conflicting", name);
    }
    if (e) goto out;
    /* reopen with the new schema (t and any idle copy) */
    forget_table(s, name);
    *tp = table_get(s, name, NULL, NULL, &e, err, errlen);
out:
    free(name);
    return e;
}

/* Errors of an unreachable or failing catalog / object store (connection
 * refused, timeouts, 5xx): the sink waits and re-reads, it does not stop. */
static bool catalog_down(fl_err_t e)
{
    return e == FL_ERR_IO || e == FL_ERR_TIMEOUT || e == FL_ERR_CLOSED || e == FL_ERR_INTERNAL;
}

/* Sleep before the next attempt: 200 ms, doubling up to FL_SINK_RETRY_MAX_MS.
 * The group heartbeats run on librdkafka's threads meanwhile. */
static void back_off(sink_t *s)
{
    s->retry_ms = s->retry_ms ? s->retry_ms * 2 : 200;
    if (s->retry_ms > FL_SINK_RETRY_MAX_MS) s->retry_ms = FL_SINK_RETRY_MAX_MS;
    fl_warn("sink: catalog unavailable, retrying in %" PRId64 " ms", s->retry_ms);
    struct timespec ts = { (time_t)(s->retry_ms / 1000), (long)(s->retry_ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);   /* a signal (stop) cuts it short */
}

/* The direct path (sink/convert.h): a plain record for the one static table,
 * already open, straight into its batch. False: take the general path. */
static bool process_direct(sink_t *s, const rd_kafka_message_t *m, const char *topic, tp_t *p)
{
    tbl_t *t = s->n_tables ? s->tables[0] : NULL;
    if (!t || s->n_tables != 1 || !m->payload || strcmp(t->name, s->cfg->tables[0].table)) return false;
    const fl_field_t *root = fl_append_schema(t->ap);
    if (t->direct_for != root) {
        t->direct_for = root;
        t->direct = fl_sink_direct_usable(root);
    }
    if (!t->direct) return false;
    if (p->floor_tbl != t || p->floor_gen != s->offsets_gen) {   /* map_get formats and looks up: once per change */
        p->floor_tbl = t;
        p->floor_gen = s->offsets_gen;
        p->floor_off = map_get(t->offsets, topic, m->partition);
    }
    if (m->offset < p->floor_off) return false;
    if (!fl_sink_direct_append(root, &t->batch, m->payload, m->len, s->cfg->case_insensitive, &s->direct_tmp))
        return false;
    table_took(s, t, (int64_t)m->len);
    if (p->start < 0) p->start = m->offset;
    p->next = m->offset + 1;
    return true;
}

/* When the batch a record opens counts as begun (mono ms): when the record was
 * produced (its Kafka timestamp), so that the time it spent reaching the sink
 * counts against the interval too; its arrival when the timestamp is missing,
 * in the future (clocks apart) or more than half an interval old (a backlog
 * being read: its batches stay one interval long). */
static int64_t first_ms(sink_t *s, const rd_kafka_message_t *m)
{
    int64_t now = fl_mono_ms();
    rd_kafka_timestamp_type_t tst;
    int64_t ts = rd_kafka_message_timestamp(m, &tst);
    if (ts < 0 || tst == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE) return now;
    int64_t age = fl_now_ms() - ts;
    return age > 0 && age <= s->cfg->commit_interval_ms / 2 ? now - age : now;
}

static void process(sink_t *s, const rd_kafka_message_t *m)
{
    const char *topic = rd_kafka_topic_name(m->rkt);
    tp_t *p = tp_find(s, topic, m->partition, true);
    json_t *root = NULL, *value = NULL, *schema = NULL, *missing = NULL;
    char err[1024] = "";
    s->records++;
    fl_sink_metrics_record(s->mx, (int64_t)m->len);
    if (s->batch_first_ms < 0) s->batch_first_ms = first_ms(s, m);
    s->batch_records++;
    s->batch_bytes += (int64_t)m->len;
    s->rewound = false;
    if (s->direct_cfg && process_direct(s, m, topic, p)) return;
    fl_err_t e;
    if (s->reg) {
        e = fl_sink_avro_decode(s->reg, m->payload, m->len, &root, &schema, err, sizeof err);
        value = root;
        if (e && e != FL_ERR_INVALID && e != FL_ERR_NOT_FOUND) {
            set_fatal(s, "record %s-%d@%" PRId64 ": %s", topic, (int)m->partition, (int64_t)m->offset, err);
            s->rewound = true;   /* not consumed: read again after the restart */
            goto done;
        }
    } else {
        e = fl_sink_parse_value(m->payload, m->len, s->cfg->schemas_enable, &root, &value, &schema, err, sizeof err);
    }
    if (e) { bad_record(s, m, err); goto done; }
    if (!value) goto done;   /* tombstone: skipped, its offset still advances */
    if (s->cfg->kmeta_field) {
        rd_kafka_timestamp_type_t tst;
        fl_sink_kafka_metadata(s->cfg, value, topic, m->partition, m->offset, rd_kafka_message_timestamp(m, &tst));
        if (schema) {   /* one schema kept: records usually share theirs */
            if (schema != s->kmeta_src && !(s->kmeta_src && json_equal(schema, s->kmeta_src))) {
                json_decref(s->kmeta_src);
                json_decref(s->kmeta_schema);
                s->kmeta_src = json_incref(schema);
                s->kmeta_schema = fl_sink_kafka_metadata_schema(s->cfg, schema);
            }
            schema = s->kmeta_schema;
        }
    }
    const char *names[64];
    char rbuf[512], why[256];
    int n = route(s, value, names, 64, rbuf, sizeof rbuf, why, sizeof why);
    if (n < 0) { bad_record(s, m, why); goto done; }
    for (int k = 0; k < n && !s->fatal; k++) {
        tbl_t *t = table_get(s, names[k], value, schema, &e, err, sizeof err);
        if (!t) {
            if (e == FL_ERR_NOT_FOUND || e == FL_ERR_INVALID) { bad_record(s, m, err); continue; }
            if (catalog_down(e)) {   /* not the record's fault: wait for the catalog, read it again */
                if (p->start < 0) p->start = m->offset;
                rewind_all(s, err);
                back_off(s);
                break;
            }
            set_fatal(s, "%s", err);
            break;
        }
        if (m->offset < map_get(t->offsets, topic, m->partition)) continue;   /* already in the table */
        json_t *conv = NULL;
        json_decref(missing);
        missing = s->cfg->evolve ? json_array() : NULL;
        if ((e = fl_sink_convert(fl_append_schema(t->ap), value, schema, s->cfg->case_insensitive, &conv, missing, err,
                                 sizeof err))) {
            bad_record(s, m, err);
            continue;
        }
        /* a record schema not seen on this table yet may widen or relax a column */
        bool new_schema = s->cfg->evolve && schema && t->last_schema != schema &&
                          !(t->last_schema && json_equal(t->last_schema, schema));
        if ((missing && json_array_size(missing)) || new_schema) {
            json_decref(conv);
            conv = NULL;
            if ((e = evolve(s, &t, value, schema, err, sizeof err))) {
                if (!s->fatal) { set_fatal(s, "%s", err); }
                break;
            }
            if (s->rewound) break;
            /* the batch was committed: this record starts the next one */
            p = tp_find(s, topic, m->partition, true);
            if ((e = fl_sink_convert(fl_append_schema(t->ap), value, schema, s->cfg->case_insensitive, &conv, NULL,
                                     err, sizeof err))) {
                bad_record(s, m, err);
                continue;
            }
        }
        if (new_schema) {
            json_decref(t->last_schema);
            t->last_schema = json_incref(schema);
        }
        e = fl_vec_append_json(&t->batch, conv, err, sizeof err);
        json_decref(conv);
        if (e) { bad_record(s, m, err); continue; }
        table_took(s, t, (int64_t)m->len);
    }
done:
    json_decref(missing);
    json_decref(root);
    if (s->rewound) return;   /* the record is read again after the rewind */
    if (p->start < 0) p->start = m->offset;
    p->next = m->offset + 1;
}

/* ---- group membership ---- */

/* Where newly assigned partitions start: the group's committed offset,
 * moved up to the smallest offset every static table holds for it. */
static void start_positions(sink_t *s, rd_kafka_topic_partition_list_t *parts)
{
    rd_kafka_resp_err_t ke = rd_kafka_committed(s->rk, parts, KAFKA_TIMEOUT_MS);
    if (ke) fl_warn("sink: reading the group's committed offsets failed: %s", rd_kafka_err2str(ke));
    if (s->cfg->dynamic || !s->cfg->n_tables) goto shown;
    json_t **maps = fl_calloc(s->cfg->n_tables, sizeof *maps);
    bool all = true;
    for (size_t i = 0; i < s->cfg->n_tables && all; i++) {
        fl_rest_ident_t id;
        fl_rest_table_t t;
        memset(&t, 0, sizeof t);
        fl_rest_error_t re;
        memset(&re, 0, sizeof re);
        if (fl_rest_ident_parse(s->cfg->tables[i].table, true, &id)) { all = false; break; }
        if (fl_rest_load_table(s->rest, &id, &t, &re)) all = false;
        else maps[i] = fl_sink_table_offsets(t.metadata, main_snapshot(t.metadata), s->key);
        fl_rest_table_free(&t);
        fl_rest_ident_free(&id);
    }
    for (int j = 0; all && j < parts->cnt; j++) {
        rd_kafka_topic_partition_t *tp = &parts->elems[j];
        int64_t lo = INT64_MAX;
        for (size_t i = 0; i < s->cfg->n_tables; i++) {
            int64_t o = map_get(maps[i], tp->topic, tp->partition);
            if (o < lo) lo = o;
        }
        if (lo != INT64_MAX && lo >= 0 && lo > tp->offset) {
            fl_info("sink: %s-%d starts at %" PRId64 " (the tables hold it; group offset %" PRId64 ")", tp->topic,
                    (int)tp->partition, lo, (int64_t)tp->offset);
            tp->offset = lo;
        }
    }
    for (size_t i = 0; i < s->cfg->n_tables; i++) json_decref(maps[i]);
    free(maps);
shown:
    for (int j = 0; j < parts->cnt; j++)
        if (parts->elems[j].offset >= 0)
            fl_sink_metrics_committed(s->mx, parts->elems[j].topic, parts->elems[j].partition, parts->elems[j].offset);
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    sink_t *s = opaque;
    bool cooperative = !strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE");
    s->rebalances++;   /* records a batch poll took before this are checked against the new assignment */
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        s->ever_assigned = true;
        commit_all(s);            /* the batch holds only partitions this member owned before */
        drop_tables(s);           /* their offsets are reloaded with the new partitions */
        start_positions(s, parts);
        s->seeks++;   /* a record of these polled before now (an earlier assignment of it) is stale */
        for (int j = 0; j < parts->cnt; j++)
            tp_find(s, parts->elems[j].topic, parts->elems[j].partition, true)->sought = s->seeks;
        fl_info("sink: assigned %d partition(s)", parts->cnt);
        if (cooperative) {
            rd_kafka_error_t *e = rd_kafka_incremental_assign(rk, parts);
            if (e) { fl_error("sink: assign: %s", rd_kafka_error_string(e)); rd_kafka_error_destroy(e); }
        } else {
            rd_kafka_assign(rk, parts);
        }
        rd_kafka_yield(rk);   /* the batch poll returns now (set last: a wait inside this callback clears it) */
        return;
    }
    /* revoked or lost */
    if (rd_kafka_assignment_lost(rk)) rewind_all(s, "partitions lost");
    else commit_all(s);
    for (int j = 0; j < parts->cnt; j++) tp_remove(s, parts->elems[j].topic, parts->elems[j].partition);
    fl_info("sink: revoked %d partition(s)", parts->cnt);
    if (cooperative) {
        rd_kafka_error_t *e = rd_kafka_incremental_unassign(rk, parts);
        if (e) { fl_error("sink: unassign: %s", rd_kafka_error_string(e)); rd_kafka_error_destroy(e); }
    } else {
        rd_kafka_assign(rk, NULL);
    }
    rd_kafka_yield(rk);
}

/* ---- set-up ---- */

static fl_err_t kafka_conf(json_t *props, rd_kafka_conf_t *conf, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    char kerr[512];
    json_object_foreach(props, k, v) {
        if (rd_kafka_conf_set(conf, k, json_string_value(v), kerr, sizeof kerr) != RD_KAFKA_CONF_OK)
            return fl_err_fmt(err, errlen, FL_ERR_INVALID, "Kafka setting %s: %s", k, kerr);
    }
    return FL_OK;
}

/* A fetch.max.bytes set below the sink's fetch.min.bytes lowers the latter with it
 * (librdkafka refuses a minimum above the maximum). */
static void clamp_fetch_min(rd_kafka_conf_t *conf)
{
    char mn[32] = "", mx[32] = "";
    size_t a = sizeof mn, b = sizeof mx;
    if (rd_kafka_conf_get(conf, "fetch.min.bytes", mn, &a) || rd_kafka_conf_get(conf, "fetch.max.bytes", mx, &b)) return;
    if (atoll(mn) > atoll(mx)) rd_kafka_conf_set(conf, "fetch.min.bytes", mx, NULL, 0);
}

static fl_err_t connect_catalog(sink_t *s, char *err, size_t errlen)
{
    const fl_sink_config_t *c = s->cfg;
    json_t *props = json_object();
    const char *pairs[][2] = {
        { "s3.endpoint", c->s3_endpoint }, { "s3.access-key-id", c->s3_access_key_id },
        { "s3.secret-access-key", c->s3_secret_access_key }, { "s3.session-token", c->s3_session_token },
        { "client.region", c->client_region },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (pairs[i][1]) json_object_set_new(props, pairs[i][0], json_string(pairs[i][1]));
    if (c->s3_path_style >= 0) json_object_set_new(props, "s3.path-style-access", json_string(c->s3_path_style ? "true" : "false"));
    const char *env_ak = getenv("FLOE_ACCESS_KEY_ID") ? getenv("FLOE_ACCESS_KEY_ID") : getenv("AWS_ACCESS_KEY_ID");
    const char *env_sk = getenv("FLOE_SECRET_ACCESS_KEY") ? getenv("FLOE_SECRET_ACCESS_KEY") : getenv("AWS_SECRET_ACCESS_KEY");
    const char *env_st = getenv("FLOE_SESSION_TOKEN") ? getenv("FLOE_SESSION_TOKEN") : getenv("AWS_SESSION_TOKEN");
    const char *region = c->signing_region ? c->signing_region : c->client_region;
    if (!region) region = getenv("AWS_REGION") ? getenv("AWS_REGION") : getenv("AWS_DEFAULT_REGION");
    fl_rest_opts_t ro = { .uri = c->catalog_uri, .warehouse = c->warehouse, .properties = props, .region = region };
    char *cid = NULL;
    if (c->sigv4) {
        ro.auth = FL_REST_AUTH_SIGV4;
        ro.access_key_id = c->access_key_id ? c->access_key_id : c->s3_access_key_id ? c->s3_access_key_id : env_ak;
        ro.secret_access_key = c->access_key_id ? c->secret_access_key
                               : c->s3_access_key_id ? c->s3_secret_access_key : env_sk;
        ro.session_token = c->access_key_id ? c->session_token : c->s3_access_key_id ? c->s3_session_token : env_st;
        ro.signing_name = c->signing_name ? c->signing_name : "execute-api";   /* Iceberg's default */
        if (!ro.access_key_id || !ro.secret_access_key) {
            json_decref(props);
            return fl_err_fmt(err, errlen, FL_ERR_AUTH, "SigV4 needs keys: iceberg.catalog.rest.access-key-id and "
                              "secret-access-key, or FLOE_ACCESS_KEY_ID/FLOE_SECRET_ACCESS_KEY");
        }
    } else if (c->token) {
        ro.auth = FL_REST_AUTH_BEARER;
        ro.token = c->token;
    } else if (c->credential) {
        ro.auth = FL_REST_AUTH_OAUTH2;
        const char *colon = strchr(c->credential, ':');
        cid = colon ? fl_strndup(c->credential, (size_t)(colon - c->credential)) : NULL;
        ro.oauth_client_id = cid;
        ro.oauth_client_secret = colon ? colon + 1 : c->credential;
        ro.oauth_scope = c->scope;
        ro.oauth_server_uri = c->oauth2_server_uri;
    }
    fl_rest_error_t re;
    memset(&re, 0, sizeof re);
    fl_err_t e = fl_rest_client_new(&ro, &s->rest, &re);
    free(cid);
    json_decref(props);
    if (e) return fl_err_fmt(err, errlen, e, "connecting to the catalog %s: %s%s%s", c->catalog_uri,
                             re.status ? "HTTP error: " : "", re.message, "");
    /* a catalog that lists its endpoints says whether it has transactions; one that does not
     * list them is tried, and its answer decides (commit_tx) */
    s->tx = fl_rest_client_endpoint(s->rest, FL_SINK_TX_ENDPOINT) != 0;
    fl_io_opts_default(&s->ioo);
    s->ioo.s3_endpoint = c->s3_endpoint;
    s->ioo.path_style = c->s3_path_style;
    s->ioo.access_key_id = c->s3_access_key_id ? c->s3_access_key_id : env_ak;
    s->ioo.secret_access_key = c->s3_access_key_id ? c->s3_secret_access_key : env_sk;
    s->ioo.session_token = c->s3_access_key_id ? c->s3_session_token : env_st;
    s->ioo.region = c->client_region ? c->client_region : region;
    return FL_OK;
}

fl_err_t fl_sink_run(const fl_sink_config_t *cfg, volatile sig_atomic_t *stop, char *err, size_t errlen)
{
    sink_t s;
    memset(&s, 0, sizeof s);
    s.cfg = cfg;
    s.absent = json_object();
    s.direct_cfg = !cfg->avro && !cfg->schemas_enable && !cfg->kmeta_field && !cfg->dynamic && !cfg->route_field &&
                   cfg->n_tables == 1;
    fl_buf_init(&s.direct_tmp, 0);
    pthread_mutex_init(&s.cm.mu, NULL);
    pthread_cond_init(&s.cm.cv, NULL);
    fl_sink_offsets_key(cfg->group_id, s.key, sizeof s.key);
    const char *fault = getenv("FLOE_SINK_FAULT");
    if (fault && !strncmp(fault, "after-table-commit:", 19)) s.fault_after_commits = atoll(fault + 19);
    if (fault && !strncmp(fault, "tx-refused:", 11)) s.fault_tx_refused = atoll(fault + 11);
    /* glibc gives the heap's free top back to the kernel once it passes 128 KiB (more as its
     * threshold adapts); the sink frees and allocates the same buffers over and over and paid
     * for them again in page faults zeroing fresh pages (~9% of its CPU). The heap keeps it
     * now. Setting the threshold also stops glibc raising its mmap threshold: blocks of 128 KiB
     * and more stay mmap'd, grow with mremap and leave no holes in the heap (letting them into
     * the heap, M_MMAP_THRESHOLD 32 MiB, saved a little more CPU but raised the peak by ~20 MiB). */
    mallopt(M_TRIM_THRESHOLD, FL_SINK_MALLOC_TRIM_THRESHOLD);
    fl_err_t e = FL_OK;
    rd_kafka_conf_t *conf = NULL;
    rd_kafka_topic_partition_list_t *subs = NULL;
    rd_kafka_queue_t *cq = NULL;   /* the consumer group's queue: records and rebalances, polled in batches */
    rd_kafka_message_t *msgs[FL_SINK_POLL_BATCH];
    char kerr[512];
    s.mx = fl_sink_metrics_new();
    if (cfg->metrics_listen && fl_sink_metrics_listen(s.mx, cfg->metrics_listen)) {
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "floe.metrics.listen: cannot listen on %s", cfg->metrics_listen);
        goto out;
    }
    if ((e = connect_catalog(&s, err, errlen))) goto out;
    if (pthread_create(&s.cm.th, NULL, committer_main, &s)) {
        e = fl_err_fmt(err, errlen, FL_ERR_INTERNAL, "cannot start the committer thread");
        goto out;
    }
    s.cm.started = true;
    if (cfg->avro && (e = fl_sink_registry_new(cfg->registry_url, cfg->registry_user_info, &s.reg, err, errlen)))
        goto out;

    conf = rd_kafka_conf_new();
    /* the sink's own settings first; the user's may change all but the offset-handling ones below */
    rd_kafka_conf_set(conf, "partition.assignment.strategy", "cooperative-sticky", NULL, 0);
    rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", NULL, 0);   /* as Kafka Connect's sink consumers */
    rd_kafka_conf_set(conf, "isolation.level", "read_committed", NULL, 0);
    /* prefetch (one queue for all partitions in librdkafka 2.x); its 64 MiB default dominated the sink's memory */
    rd_kafka_conf_set(conf, "queued.max.messages.kbytes", FL_SINK_KAFKA_QUEUED_KB, NULL, 0);
    /* one fetch answer for all partitions (librdkafka's 50 MiB default is what 1,000 partitions take) */
    rd_kafka_conf_set(conf, "fetch.max.bytes", FL_SINK_KAFKA_FETCH_BYTES, NULL, 0);
    /* a prefetch found full is fetched again after this (librdkafka 2.1+; default 1 s). The 2.0
     * of Debian 12 has no such key: its broker thread looks again only once a second, so a
     * backlog drains at about one prefetch per second there (docs/sink.md, "Catch-up") */
    rd_kafka_conf_set(conf, "fetch.queue.backoff.ms", FL_SINK_KAFKA_QUEUE_BACKOFF_MS, NULL, 0);
    /* A fetch answered at every produced batch (fetch.min.bytes 1) made a trickle cost a round
     * trip, a wake-up of the broker thread and one of the consume loop per batch: 8% of a core
     * at 1 MiB/s. The broker now holds a fetch until 1 MiB is there or a tenth of the commit
     * interval has passed, which the commit schedule absorbs: 1.1% of a core, same p99
     * (bench/README.md, "Streaming at a trickle"). */
    char wait_ms[24];
    int64_t wait = cfg->commit_interval_ms / FL_SINK_KAFKA_FETCH_WAIT_DIV;
    snprintf(wait_ms, sizeof wait_ms, "%" PRId64, wait < 10 ? 10 : wait > 500 ? 500 : wait);
    rd_kafka_conf_set(conf, "fetch.wait.max.ms", wait_ms, NULL, 0);
    rd_kafka_conf_set(conf, "fetch.min.bytes", FL_SINK_KAFKA_FETCH_MIN_BYTES, NULL, 0);
    if ((e = kafka_conf(cfg->consumer, conf, err, errlen))) goto out;
    clamp_fetch_min(conf);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", NULL, 0);
    rd_kafka_conf_set(conf, "enable.auto.offset.store", "false", NULL, 0);
    rd_kafka_conf_set(conf, "enable.partition.eof", "false", NULL, 0);
    rd_kafka_conf_set_opaque(conf, &s);
    rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
    s.rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, kerr, sizeof kerr);
    if (!s.rk) { e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "Kafka consumer: %s", kerr); goto out; }
    conf = NULL;
    rd_kafka_poll_set_consumer(s.rk);
    fl_sink_metrics_consumer(s.mx, s.rk);
    cq = rd_kafka_queue_get_consumer(s.rk);

    if (cfg->dlq_topic) {
        rd_kafka_conf_t *pc = rd_kafka_conf_new();
        rd_kafka_conf_set(pc, "enable.idempotence", "true", NULL, 0);
        if ((e = kafka_conf(cfg->producer, pc, err, errlen))) { rd_kafka_conf_destroy(pc); goto out; }
        rd_kafka_conf_set_opaque(pc, &s);
        rd_kafka_conf_set_dr_msg_cb(pc, dlq_cb);
        s.dlq = rd_kafka_new(RD_KAFKA_PRODUCER, pc, kerr, sizeof kerr);
        if (!s.dlq) { rd_kafka_conf_destroy(pc); e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "Kafka producer: %s", kerr); goto out; }
    }

    subs = rd_kafka_topic_partition_list_new((int)cfg->n_topics + 1);
    fl_buf_t re;
    fl_buf_init(&re, 0);
    if (cfg->topics_regex) {
        fl_buf_printf(&re, "^(%s)$", cfg->topics_regex);
        rd_kafka_topic_partition_list_add(subs, re.ptr, RD_KAFKA_PARTITION_UA);
    }
    fl_buf_free(&re);
    for (size_t i = 0; i < cfg->n_topics; i++) rd_kafka_topic_partition_list_add(subs, cfg->topics[i], RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t ke = rd_kafka_subscribe(s.rk, subs);
    if (ke) { e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "subscribe: %s", rd_kafka_err2str(ke)); goto out; }
    fl_info("sink %s: group %s, %zu topic(s)%s, commits every %" PRId64 " ms, offsets in snapshot summary key %s",
            cfg->name, cfg->group_id, cfg->n_topics, cfg->topics_regex ? " + regex" : "", cfg->commit_interval_ms, s.key);

    s.last_commit = fl_mono_ms();
    s.batch_first_ms = -1;
    while (!*stop && !s.fatal) {
        memory_backpressure(&s);
        bool cap;
        int64_t due_in = commit_due_in(&s, &cap);
        if (!due_in && (cap || committer_free(&s))) {
            commit_start(&s);
            continue;
        }
        /* wake for the cut, or (a cut waiting on the committer) soon to see it done */
        int timeout = due_in && !s.paused ? (int)(due_in < 100 ? due_in : 100) : 5;
        /* what is queued, without waiting (a batch poll with a time-out waits until the array is full) */
        uint64_t seeks0 = s.seeks, rebal0 = s.rebalances;
        ssize_t n = rd_kafka_consume_batch_queue(cq, 0, msgs, FL_SINK_POLL_BATCH);
        if (n == FL_SINK_POLL_BATCH) s.full_poll_ms = fl_mono_ms();
        if (n <= 0) kick_fetcher(&s);
        if (n <= 0) {   /* nothing: wait for one record (rebalances are served first, so it is current) */
            msgs[0] = rd_kafka_consumer_poll(s.rk, timeout);
            n = msgs[0] ? 1 : 0;
            seeks0 = s.seeks;
            rebal0 = s.rebalances;
        }
        for (ssize_t i = 0; i < n; i++) {
            rd_kafka_message_t *m = msgs[i];
            /* records after one that cut the batch wait for it as a poll per record would */
            if (i && !*stop && !s.fatal && !commit_due_in(&s, &cap) && (cap || committer_free(&s))) commit_start(&s);
            /* taken from librdkafka already (its position is past them): processed even at the memory
             * cap, which pauses what follows; the queue's own caps bound them */
            if (i && !*stop && !s.fatal && over_memory(&s)) memory_backpressure(&s);
            if (*stop || s.fatal) {
                /* not processed: the restart (or the next member) reads it again */
            } else if (m->err) {
                if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) fl_warn("sink: consumer: %s", rd_kafka_message_errstr(m));
            } else {
                /* polled before a rebalance revoked its partition, or before a rewind moved it: stale */
                tp_t *p = s.seeks != seeks0 || s.rebalances != rebal0
                              ? tp_find(&s, rd_kafka_topic_name(m->rkt), m->partition, false) : NULL;
                bool stale = p ? p->sought > seeks0 : s.rebalances != rebal0;
                if (!stale) process(&s, m);
            }
            rd_kafka_message_destroy(m);
        }
        if (s.dlq) rd_kafka_poll(s.dlq, 0);
    }
    if (!s.fatal) commit_all(&s);
    else if (!committer_wait(&s)) fl_warn("sink: the last batch handed over did not commit: %s", s.cm.err);
    if (s.fatal) {
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s", s.fatal_msg);
        drop_tables(&s);   /* nothing of the open batch lands */
    }
    fl_sink_metrics_consumer(s.mx, NULL);
    rd_kafka_consumer_close(s.rk);   /* the revoke callback commits nothing after a fatal error */
    fl_info("sink: stopped after %" PRId64 " records, %" PRId64 " commits, %" PRId64 " bad records",
            s.records, s.commits, s.dlq_records);
out:
    if (s.mx) fl_sink_metrics_consumer(s.mx, NULL);
    if (conf) rd_kafka_conf_destroy(conf);
    if (subs) rd_kafka_topic_partition_list_destroy(subs);
    if (cq) rd_kafka_queue_destroy(cq);
    if (s.cm.started) {
        committer_wait(&s);
        pthread_mutex_lock(&s.cm.mu);
        s.cm.quit = true;
        pthread_cond_broadcast(&s.cm.cv);
        pthread_mutex_unlock(&s.cm.mu);
        pthread_join(s.cm.th, NULL);
    }
    free(s.cm.tables);
    pthread_mutex_destroy(&s.cm.mu);
    pthread_cond_destroy(&s.cm.cv);
    drop_tables(&s);
    free(s.spare);
    free(s.tables);
    for (size_t i = 0; i < s.n_tps; i++) free(s.tps[i].topic);
    free(s.tps);
    if (s.rk && !s.ever_assigned && rd_kafka_version() < 0x020300ff) {
        fl_info("sink: leaving the Kafka consumer to the process exit (it never had an assignment; librdkafka %s "
                "would abort in rd_kafka_destroy)", rd_kafka_version_str());
        unassigned_consumer = s.rk;
    } else if (s.rk) {
        rd_kafka_destroy(s.rk);
    }
    if (s.dlq) {
        rd_kafka_flush(s.dlq, KAFKA_TIMEOUT_MS);
        rd_kafka_destroy(s.dlq);
    }
    fl_rest_client_free(s.rest);
    fl_sink_registry_free(s.reg);
    json_decref(s.kmeta_src);
    json_decref(s.kmeta_schema);
    json_decref(s.absent);
    fl_buf_free(&s.direct_tmp);
    fl_sink_metrics_free(s.mx);   /* the committer, its last writer, was joined above */
    return e;
}
