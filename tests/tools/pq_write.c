/* pq_write: write a Parquet file of a deterministic generated dataset with the
 * floe writer, for the integration tests (pyarrow reads it back) and for
 * measuring write speed.
 *
 *   pq_write OUT CODEC ROWS [--page N] [--rg N] [--dict N] [--no-dict]
 *            [--batch N] [--json PATH] [--info PATH] [--events] [--trunc N]
 *
 * --json writes the expected rows as JSON lines (fl_vec_json_append of the
 * root struct); --info writes the file info (record count, split offsets,
 * per-column metrics, bounds hex) as one JSON object. --events uses a flat
 * event-table schema instead of the all-types one and prints the write time
 * (excluding data generation) on stderr. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/buf.h"
#include "format/parquet.h"

typedef struct { FILE *f; } fsink_t;

static fl_err_t fwrite_sink(void *ctx, const void *p, size_t n)
{
    return fwrite(p, 1, n, ((fsink_t *)ctx)->f) == n ? FL_OK : FL_ERR_IO;
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int chance(int pct) { return (int)(rnd() % 100) < pct; }

static fl_field_t *add(fl_field_t *p, int32_t id, const char *name, bool req, fl_type_kind_t k)
{
    fl_field_t *f = fl_field_add_child(p);
    fl_field_set(f, id, name, req, k);
    return f;
}

static void all_types_schema(fl_field_t *root)
{
    fl_field_set(root, 0, "table", true, FL_TYPE_STRUCT);
    add(root, 1, "b", false, FL_TYPE_BOOLEAN);
    add(root, 2, "i", false, FL_TYPE_INT);
    add(root, 3, "l", true, FL_TYPE_LONG);
    add(root, 4, "f", false, FL_TYPE_FLOAT);
    add(root, 5, "d", false, FL_TYPE_DOUBLE);
    fl_field_t *x = add(root, 6, "dec9", false, FL_TYPE_DECIMAL);
    x->precision = 9; x->scale = 2;
    x = add(root, 7, "dec18", false, FL_TYPE_DECIMAL);
    x->precision = 18; x->scale = 4;
    x = add(root, 8, "dec38", false, FL_TYPE_DECIMAL);
    x->precision = 38; x->scale = 10;
    add(root, 9, "date", false, FL_TYPE_DATE);
    add(root, 10, "time", false, FL_TYPE_TIME);
    add(root, 11, "ts", false, FL_TYPE_TIMESTAMP);
    add(root, 12, "tstz", false, FL_TYPE_TIMESTAMPTZ);
    add(root, 13, "tsns", false, FL_TYPE_TIMESTAMP_NS);
    add(root, 14, "s", false, FL_TYPE_STRING);
    add(root, 15, "u", false, FL_TYPE_UUID);
    x = add(root, 16, "fx", false, FL_TYPE_FIXED);
    x->length = 5;
    add(root, 17, "bin", false, FL_TYPE_BINARY);
    fl_field_t *st = add(root, 18, "st", false, FL_TYPE_STRUCT);
    add(st, 19, "a", true, FL_TYPE_INT);
    add(st, 20, "b", false, FL_TYPE_STRING);
    fl_field_t *in = add(st, 21, "inner", false, FL_TYPE_STRUCT);
    add(in, 22, "x", false, FL_TYPE_DOUBLE);
    fl_field_t *tags = add(root, 23, "tags", false, FL_TYPE_LIST);
    add(tags, 24, "element", false, FL_TYPE_STRING);
    fl_field_t *pts = add(root, 25, "pts", false, FL_TYPE_LIST);
    fl_field_t *pe = add(pts, 26, "element", false, FL_TYPE_STRUCT);
    add(pe, 27, "x", true, FL_TYPE_INT);
    add(pe, 28, "y", false, FL_TYPE_STRING);
    fl_field_t *m = add(root, 29, "m", false, FL_TYPE_MAP);
    add(m, 30, "key", true, FL_TYPE_STRING);
    add(m, 31, "value", false, FL_TYPE_LONG);
    fl_field_t *mm = add(root, 32, "mm", false, FL_TYPE_MAP);
    add(mm, 33, "key", true, FL_TYPE_INT);
    fl_field_t *ml = add(mm, 34, "value", false, FL_TYPE_LIST);
    add(ml, 35, "element", false, FL_TYPE_INT);
    add(root, 36, "cat", true, FL_TYPE_STRING);
    add(root, 37, "tstzns", false, FL_TYPE_TIMESTAMPTZ_NS);
}

static const char *const words[] = { "", "alpha", "beta", "gamma", "h\xc3\xa9llo w\xc3\xb6rld",
                                     "\xe2\x9c\x93 check", "\xf0\x9d\x84\x9e clef", "quote\"back\\slash",
                                     "zzzzzzzzzzzzzzzzzzzzzzzzz-long-value", "tab\there" };
#define NWORDS (sizeof words / sizeof words[0])

static void gen_row(fl_vec_t *root, int64_t r)
{
    char tmp[128];
    rng_state = (uint64_t)r * 7919 + 17;
    fl_vec_t *c = root->children;
    fl_vec_append_struct(root);
    /* b */
    if (chance(10)) fl_vec_append_null(&c[0]); else fl_vec_append_bool(&c[0], rnd() & 1);
    /* i */
    if (chance(10)) fl_vec_append_null(&c[1]);
    else {
        int32_t v = (int32_t)rnd();
        if (r % 97 == 0) v = INT32_MIN;
        if (r % 89 == 0) v = INT32_MAX;
        fl_vec_append_i32(&c[1], v);
    }
    /* l */
    fl_vec_append_i64(&c[2], r % 53 == 0 ? INT64_MIN + r : (int64_t)(rnd() % 1000) - 500);
    /* f */
    if (chance(10)) fl_vec_append_null(&c[3]);
    else {
        float v;
        switch (r % 11) {
        case 0: v = NAN; break;
        case 1: v = -0.0f; break;
        case 2: v = 0.0f; break;
        case 3: v = INFINITY; break;
        default: v = (float)((double)(int64_t)(rnd() % 2000000) / 1000.0 - 1000.0);
        }
        fl_vec_append_f32(&c[3], v);
    }
    /* d */
    if (chance(10)) fl_vec_append_null(&c[4]);
    else {
        double v;
        switch (r % 13) {
        case 0: v = NAN; break;
        case 1: v = -0.0; break;
        case 2: v = -INFINITY; break;
        default: v = (double)(int64_t)rnd() / 1e9;
        }
        fl_vec_append_f64(&c[4], v);
    }
    /* decimals */
    if (chance(10)) fl_vec_append_null(&c[5]);
    else fl_vec_append_i128(&c[5], (__int128)((int64_t)(rnd() % 1999999999) - 999999999));
    if (chance(10)) fl_vec_append_null(&c[6]);
    else fl_vec_append_i128(&c[6], (__int128)((int64_t)(rnd() % 1999999999999999999ull) - 999999999999999999ll));
    if (chance(10)) fl_vec_append_null(&c[7]);
    else {
        __int128 v = (__int128)(int64_t)rnd() * (__int128)(int64_t)(rnd() % 10000000000ull);
        if (r % 7 == 0) { /* near the 38-digit limit */
            __int128 p = 1;
            for (int k = 0; k < 38; k++) p *= 10;
            v = (r % 2 ? p - 1 : -(p - 1)) - r;
        }
        fl_vec_append_i128(&c[7], v);
    }
    /* date, time, timestamps */
    if (chance(10)) fl_vec_append_null(&c[8]); else fl_vec_append_i32(&c[8], (int32_t)(rnd() % 40000));
    if (chance(10)) fl_vec_append_null(&c[9]); else fl_vec_append_i64(&c[9], (int64_t)(rnd() % 86400000000ull));
    int64_t ts = (int64_t)(rnd() % 4000000000000000ull);
    if (chance(10)) fl_vec_append_null(&c[10]); else fl_vec_append_i64(&c[10], ts);
    if (chance(10)) fl_vec_append_null(&c[11]); else fl_vec_append_i64(&c[11], ts + 123);
    if (chance(10)) fl_vec_append_null(&c[12]); else fl_vec_append_i64(&c[12], ts * 1000 + 789);
    /* s: unique-ish (dictionary fallback with a small --dict), plus unicode and empty */
    if (chance(10)) fl_vec_append_null(&c[13]);
    else if (r % 5 == 0) fl_vec_append_bytes(&c[13], words[r % NWORDS], strlen(words[r % NWORDS]));
    else {
        int n = snprintf(tmp, sizeof tmp, "row-%" PRId64 "-%016" PRIx64, r, rnd());
        fl_vec_append_bytes(&c[13], tmp, (size_t)n);
    }
    /* uuid, fixed, binary */
    unsigned char u[16];
    for (int k = 0; k < 16; k += 8) { uint64_t x = rnd(); memcpy(u + k, &x, 8); }
    if (r % 17 == 0) memset(u, 0xff, 16);
    if (chance(10)) fl_vec_append_null(&c[14]); else fl_vec_append_bytes(&c[14], u, 16);
    if (chance(10)) fl_vec_append_null(&c[15]); else fl_vec_append_bytes(&c[15], u + 3, 5);
    if (chance(10)) fl_vec_append_null(&c[16]);
    else fl_vec_append_bytes(&c[16], u, (size_t)(rnd() % 17)); /* includes empty */
    /* st */
    fl_vec_t *st = &c[17];
    if (chance(15)) fl_vec_append_null(st);
    else {
        fl_vec_append_struct(st);
        fl_vec_append_i32(&st->children[0], (int32_t)(r % 1000));
        if (chance(20)) fl_vec_append_null(&st->children[1]);
        else fl_vec_append_bytes(&st->children[1], words[(r / 3) % NWORDS], strlen(words[(r / 3) % NWORDS]));
        fl_vec_t *in = &st->children[2];
        if (chance(20)) fl_vec_append_null(in);
        else {
            fl_vec_append_struct(in);
            if (chance(20)) fl_vec_append_null(&in->children[0]);
            else fl_vec_append_f64(&in->children[0], (double)r / 8.0);
        }
    }
    /* tags: null, empty, or 1..4 elements some null */
    fl_vec_t *tags = &c[18];
    int k = (int)(rnd() % 7);
    if (k == 0) fl_vec_append_null(tags);
    else {
        for (int j = 0; j < k - 1; j++) {
            if (chance(15)) fl_vec_append_null(&tags->children[0]);
            else {
                const char *wd = words[(r + j) % NWORDS];
                fl_vec_append_bytes(&tags->children[0], wd, strlen(wd));
            }
        }
        fl_vec_end_list(tags);
    }
    /* pts: list<struct{x, y}> with null elements */
    fl_vec_t *pts = &c[19];
    k = (int)(rnd() % 5);
    if (k == 0) fl_vec_append_null(pts);
    else {
        fl_vec_t *el = &pts->children[0];
        for (int j = 0; j < k - 1; j++) {
            if (chance(15)) fl_vec_append_null(el);
            else {
                fl_vec_append_struct(el);
                fl_vec_append_i32(&el->children[0], (int32_t)(r * 10 + j));
                if (chance(25)) fl_vec_append_null(&el->children[1]);
                else {
                    int n = snprintf(tmp, sizeof tmp, "p%d", j);
                    fl_vec_append_bytes(&el->children[1], tmp, (size_t)n);
                }
            }
        }
        fl_vec_end_list(pts);
    }
    /* m: map<string, long> (distinct keys) */
    fl_vec_t *m = &c[20];
    k = (int)(rnd() % 5);
    if (k == 0) fl_vec_append_null(m);
    else {
        for (int j = 0; j < k - 1; j++) {
            int n = snprintf(tmp, sizeof tmp, "k%d", j);
            fl_vec_append_bytes(&m->children[0], tmp, (size_t)n);
            if (chance(20)) fl_vec_append_null(&m->children[1]);
            else fl_vec_append_i64(&m->children[1], r * 100 + j);
        }
        fl_vec_end_list(m);
    }
    /* mm: map<int, list<int>> */
    fl_vec_t *mm = &c[21];
    k = (int)(rnd() % 4);
    if (k == 0) fl_vec_append_null(mm);
    else {
        for (int j = 0; j < k - 1; j++) {
            fl_vec_append_i32(&mm->children[0], j);
            fl_vec_t *lv = &mm->children[1];
            int e = (int)(rnd() % 4);
            if (e == 0) fl_vec_append_null(lv);
            else {
                for (int q = 0; q < e - 1; q++) {
                    if (chance(20)) fl_vec_append_null(&lv->children[0]);
                    else fl_vec_append_i32(&lv->children[0], (int32_t)(r + q));
                }
                fl_vec_end_list(lv);
            }
        }
        fl_vec_end_list(mm);
    }
    /* cat: required, low cardinality */
    const char *cats[] = { "click", "view", "purchase", "signup" };
    const char *ct = cats[rnd() % 4];
    fl_vec_append_bytes(&c[22], ct, strlen(ct));
    /* tstzns */
    if (chance(10)) fl_vec_append_null(&c[23]); else fl_vec_append_i64(&c[23], -ts * 1000 - 1);
}

static void events_schema(fl_field_t *root)
{
    fl_field_set(root, 0, "table", true, FL_TYPE_STRUCT);
    add(root, 1, "id", true, FL_TYPE_LONG);
    add(root, 2, "ts", true, FL_TYPE_TIMESTAMPTZ);
    add(root, 3, "user_id", false, FL_TYPE_LONG);
    add(root, 4, "event_type", false, FL_TYPE_STRING);
    add(root, 5, "page", false, FL_TYPE_STRING);
    add(root, 6, "country", false, FL_TYPE_STRING);
    add(root, 7, "amount", false, FL_TYPE_DOUBLE);
    add(root, 8, "duration_ms", false, FL_TYPE_INT);
    add(root, 9, "is_mobile", false, FL_TYPE_BOOLEAN);
    add(root, 10, "session", false, FL_TYPE_STRING);
}

static void gen_event(fl_vec_t *root, int64_t r)
{
    static const char *const types[] = { "click", "view", "purchase", "signup", "logout", "search" };
    static const char *const countries[] = { "US", "DE", "FR", "GB", "JP", "BR", "IN", "CA", "ES", "IT" };
    char tmp[96];
    rng_state = (uint64_t)r * 7919 + 17;
    fl_vec_t *c = root->children;
    fl_vec_append_struct(root);
    fl_vec_append_i64(&c[0], r);
    fl_vec_append_i64(&c[1], 1700000000000000LL + r * 1000 + (int64_t)(rnd() % 1000));
    if (chance(5)) fl_vec_append_null(&c[2]); else fl_vec_append_i64(&c[2], (int64_t)(rnd() % 100000));
    const char *t = types[rnd() % 6];
    fl_vec_append_bytes(&c[3], t, strlen(t));
    int n = snprintf(tmp, sizeof tmp, "/products/%u/detail", (unsigned)(rnd() % 5000));
    fl_vec_append_bytes(&c[4], tmp, (size_t)n);
    const char *cc = countries[rnd() % 10];
    fl_vec_append_bytes(&c[5], cc, strlen(cc));
    if (chance(30)) fl_vec_append_null(&c[6]); else fl_vec_append_f64(&c[6], (double)(rnd() % 100000) / 100.0);
    fl_vec_append_i32(&c[7], (int32_t)(rnd() % 60000));
    fl_vec_append_bool(&c[8], rnd() % 3 == 0);
    n = snprintf(tmp, sizeof tmp, "%016" PRIx64, (uint64_t)((uint64_t)(r / 20) * UINT64_C(0x9e3779b97f4a7c15)));
    fl_vec_append_bytes(&c[9], tmp, (size_t)n);
}

static void hex(FILE *f, const fl_buf_t *b)
{
    for (size_t i = 0; i < b->len; i++) fprintf(f, "%02x", (unsigned char)b->ptr[i]);
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: pq_write OUT CODEC ROWS [--page N] [--rg N] [--dict N] [--no-dict] "
                        "[--batch N] [--json PATH] [--info PATH] [--events] [--trunc N]\n");
        return 2;
    }
    fl_pq_write_opts_t o;
    fl_pq_write_opts_default(&o);
    if (fl_codec_parse(argv[2], &o.codec)) { fprintf(stderr, "bad codec\n"); return 2; }
    int64_t rows = atoll(argv[3]);
    size_t batch = 10000;
    const char *json = NULL, *info_path = NULL;
    bool events = false;
    for (int i = 4; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-dict")) o.dictionary = false;
        else if (!strcmp(a, "--events")) events = true;
        else if (!v) { fprintf(stderr, "missing value for %s\n", a); return 2; }
        else if (!strcmp(a, "--page")) { o.page_bytes = (size_t)atoll(v); i++; }
        else if (!strcmp(a, "--rg")) { o.row_group_bytes = (size_t)atoll(v); i++; }
        else if (!strcmp(a, "--dict")) { o.dict_page_bytes = (size_t)atoll(v); i++; }
        else if (!strcmp(a, "--batch")) { batch = (size_t)atoll(v); i++; }
        else if (!strcmp(a, "--json")) { json = v; i++; }
        else if (!strcmp(a, "--info")) { info_path = v; i++; }
        else if (!strcmp(a, "--trunc")) { o.stats_truncate = atoi(v); i++; }
        else { fprintf(stderr, "unknown option %s\n", a); return 2; }
    }
    if (!batch) batch = 1;
    static const fl_slice_t kv[] = { { "floe.test", 9 }, { "pq_write", 8 } };
    o.kv = kv;
    o.n_kv = 1;

    fl_field_t schema;
    if (events) events_schema(&schema);
    else all_types_schema(&schema);
    fsink_t fs = { fopen(argv[1], "wb") };
    if (!fs.f) { perror(argv[1]); return 1; }
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (json && !jf) { perror(json); return 1; }
    fl_pq_writer_t *w;
    fl_err_t e = fl_pq_writer_open(&w, &schema, &o, (fl_pq_sink_t){ fwrite_sink, &fs });
    if (e) { fprintf(stderr, "open: %s\n", fl_err_str(e)); return 1; }
    fl_vec_t v;
    fl_vec_init(&v, &schema);
    fl_buf_t line;
    fl_buf_init(&line, 0);
    double t_write = 0, c_write = 0;
    for (int64_t r = 0; r < rows;) {
        fl_vec_clear(&v);
        for (size_t k = 0; k < batch && r < rows; k++, r++) {
            if (events) gen_event(&v, r);
            else gen_row(&v, r);
        }
        if (jf) {
            for (size_t i = 0; i < v.len; i++) {
                fl_buf_reset(&line);
                fl_vec_json_append(&v, i, &line);
                fprintf(jf, "%s\n", line.ptr);
            }
        }
        double t0 = now(), c0 = cpu_now();
        if ((e = fl_pq_writer_write(w, &v))) { fprintf(stderr, "write: %s\n", fl_err_str(e)); return 1; }
        t_write += now() - t0;
        c_write += cpu_now() - c0;
    }
    fl_pq_file_info_t info;
    double t0 = now(), c0 = cpu_now();
    if ((e = fl_pq_writer_close(w, &info))) { fprintf(stderr, "close: %s\n", fl_err_str(e)); return 1; }
    t_write += now() - t0;
    c_write += cpu_now() - c0;
    fl_pq_writer_free(w);
    if (fclose(fs.f)) { perror("fclose"); return 1; }
    if (jf) fclose(jf);
    fprintf(stderr, "rows=%" PRId64 " bytes=%" PRId64 " write_s=%.3f cpu_s=%.3f rows_per_s=%.0f\n",
            rows, info.file_size, t_write, c_write, t_write > 0 ? (double)rows / t_write : 0.0);
    if (info_path) {
        FILE *f = fopen(info_path, "w");
        if (!f) { perror(info_path); return 1; }
        fprintf(f, "{\"record_count\":%" PRId64 ",\"file_size\":%" PRId64 ",\"split_offsets\":[",
                info.record_count, info.file_size);
        for (size_t i = 0; i < info.n_split_offsets; i++)
            fprintf(f, "%s%" PRId64, i ? "," : "", info.split_offsets[i]);
        fprintf(f, "],\"metrics\":[");
        for (size_t i = 0; i < info.n_metrics; i++) {
            const fl_col_metrics_t *m = &info.metrics[i];
            fprintf(f, "%s{\"id\":%d,\"column_size\":%" PRId64 ",\"value_count\":%" PRId64
                       ",\"null_count\":%" PRId64, i ? "," : "", m->field_id, m->column_size,
                    m->value_count, m->null_count);
            if (m->has_nan_count) fprintf(f, ",\"nan_count\":%" PRId64, m->nan_count);
            if (m->has_lower) { fprintf(f, ",\"lower\":\""); hex(f, &m->lower); fprintf(f, "\""); }
            if (m->has_upper) { fprintf(f, ",\"upper\":\""); hex(f, &m->upper); fprintf(f, "\""); }
            fprintf(f, "}");
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    fl_pq_file_info_free(&info);
    fl_buf_free(&line);
    fl_vec_free(&v);
    fl_field_free(&schema);
    return 0;
}
