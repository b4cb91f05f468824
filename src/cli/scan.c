/* floe scan NS.TABLE: a table's rows as JSON lines or CSV, read with floe's own
 * manifest and Parquet readers through any Iceberg REST catalog.
 *
 *   floe scan NS.TABLE [--snapshot ID] [--limit N] [--columns a,b.c] [--format json|csv]
 *                      [catalog options]
 * Rows come file by file in manifest order; --limit stops early. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/mem.h"
#include "cli/catalog_opts.h"
#include "cli/cli.h"
#include "format/parquet.h"
#include "iceberg/io.h"
#include "iceberg/rest_client.h"
#include "iceberg/rest_ops.h"
#include "iceberg/scan.h"
#include "iceberg/schema.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: floe scan NAMESPACE.TABLE [--snapshot ID] [--limit N] [--columns A,B.C]\n"
               "                 [--format json|csv] [catalog options]\n"
               "Prints the table's rows (JSON lines by default; CSV with a header line).\n");
    fl_catalog_opts_usage(f);
}

static void csv_field(fl_buf_t *out, const char *p, size_t n)
{
    bool quote = false;
    for (size_t i = 0; i < n; i++)
        if (p[i] == ',' || p[i] == '"' || p[i] == '\n' || p[i] == '\r') quote = true;
    if (!quote) { fl_buf_add(out, p, n); return; }
    fl_buf_addc(out, '"');
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '"') fl_buf_addc(out, '"');
        fl_buf_addc(out, p[i]);
    }
    fl_buf_addc(out, '"');
}

static void csv_value(const fl_vec_t *v, size_t i, fl_buf_t *out, fl_buf_t *tmp)
{
    if (fl_vec_is_null(v, i)) return; /* empty field */
    fl_buf_reset(tmp);
    if (v->field->kind == FL_TYPE_STRING) {
        fl_slice_t s = fl_vec_bytes_at(v, i);
        csv_field(out, s.ptr, s.len);
        return;
    }
    fl_vec_json_append(v, i, tmp);
    const char *p = tmp->ptr;
    size_t n = tmp->len;
    /* scalars rendered as JSON strings ("2024-01-01", "1.50") lose their quotes */
    if (!fl_type_is_nested(v->field->kind) && n >= 2 && p[0] == '"') { p++; n -= 2; }
    csv_field(out, p, n);
}

int fl_cmd_scan(int argc, char **argv)
{
    const char *prog = "floe scan";
    fl_catalog_opts_t co;
    fl_catalog_opts_init(&co);
    const char *table = NULL, *columns = NULL, *format = "json";
    int64_t snapshot = -1, limit = -1;
    for (int i = 1; i < argc; i++) {
        int r = fl_catalog_opts_arg(&co, prog, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if ((!strcmp(a, "--snapshot") || !strcmp(a, "--limit") || !strcmp(a, "--columns") ||
             !strcmp(a, "--format")) && i + 1 >= argc) {
            fprintf(stderr, "%s: %s needs a value\n", prog, a);
            return 2;
        }
        if (!strcmp(a, "--snapshot") || !strcmp(a, "--limit")) {
            char *end;
            errno = 0;
            long long v = strtoll(argv[++i], &end, 10);
            if (errno || *end || v < 0) { fprintf(stderr, "%s: %s wants a non-negative integer\n", prog, a); return 2; }
            if (!strcmp(a, "--snapshot")) snapshot = v; else limit = v;
        } else if (!strcmp(a, "--columns")) {
            columns = argv[++i];
        } else if (!strcmp(a, "--format")) {
            format = argv[++i];
            if (strcmp(format, "json") && strcmp(format, "csv")) { fprintf(stderr, "%s: --format json|csv\n", prog); return 2; }
        } else if (a[0] == '-') {
            fprintf(stderr, "%s: unknown flag %s\n", prog, a);
            usage(stderr);
            return 2;
        } else if (!table) {
            table = a;
        } else {
            fprintf(stderr, "%s: one table at a time\n", prog);
            return 2;
        }
    }
    if (!table) { usage(stderr); return 2; }

    int rc = 1;
    fl_cli_table_t t;
    memset(&t, 0, sizeof t);
    fl_scan_plan_t plan;
    memset(&plan, 0, sizeof plan);
    fl_field_t schema, proj;
    memset(&schema, 0, sizeof schema);
    memset(&proj, 0, sizeof proj);
    char **names = NULL;
    size_t n_names = 0;
    fl_buf_t out, tmp;
    fl_buf_init(&out, 0);
    fl_buf_init(&tmp, 0);
    fl_vec_t rows;
    memset(&rows, 0, sizeof rows);
    char err[1024] = "";
    fl_rest_error_t re;
    memset(&re, 0, sizeof re);

    if ((rc = fl_cli_table_open(&t, &co, prog, table))) goto out;
    rc = 1;
    fl_io_t *io = t.io;
    json_t *md = t.ctx.last.metadata;
    if (fl_scan_plan(&t.ops, md, snapshot, &plan, err, sizeof err)) { fprintf(stderr, "%s: %s\n", prog, err); goto out; }
    int32_t sid;
    if (fl_schema_from_metadata(md, plan.schema_id, &schema, &sid, err, sizeof err) &&
        fl_schema_from_metadata(md, -1, &schema, &sid, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", prog, err);
        goto out;
    }
    const fl_field_t *expected = &schema;
    if (columns) {
        char *dup = fl_strdup(columns), *save = NULL;
        for (char *c = strtok_r(dup, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
            names = fl_realloc(names, (n_names + 1) * sizeof *names);
            names[n_names++] = fl_strdup(c);
        }
        free(dup);
        if (fl_schema_project(&schema, (const char *const *)names, n_names, &proj, err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", prog, err);
            goto out;
        }
        expected = &proj;
    }
    if (plan.n_delete_files)
        fprintf(stderr, "%s: warning: the snapshot has %zu delete files, which floe does not apply yet\n", prog,
                plan.n_delete_files);
    bool csv = !strcmp(format, "csv");
    if (csv) {
        for (uint32_t c = 0; c < expected->n_children; c++) {
            if (c) fl_buf_addc(&out, ',');
            csv_field(&out, expected->children[c].name, strlen(expected->children[c].name));
        }
        fl_buf_addc(&out, '\n');
    }
    const char *mapping = json_string_value(json_object_get(json_object_get(md, "properties"),
                                                            "schema.name-mapping.default"));
    int64_t printed = 0;
    for (size_t f = 0; f < plan.n_files && (limit < 0 || printed < limit); f++) {
        const char *path = plan.files[f].file_path;
        fl_io_source_t *s = NULL;
        fl_pq_source_t src;
        fl_pq_reader_t *r = NULL;
        if (fl_io_source_open(io, path, &s, &src, &re)) { rc = fl_catalog_report(prog, path, &re); goto out; }
        fl_err_t e = fl_pq_reader_open(&r, src);
        if (!e && mapping) {
            const fl_field_t *fs = fl_pq_reader_file_schema(r);
            bool ids = true;
            for (uint32_t c = 0; c < fs->n_children; c++) if (fs->children[c].id < 0) ids = false;
            if (!ids) e = fl_pq_reader_name_mapping(r, fl_slice_cstr(mapping));
        }
        if (!e) e = fl_pq_reader_project(r, expected);
        for (bool done = false; !e && !done && (limit < 0 || printed < limit);) {
            e = fl_pq_reader_next(r, &rows, &done);
            for (size_t i = 0; !e && !done && i < rows.len && (limit < 0 || printed < limit); i++, printed++) {
                if (csv) {
                    for (uint32_t c = 0; c < rows.n_children; c++) {
                        if (c) fl_buf_addc(&out, ',');
                        csv_value(&rows.children[c], i, &out, &tmp);
                    }
                } else {
                    fl_vec_json_append(&rows, i, &out);
                }
                fl_buf_addc(&out, '\n');
                if (out.len > 1 << 16) {
                    fwrite(out.ptr, 1, out.len, stdout);
                    fl_buf_reset(&out);
                }
            }
        }
        if (e) fprintf(stderr, "%s: reading %s: %s\n", prog, path, r ? fl_pq_reader_error(r) : fl_err_str(e));
        fl_pq_reader_free(r);
        fl_io_source_free(s);
        fl_vec_free(&rows);
        if (e) goto out;
    }
    fwrite(out.ptr, 1, out.len, stdout);
    fflush(stdout);
    rc = 0;
out:
    fl_vec_free(&rows);
    fl_buf_free(&out);
    fl_buf_free(&tmp);
    for (size_t i = 0; i < n_names; i++) free(names[i]);
    free(names);
    fl_field_free(&proj);
    fl_field_free(&schema);
    fl_scan_plan_free(&plan);
    fl_cli_table_close(&t);
    return rc;
}
