/* The service object and its loaded-metadata cache, shared by the files of
 * src/catalog/ only. */
#ifndef FL_CATALOG_TABLESVC_INT_H
#define FL_CATALOG_TABLESVC_INT_H
#include "catalog/tablesvc.h"
#include <pthread.h>

#define FL_TABLESVC_STRIPES 64
#define FL_TABLESVC_MCACHE_N 256

struct mcache;

/* A cache entry: the parsed metadata at one location and its compact text. */
struct fl_tmeta {
    char *loc;
    uint64_t h;
    json_t *meta;        /* never modified once cached */
    char *text;          /* compact serialisation of meta */
    size_t len;
    int refs;            /* holders outside the table */
    bool live;           /* still in the table */
    uint64_t tick;
    struct mcache *mc;
};

/* LRU by location, bounded in entries and bytes; one lock. */
typedef struct mcache {
    pthread_mutex_t lock;
    fl_tmeta_t *e[FL_TABLESVC_MCACHE_N];
    uint64_t tick;
    size_t bytes;
} mcache_t;

/* A table locked by fl_tablesvc_lock: its key "bucket\x1fns\x1fname". */
typedef struct tlock {
    struct tlock *next;
    char key[];
} tlock_t;

/* One shard of the per-table locks: the tables locked whose names hash here.
 * mu is held only to look at or change the list, never across I/O; waiters
 * for any table of the shard wait on cv. */
typedef struct tstripe {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    tlock_t *locked;
} tstripe_t;

struct fl_tablesvc {
    fl_tablesvc_cfg_t cfg;
    /* per-table serialisation of pointer moves in this process */
    tstripe_t stripes[FL_TABLESVC_STRIPES];
    mcache_t mc;
};

void fl_tablesvc_mcache_init(mcache_t *mc);
void fl_tablesvc_mcache_free(mcache_t *mc);
/* Drops loc's entry, if cached. */
void fl_tablesvc_mcache_forget(mcache_t *mc, const char *loc);
/* Caches meta (a reference is taken) with text (owned from here; NULL =
 * serialise now) under loc; the entry held once by the caller, or NULL if meta
 * cannot be serialised. */
fl_tmeta_t *fl_tablesvc_mcache_put(mcache_t *mc, const char *loc, json_t *meta, char *text);
/* True when the row t was read from no longer has its name (dropped or renamed). */
bool fl_tablesvc_row_gone(fl_tablesvc_t *s, const fl_table_t *t);
#endif
