/* Puffin files (Iceberg's blob container) and the deletion vectors of v3
 * tables stored in them, read only.
 *
 * File: "PFA1", blobs, then the footer "PFA1" + JSON payload + u32 LE payload
 * size + u32 flags (bit 0: payload LZ4-compressed, refused here) + "PFA1".
 * The payload lists the blobs: type, offset, length, compression-codec and
 * properties (a deletion vector's "referenced-data-file" and "cardinality").
 *
 * deletion-vector-v1 blob: u32 BE length of what follows minus the CRC, the
 * magic D1 D3 39 64, a portable 64-bit Roaring bitmap of deleted row
 * positions (format/roaring.h), u32 BE CRC-32 of magic + bitmap. Blobs of
 * this type are never compressed.
 *
 * Every malformed input fails with FL_ERR_INVALID and a sentence in err
 * (never a crash: tests/fuzz/fuzz_puffin.c). Parsed bitmaps borrow the input
 * bytes. Plain functions; any thread. */
#ifndef FL_ICEBERG_PUFFIN_H
#define FL_ICEBERG_PUFFIN_H
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"
#include "format/roaring.h"

typedef struct fl_puffin_blob {
    char *type;                     /* owned */
    int64_t offset, length;
    char *codec;                    /* owned; NULL = uncompressed */
    char *referenced_data_file;     /* owned; property "referenced-data-file" or NULL */
    int64_t cardinality;            /* property "cardinality", -1 absent */
} fl_puffin_blob_t;

/* The footer's blob list (*blobs a new array of *n; fl_puffin_blobs_free).
 * Checks both magics, the payload size and every blob's range against the file. */
fl_err_t fl_puffin_footer(fl_slice_t file, fl_puffin_blob_t **blobs, size_t *n, char *err, size_t errlen);
void fl_puffin_blobs_free(fl_puffin_blob_t *b, size_t n);

/* A deletion-vector-v1 blob's bitmap (length, magic and CRC checked). */
fl_err_t fl_puffin_dv_parse(fl_slice_t blob, fl_roaring64_t *out, char *err, size_t errlen);

/* The deletion vector a manifest entry names, in a Puffin file (its bytes)
 * whose footer blobs are blobs[0..n) (fl_puffin_footer, parsed once per
 * file): by the entry's content_offset / content_size_in_bytes (offset < 0:
 * absent, then the deletion-vector-v1 blob whose referenced-data-file is
 * referenced), checked against its record_count (the DV's cardinality must
 * equal it; < 0 = unchecked). The blob must be one the footer lists, of type
 * deletion-vector-v1, uncompressed, for referenced (when both say). */
fl_err_t fl_puffin_read_dv(fl_slice_t file, const fl_puffin_blob_t *blobs, size_t n, int64_t offset, int64_t size,
                           const char *referenced, int64_t record_count, fl_roaring64_t *out, char *err,
                           size_t errlen);

#endif
