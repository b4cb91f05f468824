/* pq_read: print a Parquet file's rows as JSON lines through floe's reader.
 *
 *   pq_read FILE [--ids 1,2,...] [--mapping MAPPING.json] [--promote ID:TYPE]...
 *                [--extra ID:NAME:TYPE]... [--schema] [--count]
 *
 * --ids keeps only the fields with those ids (a nested field keeps its
 * ancestors); --promote changes a leaf's expected type (long, double,
 * decimal(P,S), timestamp, timestamptz, timestamp_ns, timestamptz_ns, string,
 * binary, uuid, fixed(L)); --extra adds an optional top-level field the file
 * lacks; --mapping applies an Iceberg name mapping first; --schema prints the
 * file schema instead of rows; --count prints only the row count. Any failure
 * prints "error: ..." to stderr and exits 1. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "format/parquet.h"

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "error: %s: %s\n", what, detail ? detail : "");
    exit(1);
}

static bool parse_type(const char *s, fl_field_t *f)
{
    static const struct { const char *n; fl_type_kind_t k; } names[] = {
        { "boolean", FL_TYPE_BOOLEAN }, { "int", FL_TYPE_INT }, { "long", FL_TYPE_LONG },
        { "float", FL_TYPE_FLOAT }, { "double", FL_TYPE_DOUBLE }, { "date", FL_TYPE_DATE },
        { "time", FL_TYPE_TIME }, { "timestamp", FL_TYPE_TIMESTAMP },
        { "timestamptz", FL_TYPE_TIMESTAMPTZ }, { "timestamp_ns", FL_TYPE_TIMESTAMP_NS },
        { "timestamptz_ns", FL_TYPE_TIMESTAMPTZ_NS }, { "string", FL_TYPE_STRING },
        { "binary", FL_TYPE_BINARY }, { "uuid", FL_TYPE_UUID },
    };
    int p, sc, l;
    if (sscanf(s, "decimal(%d,%d)", &p, &sc) == 2) {
        f->kind = FL_TYPE_DECIMAL;
        f->precision = p;
        f->scale = sc;
        return true;
    }
    if (sscanf(s, "fixed(%d)", &l) == 1) {
        f->kind = FL_TYPE_FIXED;
        f->length = l;
        return true;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].n)) {
            f->kind = names[i].k;
            return true;
        }
    return false;
}

static bool id_in(int32_t id, const int32_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

/* keep f if its id is listed or a descendant is; lists/maps are kept whole */
static bool prune(fl_field_t *f, const int32_t *ids, size_t n)
{
    if (id_in(f->id, ids, n)) return true;
    if (f->kind != FL_TYPE_STRUCT) return false;
    uint32_t k = 0;
    for (uint32_t i = 0; i < f->n_children; i++) {
        if (prune(&f->children[i], ids, n)) {
            if (k != i) {
                f->children[k] = f->children[i];
                memset(&f->children[i], 0, sizeof f->children[i]);
            }
            k++;
        } else
            fl_field_free(&f->children[i]);
    }
    f->n_children = k;
    return k > 0;
}

static fl_field_t *find_mut(fl_field_t *f, int32_t id)
{
    return (fl_field_t *)fl_field_find(f, id);
}

static void print_schema(const fl_field_t *f, int depth)
{
    printf("%*s%s id=%d %s %s", depth * 2, "", f->name, f->id, f->required ? "required" : "optional",
           fl_type_name(f->kind));
    if (f->kind == FL_TYPE_DECIMAL) printf("(%d,%d)", f->precision, f->scale);
    if (f->kind == FL_TYPE_FIXED) printf("(%d)", f->length);
    printf("\n");
    for (uint32_t i = 0; i < f->n_children; i++) print_schema(&f->children[i], depth + 1);
}

static char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) die("open", path);
    fseek(fp, 0, SEEK_END);
    long sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *p = malloc((size_t)sz + 1);
    if (!p || fread(p, 1, (size_t)sz, fp) != (size_t)sz) die("read", path);
    fclose(fp);
    *n = (size_t)sz;
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 2) die("usage", "pq_read FILE [--ids 1,2] [--mapping F] [--promote ID:TYPE] [--extra ID:NAME:TYPE] [--schema] [--count]");
    const char *path = argv[1], *mapping = NULL;
    int32_t ids[256];
    size_t n_ids = 0;
    bool have_ids = false, schema_only = false, count_only = false;
    const char *promote[64], *extra[64];
    int n_promote = 0, n_extra = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--ids") && i + 1 < argc) {
            have_ids = true;
            for (char *s = argv[++i]; *s && n_ids < 256;) {
                ids[n_ids++] = (int32_t)strtol(s, &s, 10);
                if (*s == ',') s++;
            }
        } else if (!strcmp(argv[i], "--mapping") && i + 1 < argc) mapping = argv[++i];
        else if (!strcmp(argv[i], "--promote") && i + 1 < argc && n_promote < 64) promote[n_promote++] = argv[++i];
        else if (!strcmp(argv[i], "--extra") && i + 1 < argc && n_extra < 64) extra[n_extra++] = argv[++i];
        else if (!strcmp(argv[i], "--schema")) schema_only = true;
        else if (!strcmp(argv[i], "--count")) count_only = true;
        else die("bad argument", argv[i]);
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open", path);
    struct stat st;
    if (fstat(fd, &st)) die("stat", path);
    fl_pq_reader_t *r;
    fl_err_t e = fl_pq_reader_open(&r, fl_pq_source_fd(fd, (uint64_t)st.st_size));
    if (e) die(fl_err_str(e), fl_pq_reader_error(NULL));
    if (mapping) {
        size_t n;
        char *m = slurp(mapping, &n);
        e = fl_pq_reader_name_mapping(r, fl_slice(m, n));
        free(m);
        if (e) die(fl_err_str(e), fl_pq_reader_error(r));
    }
    if (schema_only) {
        print_schema(fl_pq_reader_file_schema(r), 0);
        fl_pq_reader_free(r);
        close(fd);
        return 0;
    }
    fl_field_t exp;
    memset(&exp, 0, sizeof exp);
    bool projected = have_ids || n_promote || n_extra;
    if (projected) {
        fl_field_copy(&exp, fl_pq_reader_file_schema(r));
        if (have_ids) {
            fl_field_t *kids = exp.children;
            uint32_t k = 0;
            for (uint32_t i = 0; i < exp.n_children; i++) {
                if (prune(&kids[i], ids, n_ids)) {
                    if (k != i) { kids[k] = kids[i]; memset(&kids[i], 0, sizeof kids[i]); }
                    k++;
                } else
                    fl_field_free(&kids[i]);
            }
            exp.n_children = k;
        }
        for (int i = 0; i < n_promote; i++) {
            int32_t id = (int32_t)strtol(promote[i], NULL, 10);
            const char *t = strchr(promote[i], ':');
            fl_field_t *f = find_mut(&exp, id);
            if (!f || !t || !parse_type(t + 1, f)) die("bad --promote", promote[i]);
        }
        for (int i = 0; i < n_extra; i++) {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", extra[i]);
            char *c1 = strchr(buf, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (!c2) die("bad --extra", extra[i]);
            *c1 = *c2 = 0;
            fl_field_t *f = fl_field_add_child(&exp);
            fl_field_set(f, (int32_t)strtol(buf, NULL, 10), c1 + 1, false, FL_TYPE_STRING);
            if (!parse_type(c2 + 1, f)) die("bad --extra", extra[i]);
        }
        e = fl_pq_reader_project(r, &exp);
        if (e) die(fl_err_str(e), fl_pq_reader_error(r));
    }
    fl_vec_t v;
    memset(&v, 0, sizeof v);
    fl_buf_t out;
    fl_buf_init(&out, 0);
    int64_t rows = 0;
    for (;;) {
        bool done;
        e = fl_pq_reader_next(r, &v, &done);
        if (e) die(fl_err_str(e), fl_pq_reader_error(r));
        if (done) break;
        rows += (int64_t)v.len;
        if (count_only) continue;
        for (size_t i = 0; i < v.len; i++) {
            fl_buf_reset(&out);
            if (fl_vec_json_append(&v, i, &out) || fl_buf_addc(&out, '\n')) die("json", "render failed");
            fwrite(out.ptr, 1, out.len, stdout);
        }
    }
    if (count_only) printf("%lld\n", (long long)rows);
    fl_buf_free(&out);
    fl_vec_free(&v);
    fl_pq_reader_free(r);
    if (projected) fl_field_free(&exp);
    close(fd);
    return 0;
}
