/* Iceberg metrics modes (Java's MetricsConfig / MetricsModes): which column
 * metrics a data file's manifest entry keeps, from the table properties
 *   write.metadata.metrics.default                 none | counts | truncate(N) | full
 *   write.metadata.metrics.column.<full name>      same, per leaf column
 *   write.metadata.metrics.max-inferred-column-defaults   (default 100)
 * and the default sort order (sorted columns are promoted to truncate(16) when
 * the default is none or counts).
 *
 * Modes: none = the column appears in no metrics map; counts = column size and
 * value/null/NaN counts, no bounds; truncate(N) = bounds truncated to N
 * (strings by code points, binary/fixed by bytes, the upper bound incremented
 * or dropped when it cannot be); full = untruncated bounds.
 *
 * Pure functions, any thread. */
#ifndef FL_ICEBERG_METRICS_CONFIG_H
#define FL_ICEBERG_METRICS_CONFIG_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "format/column.h"

typedef enum fl_metrics_kind {
    FL_METRICS_NONE,
    FL_METRICS_COUNTS,
    FL_METRICS_TRUNCATE,
    FL_METRICS_FULL,
} fl_metrics_kind_t;

typedef struct fl_metrics_mode {
    fl_metrics_kind_t kind;
    int len;                    /* TRUNCATE: N > 0; else 0 */
} fl_metrics_mode_t;

/* Parse a mode as Java does (case-insensitive "none", "counts", "full",
 * "truncate(N)" with ASCII digits, 0 < N <= INT32_MAX). false if invalid. */
bool fl_metrics_mode_parse(const char *s, fl_metrics_mode_t *out);

typedef struct fl_metrics_col {
    int32_t field_id;
    fl_type_kind_t type;
    fl_metrics_mode_t mode;
} fl_metrics_col_t;

/* The mode of every leaf field of a schema (cols sorted by field id). */
typedef struct fl_metrics_policy {
    fl_metrics_col_t *cols;     /* owned */
    size_t n;
    fl_metrics_mode_t fallback; /* for field ids not in cols */
} fl_metrics_policy_t;

/* Build the policy for the schema root (a STRUCT) from table metadata md (its
 * "properties", "default-sort-order-id" and "sort-orders"; md may be NULL).
 * Invalid modes fall back as in Java (the default to truncate(16), a column to
 * the default); an invalid or negative max-inferred-column-defaults is 100. */
void fl_metrics_policy_build(json_t *md, const fl_field_t *root, fl_metrics_policy_t *out);
void fl_metrics_policy_free(fl_metrics_policy_t *p);

/* The mode for a leaf field id. */
fl_metrics_mode_t fl_metrics_policy_mode(const fl_metrics_policy_t *p, int32_t field_id);

/* The Parquet writer's stats_truncate the policy needs: -1 (full bounds) when
 * a column is full or truncates beyond 16, else 16. */
int fl_metrics_policy_writer_truncate(const fl_metrics_policy_t *p);

/* Apply p to m[0..n) in place (bounds are re-truncated, entries of none
 * columns freed and removed, the rest kept in order). Bounds given must have
 * been truncated to at least the mode's length (see writer_truncate).
 * Returns the new count; m[count..n) is zeroed. */
size_t fl_metrics_policy_apply(const fl_metrics_policy_t *p, fl_col_metrics_t *m, size_t n);

#endif
