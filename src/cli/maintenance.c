/* floe maintenance run NS.TABLE --job JOB: runs a table maintenance job now, from the client
 * side through the table's REST catalog and its storage (the same iceberg/ code the
 * scheduler inside `floe serve` runs in-process).
 * floe maintenance status|history NS.TABLE: what the server's scheduler did, read from the
 * S3 Tables API of the catalog's server (GetTableMaintenanceJobStatus, as `aws s3tables
 * get-table-maintenance-job-status` shows it; floe's GetTableMaintenanceJobHistory extension,
 * docs/catalog.md), signed with the catalog options' keys.
 *
 *   floe maintenance run NS.TABLE --job compaction|snapshots|unreferenced|all [--as-of TIMESTAMP]
 *        [--min-snapshots-to-keep N] [--max-snapshot-age-hours H]
 *        [--unreferenced-days N] [--noncurrent-days N] [--dry-run]
 *        [--output text|json] [catalog options]
 *   floe maintenance restore NS.TABLE (--all | KEY...) [--dry-run] [--output text|json]
 *        [catalog options]
 * Progress lines go to stderr, the summary to stdout (one JSON object per job with
 * --output json). Exit 0 when every job ended Successful or Disabled (restore: every key
 * restored), 1 if one failed, 2 for bad usage. A job is one row of the jobs table below. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/time.h"
#include "cli/catalog_opts.h"
#include "cli/cli.h"
#include "iceberg/expire.h"
#include "iceberg/orphans.h"
#include "iceberg/rewrite.h"
#include "net/httpc.h"

#define PROG "floe maintenance"

typedef struct maint_opts {
    int64_t as_of_ms;                 /* 0 = now */
    int32_t min_snapshots_to_keep;    /* 0 = job default */
    int64_t max_snapshot_age_hours;   /* 0 = job default */
    int32_t unreferenced_days;        /* 0 = job default (3) */
    int32_t noncurrent_days;          /* 0 = job default (10) */
    bool dry_run;
    bool json;
    fl_rewrite_opts_t compaction;     /* --target-file-size-mb, --min-input-files, --max-commit-mb,
                                         --merge-manifests, --manifests-only */
} maint_opts_t;

static const char *const status_names[] = { "Successful", "Failed", "Disabled" };

static void progress_line(void *arg, const char *line)
{
    fprintf(stderr, PROG ": %s: %s\n", (const char *)arg, line);
}

/* --job snapshots: iceberg/expire over the table's REST ops. */
static int job_snapshots(fl_cli_table_t *t, const maint_opts_t *mo, json_t **report)
{
    fl_expire_opts_t o = {
        .as_of_ms = mo->as_of_ms,
        .min_snapshots_to_keep = mo->min_snapshots_to_keep,
        .max_snapshot_age_ms = mo->max_snapshot_age_hours * 3600 * 1000,
        .dry_run = mo->dry_run,
        .progress = progress_line,
        .progress_arg = "snapshots",
    };
    fl_expire_result_t r;
    fl_err_t e = fl_expire_snapshots(&t->ops, &o, &r);
    json_t *files = json_object(), *bytes = json_object(), *ids = json_array();
    for (int k = 0; k < FL_EXPIRE_KINDS; k++) {
        json_object_set_new(files, fl_expire_kind_name(k), json_integer(r.files[k]));
        json_object_set_new(bytes, fl_expire_kind_name(k), json_integer(r.bytes[k]));
    }
    for (size_t i = 0; i < r.n_removed; i++) json_array_append_new(ids, json_integer(r.removed[i]));
    *report = json_pack("{s:s,s:s,s:s,s:b,s:b,s:i,s:I,s:I,s:I,s:o,s:o,s:o,s:I,s:s,s:I}",
                        "job", "icebergSnapshotManagement", "status", status_names[r.status],
                        "failureMessage", r.message, "dryRun", mo->dry_run, "committed", r.committed,
                        "attempts", r.attempts, "snapshotsBefore", (json_int_t)r.snapshots_before,
                        "snapshotsRemoved", (json_int_t)r.snapshots_removed, "refsRemoved",
                        (json_int_t)r.refs_removed, "removedSnapshotIds", ids, "filesDeleted", files,
                        "bytesDeleted", bytes, "deleteErrors", (json_int_t)r.delete_errors, "deleteError",
                        r.delete_error, "durationMs", (json_int_t)r.duration_ms);
    fl_expire_result_free(&r);
    return e ? 1 : 0;
}

/* --job compaction: iceberg/rewrite (bin-pack small files per partition and spec,
 * apply and drop deletes, merge small manifests) over the table's REST ops.
 * Groups that failed validation against concurrent commits stay for the next
 * run: the job is still Successful, with groupsFailed and the last failure. */
static int job_compaction(fl_cli_table_t *t, const maint_opts_t *mo, json_t **report)
{
    char err[1024] = "";
    fl_rewrite_result_t r;
    fl_err_t e = fl_rewrite_run(&t->ops, &mo->compaction, &r, err, sizeof err);
    double secs = r.duration_ms > 0 ? r.duration_ms / 1000.0 : 0.001;
    const char *msg = e ? err : r.groups_failed || r.groups_skipped ? r.last_failure : "";
    *report = json_pack("{s:s,s:s,s:s,s:i,s:s,s:I,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:I,s:f,s:f}",
                        "job", "icebergCompaction", "status", e ? "Failed" : "Successful", "failureMessage", msg,
                        "sortOrderId", (int)r.sort_order_id, "note", r.note, "sortedRuns", (json_int_t)r.sorted_runs,
                        "strategy", fl_rewrite_strategy_name(r.strategy), "strategyAsked",
                        fl_rewrite_strategy_name(mo->compaction.strategy),
                        "filesIn", (json_int_t)r.files_in, "bytesIn", (json_int_t)r.bytes_in,
                        "recordsIn", (json_int_t)r.records_in, "filesOut", (json_int_t)r.files_out,
                        "bytesOut", (json_int_t)r.bytes_out, "recordsOut", (json_int_t)r.records_out,
                        "deleteFilesRemoved", (json_int_t)r.delete_files_removed, "groupsPlanned", r.groups_planned,
                        "groupsCommitted", r.groups_committed, "groupsFailed", r.groups_failed,
                        "groupsSkipped", r.groups_skipped, "commits", r.commits, "attempts", r.commit_attempts,
                        "manifestsReplaced", r.manifests_replaced, "manifestsCreated", r.manifests_created,
                        "durationMs", (json_int_t)r.duration_ms, "mbPerS", r.bytes_in / 1048576.0 / secs,
                        "filesPerS", r.files_in / secs);
    return e ? 1 : 0;
}

/* The counts of an unreferenced-file removal or restore run. */
static json_t *orphans_report(const char *job, const fl_orphans_result_t *r, bool dry_run)
{
    return json_pack("{s:s,s:s,s:s,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:I}",
                     "job", job, "status", status_names[r->status], "failureMessage", r->message,
                     "dryRun", dry_run, "objectsListed", (json_int_t)r->listed,
                     "bytesListed", (json_int_t)r->listed_bytes, "referenced", (json_int_t)r->referenced,
                     "young", (json_int_t)r->young, "youngBytes", (json_int_t)r->young_bytes,
                     "inDoubt", (json_int_t)r->in_doubt, "markedNoncurrent", (json_int_t)r->marked,
                     "bytesMarkedNoncurrent", (json_int_t)r->marked_bytes,
                     "noncurrentKept", (json_int_t)r->noncurrent, "bytesNoncurrentKept", (json_int_t)r->noncurrent_bytes,
                     "deleted", (json_int_t)r->deleted, "bytesDeleted", (json_int_t)r->deleted_bytes,
                     "restored", (json_int_t)r->restored, "bytesRestored", (json_int_t)r->restored_bytes,
                     "errors", (json_int_t)r->errors, "error", r->error, "durationMs", (json_int_t)r->duration_ms);
}

/* --job unreferenced: iceberg/orphans (two-phase unreferenced-file removal) over the table's
 * REST ops; noncurrent objects go under <location>/.noncurrent/ on the data plane. */
static int job_unreferenced(fl_cli_table_t *t, const maint_opts_t *mo, json_t **report)
{
    fl_orphans_opts_t o = {
        .as_of_ms = mo->as_of_ms,
        .unreferenced_days = mo->unreferenced_days,
        .noncurrent_days = mo->noncurrent_days,
        .dry_run = mo->dry_run,
        .progress = progress_line,
        .progress_arg = "unreferenced",
    };
    fl_orphans_result_t r;
    fl_err_t e = fl_orphans_run(&t->ops, &o, &r);
    *report = orphans_report("icebergUnreferencedFileRemoval", &r, mo->dry_run);
    return e ? 1 : 0;
}

/* The jobs `run` knows, in the order --job all runs them. Adding a job is one row. */
static const struct {
    const char *name;
    int (*run)(fl_cli_table_t *t, const maint_opts_t *o, json_t **report);
} jobs[] = {
    { "compaction", job_compaction },
    { "snapshots", job_snapshots },
    { "unreferenced", job_unreferenced },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: floe maintenance status NAMESPACE.TABLE [--output text|json] [catalog options]\n"
               "       floe maintenance history NAMESPACE.TABLE [--max-runs N] [--output text|json] [catalog options]\n"
               "       floe maintenance run NAMESPACE.TABLE --job JOB [--as-of TIMESTAMP]\n"
               "           [--min-snapshots-to-keep N] [--max-snapshot-age-hours H]\n"
               "           [--unreferenced-days N] [--noncurrent-days N] [--dry-run]\n"
               "           [--output text|json] [catalog options]\n"
               "       floe maintenance restore NAMESPACE.TABLE (--all | KEY...) [--dry-run]\n"
               "           [--output text|json] [catalog options]\n\n"
               "status: the job status floe serve reports (GetTableMaintenanceJobStatus);\n"
               "history: the runs its maintenance scheduler recorded, newest first;\n"
               "run: runs a table maintenance job now through the table's REST catalog;\n"
               "restore: moves noncurrent objects (hidden by --job unreferenced) back; KEY is the\n"
               "  object's original location, its path under the table location, or its noncurrent location.\n"
               "  --job JOB        ");
    for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++) fprintf(f, "%s|", jobs[i].name);
    fprintf(f, "all\n"
               "  --as-of T        evaluate every age as of T (ISO 8601 UTC, e.g. 2030-01-01T00:00:00Z,\n"
               "                   or milliseconds since the epoch); default now\n"
               "  --min-snapshots-to-keep N   (snapshots; default 1, or the table's own retention)\n"
               "  --max-snapshot-age-hours H  (snapshots; default 120)\n"
               "  --unreferenced-days N       (unreferenced; unreferenced objects older than N days become\n"
               "                              noncurrent under <location>/.noncurrent/; default 3)\n"
               "  --noncurrent-days N         (unreferenced; noncurrent objects are deleted after N days; default 10)\n"
               "  --dry-run        (snapshots, unreferenced, restore) plan and count; change nothing\n"
               "  --strategy S                (compaction; binpack|sort|z-order|auto, default auto: sort when the\n"
               "                              table has a sort order, else binpack; sort and z-order bin-pack a\n"
               "                              table without one)\n"
               "  --target-file-size-mb N     (compaction; default the table's write.target-file-size-bytes)\n"
               "  --min-input-files N         (compaction; small files a group needs, default 2)\n"
               "  --max-commit-mb N           (compaction; bytes rewritten per commit)\n"
               "  --merge-manifests N         (compaction; merge a spec's small manifests when more than N)\n"
               "  --manifests-only            (compaction; only merge manifests)\n\n");
    fl_catalog_opts_usage(f);
}

/* ISO 8601 UTC (date, or date and time with optional fraction and Z) or epoch ms; -1 if bad. */
static int64_t parse_time(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!errno && end != s && !*end && v > 0) return v;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int n = 0, ms = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &n) != 3) return -1;
    const char *p = s + n;
    if (*p == 'T' || *p == ' ') {
        int m = 0;
        if (sscanf(p + 1, "%2d:%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &m) != 3) return -1;
        p += 1 + m;
        if (*p == '.') {
            int digits = 0;
            for (p++; *p >= '0' && *p <= '9'; p++, digits++)
                if (digits < 3) ms = ms * 10 + (*p - '0');
            while (digits > 0 && digits < 3) ms *= 10, digits++;
        }
        if (*p == 'Z') p++;
    }
    if (*p) return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    return t < 0 ? -1 : (int64_t)t * 1000 + ms;
}

static void print_text(json_t *rep)
{
    const char *st = json_string_value(json_object_get(rep, "status"));
    printf("%s: %s", json_string_value(json_object_get(rep, "job")), st);
    const char *msg = json_string_value(json_object_get(rep, "failureMessage"));
    if (msg && *msg) printf(" (%s)", msg);
    const char *job = json_string_value(json_object_get(rep, "job"));
    if (!strcmp(job, "icebergUnreferencedFileRemoval") || !strcmp(job, "restore")) {
#define I(k) json_integer_value(json_object_get(rep, k))
        const char *would = json_is_true(json_object_get(rep, "dryRun")) ? "would be " : "";
        if (!strcmp(job, "restore"))
            printf("\n  %" JSON_INTEGER_FORMAT " objects (%" JSON_INTEGER_FORMAT " B) %srestored\n", I("restored"),
                   I("bytesRestored"), would);
        else
            printf("\n  %" JSON_INTEGER_FORMAT " objects listed (%" JSON_INTEGER_FORMAT " B), %" JSON_INTEGER_FORMAT
                   " files referenced; %" JSON_INTEGER_FORMAT " objects (%" JSON_INTEGER_FORMAT " B) %smarked noncurrent; %"
                   JSON_INTEGER_FORMAT " noncurrent objects (%" JSON_INTEGER_FORMAT " B) %sdeleted; %" JSON_INTEGER_FORMAT
                   " (%" JSON_INTEGER_FORMAT " B) %srestored; %" JSON_INTEGER_FORMAT
                   " unreferenced but young, %" JSON_INTEGER_FORMAT " noncurrent kept, %" JSON_INTEGER_FORMAT
                   " left in doubt\n",
                   I("objectsListed"), I("bytesListed"), I("referenced"), I("markedNoncurrent"),
                   I("bytesMarkedNoncurrent"), would, I("deleted"), I("bytesDeleted"), would, I("restored"),
                   I("bytesRestored"), would, I("young"), I("noncurrentKept"), I("inDoubt"));
        if (I("errors"))
            printf("  errors: %" JSON_INTEGER_FORMAT " (first: %s)\n", I("errors"),
                   json_string_value(json_object_get(rep, "error")));
#undef I
        return;
    }
    if (!strcmp(job, "icebergCompaction")) {
#define I(k) json_integer_value(json_object_get(rep, k))
        printf("\n  %" JSON_INTEGER_FORMAT " files (%" JSON_INTEGER_FORMAT " B, %" JSON_INTEGER_FORMAT " rows) -> %"
               JSON_INTEGER_FORMAT " files (%" JSON_INTEGER_FORMAT " B, %" JSON_INTEGER_FORMAT " rows); %"
               JSON_INTEGER_FORMAT " delete files removed; %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT
               " groups committed in %" JSON_INTEGER_FORMAT " commits; %" JSON_INTEGER_FORMAT
               " manifests merged into %" JSON_INTEGER_FORMAT "; %.1f MB/s, %.1f files/s\n",
               I("filesIn"), I("bytesIn"), I("recordsIn"), I("filesOut"), I("bytesOut"), I("recordsOut"),
               I("deleteFilesRemoved"), I("groupsCommitted"), I("groupsPlanned"), I("commits"),
               I("manifestsReplaced"), I("manifestsCreated"), json_real_value(json_object_get(rep, "mbPerS")),
               json_real_value(json_object_get(rep, "filesPerS")));
#undef I
        return;
    }
    printf("\n  snapshots: %" JSON_INTEGER_FORMAT " before, %" JSON_INTEGER_FORMAT " %sremoved; refs removed: %"
           JSON_INTEGER_FORMAT "; commits sent: %" JSON_INTEGER_FORMAT "\n",
           json_integer_value(json_object_get(rep, "snapshotsBefore")),
           json_integer_value(json_object_get(rep, "snapshotsRemoved")),
           json_is_true(json_object_get(rep, "dryRun")) ? "would be " : "",
           json_integer_value(json_object_get(rep, "refsRemoved")), json_integer_value(json_object_get(rep, "attempts")));
    json_t *files = json_object_get(rep, "filesDeleted"), *bytes = json_object_get(rep, "bytesDeleted"), *v;
    const char *k;
    printf("  files %sdeleted:", json_is_true(json_object_get(rep, "dryRun")) ? "to be " : "");
    json_object_foreach(files, k, v)
        printf(" %s %" JSON_INTEGER_FORMAT " (%" JSON_INTEGER_FORMAT " B)", k, json_integer_value(v),
               json_integer_value(json_object_get(bytes, k)));
    printf("\n");
    if (json_integer_value(json_object_get(rep, "deleteErrors")))
        printf("  delete errors: %" JSON_INTEGER_FORMAT " (first: %s)\n",
               json_integer_value(json_object_get(rep, "deleteErrors")),
               json_string_value(json_object_get(rep, "deleteError")));
}

static int cmd_run(int argc, char **argv)
{
    fl_catalog_opts_t co;
    fl_catalog_opts_init(&co);
    maint_opts_t mo = { 0 };
    mo.compaction.strategy = FL_REWRITE_AUTO; /* S3 Tables' default */
    const char *table = NULL, *job = NULL;
    for (int i = 1; i < argc; i++) {
        int r = fl_catalog_opts_arg(&co, PROG, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!strcmp(a, "--dry-run")) { mo.dry_run = true; continue; }
        if (!strcmp(a, "--manifests-only")) { mo.compaction.skip_data = true; continue; }
        bool sized = !strcmp(a, "--target-file-size-mb") || !strcmp(a, "--min-input-files") ||
                     !strcmp(a, "--max-commit-mb") || !strcmp(a, "--merge-manifests");
        bool days = !strcmp(a, "--unreferenced-days") || !strcmp(a, "--noncurrent-days");
        bool valued = sized || days || !strcmp(a, "--job") || !strcmp(a, "--as-of") || !strcmp(a, "--strategy") ||
                      !strcmp(a, "--min-snapshots-to-keep") || !strcmp(a, "--max-snapshot-age-hours") ||
                      !strcmp(a, "--output");
        if (valued && i + 1 >= argc) { fprintf(stderr, PROG ": %s needs a value\n", a); return 2; }
        if (sized) {
            char *end;
            errno = 0;
            long long v = strtoll(argv[++i], &end, 10);
            if (errno || *end || v < 1 || v > INT32_MAX) {
                fprintf(stderr, PROG ": %s wants an integer of at least 1\n", a);
                return 2;
            }
            if (!strcmp(a, "--target-file-size-mb")) mo.compaction.target_file_bytes = v * 1024 * 1024;
            else if (!strcmp(a, "--min-input-files")) mo.compaction.min_input_files = (int)v;
            else if (!strcmp(a, "--max-commit-mb")) mo.compaction.max_commit_bytes = v * 1024 * 1024;
            else mo.compaction.merge_manifests_min = (int)v;
        } else if (!strcmp(a, "--job")) {
            job = argv[++i];
        } else if (!strcmp(a, "--strategy")) {
            if (fl_rewrite_strategy_parse(argv[++i], &mo.compaction.strategy)) {
                fprintf(stderr, PROG ": --strategy wants binpack, sort, z-order or auto\n");
                return 2;
            }
        } else if (!strcmp(a, "--as-of")) {
            if ((mo.as_of_ms = parse_time(argv[++i])) <= 0) {
                fprintf(stderr, PROG ": --as-of wants an ISO 8601 UTC time or epoch milliseconds\n");
                return 2;
            }
        } else if (days) {
            char *end;
            errno = 0;
            long long v = strtoll(argv[++i], &end, 10);
            if (errno || *end || v < 1 || v > 100000) {
                fprintf(stderr, PROG ": %s wants a number of days of at least 1\n", a);
                return 2;
            }
            if (!strcmp(a, "--unreferenced-days")) mo.unreferenced_days = (int32_t)v;
            else mo.noncurrent_days = (int32_t)v;
        } else if (!strcmp(a, "--min-snapshots-to-keep") || !strcmp(a, "--max-snapshot-age-hours")) {
            char *end;
            errno = 0;
            long long v = strtoll(argv[++i], &end, 10);
            if (errno || *end || v < 1 || v > INT32_MAX) {
                fprintf(stderr, PROG ": %s wants an integer of at least 1\n", a);
                return 2;
            }
            if (!strcmp(a, "--min-snapshots-to-keep")) mo.min_snapshots_to_keep = (int32_t)v;
            else mo.max_snapshot_age_hours = v;
        } else if (!strcmp(a, "--output")) {
            const char *out = argv[++i];
            if (strcmp(out, "text") && strcmp(out, "json")) { fprintf(stderr, PROG ": --output must be text or json\n"); return 2; }
            mo.json = !strcmp(out, "json");
        } else if (a[0] == '-' || table) {
            fprintf(stderr, PROG ": unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            table = a;
        }
    }
    if (!table || !job) {
        usage(stderr);
        return 2;
    }
    size_t njobs = sizeof jobs / sizeof jobs[0], first = 0, last = njobs;
    if (strcmp(job, "all")) {
        for (first = 0; first < njobs && strcmp(jobs[first].name, job); first++) {}
        if (first == njobs) {
            fprintf(stderr, PROG ": unknown job '%s'\n", job);
            usage(stderr);
            return 2;
        }
        last = first + 1;
    }
    fl_cli_table_t t;
    int rc = fl_cli_table_open(&t, &co, PROG, table);
    if (rc) goto out;
    for (size_t j = first; j < last; j++) {
        json_t *rep = NULL;
        fprintf(stderr, PROG ": %s: running on %s%s\n", jobs[j].name, table, mo.dry_run ? " (dry run)" : "");
        if (jobs[j].run(&t, &mo, &rep)) rc = 1;
        if (rep) {
            json_object_set_new(rep, "table", json_string(table));
            if (mo.json) {
                char *s = json_dumps(rep, JSON_COMPACT);
                if (s) printf("%s\n", s);
                free(s);
            } else {
                print_text(rep);
            }
        }
        json_decref(rep);
    }
out:
    fl_cli_table_close(&t);
    return rc;
}

/* ---- status and history: the server's record, through the S3 Tables API ---- */

/* GET {catalog base}/tables/{warehouse}/{ns}/{name}/{what}[?query], signed; *out the JSON body. */
static int tables_get(const fl_catalog_opts_t *co, const char *table, const char *what, const char *query,
                      json_t **out)
{
    *out = NULL;
    const char *dot = strchr(table, '.');
    if (!dot || dot == table || !dot[1]) {
        fprintf(stderr, PROG ": '%s' is not NAMESPACE.TABLE\n", table);
        return 2;
    }
    if (!co->warehouse) {
        fprintf(stderr, PROG ": --warehouse (the table bucket ARN) is needed\n");
        return 2;
    }
    if (!co->akid || !co->secret) {
        fprintf(stderr, PROG ": the S3 Tables API wants keys (FLOE_ACCESS_KEY_ID / FLOE_SECRET_ACCESS_KEY)\n");
        return 2;
    }
    /* the S3 Tables API sits beside the REST catalog: the catalog URI without "/iceberg" */
    fl_buf_t url, resp;
    fl_buf_init(&url, 0);
    fl_buf_init(&resp, 16 * 1024 * 1024);
    size_t base = strlen(co->uri);
    while (base && co->uri[base - 1] == '/') base--;
    if (base >= 8 && !strncmp(co->uri + base - 8, "/iceberg", 8)) base -= 8;
    fl_buf_add(&url, co->uri, base);
    fl_buf_adds(&url, "/tables/");
    fl_uri_encode(fl_slice_cstr(co->warehouse), false, &url);
    fl_buf_addc(&url, '/');
    fl_uri_encode(fl_slice(table, (size_t)(dot - table)), false, &url);
    fl_buf_addc(&url, '/');
    fl_uri_encode(fl_slice_cstr(dot + 1), false, &url);
    fl_buf_printf(&url, "/%s", what);
    fl_httpc_sigv4_t sig = { .akid = co->akid, .secret = co->secret, .session_token = co->session_token,
                             .region = co->region ? co->region : "us-east-1",
                             .service = co->signing_name ? co->signing_name : "s3tables" };
    fl_httpc_req_t hr = { .method = "GET", .url = url.ptr, .query = query, .body_fd = -1, .sigv4 = &sig,
                          .idempotent = true, .resp = &resp };
    fl_httpc_cfg_t hc = { .timeout_ms = 60000 };
    fl_httpc_t *client = fl_httpc_new(&hc);
    fl_httpc_resp_t hresp;
    fl_remote_error_t rerr;
    memset(&rerr, 0, sizeof rerr);
    fl_err_t e = fl_httpc_do(client, &hr, &hresp, &rerr);
    fl_httpc_free(client);
    int rc = 1;
    if (e) fprintf(stderr, PROG ": %s: %s\n", url.ptr, rerr.message);
    else if (hresp.status >= 300) fprintf(stderr, PROG ": %s: HTTP %ld: %s\n", what, hresp.status, rerr.message);
    else if (!(*out = json_loadb(resp.ptr ? resp.ptr : "", resp.len, 0, NULL)))
        fprintf(stderr, PROG ": %s: the answer is not JSON\n", what);
    else rc = 0;
    fl_buf_free(&url);
    fl_buf_free(&resp);
    return rc;
}

static int cmd_record(int argc, char **argv, bool history)
{
    fl_catalog_opts_t co;
    fl_catalog_opts_init(&co);
    const char *table = NULL, *max = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        int r = fl_catalog_opts_arg(&co, PROG, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if ((!strcmp(a, "--output") || (history && !strcmp(a, "--max-runs"))) && i + 1 < argc) {
            if (!strcmp(a, "--max-runs")) max = argv[++i];
            else if (!strcmp(argv[++i], "json")) json = true;
            else if (strcmp(argv[i], "text")) { fprintf(stderr, PROG ": --output must be text or json\n"); return 2; }
        } else if (a[0] == '-' || table) {
            fprintf(stderr, PROG ": unexpected argument '%s'\n", a);
            return 2;
        } else {
            table = a;
        }
    }
    if (!table) { usage(stderr); return 2; }
    char query[64] = "";
    if (max) {
        char *end;
        long v = strtol(max, &end, 10);
        if (*end || v < 1 || v > 1000) { fprintf(stderr, PROG ": --max-runs wants 1-1000\n"); return 2; }
        snprintf(query, sizeof query, "maxRuns=%ld", v);
    }
    json_t *doc = NULL;
    int rc = tables_get(&co, table, history ? "maintenance-job-history" : "maintenance-job-status",
                        query[0] ? query : NULL, &doc);
    if (rc) return rc;
    if (json) {
        char *s = json_dumps(doc, JSON_INDENT(2));
        if (s) printf("%s\n", s);
        free(s);
    } else if (!history) {
        const char *type;
        json_t *v;
        json_object_foreach(json_object_get(doc, "status"), type, v) {
            printf("%-32s %-12s", type, json_string_value(json_object_get(v, "status")));
            json_t *ts = json_object_get(v, "lastRunTimestamp");
            if (json_is_string(ts)) printf(" last run %s", json_string_value(ts));
            json_t *fm = json_object_get(v, "failureMessage");
            if (json_is_string(fm)) printf(" (%s)", json_string_value(fm));
            printf("\n");
        }
    } else {
        size_t i;
        json_t *r;
        printf("%-24s %-30s %-10s %8s %8s %6s %8s  %s\n", "start", "type", "status", "files in", "out", "snaps",
               "objects", "message");
        json_array_foreach(json_object_get(doc, "runs"), i, r) {
#define I(k) (long long)json_integer_value(json_object_get(r, k))
            const char *msg = json_string_value(json_object_get(r, "message"));
            printf("%-24s %-30s %-10s %8lld %8lld %6lld %8lld  %s\n",
                   json_string_value(json_object_get(r, "startTime")), json_string_value(json_object_get(r, "type")),
                   json_string_value(json_object_get(r, "status")), I("filesIn"), I("filesOut"),
                   I("snapshotsRemoved"), I("objectsRemoved"), msg ? msg : "");
#undef I
        }
    }
    json_decref(doc);
    return 0;
}

/* floe maintenance restore NS.TABLE (--all | KEY...) */
static int cmd_restore(int argc, char **argv)
{
    fl_catalog_opts_t co;
    fl_catalog_opts_init(&co);
    const char *table = NULL;
    bool all = false, dry_run = false, json_out = false;
    const char **keys = calloc((size_t)argc + 1, sizeof *keys);
    size_t n_keys = 0;
    int rc = 2;
    for (int i = 1; i < argc; i++) {
        int r = fl_catalog_opts_arg(&co, PROG, argc, argv, &i);
        if (r < 0) goto done;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); rc = 0; goto done; }
        if (!strcmp(a, "--all")) { all = true; continue; }
        if (!strcmp(a, "--dry-run")) { dry_run = true; continue; }
        if (!strcmp(a, "--output")) {
            if (i + 1 >= argc || (strcmp(argv[i + 1], "text") && strcmp(argv[i + 1], "json"))) {
                fprintf(stderr, PROG ": --output must be text or json\n");
                goto done;
            }
            json_out = !strcmp(argv[++i], "json");
            continue;
        }
        if (a[0] == '-') {
            fprintf(stderr, PROG ": unexpected argument '%s'\n", a);
            usage(stderr);
            goto done;
        }
        if (!table) table = a;
        else keys[n_keys++] = a;
    }
    if (!table || (all == (n_keys > 0))) {
        fprintf(stderr, PROG ": restore wants a table and either --all or the keys to restore\n");
        usage(stderr);
        goto done;
    }
    fl_cli_table_t t;
    rc = fl_cli_table_open(&t, &co, PROG, table);
    if (!rc) {
        fl_orphans_result_t r;
        fprintf(stderr, PROG ": restore: %s%s\n", table, dry_run ? " (dry run)" : "");
        if (fl_orphans_restore(&t.ops, keys, n_keys, dry_run, &r)) rc = 1;
        json_t *rep = orphans_report("restore", &r, dry_run);
        json_object_set_new(rep, "table", json_string(table));
        if (json_out) {
            char *s = json_dumps(rep, JSON_COMPACT);
            if (s) printf("%s\n", s);
            free(s);
        } else {
            print_text(rep);
        }
        json_decref(rep);
    }
    fl_cli_table_close(&t);
done:
    free(keys);
    return rc;
}

int fl_cmd_maintenance(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(argv[1], "status")) return cmd_record(argc - 1, argv + 1, false);
    if (!strcmp(argv[1], "history")) return cmd_record(argc - 1, argv + 1, true);
    if (!strcmp(argv[1], "restore")) return cmd_restore(argc - 1, argv + 1);
    fprintf(stderr, PROG ": unknown subcommand '%s'\n", argv[1]);
    return 2;
}
