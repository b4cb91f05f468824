/* Table service: warehouses on the data plane and metadata files.
 *
 * A table's warehouse is a bucket of floe's own object store named
 * "{table id}--table-s3" (the suffix S3 Tables reserves), so engines write
 * data and metadata through the ordinary S3 data plane. Metadata files are
 * written with If-None-Match semantics (never overwritten) and are durable
 * (fsynced, index committed) before any catalog pointer names them. */
#include "catalog/tablesvc_int.h"
#include "base/buf.h"
#include "base/checksum.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "base/uuid.h"
#include "iceberg/io.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define WAREHOUSE_SUFFIX "--table-s3"
#define FL_TABLES_PURGE_ROUNDS 20 /* empty-and-delete attempts while commits still land */

/* s3://bucket/key (or oss://) -> bucket (64) and key pointer into location. */
static bool split_location(const char *loc, char *bucket, const char **key)
{
    const char *b = fl_io_s3_rest(loc), *slash = b ? strchr(b, '/') : NULL;
    if (!b) return false;
    if (!slash || slash == b || (size_t)(slash - b) > 63 || !slash[1]) return false;
    memcpy(bucket, b, (size_t)(slash - b));
    bucket[slash - b] = 0;
    *key = slash + 1;
    return true;
}

/* The warehouse bucket of a table: "s3://NAME" -> NAME (64 bytes). */
static bool warehouse_bucket(const fl_table_t *t, char *wb)
{
    const char *p = t->warehouse;
    if (strncmp(p, "s3://", 5) != 0) return false;
    size_t n = strcspn(p + 5, "/");
    if (n == 0 || n > 63 || p[5 + n]) return false;
    memcpy(wb, p + 5, n);
    wb[n] = 0;
    return true;
}

static fl_err_t put_text(fl_tablesvc_t *s, const char *bucket, const char *key,
                         const char *text)
{
    size_t n = strlen(text);
    fl_blob_w_t *w = NULL;
    fl_err_t e = fl_blob_w_open(s->cfg.store, &w);
    if (!e) e = fl_blob_w_write(w, text, n);
    if (e) {
        fl_blob_w_abort(w);
        return e;
    }
    unsigned char md5[16];
    fl_md5(text, n, md5);
    fl_obj_meta_t meta = { .size = (int64_t)n, .headers = "content-type: application/json\n" };
    fl_hex(md5, 16, meta.etag);
    fl_put_cond_t cond = { .if_none_match_star = true };
    return fl_store_put(s->cfg.store, w, bucket, key, strlen(key), &meta, &cond);
}

fl_err_t fl_tablesvc_write_metadata_text(fl_tablesvc_t *s, const fl_table_t *t, long seq,
                                         const char *text, char *location_out)
{
    char wb[64];
    if (!warehouse_bucket(t, wb)) return FL_ERR_INVALID;
    char id[37], key[128];
    fl_uuid4(id);
    snprintf(key, sizeof key, "metadata/%05ld-%s.metadata.json", seq < 0 ? 0 : seq, id);
    fl_err_t e = put_text(s, wb, key, text);
    if (!e) snprintf(location_out, FL_LOC_MAX, "%s://%s/%s", fl_tablesvc_scheme(s), wb, key);
    return e;
}

fl_err_t fl_tablesvc_write_metadata(fl_tablesvc_t *s, const fl_table_t *t, long seq,
                                    json_t *metadata, char *location_out)
{
    char *text = json_dumps(metadata, JSON_COMPACT);
    if (!text) return FL_ERR_NOMEM;
    fl_err_t e = fl_tablesvc_write_metadata_text(s, t, seq, text, location_out);
    free(text);
    return e;
}

/* gzip-compressed metadata ("*.metadata.json.gz"), inflated under the same cap. */
static fl_err_t gunzip(const char *in, size_t n, char **out, size_t *outlen)
{
    z_stream z = { 0 };
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return FL_ERR_NOMEM;
    size_t cap = n * 4 + 4096, len = 0;
    char *buf = malloc(cap);
    fl_err_t e = buf ? FL_OK : FL_ERR_NOMEM;
    z.next_in = (unsigned char *)in;
    z.avail_in = (unsigned)n;
    while (!e) {
        if (len == cap) {
            if (cap >= (size_t)FL_ICEBERG_MAX_METADATA_BYTES) { e = FL_ERR_TOO_LARGE; break; }
            cap *= 2;
            char *b = realloc(buf, cap);
            if (!b) { e = FL_ERR_NOMEM; break; }
            buf = b;
        }
        z.next_out = (unsigned char *)buf + len;
        z.avail_out = (unsigned)(cap - len);
        int rc = inflate(&z, Z_NO_FLUSH);
        len = cap - z.avail_out;
        if (rc == Z_STREAM_END) break;
        if (rc != Z_OK && rc != Z_BUF_ERROR) e = FL_ERR_INVALID;
        else if (rc == Z_BUF_ERROR && z.avail_in == 0) e = FL_ERR_INVALID; /* truncated */
    }
    inflateEnd(&z);
    if (e) {
        free(buf);
        return e;
    }
    *out = buf;
    *outlen = len;
    return FL_OK;
}

fl_err_t fl_tablesvc_read_metadata(fl_tablesvc_t *s, const char *location, json_t **out)
{
    char bucket[64];
    const char *key;
    *out = NULL;
    if (!split_location(location, bucket, &key)) return FL_ERR_INVALID;
    fl_obj_t *o = NULL;
    fl_err_t e = fl_store_get(s->cfg.store, bucket, key, strlen(key), &o);
    if (e == FL_ERR_NO_BUCKET) e = FL_ERR_NOT_FOUND;
    if (e) return e;
    char *buf = NULL;
    if (o->meta.size > FL_ICEBERG_MAX_METADATA_BYTES) {
        e = FL_ERR_TOO_LARGE;
        goto out;
    }
    buf = malloc((size_t)o->meta.size + 1);
    if (!buf) {
        e = FL_ERR_NOMEM;
        goto out;
    }
    int64_t pos = 0;
    for (size_t i = 0; i < o->nsegs && !e; i++) {
        int64_t done = 0;
        while (done < o->segs[i].len) {
            ssize_t k = fl_obj_seg_read(o, i, buf + pos, (size_t)(o->segs[i].len - done), done);
            if (k <= 0) {
                e = FL_ERR_IO;
                break;
            }
            done += k;
            pos += k;
        }
    }
    if (e) goto out;
    size_t ll = strlen(location);
    if (ll > 3 && !strcmp(location + ll - 3, ".gz")) {
        char *plain = NULL;
        size_t plen = 0;
        e = gunzip(buf, (size_t)pos, &plain, &plen);
        if (e) goto out;
        free(buf);
        buf = plain;
        pos = (int64_t)plen;
    }
    json_error_t jerr;
    *out = json_loadb(buf, (size_t)pos, JSON_REJECT_DUPLICATES, &jerr);
    if (!*out || !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        e = FL_ERR_INVALID;
    }
out:
    free(buf);
    fl_obj_close(o);
    return e;
}

bool fl_tablesvc_location_ok(const fl_table_t *t, const char *location)
{
    /* the scheme is free among s3:// and oss:// (the same objects) */
    const char *w = fl_io_s3_rest(t->warehouse), *l = fl_io_s3_rest(location);
    if (!w || !l) return false;
    size_t wl = strlen(w), n = strlen(l);
    if (n <= wl + 1 || strncmp(l, w, wl) != 0 || l[wl] != '/') return false;
    if (strstr(l + wl, "/../") || strstr(l + wl, "//")) return false;
    location = l;
    static const char *const ends[] = { ".metadata.json", ".metadata.json.gz", NULL };
    for (int i = 0; ends[i]; i++) {
        size_t el = strlen(ends[i]);
        if (n > el && !strcmp(location + n - el, ends[i])) return true;
    }
    return false;
}

/* Every object and abandoned upload of a warehouse bucket. */
static void empty_warehouse(fl_tablesvc_t *s, const char *wb)
{
    for (int rounds = 0; rounds < 100000; rounds++) {
        fl_list_res_t res = { 0 };
        if (fl_store_list(s->cfg.store, wb, "", NULL, NULL, 1000, &res) != FL_OK) break;
        for (size_t i = 0; i < res.nents; i++)
            fl_store_delete(s->cfg.store, wb, res.ents[i].key, res.ents[i].keylen, NULL);
        bool more = res.nents > 0;
        fl_list_res_free(&res);
        if (!more) break;
    }
    /* abandoned multipart uploads too */
    for (int rounds = 0; rounds < 1000; rounds++) {
        fl_upload_info_t *u = NULL;
        size_t n = 0;
        bool trunc = false;
        if (fl_store_mpu_list(s->cfg.store, wb, "", NULL, NULL, 1000, &u, &n, &trunc) != FL_OK) break;
        for (size_t i = 0; i < n; i++) fl_store_mpu_abort(s->cfg.store, wb, u[i].key, u[i].keylen, u[i].upload_id);
        fl_upload_infos_free(u, n);
        if (!n) break;
    }
}

/* Removes every object of a warehouse bucket, then the bucket. A commit that read the
 * row before it was deleted may still write its metadata file into the warehouse (it
 * then finds the row gone, answers 404 and removes the file): empty again and retry. */
static void purge_warehouse(fl_tablesvc_t *s, const char *wb)
{
    fl_err_t e = FL_OK;
    for (int round = 0; round < FL_TABLES_PURGE_ROUNDS; round++) {
        empty_warehouse(s, wb);
        e = fl_store_bucket_delete(s->cfg.store, wb);
        if (e != FL_ERR_NOT_EMPTY) break;
    }
    if (e && e != FL_ERR_NO_BUCKET) fl_warn("tables: could not remove warehouse %s: %s", wb, fl_err_str(e));
}

fl_err_t fl_tablesvc_delete_metadata(fl_tablesvc_t *s, const fl_table_t *t, const char *location)
{
    char bucket[64];
    const char *key;
    if (!fl_tablesvc_location_ok(t, location) || !split_location(location, bucket, &key)) return FL_ERR_INVALID;
    fl_err_t e = fl_store_delete(s->cfg.store, bucket, key, strlen(key), NULL);
    return e == FL_ERR_NO_BUCKET ? FL_ERR_NOT_FOUND : e;
}

/* A new table's owner (its bucket's account) and ARN (under its bucket's ARN). */
static void owner_arn(fl_tablesvc_t *s, const char *bucket, const char *id, char owner[64], char arn[FL_ARN_MAX])
{
    fl_tbucket_t b;
    if (fl_catalog_bucket_get(s->cfg.cat, bucket, &b) == FL_OK && b.arn[0] &&
        snprintf(arn, FL_ARN_MAX, "%s/table/%s", b.arn, id) < FL_ARN_MAX) {
        snprintf(owner, 64, "%s", b.owner);
        return;
    }
    snprintf(owner, 64, "%s", s->cfg.scope.account ? s->cfg.scope.account : "");
    fl_arn_table(&s->cfg.scope, bucket, id, arn);
}

fl_err_t fl_tablesvc_create(fl_tablesvc_t *s, const char *bucket, const char *ns,
                            const char *name, const char *principal, json_t *metadata,
                            fl_table_t *out, const char **why)
{
    fl_table_t t;
    memset(&t, 0, sizeof t);
    *why = NULL;
    fl_uuid4(t.id);
    char wb[64];
    snprintf(wb, sizeof wb, "%s" WAREHOUSE_SUFFIX, t.id);
    snprintf(t.bucket, sizeof t.bucket, "%s", bucket);
    snprintf(t.ns, sizeof t.ns, "%s", ns);
    snprintf(t.name, sizeof t.name, "%s", name);
    snprintf(t.warehouse, sizeof t.warehouse, "s3://%s", wb);
    snprintf(t.type, sizeof t.type, "customer");
    snprintf(t.format, sizeof t.format, "ICEBERG");
    snprintf(t.kind, sizeof t.kind, "table");
    snprintf(t.created_by, sizeof t.created_by, "%s", principal ? principal : "anonymous");
    snprintf(t.modified_by, sizeof t.modified_by, "%s", t.created_by);
    owner_arn(s, bucket, t.id, t.owner, t.arn);

    /* fail early (and leave nothing) when the namespace is missing or the name taken */
    fl_namespace_t nsrow = { 0 };
    fl_err_t e = fl_catalog_ns_get(s->cfg.cat, bucket, ns, &nsrow);
    fl_namespace_free(&nsrow);
    if (e) {
        *why = e == FL_ERR_NOT_FOUND ? "The specified namespace does not exist." : NULL;
        return e;
    }
    fl_table_t existing;
    if (fl_catalog_table_get(s->cfg.cat, bucket, ns, name, &existing) == FL_OK) {
        *why = "A table or view with this name already exists.";
        return FL_ERR_EXISTS;
    }

    e = fl_store_bucket_create(s->cfg.store, wb);
    if (e) {
        *why = "Could not create the table's warehouse.";
        return e == FL_ERR_EXISTS ? FL_ERR_IO : e;
    }
    if (metadata) {
        char wl[FL_LOC_MAX];
        fl_tablesvc_warehouse_url(s, &t, wl);
        json_object_set_new(metadata, "location", json_string(wl));
        e = fl_tablesvc_write_metadata(s, &t, 0, metadata, t.metadata_location);
        if (e) {
            *why = "Could not write the table's first metadata file.";
            goto fail;
        }
    }
    e = fl_catalog_table_create(s->cfg.cat, &t);
    if (e) {
        if (e == FL_ERR_EXISTS) *why = "A table or view with this name already exists.";
        else if (e == FL_ERR_NOT_FOUND) *why = "The specified namespace does not exist.";
        goto fail;
    }
    if (out) *out = t;
    return FL_OK;
fail:
    purge_warehouse(s, wb);
    return e;
}

fl_err_t fl_tablesvc_drop(fl_tablesvc_t *s, const fl_table_t *t, bool purge,
                          const char *expect_token)
{
    fl_tablesvc_lock(s, t->bucket, t->ns, t->name);
    fl_err_t e = fl_catalog_table_delete(s->cfg.cat, t->bucket, t->ns, t->name, t->id, expect_token);
    if (!e && purge) {
        char wb[64];
        if (warehouse_bucket(t, wb)) purge_warehouse(s, wb);
    }
    fl_tablesvc_unlock(s, t->bucket, t->ns, t->name);
    if (!e && t->metadata_location[0]) fl_tablesvc_mcache_forget(&s->mc, t->metadata_location);
    return e;
}

static void warehouse_key(const char *wb, char key[FL_ARN_MAX])
{
    snprintf(key, FL_ARN_MAX, "warehouse:%s", wb);
}

fl_err_t fl_tablesvc_warehouse_claim(fl_tablesvc_t *s, const char *wb, int64_t lease_ms, char owner[37])
{
    char key[FL_ARN_MAX];
    warehouse_key(wb, key);
    fl_uuid4(owner);
    return fl_catalog_maint_claim(s->cfg.cat, key, "warehouse", owner, fl_now_ms(), lease_ms);
}

void fl_tablesvc_warehouse_release(fl_tablesvc_t *s, const char *wb, const char *owner)
{
    char key[FL_ARN_MAX];
    warehouse_key(wb, key);
    if (fl_catalog_maint_release(s->cfg.cat, key, owner))
        fl_warn("tables: could not release the claim on warehouse %s (it expires by itself)", wb);
}

int fl_tablesvc_sweep(fl_tablesvc_t *s, int64_t created_before_ms)
{
    fl_bucket_info_t *bs = NULL;
    size_t n = 0;
    int swept = 0;
    if (fl_store_bucket_list(s->cfg.store, &bs, &n) != FL_OK) return 0;
    size_t sl = strlen(WAREHOUSE_SUFFIX);
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(bs[i].name);
        if (l <= sl || strcmp(bs[i].name + l - sl, WAREHOUSE_SUFFIX) != 0) continue;
        if (bs[i].created_ms >= created_before_ms) continue; /* a stage-create may still commit */
        char wh[128];
        fl_table_t t;
        snprintf(wh, sizeof wh, "s3://%s", bs[i].name);
        /* owned: a read, no claim (the usual case, every hour for every older table) */
        if (fl_catalog_table_get_by_warehouse(s->cfg.cat, wh, &t) != FL_ERR_NOT_FOUND) continue;
        char claim[37];
        if (fl_tablesvc_warehouse_claim(s, bs[i].name, FL_WAREHOUSE_SWEEP_LEASE_MS, claim)) continue;
        if (fl_catalog_table_get_by_warehouse(s->cfg.cat, wh, &t) == FL_ERR_NOT_FOUND) {   /* still, under the claim */
            purge_warehouse(s, bs[i].name);
            swept++;
        }
        fl_tablesvc_warehouse_release(s, bs[i].name, claim);
    }
    free(bs);
    if (swept) fl_info("tables: swept %d warehouse(s) that no table owns", swept);
    return swept;
}

/* Warehouse bucket "{uuid}--table-s3" named by an s3:// or oss:// location (id_out: the uuid). */
bool fl_tablesvc_warehouse_of(const char *loc, char *wb, char *id_out)
{
    const char *b = fl_io_s3_rest(loc);
    if (!b) return false;
    size_t n = strcspn(b, "/");
    size_t sl = strlen(WAREHOUSE_SUFFIX);
    if (n != 36 + sl || strncmp(b + 36, WAREHOUSE_SUFFIX, sl) != 0) return false;
    memcpy(wb, b, n);
    wb[n] = 0;
    memcpy(id_out, b, 36);
    id_out[36] = 0;
    for (int i = 0; i < 36; i++) {
        char c = id_out[i];
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

const char *fl_tablesvc_scheme(const fl_tablesvc_t *s)
{
    return s->cfg.oss_locations ? "oss" : "s3";
}

void fl_tablesvc_warehouse_url(const fl_tablesvc_t *s, const fl_table_t *t, char out[FL_LOC_MAX])
{
    const char *rest = fl_io_s3_rest(t->warehouse);
    int n = snprintf(out, FL_LOC_MAX, "%s://", fl_tablesvc_scheme(s));
    fl_strlcpy(out + n, rest ? rest : t->warehouse, FL_LOC_MAX - (size_t)n);
}

bool fl_tablesvc_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 255) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return s[0] != '_' && s[n - 1] != '_';
}

void fl_tablesvc_row_init(fl_tablesvc_t *s, fl_table_t *t, const char *bucket, const char *ns, const char *name,
                          const char *id, bool view, const char *principal)
{
    memset(t, 0, sizeof *t);
    snprintf(t->bucket, sizeof t->bucket, "%s", bucket);
    snprintf(t->ns, sizeof t->ns, "%s", ns);
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->id, sizeof t->id, "%s", id);
    snprintf(t->warehouse, sizeof t->warehouse, "s3://%s" WAREHOUSE_SUFFIX, id);
    snprintf(t->type, sizeof t->type, "customer");
    snprintf(t->format, sizeof t->format, "ICEBERG");
    snprintf(t->kind, sizeof t->kind, "%s", view ? "view" : "table");
    snprintf(t->created_by, sizeof t->created_by, "%s", principal ? principal : "anonymous");
    snprintf(t->modified_by, sizeof t->modified_by, "%s", t->created_by);
    owner_arn(s, bucket, id, t->owner, t->arn);
}

fl_tablesvc_t *fl_tablesvc_open(const fl_tablesvc_cfg_t *cfg)
{
    fl_tablesvc_t *s = fl_calloc(1, sizeof *s);
    s->cfg = *cfg;
    for (int i = 0; i < FL_TABLESVC_STRIPES; i++) {
        pthread_mutex_init(&s->stripes[i].mu, NULL);
        pthread_cond_init(&s->stripes[i].cv, NULL);
    }
    fl_tablesvc_mcache_init(&s->mc);
    return s;
}

void fl_tablesvc_close(fl_tablesvc_t *s)
{
    if (!s) return;
    fl_tablesvc_mcache_free(&s->mc);
    for (int i = 0; i < FL_TABLESVC_STRIPES; i++) {
        pthread_mutex_destroy(&s->stripes[i].mu);
        pthread_cond_destroy(&s->stripes[i].cv);
    }
    free(s);
}

const fl_tablesvc_cfg_t *fl_tablesvc_cfg(const fl_tablesvc_t *s)
{
    return &s->cfg;
}
