/* Puffin footers and deletion-vector-v1 blobs (see puffin.h). */
#include "iceberg/puffin.h"
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "base/checksum.h"
#include "base/limits.h"
#include "base/mem.h"

static const uint8_t MAGIC[4] = { 0x50, 0x46, 0x41, 0x31 };  /* "PFA1" */
static const uint8_t DV_MAGIC[4] = { 0xD1, 0xD3, 0x39, 0x64 };

void fl_puffin_blobs_free(fl_puffin_blob_t *b, size_t n)
{
    for (size_t i = 0; b && i < n; i++) {
        free(b[i].type);
        free(b[i].codec);
        free(b[i].referenced_data_file);
    }
    free(b);
}

static bool json_i64(json_t *v, int64_t *out)
{
    if (!json_is_integer(v)) return false;
    *out = (int64_t)json_integer_value(v);
    return true;
}

fl_err_t fl_puffin_footer(fl_slice_t file, fl_puffin_blob_t **blobs, size_t *n, char *err, size_t errlen)
{
    *blobs = NULL;
    *n = 0;
    const uint8_t *p = (const uint8_t *)file.ptr;
    size_t len = file.len;
    /* header magic, then footer: magic payload size(4) flags(4) magic */
    if (len < 4 + 4 + 12 || memcmp(p, MAGIC, 4) || memcmp(p + len - 4, MAGIC, 4))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "not a Puffin file (magic PFA1 missing at its start or end)");
    uint32_t psize = (uint32_t)p[len - 12] | (uint32_t)p[len - 11] << 8 | (uint32_t)p[len - 10] << 16 |
                     (uint32_t)p[len - 9] << 24;
    uint8_t flags0 = p[len - 8];
    if (psize > FL_PUFFIN_MAX_FOOTER_BYTES || (size_t)psize > len - 4 - 12 - 4)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "Puffin footer payload of %u bytes does not fit the file", psize);
    size_t fstart = len - 12 - psize - 4;
    if (memcmp(p + fstart, MAGIC, 4))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "Puffin footer magic missing");
    if (flags0 & 1)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "Puffin footer is compressed (LZ4): not supported");
    json_error_t je;
    json_t *root = json_loadb((const char *)p + fstart + 4, psize, 0, &je);
    fl_err_t e = FL_OK;
    json_t *arr = json_object_get(root, "blobs");
    if (!root || !json_is_array(arr)) {
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "Puffin footer is not JSON with a blobs list");
        goto out;
    }
    size_t nb = json_array_size(arr);
    fl_puffin_blob_t *b = fl_calloc(nb + 1, sizeof *b);
    size_t k = 0;
    for (; k < nb; k++) {
        json_t *o = json_array_get(arr, k);
        fl_puffin_blob_t *x = &b[k];
        const char *type = json_string_value(json_object_get(o, "type"));
        if (!type || !json_i64(json_object_get(o, "offset"), &x->offset) ||
            !json_i64(json_object_get(o, "length"), &x->length)) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "Puffin blob %zu lacks type, offset or length", k);
            break;
        }
        x->type = fl_strdup(type);
        if (x->offset < 4 || x->length < 0 || (uint64_t)x->offset > fstart || (uint64_t)x->length > fstart - (uint64_t)x->offset) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "Puffin blob %zu (offset %" PRId64 ", length %" PRId64
                           ") lies outside the blob area", k, x->offset, x->length);
            k++;
            break;
        }
        json_t *codec = json_object_get(o, "compression-codec");
        if (json_is_string(codec)) x->codec = fl_strdup(json_string_value(codec));
        json_t *props = json_object_get(o, "properties");
        const char *ref = json_string_value(json_object_get(props, "referenced-data-file"));
        if (ref) x->referenced_data_file = fl_strdup(ref);
        x->cardinality = -1;
        const char *card = json_string_value(json_object_get(props, "cardinality"));
        if (card) {
            char *end;
            long long v = strtoll(card, &end, 10);
            if (*card && !*end && v >= 0) x->cardinality = (int64_t)v;
        }
    }
    if (e) {
        fl_puffin_blobs_free(b, k);
        goto out;
    }
    *blobs = b;
    *n = nb;
out:
    json_decref(root);
    return e;
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

fl_err_t fl_puffin_dv_parse(fl_slice_t blob, fl_roaring64_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const uint8_t *p = (const uint8_t *)blob.ptr;
    if (blob.len < 12) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "deletion vector of %zu bytes (too short)", blob.len);
    uint32_t n = be32(p);
    if ((size_t)n != blob.len - 8)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "deletion vector length %u does not match its blob of %zu bytes", n,
                          blob.len);
    if (memcmp(p + 4, DV_MAGIC, 4)) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "deletion vector magic missing");
    uint32_t want = be32(p + blob.len - 4), got = fl_crc32(0, p + 4, n);
    if (want != got)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "deletion vector CRC-32 mismatch (stored %08x, computed %08x)", want, got);
    return fl_roaring64_parse(fl_slice(blob.ptr + 8, n - 4), out, err, errlen);
}

fl_err_t fl_puffin_read_dv(fl_slice_t file, const fl_puffin_blob_t *b, size_t n, int64_t offset, int64_t size,
                           const char *referenced, int64_t record_count, fl_roaring64_t *out, char *err,
                           size_t errlen)
{
    memset(out, 0, sizeof *out);
    fl_err_t e = FL_OK;
    const fl_puffin_blob_t *x = NULL;
    for (size_t i = 0; i < n && !x; i++) {
        if (offset >= 0 ? (b[i].offset == offset && b[i].length == size)
                        : (!strcmp(b[i].type, "deletion-vector-v1") && referenced && b[i].referenced_data_file &&
                           !strcmp(b[i].referenced_data_file, referenced)))
            x = &b[i];
    }
    if (!x) {
        e = offset >= 0 ? fl_err_fmt(err, errlen, FL_ERR_INVALID, "no Puffin blob at offset %" PRId64 " length %" PRId64,
                                     offset, size)
                        : fl_err_fmt(err, errlen, FL_ERR_INVALID, "no deletion vector for %s in the Puffin footer",
                                     referenced ? referenced : "(no referenced data file)");
    } else if (strcmp(x->type, "deletion-vector-v1")) {
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "Puffin blob at offset %" PRId64 " is a %s, not a deletion-vector-v1",
                       x->offset, x->type);
    } else if (x->codec) {
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "deletion vector compressed with %s (must be uncompressed)", x->codec);
    } else if (referenced && x->referenced_data_file && strcmp(referenced, x->referenced_data_file)) {
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "deletion vector at offset %" PRId64 " is for %s, not %s", x->offset,
                       x->referenced_data_file, referenced);
    } else if ((uint64_t)x->offset > file.len || (uint64_t)x->length > file.len - (uint64_t)x->offset) {
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "Puffin blob at offset %" PRId64 " lies outside the file", x->offset);
    } else if (!(e = fl_puffin_dv_parse(fl_slice(file.ptr + x->offset, (size_t)x->length), out, err, errlen)) &&
               record_count >= 0 && out->cardinality != (uint64_t)record_count) {
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "deletion vector holds %llu positions, its manifest entry says %" PRId64,
                       (unsigned long long)out->cardinality, record_count);
        fl_roaring64_free(out);
    }
    return e;
}
