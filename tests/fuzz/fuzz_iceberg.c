/* Fuzz target: Iceberg metadata model. The input is up to three JSON documents separated by
 * lines of "%%": base metadata, updates, requirements. The base is also tried as a create
 * table / create view request and as an S3 Tables schema. Every successful commit must give
 * metadata that passes fl_iceberg_validate_metadata (else abort), and the same updates are
 * applied once more to the result. Nothing may crash or leak. */
#include "iceberg/metadata.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static json_t *part(const char *p, size_t n)
{
    return n ? json_loadb(p, n, JSON_DECODE_ANY, NULL) : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data, *end = s + size;
    const char *cut[3] = { s, end, end };
    size_t len[3] = { size, 0, 0 };
    int k = 0;
    for (const char *p = s; k < 2 && p + 4 <= end; p++)
        if (!memcmp(p, "\n%%\n", 4)) {
            len[k] = (size_t)(p - cut[k]);
            cut[++k] = p + 4;
            len[k] = (size_t)(end - cut[k]);
            p += 3;
        }
    json_t *base = part(cut[0], len[0]), *ups = part(cut[1], len[1]), *reqs = part(cut[2], len[2]);
    char err[256];
    int st;

    fl_iceberg_check_requirements(base, reqs, err, sizeof err);
    fl_iceberg_check_requirements(NULL, reqs, err, sizeof err);
    fl_iceberg_check_requirements(base, ups, err, sizeof err);
    fl_iceberg_validate_metadata(base, err, sizeof err);
    fl_iceberg_next_file_seq(base);
    fl_iceberg_current_snapshot_id(base);

    json_t *r = fl_iceberg_apply_updates(base, ups, "s3://b/t/metadata/00003-x.metadata.json", &st, err, sizeof err);
    if (r) {
        if (fl_iceberg_validate_metadata(r, err, sizeof err)) abort();
        fl_iceberg_metadata_unchanged(base, r);
        fl_iceberg_check_requirements(r, reqs, err, sizeof err);
        json_t *r2 = fl_iceberg_apply_updates(r, ups, NULL, &st, err, sizeof err);
        if (r2 && fl_iceberg_validate_metadata(r2, err, sizeof err)) abort();
        json_decref(r2);
        json_decref(r);
    } else if (st != 400 && st != 409 && st != 500) {
        abort();
    }
    json_decref(fl_iceberg_apply_view_updates(base, ups, NULL, &st, err, sizeof err));

    json_t *md = fl_iceberg_new_metadata(base, "s3://b/ns/t", &st, err, sizeof err);
    if (md) {
        if (fl_iceberg_validate_metadata(md, err, sizeof err)) abort();
        json_t *r3 = fl_iceberg_apply_updates(md, ups, NULL, &st, err, sizeof err);
        if (r3 && fl_iceberg_validate_metadata(r3, err, sizeof err)) abort();
        json_decref(r3);
        json_decref(md);
    }
    json_t *v = fl_iceberg_new_view_metadata(base, "s3://b/ns/v", &st, err, sizeof err);
    if (v) json_decref(fl_iceberg_apply_view_updates(v, ups, NULL, &st, err, sizeof err));
    json_decref(v);
    json_decref(fl_iceberg_schema_from_s3tables(base, err, sizeof err));
    json_decref(fl_iceberg_schema_from_s3tables(ups, err, sizeof err));

    json_decref(base);
    json_decref(ups);
    json_decref(reqs);
    return 0;
}
