/* Parquet write/read throughput of floe's writer and reader on a generated
 * event table (mixed types: longs, timestamps, low- and high-cardinality
 * strings, a nullable double, a decimal, a nested struct and a list of
 * strings). bench/parquet.sh runs it beside pyarrow on the same data.
 *
 *   parquet_bench write CODEC ROWS OUT.parquet   -> "write rows=N seconds=S bytes=B row_groups=G"
 *   parquet_bench read FILE.parquet              -> "read rows=N seconds=S"
 *
 * Method: rows are generated in batches of 65,536 with a fixed-seed PRNG;
 * only fl_pq_writer_write/close time is counted, so generation is not
 * measured. Reading counts opening the file through close of the last row
 * group, one thread, the whole schema projected. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "format/column.h"
#include "format/parquet.h"

#define BATCH 65536

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void schema(fl_field_t *root)
{
    fl_field_set(root, 0, "table", true, FL_TYPE_STRUCT);
    fl_field_set(fl_field_add_child(root), 1, "event_id", true, FL_TYPE_LONG);
    fl_field_set(fl_field_add_child(root), 2, "ts", true, FL_TYPE_TIMESTAMPTZ);
    fl_field_set(fl_field_add_child(root), 3, "user_id", false, FL_TYPE_STRING);
    fl_field_set(fl_field_add_child(root), 4, "event_type", false, FL_TYPE_STRING);
    fl_field_set(fl_field_add_child(root), 5, "value", false, FL_TYPE_DOUBLE);
    fl_field_t *amt = fl_field_add_child(root);
    fl_field_set(amt, 6, "amount", false, FL_TYPE_DECIMAL);
    amt->precision = 18;
    amt->scale = 2;
    fl_field_set(fl_field_add_child(root), 7, "payload", false, FL_TYPE_STRING);
    fl_field_t *dev = fl_field_add_child(root);
    fl_field_set(dev, 8, "device", false, FL_TYPE_STRUCT);
    fl_field_set(fl_field_add_child(dev), 11, "os", false, FL_TYPE_STRING);
    fl_field_set(fl_field_add_child(dev), 12, "version", false, FL_TYPE_INT);
    fl_field_t *tags = fl_field_add_child(root);
    fl_field_set(tags, 9, "tags", false, FL_TYPE_LIST);
    fl_field_set(fl_field_add_child(tags), 13, "element", false, FL_TYPE_STRING);
    fl_field_set(fl_field_add_child(root), 10, "session_ms", false, FL_TYPE_LONG);
}

static const char *const TYPES[] = { "click", "view", "purchase", "signup", "logout",
                                     "search", "add_to_cart", "share", "like", "comment" };
static const char *const OSES[] = { "android", "ios", "windows", "macos", "linux" };
static const char *const WORDS[] = { "alpha", "bravo", "charlie", "delta", "echo", "foxtrot",
                                     "golf", "hotel", "india", "juliet", "kilo", "lima",
                                     "mike", "november", "oscar", "papa" };

static void gen(fl_vec_t *v, int64_t first, size_t n)
{
    char buf[128];
    for (size_t i = 0; i < n; i++) {
        int64_t id = first + (int64_t)i;
        uint64_t r = next();
        fl_vec_append_struct(v);
        fl_vec_append_i64(&v->children[0], id);
        fl_vec_append_i64(&v->children[1], 1700000000000000LL + id * 1000 + (int64_t)(r % 1000));
        int len = snprintf(buf, sizeof buf, "user-%06u", (unsigned)((r >> 10) % 100000));
        fl_vec_append_bytes(&v->children[2], buf, (size_t)len);
        const char *t = TYPES[(r >> 30) % 10];
        fl_vec_append_bytes(&v->children[3], t, strlen(t));
        if ((r >> 40) % 20 == 0) fl_vec_append_null(&v->children[4]);
        else fl_vec_append_f64(&v->children[4], (double)((r >> 20) % 1000000) / 100.0);
        fl_vec_append_i128(&v->children[5], (__int128)((r >> 8) % 10000000));
        uint64_t r2 = next();
        len = snprintf(buf, sizeof buf, "%s %s %016" PRIx64 " %s", WORDS[r2 % 16], WORDS[(r2 >> 4) % 16],
                       r2, WORDS[(r2 >> 8) % 16]);
        fl_vec_append_bytes(&v->children[6], buf, (size_t)len);
        fl_vec_t *dev = &v->children[7];
        if (r2 % 50 == 0) {
            fl_vec_append_null(dev);
        } else {
            fl_vec_append_struct(dev);
            const char *os = OSES[(r2 >> 12) % 5];
            fl_vec_append_bytes(&dev->children[0], os, strlen(os));
            fl_vec_append_i32(&dev->children[1], (int32_t)((r2 >> 16) % 20));
        }
        fl_vec_t *tags = &v->children[8];
        unsigned nt = (unsigned)((r2 >> 24) % 4);
        for (unsigned k = 0; k < nt; k++) {
            const char *w = WORDS[(r2 >> (28 + 4 * k)) % 16];
            fl_vec_append_bytes(&tags->children[0], w, strlen(w));
        }
        fl_vec_end_list(tags);
        if ((r2 >> 44) % 10 == 0) fl_vec_append_null(&v->children[9]);
        else fl_vec_append_i64(&v->children[9], (int64_t)((r2 >> 32) % 3600000));
    }
}

static fl_err_t fd_write(void *ctx, const void *p, size_t n)
{
    int fd = *(int *)ctx;
    const char *s = p;
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w <= 0) return FL_ERR_IO;
        s += w;
        n -= (size_t)w;
    }
    return FL_OK;
}

static int do_write(const char *codec, long rows, const char *path)
{
    fl_field_t root;
    schema(&root);
    fl_pq_write_opts_t o;
    fl_pq_write_opts_default(&o);
    if (fl_codec_parse(codec, &o.codec)) { fprintf(stderr, "bad codec %s\n", codec); return 2; }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror(path); return 1; }
    fl_pq_writer_t *w;
    double spent = 0, t0 = now();
    if (fl_pq_writer_open(&w, &root, &o, (fl_pq_sink_t){ fd_write, &fd })) return 1;
    spent += now() - t0;
    fl_vec_t v;
    fl_vec_init(&v, &root);
    for (long done = 0; done < rows;) {
        size_t n = (size_t)(rows - done < BATCH ? rows - done : BATCH);
        fl_vec_clear(&v);
        gen(&v, done, n);
        t0 = now();
        if (fl_pq_writer_write(w, &v)) { fprintf(stderr, "write failed\n"); return 1; }
        spent += now() - t0;
        done += (long)n;
    }
    fl_pq_file_info_t info;
    t0 = now();
    if (fl_pq_writer_close(w, &info)) { fprintf(stderr, "close failed\n"); return 1; }
    spent += now() - t0;
    printf("write rows=%ld seconds=%.4f bytes=%" PRId64 " row_groups=%zu\n", rows, spent, info.file_size,
           info.n_split_offsets);
    fl_pq_file_info_free(&info);
    fl_pq_writer_free(w);
    close(fd);
    fl_vec_free(&v);
    fl_field_free(&root);
    return 0;
}

static int do_read(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); return 1; }
    struct stat st;
    fstat(fd, &st);
    double t0 = now();
    fl_pq_reader_t *r;
    if (fl_pq_reader_open(&r, fl_pq_source_fd(fd, (uint64_t)st.st_size))) { fprintf(stderr, "open failed\n"); return 1; }
    fl_vec_t v;
    memset(&v, 0, sizeof v);
    int64_t rows = 0;
    for (;;) {
        bool done = false;
        if (fl_pq_reader_next(r, &v, &done)) { fprintf(stderr, "read failed: %s\n", fl_pq_reader_error(r)); return 1; }
        if (done) break;
        rows += (int64_t)v.len;
    }
    double spent = now() - t0;
    printf("read rows=%" PRId64 " seconds=%.4f\n", rows, spent);
    fl_vec_free(&v);
    fl_pq_reader_free(r);
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "write")) return do_write(argv[2], atol(argv[3]), argv[4]);
    if (argc == 3 && !strcmp(argv[1], "read")) return do_read(argv[2]);
    fprintf(stderr, "usage: parquet_bench write CODEC ROWS OUT | read FILE\n");
    return 2;
}
