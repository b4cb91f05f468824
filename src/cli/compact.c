/* floe compact NS.TABLE: compaction of one table through any REST catalog
 * (iceberg/rewrite.h: bin-pack small files per partition and spec, apply and
 * drop deletes, merge small manifests; `replace` snapshots).
 *
 *   floe compact NS.TABLE [--target-file-size-mb N] [--min-input-files N]
 *                [--max-commit-mb N] [--merge-manifests N] [--manifests-only]
 *                [--output text|json] [catalog options]
 * A temporary top-level command: fl_cmd_maint_compaction is what `floe
 * maintenance run --job compaction` dispatches to. Exit 0 when every planned
 * group was committed (or none was needed), 3 when some groups failed
 * validation against concurrent commits (the rest is committed), 1 on error. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/catalog_opts.h"
#include "cli/cli.h"
#include "iceberg/rewrite.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: floe compact NAMESPACE.TABLE [--target-file-size-mb N] [--min-input-files N]\n"
               "                    [--max-commit-mb N] [--merge-manifests N] [--manifests-only]\n"
               "                    [--output text|json] [catalog options]\n"
               "Rewrites small data files per partition into files near the target size (default:\n"
               "the table's write.target-file-size-bytes), applying and dropping delete files, and\n"
               "with --merge-manifests N merges a spec's small manifests when there are more than N.\n");
    fl_catalog_opts_usage(f);
}

static int parse_pos(const char *prog, const char *flag, const char *v, long long *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x <= 0) {
        fprintf(stderr, "%s: %s wants a positive integer\n", prog, flag);
        return -1;
    }
    *out = x;
    return 0;
}

int fl_cmd_maint_compaction(int argc, char **argv)
{
    const char *prog = "floe compact";
    fl_catalog_opts_t co;
    fl_catalog_opts_init(&co);
    const char *table = NULL, *output = "text";
    fl_rewrite_opts_t o;
    memset(&o, 0, sizeof o);
    for (int i = 1; i < argc; i++) {
        int r = fl_catalog_opts_arg(&co, prog, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!strcmp(a, "--manifests-only")) { o.skip_data = true; continue; }
        bool valued = !strcmp(a, "--target-file-size-mb") || !strcmp(a, "--min-input-files") ||
                      !strcmp(a, "--max-commit-mb") || !strcmp(a, "--merge-manifests") || !strcmp(a, "--output");
        if (valued && i + 1 >= argc) { fprintf(stderr, "%s: %s needs a value\n", prog, a); return 2; }
        long long v = 0;
        if (!strcmp(a, "--output")) {
            output = argv[++i];
            if (strcmp(output, "text") && strcmp(output, "json")) { fprintf(stderr, "%s: --output text|json\n", prog); return 2; }
        } else if (valued) {
            if (parse_pos(prog, a, argv[++i], &v)) return 2;
            if (!strcmp(a, "--target-file-size-mb")) o.target_file_bytes = v * 1024 * 1024;
            else if (!strcmp(a, "--min-input-files")) o.min_input_files = (int)v;
            else if (!strcmp(a, "--max-commit-mb")) o.max_commit_bytes = v * 1024 * 1024;
            else o.merge_manifests_min = (int)v;
        } else if (a[0] == '-' || table) {
            fprintf(stderr, "%s: unexpected argument '%s'\n", prog, a);
            usage(stderr);
            return 2;
        } else {
            table = a;
        }
    }
    if (!table) { usage(stderr); return 2; }
    fl_cli_table_t t;
    memset(&t, 0, sizeof t);
    int rc = fl_cli_table_open(&t, &co, prog, table);
    if (rc) { fl_cli_table_close(&t); return rc; }
    char err[1024] = "";
    fl_rewrite_result_t r;
    fl_err_t e = fl_rewrite_run(&t.ops, &o, &r, err, sizeof err);
    double secs = r.duration_ms > 0 ? r.duration_ms / 1000.0 : 0.001;
    double mbps = r.bytes_in / 1048576.0 / secs, fps = r.files_in / secs;
    if (!strcmp(output, "json")) {
        printf("{\"files-in\":%" PRId64 ",\"bytes-in\":%" PRId64 ",\"records-in\":%" PRId64 ",\"files-out\":%" PRId64
               ",\"bytes-out\":%" PRId64 ",\"records-out\":%" PRId64 ",\"delete-files-removed\":%" PRId64
               ",\"groups-planned\":%d,\"groups-committed\":%d,\"groups-failed\":%d,\"groups-skipped\":%d"
               ",\"commits\":%d,\"commit-attempts\":%d,\"manifests-replaced\":%d,\"manifests-created\":%d"
               ",\"duration-ms\":%" PRId64 ",\"mb-per-s\":%.2f,\"files-per-s\":%.1f}\n",
               r.files_in, r.bytes_in, r.records_in, r.files_out, r.bytes_out, r.records_out, r.delete_files_removed,
               r.groups_planned, r.groups_committed, r.groups_failed, r.groups_skipped, r.commits, r.commit_attempts,
               r.manifests_replaced, r.manifests_created, r.duration_ms, mbps, fps);
    } else {
        printf("compacted %s: %" PRId64 " files (%" PRId64 " bytes, %" PRId64 " rows) -> %" PRId64 " files (%" PRId64
               " bytes, %" PRId64 " rows); %" PRId64 " delete files removed; %d/%d groups committed in %d commits"
               "%s%s; %d manifests merged into %d; %.2f s, %.1f MB/s, %.1f files/s\n",
               table, r.files_in, r.bytes_in, r.records_in, r.files_out, r.bytes_out, r.records_out,
               r.delete_files_removed, r.groups_committed, r.groups_planned, r.commits,
               r.groups_failed || r.groups_skipped ? "; last failure: " : "",
               r.groups_failed || r.groups_skipped ? r.last_failure : "", r.manifests_replaced, r.manifests_created,
               secs, mbps, fps);
    }
    if (e) {
        fprintf(stderr, "%s: %s\n", prog, err);
        rc = 1;
    } else {
        rc = r.groups_failed ? 3 : 0;
    }
    fl_cli_table_close(&t);
    return rc;
}
