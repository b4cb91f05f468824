/* floe snapshots <namespace.table>: loads a table through the Iceberg REST catalog and
 * prints its snapshots in commit order (id, parent, sequence number, time, operation,
 * summary highlights, manifest list), as a table or as JSON (--output json). */
#include "base/buf.h"
#include "base/mem.h"
#include "base/time.h"
#include "cli/catalog_opts.h"
#include "cli/cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "floe snapshots"

static void usage(FILE *f)
{
    fprintf(f, "usage: floe snapshots <namespace.table> [--output text|json] [connection options]\n\n"
               "Lists the table's snapshots: id, parent, sequence number, timestamp, operation,\n"
               "added/total records and data files, manifest list ('*' marks the current one).\n\n");
    fl_catalog_opts_usage(f);
}

static json_t *str_or_null(json_t *v) { return json_is_string(v) || json_is_integer(v) ? json_incref(v) : json_null(); }

/* The JSON document both outputs are made from. */
static json_t *describe(const char *name, const fl_rest_table_t *t)
{
    json_t *md = t->metadata, *snaps = json_object_get(md, "snapshots"), *s, *out = json_array();
    int64_t cur = -1;
    json_t *cs = json_object_get(md, "current-snapshot-id");
    if (json_is_integer(cs)) cur = json_integer_value(cs);
    size_t i;
    json_array_foreach(snaps, i, s) {
        json_t *sum = json_object_get(s, "summary"), *ts = json_object_get(s, "timestamp-ms");
        char iso[40] = "";
        if (json_is_integer(ts)) fl_time_iso8601(json_integer_value(ts), iso, sizeof iso);
        json_t *id = json_object_get(s, "snapshot-id"), *seq = json_object_get(s, "sequence-number");
        json_t *parent = json_object_get(s, "parent-snapshot-id");
        json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:s,s:o,s:o,s:o,s:o,s:b}",
                              "snapshot-id", str_or_null(id),
                              "parent-snapshot-id", json_is_integer(parent) ? json_incref(parent) : json_null(),
                              "sequence-number", json_is_integer(seq) ? json_incref(seq) : json_integer(0),
                              "timestamp-ms", str_or_null(ts), "timestamp", iso,
                              "operation", str_or_null(json_object_get(sum, "operation")),
                              "manifest-list", str_or_null(json_object_get(s, "manifest-list")),
                              "schema-id", str_or_null(json_object_get(s, "schema-id")),
                              "summary", json_is_object(sum) ? json_incref(sum) : json_object(),
                              "current", json_is_integer(id) && json_integer_value(id) == cur);
        json_array_append_new(out, o);
    }
    return json_pack("{s:s,s:s?,s:O?,s:O?,s:o,s:o}", "table", name, "metadata-location", t->metadata_location,
                     "format-version", json_object_get(md, "format-version"),
                     "table-uuid", json_object_get(md, "table-uuid"),
                     "current-snapshot-id", cur >= 0 ? json_integer(cur) : json_null(), "snapshots", out);
}

static char *cell(json_t *v)
{
    if (!v || json_is_null(v)) return fl_strdup("-");
    if (json_is_string(v)) return fl_strdup(json_string_value(v));
    char *s = json_dumps(v, JSON_ENCODE_ANY);
    return s ? s : fl_strdup("?");
}

static void print_text(json_t *doc)
{
    static const struct { const char *head, *key; bool summary; } cols[] = {
        { "SNAPSHOT-ID", "snapshot-id", false }, { "PARENT", "parent-snapshot-id", false },
        { "SEQ", "sequence-number", false }, { "TIMESTAMP", "timestamp", false },
        { "OPERATION", "operation", false }, { "ADDED-RECORDS", "added-records", true },
        { "TOTAL-RECORDS", "total-records", true }, { "ADDED-FILES", "added-data-files", true },
        { "TOTAL-FILES", "total-data-files", true }, { "MANIFEST-LIST", "manifest-list", false },
    };
    enum { NC = sizeof cols / sizeof cols[0] };
    json_t *snaps = json_object_get(doc, "snapshots"), *s;
    size_t n = json_array_size(snaps), i, w[NC];
    char **cells = fl_calloc(n * NC + 1, sizeof *cells);
    for (size_t c = 0; c < NC; c++) w[c] = strlen(cols[c].head);
    json_array_foreach(snaps, i, s) for (size_t c = 0; c < NC; c++) {
        json_t *src = cols[c].summary ? json_object_get(s, "summary") : s;
        char *x = cell(json_object_get(src, cols[c].key));
        if (strlen(x) > w[c]) w[c] = strlen(x);
        cells[i * NC + c] = x;
    }
    json_t *loc = json_object_get(doc, "metadata-location"), *cur = json_object_get(doc, "current-snapshot-id");
    char *cs = cell(cur);
    printf("table %s: %zu snapshot%s, current %s\nmetadata %s\n\n", json_string_value(json_object_get(doc, "table")),
           n, n == 1 ? "" : "s", cs, json_is_string(loc) ? json_string_value(loc) : "-");
    free(cs);
    if (!n) {
        printf("(no snapshots)\n");
        free(cells);
        return;
    }
    printf("  ");
    for (size_t c = 0; c < NC; c++) printf("%-*s%s", (int)w[c], cols[c].head, c + 1 < NC ? "  " : "\n");
    json_array_foreach(snaps, i, s) {
        printf("%s ", json_is_true(json_object_get(s, "current")) ? "*" : " ");
        for (size_t c = 0; c < NC; c++) {
            printf("%-*s%s", c + 1 < NC ? (int)w[c] : 0, cells[i * NC + c], c + 1 < NC ? "  " : "\n");
            free(cells[i * NC + c]);
        }
    }
    free(cells);
}

int fl_cmd_snapshots(int argc, char **argv)
{
    fl_catalog_opts_t co;
    fl_catalog_opts_init(&co);
    const char *output = "text", *table = NULL;
    for (int i = 1; i < argc; i++) {
        int r = fl_catalog_opts_arg(&co, PROG, argc, argv, &i);
        if (r < 0) return 2;
        if (r) continue;
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--output") || !strncmp(a, "--output=", 9)) {
            if (a[8] == '=') output = a + 9;
            else if (i + 1 < argc) output = argv[++i];
            else output = "";
            if (strcmp(output, "text") && strcmp(output, "json")) {
                fprintf(stderr, PROG ": --output must be text or json\n");
                return 2;
            }
        } else if (a[0] == '-' || table) {
            fprintf(stderr, PROG ": unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            table = a;
        }
    }
    if (!table) {
        usage(stderr);
        return 2;
    }
    fl_rest_ident_t id;
    if (fl_rest_ident_parse(table, true, &id)) {
        fprintf(stderr, PROG ": '%s' is not <namespace>.<table>\n", table);
        return 2;
    }
    int rc = 1;
    fl_rest_client_t *c = NULL;
    fl_rest_table_t t = { 0 };
    fl_rest_error_t err;
    json_t *doc = NULL;
    if (fl_catalog_connect(&co, &c, &err)) {
        rc = fl_catalog_report(PROG, co.uri, &err);
        goto out;
    }
    if (fl_rest_load_table(c, &id, &t, &err)) {
        char what[600];
        snprintf(what, sizeof what, "load table %.500s", table);
        rc = fl_catalog_report(PROG, what, &err);
        goto out;
    }
    doc = describe(table, &t);
    if (!strcmp(output, "json")) {
        char *s = json_dumps(doc, JSON_INDENT(2));
        printf("%s\n", s);
        free(s);
    } else {
        print_text(doc);
    }
    rc = 0;
out:
    json_decref(doc);
    fl_rest_table_free(&t);
    fl_rest_client_free(c);
    fl_rest_ident_free(&id);
    return rc;
}
