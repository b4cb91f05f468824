/* In-memory table ops for unit tests (iceberg/append.h's fl_table_ops_t): a
 * catalog that applies commits with the same requirement/update code as
 * floe's REST catalog, and a storage map. Shared by test_append.c and
 * test_rewrite.c. Single-threaded. */
#ifndef FL_TEST_MEM_TABLE_H
#define FL_TEST_MEM_TABLE_H
#include <jansson.h>
#include "base/buf.h"
#include "format/column.h"
#include "iceberg/append.h"

#define MAX_OBJS 4096

typedef struct mem_table {
    json_t *md;
    char location[256];
    int version;
    struct { char *uri; fl_buf_t data; } objs[MAX_OBJS];
    int n_objs;
    int commit_mode;   /* 0 normal; 1 apply then answer 500; 2 answer 500 without applying;
                          3 apply then answer 409 (a resent request: its first send landed) */
    int commits, conflicts;
} mem_table_t;

int find_obj(mem_table_t *t, const char *uri);
int live_objs(mem_table_t *t, const char *part);
/* The test table: id long, cat string, ts timestamptz, s struct<k int>;
 * partitioned by identity(cat), bucket[8](s.k) unless a spec is given. */
void mem_table_init(mem_table_t *t, fl_table_ops_t *ops);
void mem_table_init_spec(mem_table_t *t, fl_table_ops_t *ops, const char *spec);
void mem_table_init_props(mem_table_t *t, fl_table_ops_t *ops, const char *spec, const char *props);
/* Any schema JSON, spec JSON, properties JSON and write order JSON (NULL: unsorted). */
void mem_table_init_schema(mem_table_t *t, fl_table_ops_t *ops, const char *schema, const char *spec,
                           const char *props, const char *write_order);
void mem_table_free(mem_table_t *t);
/* rows first..first+n: cat = c<id % ncat> (null every 13th), s.k = id % 5, ts = id seconds */
void fill(fl_vec_t *b, int64_t first, int n, int ncat);
/* Rows, sum of ids and live data files of the current snapshot (deletes not applied). */
void scan_all(mem_table_t *t, fl_table_ops_t *ops, int64_t *rows, int64_t *idsum, size_t *files);

/* A steady competing writer by the clock, wrapped around inner (a mem_table's ops): a
 * commit whose base was loaded window_ms or more before it arrives loses (409, as when
 * another writer commits that often), and so does the first. commits counts them all.
 * mem_timed_ops gives the wrapping ops; s must outlive them. */
typedef struct mem_timed {
    fl_table_ops_t inner;
    int window_ms;
    int64_t loaded_ms;
    int commits;
} mem_timed_t;
fl_table_ops_t mem_timed_ops(mem_timed_t *s);
#endif
