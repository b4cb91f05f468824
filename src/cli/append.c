/* floe append NS.TABLE: JSON lines into an Iceberg table through floe's append
 * API (Parquet files, manifests, a fast-append commit) and any REST catalog.
 *
 *   floe append NS.TABLE [--file PATH|-] [--batch-rows N] [--summary KEY=VALUE]...
 *                        [--target-file-size BYTES] [--output text|json] [catalog options]
 * Each line is one JSON object keyed by column name (json_rows.h has the accepted
 * forms). All lines land in one snapshot, or none: a bad line stops the run
 * before anything is committed and the files written so far are deleted. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/mem.h"
#include "cli/catalog_opts.h"
#include "cli/cli.h"
#include "format/json_rows.h"
#include "iceberg/append.h"
#include "iceberg/io.h"
#include "iceberg/rest_client.h"
#include "iceberg/rest_ops.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: floe append NAMESPACE.TABLE [--file PATH|-] [--batch-rows N]\n"
               "                   [--summary KEY=VALUE]... [--target-file-size BYTES]\n"
               "                   [--output text|json] [catalog options]\n"
               "Appends JSON lines (one object per row, keyed by column name) in one snapshot.\n");
    fl_catalog_opts_usage(f);
}

int fl_cmd_append(int argc, char **argv)
{
    const char *prog = "floe append";
    fl_catalog_opts_t co;
    fl_catalog_opts_init(&co);
    const char *table = NULL, *file = "-", *output = "text";
    long batch_rows = 65536;
    int64_t target = 0;
    const char **kv = NULL;
    size_t n_kv = 0;
    for (int i = 1; i < argc; i++) {
        int r = fl_catalog_opts_arg(&co, prog, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        bool valued = !strcmp(a, "--file") || !strcmp(a, "--batch-rows") || !strcmp(a, "--summary") ||
                      !strcmp(a, "--target-file-size") || !strcmp(a, "--output");
        if (valued && i + 1 >= argc) { fprintf(stderr, "%s: %s needs a value\n", prog, a); return 2; }
        if (!strcmp(a, "--file")) {
            file = argv[++i];
        } else if (!strcmp(a, "--batch-rows") || !strcmp(a, "--target-file-size")) {
            char *end;
            errno = 0;
            long long v = strtoll(argv[++i], &end, 10);
            if (errno || *end || v <= 0) { fprintf(stderr, "%s: %s wants a positive integer\n", prog, a); return 2; }
            if (!strcmp(a, "--batch-rows")) batch_rows = (long)v; else target = v;
        } else if (!strcmp(a, "--summary")) {
            char *eq = strchr(argv[++i], '=');
            if (!eq || eq == argv[i]) { fprintf(stderr, "%s: --summary wants KEY=VALUE\n", prog); return 2; }
            *eq = 0;
            kv = fl_realloc(kv, (n_kv + 1) * 2 * sizeof *kv);
            kv[2 * n_kv] = argv[i];
            kv[2 * n_kv + 1] = eq + 1;
            n_kv++;
        } else if (!strcmp(a, "--output")) {
            output = argv[++i];
        } else if (a[0] == '-') {
            fprintf(stderr, "%s: unknown flag %s\n", prog, a);
            usage(stderr);
            free(kv);
            return 2;
        } else if (!table) {
            table = a;
        } else {
            fprintf(stderr, "%s: one table at a time\n", prog);
            free(kv);
            return 2;
        }
    }
    if (!table) { usage(stderr); free(kv); return 2; }

    int rc = 1;
    FILE *in = NULL;
    fl_appender_t *ap = NULL;
    fl_cli_table_t t;
    memset(&t, 0, sizeof t);
    fl_vec_t batch;
    memset(&batch, 0, sizeof batch);
    char *line = NULL;
    size_t line_cap = 0;
    char err[1024] = "";

    in = strcmp(file, "-") ? fopen(file, "r") : stdin;
    if (!in) { fprintf(stderr, "%s: %s: %s\n", prog, file, strerror(errno)); goto out; }
    if ((rc = fl_cli_table_open(&t, &co, prog, table))) goto out;
    rc = 1;
    fl_append_opts_t ao;
    memset(&ao, 0, sizeof ao);
    ao.target_file_bytes = target;
    if (fl_append_open(&ap, &t.ops, &ao, err, sizeof err)) { fprintf(stderr, "%s: %s\n", prog, err); goto out; }
    fl_vec_init(&batch, fl_append_schema(ap));
    long lineno = 0;
    ssize_t n;
    while ((n = getline(&line, &line_cap, in)) >= 0) {
        lineno++;
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (!n) continue;
        json_error_t je;
        json_t *j = json_loadb(line, (size_t)n, JSON_DECODE_ANY, &je);
        if (!j || !json_is_object(j)) {
            fprintf(stderr, "%s: line %ld: %s\n", prog, lineno, j ? "not a JSON object" : je.text);
            json_decref(j);
            goto out;
        }
        fl_err_t e = fl_vec_append_json(&batch, j, err, sizeof err);
        json_decref(j);
        if (e) { fprintf(stderr, "%s: line %ld: %s\n", prog, lineno, err); goto out; }
        if ((long)batch.len >= batch_rows) {
            if (fl_append_write(ap, &batch, err, sizeof err)) { fprintf(stderr, "%s: %s\n", prog, err); goto out; }
            fl_vec_clear(&batch);
        }
    }
    if (ferror(in)) { fprintf(stderr, "%s: reading %s: %s\n", prog, file, strerror(errno)); goto out; }
    if (batch.len && fl_append_write(ap, &batch, err, sizeof err)) { fprintf(stderr, "%s: %s\n", prog, err); goto out; }
    int64_t rows = fl_append_rows(ap), sid = -1;
    if (fl_append_commit(ap, kv, n_kv, &sid, err, sizeof err)) { fprintf(stderr, "%s: %s\n", prog, err); goto out; }
    const char *files = "0";
    if (sid >= 0) {
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(fl_append_metadata(ap), "snapshots"), i, s)
            if (json_integer_value(json_object_get(s, "snapshot-id")) == sid) {
                const char *f = json_string_value(json_object_get(json_object_get(s, "summary"), "added-data-files"));
                if (f) files = f;
            }
    }
    if (!strcmp(output, "json"))
        printf("{\"snapshot-id\":%" PRId64 ",\"added-records\":%" PRId64 ",\"added-data-files\":%s}\n", sid, rows, files);
    else if (sid >= 0)
        printf("snapshot %" PRId64 ": %" PRId64 " rows in %s files\n", sid, rows, files);
    else
        printf("nothing to append\n");
    rc = 0;
out:
    if (rc && ap) fl_append_abort(ap);
    fl_append_free(ap);
    fl_vec_free(&batch);
    free(line);
    free(kv);
    if (in && in != stdin) fclose(in);
    fl_cli_table_close(&t);
    return rc;
}
