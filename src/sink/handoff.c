/* Taking a table over from the Kafka Connect Iceberg sink (handoff.h). */
#include "sink/handoff.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "format/avro.h"
#include "format/avro_schema.h"

enum { DATA_WRITTEN = 1 };

typedef struct ev {
    const fl_avro_schema_t *p;
    fl_avro_dec_t d;
    int64_t items;
} ev_t;

/* Appends f to the array *files of *n (grown to twice its size at each power of two). */
static void push_file(fl_data_file_t **files, size_t *n, const fl_data_file_t *f)
{
    if (!(*n & (*n - 1))) *files = fl_realloc(*files, (*n ? 2 * *n : 1) * sizeof **files);
    (*files)[(*n)++] = *f;
}

static fl_err_t branch(ev_t *x, int32_t *n, bool *null) { return fl_avro_follow_union(x->p, &x->d, n, null); }

static fl_err_t get_int(ev_t *x, int32_t n, int64_t *v)
{
    bool null;
    fl_err_t e = branch(x, &n, &null);
    if (e || null) return e ? e : FL_ERR_INVALID;
    fl_avro_kind_t k = x->p->nodes[n].kind;
    if (k != FL_AVRO_T_INT && k != FL_AVRO_T_LONG) return FL_ERR_INVALID;
    return fl_avro_get_long(&x->d, v);
}

static fl_err_t get_str(ev_t *x, int32_t n, fl_slice_t *s)
{
    bool null;
    fl_err_t e = branch(x, &n, &null);
    if (e || null) return e ? e : FL_ERR_INVALID;
    if (x->p->nodes[n].kind != FL_AVRO_T_STRING) return FL_ERR_INVALID;
    return fl_avro_get_string(&x->d, s);
}

/* The table reference: namespace levels and name joined with '.' into out. */
static fl_err_t table_ref(ev_t *x, int32_t n, fl_buf_t *out)
{
    bool null;
    fl_err_t e = branch(x, &n, &null);
    if (e || null || x->p->nodes[n].kind != FL_AVRO_T_RECORD) return e ? e : FL_ERR_INVALID;
    const fl_avro_node_t *r = &x->p->nodes[n];
    fl_slice_t name = { 0 };
    bool has_name = false;
    for (int32_t i = 0; i < r->n && !e; i++) {
        int32_t c = r->sub[i];
        if (!strcmp(r->fnames[i], "namespace")) {
            e = branch(x, &c, &null);
            if (e || null) continue;
            if (x->p->nodes[c].kind != FL_AVRO_T_ARRAY) return FL_ERR_INVALID;
            for (;;) {
                int64_t cnt;
                if ((e = fl_avro_get_block_count(&x->d, &cnt)) || !cnt) break;
                for (int64_t k = 0; k < cnt && !e; k++) {
                    fl_slice_t lv;
                    if (++x->items > FL_AVRO_MAX_ITEMS) return FL_ERR_TOO_LARGE;
                    if (!(e = get_str(x, x->p->nodes[c].sub[0], &lv)) && !(e = fl_buf_add(out, lv.ptr, lv.len)))
                        e = fl_buf_addc(out, '.');
                }
                if (e) break;
            }
        } else if (!strcmp(r->fnames[i], "name")) {
            e = get_str(x, c, &name);
            has_name = !e;
        } else {
            e = fl_avro_skip_value(x->p, &x->d, c, &x->items);
        }
    }
    if (!e && !has_name) e = FL_ERR_INVALID;
    if (!e) e = fl_buf_add(out, name.ptr, name.len);
    return e;
}

/* An optional array of data files: each appended to *files (record count above zero),
 * or, for delete files, counted in *n_deletes. */
static fl_err_t file_list(ev_t *x, int32_t n, bool deletes, fl_data_file_t **files, size_t *nf, size_t *n_deletes)
{
    bool null;
    fl_err_t e = branch(x, &n, &null);
    if (e || null) return e;
    if (x->p->nodes[n].kind != FL_AVRO_T_ARRAY) return FL_ERR_INVALID;
    int32_t item = x->p->nodes[n].sub[0];
    for (;;) {
        int64_t cnt;
        if ((e = fl_avro_get_block_count(&x->d, &cnt)) || !cnt) return e;
        for (int64_t k = 0; k < cnt; k++) {
            if (++x->items > FL_AVRO_MAX_ITEMS) return FL_ERR_TOO_LARGE;
            fl_data_file_t f;
            memset(&f, 0, sizeof f);
            if ((e = fl_data_file_decode(x->p, item, &x->d, &x->items, &f))) {
                fl_data_file_free(&f);
                return e;
            }
            if (deletes) {
                if (f.record_count > 0) (*n_deletes)++;
                fl_data_file_free(&f);
            } else if (f.record_count > 0) {
                push_file(files, nf, &f);
            } else {
                fl_data_file_free(&f);
            }
        }
    }
}

/* The DataWritten payload at node n, when it names table. */
static fl_err_t data_written(ev_t *x, int32_t n, const char *table, bool *matched, fl_data_file_t **files,
                             size_t *nf, size_t *n_deletes)
{
    bool null;
    fl_err_t e = branch(x, &n, &null);
    if (e || null || x->p->nodes[n].kind != FL_AVRO_T_RECORD) return e ? e : FL_ERR_INVALID;
    const fl_avro_node_t *r = &x->p->nodes[n];
    fl_buf_t ref;
    fl_buf_init(&ref, FL_SINK_HANDOFF_MAX_REF);
    bool seen_ref = false;
    size_t nf0 = *nf;
    for (int32_t i = 0; i < r->n && !e; i++) {
        int32_t c = r->sub[i];
        switch (r->ids[i]) {
        case 10301:
            if ((e = table_ref(x, c, &ref))) break;
            seen_ref = true;
            *matched = ref.ptr && !strcmp(ref.ptr, table);
            break;
        case 10302:
        case 10304:
            if (!seen_ref) { e = FL_ERR_INVALID; break; } /* the reference comes first (DataWritten's order) */
            if (*matched) e = file_list(x, c, r->ids[i] == 10304, files, nf, n_deletes);
            else e = fl_avro_skip_value(x->p, &x->d, c, &x->items);
            break;
        default:
            e = fl_avro_skip_value(x->p, &x->d, c, &x->items);
        }
    }
    fl_buf_free(&ref);
    if (!e && !seen_ref) e = FL_ERR_INVALID;
    if (e) {
        for (size_t i = nf0; i < *nf; i++) fl_data_file_free(&(*files)[i]);
        *nf = nf0;
        *matched = false;
    }
    return e;
}

static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

fl_err_t fl_sink_handoff_event(fl_slice_t rec, const char *group, const char *table, bool *matched,
                               fl_data_file_t **files, size_t *n, char *err, size_t errlen)
{
    *matched = false;
    const unsigned char *b = (const unsigned char *)rec.ptr;
    size_t hl;  /* header: magic and schema length */
    uint32_t sl;
    if (rec.len >= 4 && b[0] == 0xC2 && b[1] == 0x01) {          /* Java's writeUTF: a 2-byte length */
        hl = 4;
        sl = (uint32_t)b[2] << 8 | b[3];
    } else if (rec.len >= 8 && !memcmp(b, "aVR\x01", 4)) {       /* newer: a 4-byte length */
        hl = 8;
        sl = be32(b + 4);
    } else {
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "not an Iceberg control event (no 0xC2 0x01 or \"aVR\" 1 header)");
    }
    if (!sl || sl > rec.len - hl || sl > FL_SINK_HANDOFF_MAX_SCHEMA)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "control event: schema length %" PRIu32 " out of range", sl);
    json_error_t je;
    json_t *sj = json_loadb(rec.ptr + hl, sl, 0, &je);
    if (!sj) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "control event: schema is not JSON: %s", je.text);
    fl_avro_schema_t p;
    memset(&p, 0, sizeof p);
    char serr[256] = "";
    int32_t root = fl_avro_schema_parse(&p, sj, serr, sizeof serr);
    json_decref(sj);
    fl_err_t e = FL_OK;
    if (root < 0 || p.nodes[root].kind != FL_AVRO_T_RECORD) {
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "control event: bad schema: %s", serr[0] ? serr : "not a record");
        fl_avro_schema_free(&p);
        return e;
    }
    ev_t x = { .p = &p };
    fl_avro_dec_init(&x.d, fl_slice(rec.ptr + hl + sl, rec.len - hl - sl));
    const fl_avro_node_t *r = &p.nodes[root];
    int64_t type = -1;
    bool ours = false;
    size_t n_deletes = 0;
    for (int32_t i = 0; i < r->n && !e; i++) {
        int32_t c = r->sub[i];
        fl_slice_t g;
        switch (r->ids[i]) {
        case 10501: e = get_int(&x, c, &type); break;
        case 10503:
            if (!(e = get_str(&x, c, &g))) ours = g.len == strlen(group) && !memcmp(g.ptr, group, g.len);
            break;
        case 10504:
            if (type == DATA_WRITTEN && ours) {
                e = data_written(&x, c, table, matched, files, n, &n_deletes);
                i = r->n; /* the rest is of no use */
            } else {
                e = fl_avro_skip_value(&p, &x.d, c, &x.items);
            }
            break;
        default: e = fl_avro_skip_value(&p, &x.d, c, &x.items);
        }
    }
    fl_avro_schema_free(&p);
    if (e) return fl_err_fmt(err, errlen, e, "control event: malformed datum (%s)", fl_err_str(e));
    if (n_deletes)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID,
                          "the Kafka Connect sink announced %zu delete files for %s (upsert or CDC mode), which floe "
                          "sink cannot carry on", n_deletes, table);
    return FL_OK;
}

void fl_sink_handoff_free(fl_sink_handoff_t *h)
{
    for (size_t i = 0; i < h->n_files; i++) fl_data_file_free(&h->files[i]);
    free(h->files);
    json_decref(h->offsets);
    memset(h, 0, sizeof *h);
}

bool fl_sink_handoff_under(const char *path, const char *location)
{
    size_t ll = strlen(location);
    while (ll && location[ll - 1] == '/') ll--;
    if (!ll || strncmp(path, location, ll) || path[ll] != '/') return false;
    for (const char *q = path + ll; *q; q++) /* no "." or ".." segment may climb out of it */
        if (q[0] == '/' && q[1] == '.' && (q[2] == '/' || !q[2] || (q[2] == '.' && (q[3] == '/' || !q[3]))))
            return false;
    return true;
}

/* Keeps each path once (seen: the paths kept) and only files under location; frees the rest. */
static fl_err_t keep_files(fl_sink_handoff_t *h, json_t *seen, fl_data_file_t *add, size_t n, const char *location,
                           char *err, size_t errlen)
{
    fl_err_t e = FL_OK;
    for (size_t i = 0; i < n; i++) {
        fl_data_file_t *f = &add[i];
        bool dup = json_object_get(seen, f->file_path) != NULL;
        if (!e && !dup && !fl_sink_handoff_under(f->file_path, location))
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "the control topic names %s, outside the table's location %s",
                           f->file_path, location);
        if (!e && !dup && h->n_files >= FL_SINK_HANDOFF_MAX_FILES)
            e = fl_err_fmt(err, errlen, FL_ERR_TOO_LARGE, "the control topic names more than %d data files",
                           FL_SINK_HANDOFF_MAX_FILES);
        if (e || dup) {
            fl_data_file_free(f);
            continue;
        }
        json_object_set_new(seen, f->file_path, json_true());
        push_file(&h->files, &h->n_files, f);
    }
    return e;
}

fl_err_t fl_sink_handoff_read(rd_kafka_conf_t *conf, const char *topic, json_t *from, const char *group,
                              const char *table, const char *location, fl_sink_handoff_t *out, char *err,
                              size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->offsets = json_object();
    char kerr[512];
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", NULL, 0);
    rd_kafka_conf_set(conf, "enable.auto.offset.store", "false", NULL, 0);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", NULL, 0);
    rd_kafka_conf_set(conf, "isolation.level", "read_committed", NULL, 0);
    rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", NULL, 0);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, kerr, sizeof kerr);
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "Kafka consumer for %s: %s", topic, kerr);
    }
    fl_err_t e = FL_OK;
    json_t *seen = json_object();
    rd_kafka_topic_partition_list_t *parts = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t ke = rd_kafka_metadata(rk, 0, rkt, &md, FL_SINK_HANDOFF_TIMEOUT_MS);
    if (ke || !md || md->topic_cnt != 1) {
        e = fl_err_fmt(err, errlen, FL_ERR_IO, "control topic %s: no metadata: %s", topic, rd_kafka_err2str(ke));
        goto out;
    }
    if (md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
        fl_warn("sink: the table's summary names control topic %s, which does not exist: nothing to carry on", topic);
        goto out;
    }
    parts = rd_kafka_topic_partition_list_new(md->topics[0].partition_cnt);
    int left = 0;
    for (int i = 0; i < md->topics[0].partition_cnt; i++) {
        int32_t pid = md->topics[0].partitions[i].id;
        char key[16];
        snprintf(key, sizeof key, "%d", (int)pid);
        json_t *v = json_object_get(from, key);
        int64_t start = json_is_integer(v) ? (int64_t)json_integer_value(v) : RD_KAFKA_OFFSET_BEGINNING;
        int64_t lo = 0, hi = 0;
        if ((ke = rd_kafka_query_watermark_offsets(rk, topic, pid, &lo, &hi, FL_SINK_HANDOFF_TIMEOUT_MS))) {
            e = fl_err_fmt(err, errlen, FL_ERR_IO, "control topic %s [%d]: %s", topic, (int)pid, rd_kafka_err2str(ke));
            goto out;
        }
        if (start >= 0 && start < lo) {
            e = fl_err_fmt(err, errlen, FL_ERR_CONFLICT,
                           "control topic %s [%d] starts at offset %" PRId64 ", after %" PRId64 " where the table's "
                           "last Kafka Connect commit left it: its events were deleted (retention)",
                           topic, (int)pid, lo, start);
            goto out;
        }
        if ((start >= 0 ? start : lo) >= hi) {
            if (start >= 0) json_object_set_new(out->offsets, key, json_integer(start));
            continue;
        }
        rd_kafka_topic_partition_list_add(parts, topic, pid)->offset = start;
        left++;
    }
    if (!left) goto out;
    if ((ke = rd_kafka_assign(rk, parts))) {
        e = fl_err_fmt(err, errlen, FL_ERR_IO, "control topic %s: %s", topic, rd_kafka_err2str(ke));
        goto out;
    }
    int64_t deadline = fl_mono_ms() + FL_SINK_HANDOFF_TIMEOUT_MS;
    while (left > 0 && !e) {
        if (fl_mono_ms() > deadline) {
            e = fl_err_fmt(err, errlen, FL_ERR_IO, "control topic %s: not read to its end in %d ms", topic,
                           FL_SINK_HANDOFF_TIMEOUT_MS);
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m) continue;
        char key[16];
        snprintf(key, sizeof key, "%d", (int)m->partition);
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            left--;
            json_object_set_new(out->offsets, key, json_integer(m->offset)); /* the end: past transaction markers too */
        } else if (m->err) {
            e = fl_err_fmt(err, errlen, FL_ERR_IO, "control topic %s: %s", topic, rd_kafka_message_errstr(m));
        } else {
            json_object_set_new(out->offsets, key, json_integer(m->offset + 1));
            fl_data_file_t *files = NULL;
            size_t nf = 0;
            bool matched = false;
            char eerr[512] = "";
            e = fl_sink_handoff_event(fl_slice(m->payload ? m->payload : "", m->len), group, table, &matched, &files,
                                      &nf, eerr, sizeof eerr);
            if (e) fl_err_fmt(err, errlen, e, "control topic %s [%d] offset %" PRId64 ": %s", topic,
                              (int)m->partition, m->offset, eerr);
            if (matched) out->events++;
            fl_err_t k = keep_files(out, seen, files, nf, location, eerr, sizeof eerr);
            free(files);
            if (k && !e) e = fl_err_fmt(err, errlen, k, "control topic %s [%d] offset %" PRId64 ": %s", topic,
                                        (int)m->partition, m->offset, eerr);
        }
        rd_kafka_message_destroy(m);
    }
out:
    json_decref(seen);
    if (parts) rd_kafka_topic_partition_list_destroy(parts);
    if (md) rd_kafka_metadata_destroy(md);
    if (rkt) rd_kafka_topic_destroy(rkt);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    if (e) fl_sink_handoff_free(out);
    return e;
}
