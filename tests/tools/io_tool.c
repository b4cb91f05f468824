/* io_tool: drives the Iceberg REST client and table IO for the integration tests.
 *   io_tool [connection options] NS.TABLE CMD [ARGS]
 * LOC is a location (s3://..., file://..., /path) or a path relative to the table location.
 *   location                    print the table location
 *   config-keys                 print the table IO config keys (never the values)
 *   put LOC FILE                PUT from memory
 *   putfd LOC FILE [THRESHOLD PART]  streaming PUT, multipart above THRESHOLD bytes
 *   get LOC OUT                 whole object into OUT
 *   range LOC OFF LEN OUT       ranged read
 *   source LOC OFF LEN OUT      read through the Parquet source (footer cache); prints the
 *                               size and remote request count as JSON
 *   head LOC                    {"size":N,"etag":"..."}
 *   delete LOC
 *   commit REQS UPDATES         commit JSON arrays; exit 0 (prints the new metadata-location),
 *                               3 conflict, 4 commit state unknown, 1 other failure
 *   list-tables                 identifiers of the table's namespace, as JSON
 *   list-namespaces             top-level namespaces, as JSON
 *   create-table NAME SCHEMA    create NAME in the table's namespace; prints metadata-location
 *   drop-table NAME             drop (purge) NAME in the table's namespace
 *   stress N                    N threads share the client and the IO: each loads the table
 *                               and reads its metadata file 5 times; prints the reads done
 * Exit 1 with a message on stderr on failure, 2 on usage errors. */
#include "base/buf.h"
#include "base/mem.h"
#include "cli/catalog_opts.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "io_tool"

static int fail(const char *what, fl_err_t e, const fl_remote_error_t *err)
{
    fprintf(stderr, PROG ": %s: %s: ", what, fl_err_str(e));
    if (err->status) fprintf(stderr, "HTTP %d %s: ", err->status, err->type);
    fprintf(stderr, "%s\n", err->message);
    return 1;
}

static int write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
        perror(path);
        return 1;
    }
    return 0;
}

typedef struct stress {
    fl_rest_client_t *c;
    fl_io_t *io;
    const fl_rest_ident_t *id;
    int ok;
    char msg[600];
} stress_t;

static void *stress_run(void *ud)
{
    stress_t *s = ud;
    for (int k = 0; k < 5; k++) {
        fl_rest_table_t t = { 0 };
        fl_remote_error_t err;
        fl_buf_t b;
        fl_buf_init(&b, 64 << 20);
        fl_err_t e = fl_rest_load_table(s->c, s->id, &t, &err);
        if (!e) e = fl_io_get(s->io, t.metadata_location, &b, &err);
        json_t *md = e ? NULL : json_loadb(b.ptr, b.len, 0, NULL);
        if (!e && !json_equal(md, t.metadata)) {
            e = FL_ERR_DIGEST;
            snprintf(err.message, sizeof err.message, "metadata file differs from the loaded metadata");
        }
        json_decref(md);
        fl_buf_free(&b);
        fl_rest_table_free(&t);
        if (e) {
            snprintf(s->msg, sizeof s->msg, "%s: %s", fl_err_str(e), err.message);
            return NULL;
        }
        s->ok++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    fl_catalog_opts_t co;
    fl_catalog_opts_init(&co);
    int i = 1, rc = 1;
    for (; i < argc; i++) {
        int r = fl_catalog_opts_arg(&co, PROG, argc, argv, &i);
        if (r < 0) return 2;
        if (!r) break;
    }
    if (argc - i < 2) {
        fprintf(stderr, "usage: io_tool [connection options] NS.TABLE CMD [ARGS]\n");
        return 2;
    }
    const char *table = argv[i], *cmd = argv[i + 1];
    char **a = argv + i + 2;
    int na = argc - i - 2;
    fl_rest_ident_t id = { 0 };
    fl_rest_client_t *c = NULL;
    fl_rest_table_t t = { 0 };
    fl_remote_error_t err;
    fl_io_t *io = NULL;
    fl_buf_t loc, buf;
    fl_buf_init(&loc, 0);
    fl_buf_init(&buf, 1u << 30);
    fl_err_t e;
    if (fl_rest_ident_parse(table, true, &id)) {
        fprintf(stderr, PROG ": bad table name %s\n", table);
        return 2;
    }
    if ((e = fl_catalog_connect(&co, &c, &err))) {
        rc = fail("connect", e, &err);
        goto out;
    }
    if (!strcmp(cmd, "list-namespaces")) {
        json_t *ns;
        if ((e = fl_rest_list_namespaces(c, NULL, &ns, &err))) { rc = fail("list namespaces", e, &err); goto out; }
        char *s = json_dumps(ns, JSON_COMPACT);
        printf("%s\n", s);
        free(s);
        json_decref(ns);
        rc = 0;
        goto out;
    }
    if (!strcmp(cmd, "list-tables")) {
        json_t *ts;
        if ((e = fl_rest_list_tables(c, &id, &ts, &err))) { rc = fail("list tables", e, &err); goto out; }
        char *s = json_dumps(ts, JSON_COMPACT);
        printf("%s\n", s);
        free(s);
        json_decref(ts);
        rc = 0;
        goto out;
    }
    if (!strcmp(cmd, "create-table") && na == 2) {
        json_error_t je;
        json_t *schema = json_loads(a[1], 0, &je);
        fl_rest_ident_t nid;
        fl_rest_ident_make((const char *const *)id.ns, id.nns, a[0], &nid);
        fl_rest_create_t cr = { .schema = schema };
        fl_rest_table_t nt = { 0 };
        e = fl_rest_create_table(c, &nid, &cr, &nt, &err);
        json_decref(schema);
        fl_rest_ident_free(&nid);
        if (e) { rc = fail("create table", e, &err); fl_rest_table_free(&nt); goto out; }
        printf("%s\n", nt.metadata_location);
        fl_rest_table_free(&nt);
        rc = 0;
        goto out;
    }
    if (!strcmp(cmd, "drop-table") && na == 1) {
        fl_rest_ident_t nid;
        fl_rest_ident_make((const char *const *)id.ns, id.nns, a[0], &nid);
        e = fl_rest_drop_table(c, &nid, true, &err);
        fl_rest_ident_free(&nid);
        rc = e ? fail("drop table", e, &err) : 0;
        goto out;
    }
    if ((e = fl_rest_load_table(c, &id, &t, &err))) {
        rc = fail("load table", e, &err);
        goto out;
    }
    if (!strcmp(cmd, "stress") && na == 1) {
        int n = atoi(a[0]), total = 0;
        fl_io_opts_t so;
        fl_catalog_io_opts(&co, &so);
        fl_io_new(t.config, &so, &io);
        stress_t *st = fl_calloc((size_t)n, sizeof *st);
        pthread_t *th = fl_calloc((size_t)n, sizeof *th);
        for (int k = 0; k < n; k++) {
            st[k] = (stress_t){ .c = c, .io = io, .id = &id };
            pthread_create(&th[k], NULL, stress_run, &st[k]);
        }
        rc = 0;
        for (int k = 0; k < n; k++) {
            pthread_join(th[k], NULL);
            total += st[k].ok;
            if (st[k].msg[0]) {
                fprintf(stderr, PROG ": stress thread %d: %s\n", k, st[k].msg);
                rc = 1;
            }
        }
        printf("%d\n", total);
        free(st);
        free(th);
        goto out;
    }
    if (!strcmp(cmd, "commit") && na == 2) {
        json_error_t je;
        json_t *rq = json_loads(a[0], 0, &je), *up = json_loads(a[1], 0, &je);
        bool unknown = false;
        e = fl_rest_commit(c, &id, rq, up, &t, &unknown, &err);
        json_decref(rq);
        json_decref(up);
        if (e == FL_ERR_CONFLICT) rc = 3;
        else if (e && unknown) rc = 4;
        else if (e) rc = 1;
        else rc = 0;
        if (e) fail(rc == 3 ? "commit conflict" : rc == 4 ? "commit state unknown" : "commit", e, &err);
        else printf("%s\n", t.metadata_location);
        goto out;
    }
    const char *tl = json_string_value(json_object_get(t.metadata, "location"));
    if (!strcmp(cmd, "location")) {
        printf("%s\n", tl ? tl : "");
        rc = 0;
        goto out;
    }
    if (!strcmp(cmd, "config-keys")) {
        const char *k;
        json_t *v;
        json_object_foreach(t.config, k, v) printf("%s\n", k);
        rc = 0;
        goto out;
    }
    fl_io_opts_t iopt;
    fl_catalog_io_opts(&co, &iopt);
    if (!strcmp(cmd, "putfd") && na == 4) {
        iopt.multipart_threshold = strtoull(a[2], NULL, 10);
        iopt.part_size = strtoull(a[3], NULL, 10);
    }
    fl_io_new(t.config, &iopt, &io);
    if (na < 1) {
        fprintf(stderr, PROG ": %s needs a location\n", cmd);
        rc = 2;
        goto out;
    }
    if (strstr(a[0], "://") || a[0][0] == '/') fl_buf_adds(&loc, a[0]);
    else fl_buf_printf(&loc, "%s/%s", tl ? tl : "", a[0]);

    if ((!strcmp(cmd, "put") || !strcmp(cmd, "putfd")) && na >= 2) {
        int fd = open(a[1], O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st)) { perror(a[1]); goto out; }
        if (!strcmp(cmd, "put")) {
            char *p = fl_malloc((size_t)st.st_size + 1);
            if (read(fd, p, (size_t)st.st_size) != st.st_size) { perror(a[1]); free(p); close(fd); goto out; }
            e = fl_io_put(io, loc.ptr, p, (size_t)st.st_size, &err);
            free(p);
        } else {
            e = fl_io_put_fd(io, loc.ptr, fd, (uint64_t)st.st_size, &err);
        }
        close(fd);
        rc = e ? fail(cmd, e, &err) : 0;
    } else if (!strcmp(cmd, "get") && na == 2) {
        e = fl_io_get(io, loc.ptr, &buf, &err);
        rc = e ? fail("get", e, &err) : write_file(a[1], buf.ptr ? buf.ptr : "", buf.len);
    } else if ((!strcmp(cmd, "range") || !strcmp(cmd, "source")) && na == 4) {
        uint64_t off = strtoull(a[1], NULL, 10);
        size_t n = strtoull(a[2], NULL, 10);
        char *p = fl_malloc(n + 1);
        if (!strcmp(cmd, "range")) {
            e = fl_io_read_at(io, loc.ptr, off, p, n, &err);
            rc = e ? fail("range", e, &err) : write_file(a[3], p, n);
        } else {
            fl_io_source_t *s = NULL;
            fl_pq_source_t src;
            if ((e = fl_io_source_open(io, loc.ptr, &s, &src, &err))) {
                rc = fail("source open", e, &err);
            } else {
                /* the reader's pattern: the length word at the end, then the range */
                char tail[8];
                e = src.size >= 8 ? src.read_at(src.ctx, src.size - 8, tail, 8) : FL_OK;
                if (!e) e = src.read_at(src.ctx, off, p, n);
                if (!e) e = src.read_at(src.ctx, off, p, n); /* twice: a tail hit costs nothing */
                if (e) rc = fail("source read", e, fl_io_source_error(s));
                else {
                    printf("{\"size\":%llu,\"requests\":%llu}\n", (unsigned long long)src.size,
                           (unsigned long long)fl_io_source_requests(s));
                    rc = write_file(a[3], p, n);
                }
                fl_io_source_free(s);
            }
        }
        free(p);
    } else if (!strcmp(cmd, "head") && na == 1) {
        fl_io_stat_t st;
        e = fl_io_head(io, loc.ptr, &st, &err);
        if (e) rc = fail("head", e, &err);
        else {
            json_t *o = json_pack("{s:I,s:s,s:I}", "size", (json_int_t)st.size, "etag", st.etag, "mtime-ms",
                                  (json_int_t)st.mtime_ms);
            char *s = json_dumps(o, JSON_COMPACT);
            printf("%s\n", s);
            free(s);
            json_decref(o);
            rc = 0;
        }
    } else if (!strcmp(cmd, "delete") && na == 1) {
        e = fl_io_delete(io, loc.ptr, &err);
        rc = e ? fail("delete", e, &err) : 0;
    } else {
        fprintf(stderr, PROG ": unknown command or arguments: %s\n", cmd);
        rc = 2;
    }
out:
    fl_io_free(io);
    fl_rest_table_free(&t);
    fl_rest_client_free(c);
    fl_rest_ident_free(&id);
    fl_buf_free(&loc);
    fl_buf_free(&buf);
    return rc;
}
