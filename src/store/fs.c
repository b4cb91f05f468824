/* Object store, file-system backend (design.md §4 "Object store layout").
 *
 *   dir/LOCK         flock'd while open: one process per store (the open-time
 *                    sweep would otherwise delete another process's blobs)
 *   dir/index.db     SQLite, WAL: buckets, objects, uploads, parts
 *   dir/blobs/xx/ID  immutable blob files; ID = 32 hex chars of a random
 *                    128-bit id, xx = its first two chars (256 shards)
 *   dir/blobs/tmp/ID blobs being written
 *
 * Keys never reach a path: objects.key is a BLOB, so (bucket, key) compares
 * with memcmp and listing is a range scan of the primary key in byte order.
 *
 * Publish: fsync the temp file, rename it into its shard, fsync the shard
 * directory, then in one BEGIN IMMEDIATE transaction check the bucket and the
 * write conditions and swap the index row; the replaced blobs are unlinked
 * after COMMIT, the new blob on any failure. A crash at any point leaves the
 * old row or the new one, each naming blobs that exist; leftovers (temp
 * files, blobs no row names) are swept at open.
 *
 * Durability: the index runs WAL with synchronous=FULL, so a commit is
 * fsynced before PutObject is acknowledged: an acknowledged object survives
 * power loss, not only a process kill. (synchronous=NORMAL would not do: in
 * WAL mode it fsyncs only at checkpoints, so a commit is not durable when
 * COMMIT returns.)
 *
 * Group commit (PutObject only): each PUT fsyncs its blob, renames it and
 * fsyncs the shard directory on its own thread, then queues its index update.
 * The first queued PUT with no commit in flight becomes the leader: it takes
 * the whole queue, runs every update in one transaction (each item's bucket
 * and condition checks are its own, so a failed condition fails only that
 * item), commits once (one WAL fsync for the batch) and hands each waiter its
 * own result. PUTs that queue meanwhile form the next batch. A PUT is
 * acknowledged only after the commit holding its row is durable, and its blob
 * is durable before that commit. The blob and directory fsyncs stay on the
 * PUTs' threads: concurrent fsyncs already share the file system's journal
 * commits (ext4), whereas a leader fsyncing the batch's directories one after
 * another paid one journal commit each (measured 5x slower); syncfs() would
 * flush every other writer of the file system too.
 *
 * Building with FL_STORE_SYNC_FULL=0
 * trades that for one fsync less per write (then the last commits can be
 * lost on power loss, and a rolled-back row may name an unlinked blob).
 *
 * Threads: index.db's connections, write transactions, migrations and error
 * convention are base/sqlite.h's (busy is FL_ERR_CONFLICT; a full disk sets
 * the connection's `full` flag, which deletes use to release the reserve).
 *
 * Full disk: dir/reserve holds FL_STORE_RESERVE_BYTES allocated while there is
 * room. When a delete (DeleteObject, DeleteBucket, AbortMultipartUpload,
 * sweep) fails because the disk is full (SQLite needs WAL space to commit
 * even a delete), the reserve is unlinked and the transaction run once more,
 * so space can always be freed through the API; the reaper takes the reserve
 * back, a step at a time, as freed blobs give room.
 *
 * Reads open the blob files while the row is current; a writer unlinks a
 * replaced blob only after its commit, so if open() races that unlink and gets
 * ENOENT, the lookup is retried and sees the new row. An open fd stays
 * readable after the unlink. */
#include "store/store.h"
#include "store/s3_int.h"
#include "base/buf.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/sqlite.h"
#include "base/time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <openssl/evp.h>

#ifndef FL_STORE_SYNC_FULL
#define FL_STORE_SYNC_FULL 1
#endif

#define ID_HEX 32                 /* blob and upload ids */
#define GET_RETRIES 16            /* lookups retried when a blob vanished under us */
#define FL_STORE_RESERVE_BYTES (1024 * 1024) /* room for delete commits on a full disk */
#define RESERVE_STEP (64 * 1024)

/* ---- schema ---- */

/* Migrations: entry i brings user_version from i to i+1. Append, never edit. */
static const char *const migrations[] = {
    /* 0 -> 1 */
    "CREATE TABLE buckets(name TEXT PRIMARY KEY, created_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE objects(bucket TEXT NOT NULL, key BLOB NOT NULL, size INTEGER NOT NULL,"
    "  etag TEXT NOT NULL, mtime_ms INTEGER NOT NULL, parts INTEGER NOT NULL,"
    "  headers TEXT, blobs TEXT NOT NULL, PRIMARY KEY(bucket, key)) WITHOUT ROWID;"
    "CREATE TABLE uploads(upload_id TEXT PRIMARY KEY, bucket TEXT NOT NULL, key BLOB NOT NULL,"
    "  headers TEXT, created_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX uploads_by_key ON uploads(bucket, key, created_ms, upload_id);"
    "CREATE INDEX uploads_by_age ON uploads(created_ms);"
    "CREATE TABLE parts(upload_id TEXT NOT NULL, number INTEGER NOT NULL, etag TEXT NOT NULL,"
    "  size INTEGER NOT NULL, mtime_ms INTEGER NOT NULL, headers TEXT, blob TEXT NOT NULL,"
    "  PRIMARY KEY(upload_id, number)) WITHOUT ROWID;",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

/* objects.blobs: "" or "ID:SIZE[,ID:SIZE...]" in part order. */

enum {
    ST_BUCKET_GET, ST_BUCKET_INS, ST_BUCKET_DEL, ST_BUCKET_LIST,
    ST_BUCKET_HASOBJ, ST_BUCKET_HASUP,
    ST_OBJ_GET, ST_OBJ_PUT, ST_OBJ_DEL, ST_LIST_GE, ST_LIST_GT,
    ST_UP_INS, ST_UP_GET, ST_UP_DEL, ST_UP_LIST, ST_UP_STALE,
    ST_PART_GET, ST_PART_PUT, ST_PART_LIST, ST_PART_ALL, ST_PART_DEL_ALL,
    ST_COUNT
};

static const char *const st_sql[ST_COUNT] = {
    [ST_BUCKET_GET] = "SELECT created_ms FROM buckets WHERE name = ?1",
    [ST_BUCKET_INS] = "INSERT INTO buckets(name, created_ms) VALUES(?1, ?2) ON CONFLICT DO NOTHING",
    [ST_BUCKET_DEL] = "DELETE FROM buckets WHERE name = ?1",
    [ST_BUCKET_LIST] = "SELECT name, created_ms FROM buckets ORDER BY name",
    [ST_BUCKET_HASOBJ] = "SELECT 1 FROM objects WHERE bucket = ?1 LIMIT 1",
    [ST_BUCKET_HASUP] = "SELECT 1 FROM uploads WHERE bucket = ?1 LIMIT 1",
    [ST_OBJ_GET] = "SELECT size, etag, mtime_ms, parts, headers, blobs FROM objects"
                   " WHERE bucket = ?1 AND key = ?2",
    [ST_OBJ_PUT] = "INSERT OR REPLACE INTO objects(bucket, key, size, etag, mtime_ms, parts,"
                   " headers, blobs) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_OBJ_DEL] = "DELETE FROM objects WHERE bucket = ?1 AND key = ?2",
    [ST_LIST_GE] = "SELECT key, size, mtime_ms, etag FROM objects"
                   " WHERE bucket = ?1 AND key >= ?2 ORDER BY key",
    [ST_LIST_GT] = "SELECT key, size, mtime_ms, etag FROM objects"
                   " WHERE bucket = ?1 AND key > ?2 ORDER BY key",
    [ST_UP_INS] = "INSERT INTO uploads(upload_id, bucket, key, headers, created_ms)"
                  " VALUES(?1, ?2, ?3, ?4, ?5)",
    [ST_UP_GET] = "SELECT bucket, key, headers, created_ms FROM uploads WHERE upload_id = ?1",
    [ST_UP_DEL] = "DELETE FROM uploads WHERE upload_id = ?1",
    [ST_UP_LIST] = "SELECT key, upload_id, created_ms FROM uploads WHERE bucket = ?1 AND key >= ?2"
                   " ORDER BY key, created_ms, upload_id",
    [ST_UP_STALE] = "SELECT upload_id FROM uploads WHERE created_ms < ?1 LIMIT 256",
    [ST_PART_GET] = "SELECT blob FROM parts WHERE upload_id = ?1 AND number = ?2",
    [ST_PART_PUT] = "INSERT OR REPLACE INTO parts(upload_id, number, etag, size, mtime_ms,"
                    " headers, blob) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_PART_LIST] = "SELECT number, etag, size, mtime_ms, headers FROM parts"
                     " WHERE upload_id = ?1 AND number > ?2 ORDER BY number LIMIT ?3",
    [ST_PART_ALL] = "SELECT number, etag, size, blob FROM parts WHERE upload_id = ?1 ORDER BY number",
    [ST_PART_DEL_ALL] = "DELETE FROM parts WHERE upload_id = ?1",
};

typedef fl_sqlite_conn_t fl_conn_t;

struct fl_store {
    char *dir;
    fl_s3s_t *remote;          /* set: objects live in a remote store (s3.c); dir only spools */
    int lockfd;
    fl_sqlite_t *db;           /* index.db: connections, transactions, migrations */
    /* Group commit of PutObject's index updates (see the top of the file). */
    pthread_mutex_t gc_mu;     /* guards gc_head, gc_tail, gc_leader */
    pthread_cond_t gc_cv;      /* broadcast when a batch is done */
    struct put_item *gc_head, **gc_tail;
    bool gc_leader;            /* a leader is committing a batch */
    /* Replaced blobs are unlinked by a reaper thread, off the request path
     * (unlinking a large file takes milliseconds). A crash before the reaper
     * gets to one leaves an orphan that the next open sweeps. */
    pthread_t reaper;
    bool reaper_on, reap_stop, reaping;
    pthread_mutex_t reap_mu;
    pthread_cond_t reap_cv;
    struct reap_item *reap_head;
    pthread_mutex_t reserve_mu; /* guards reserve_bytes and dir/reserve */
    int64_t reserve_bytes;      /* allocated in dir/reserve */
};

/* One queued PutObject index update; lives on the PUT's stack. */
struct put_item {
    struct put_item *next;
    const char *bucket, *key;
    size_t keylen;
    const fl_obj_meta_t *meta;
    const fl_put_cond_t *cond;
    const char *blobs;         /* objects.blobs of the new row */
    fl_err_t err;              /* set by the leader */
    char *old;                 /* replaced row's blobs (malloc'd), for the caller to unlink */
    bool done;
};

struct reap_item {
    struct reap_item *next;
    char id[ID_HEX + 1];
};

/* A streamed write to a remote store (fl_blob_w_open_stream): the PUT or
 * UploadPart runs on its own thread, reading the pipe the writer fills. */
typedef struct stream {
    fl_store_t *s;
    pthread_t th;
    int rd;                 /* the pipe's read end (the thread's) */
    char *bucket, *key, *headers, *upload_id, *if_match;
    size_t keylen;
    fl_put_cond_t cond;
    int part;               /* 0: a PUT */
    int64_t size;
    fl_err_t err;           /* the request's outcome, once joined */
    char etag[48];
    bool ended;             /* the thread returned before the body was whole: writes are dropped */
    char last;              /* the body's last byte, held back until publish */
} stream_t;

struct fl_blob_w {
    fl_store_t *s;
    int fd;            /* spool file; streamed: the pipe's write end */
    bool failed;
    int64_t size;
    int64_t flushed;   /* bytes handed to writeback with sync_file_range */
    char id[ID_HEX + 1];
    stream_t *st;      /* streamed to a remote store; NULL: spooled */
};

/* Large blobs start writeback as they grow, so the fsync at publish finds
 * little left to write: disk I/O overlaps the upload instead of following it. */
#define WRITEBACK_STEP (8 << 20)

/* ---- small helpers ---- */

static void new_id(char out[ID_HEX + 1])
{
    unsigned char r[ID_HEX / 2];
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = getrandom(r + got, sizeof r - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            fl_error("store: getrandom: %s", strerror(errno));
            abort();
        }
        got += (size_t)n;
    }
    fl_hex(r, sizeof r, out);
}

static bool is_id(const char *p, size_t n)
{
    if (n != ID_HEX) return false;
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) return false;
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Copies an etag without surrounding quotes into out (48 bytes); false if too long. */
static bool etag_unquote(const char *in, char out[48])
{
    size_t n = strlen(in);
    if (n >= 2 && in[0] == '"' && in[n - 1] == '"') { in++; n -= 2; }
    if (n >= 48) return false;
    memcpy(out, in, n);
    out[n] = 0;
    return true;
}

static bool etag_eq(const char *stored, const char *given)
{
    char g[48];
    return etag_unquote(given, g) && strcasecmp(stored, g) == 0;
}

/* memcmp order of byte strings, shorter first on a common prefix. */
static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int r = memcmp(a, b, an < bn ? an : bn);
    if (r) return r;
    return an < bn ? -1 : an > bn;
}

static fl_err_t check_key(const char *key, size_t keylen)
{
    if (!key || keylen == 0 || memchr(key, 0, keylen)) return FL_ERR_INVALID;
    if (keylen > FL_S3_MAX_KEY_BYTES) return FL_ERR_TOO_LARGE;
    return FL_OK;
}

static void blob_path(const fl_store_t *s, const char *id, char *out, size_t n)
{
    snprintf(out, n, "%s/blobs/%.2s/%s", s->dir, id, id);
}

static void tmp_path(const fl_store_t *s, const char *id, char *out, size_t n)
{
    snprintf(out, n, "%s/blobs/tmp/%s", s->dir, id);
}

/* Grows dir/reserve towards FL_STORE_RESERVE_BYTES as far as the disk allows.
 * Any thread. */
static void reserve_take(fl_store_t *s)
{
    pthread_mutex_lock(&s->reserve_mu);
    if (s->reserve_bytes < FL_STORE_RESERVE_BYTES) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/reserve", s->dir);
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        while (fd >= 0 && s->reserve_bytes < FL_STORE_RESERVE_BYTES &&
               posix_fallocate(fd, 0, s->reserve_bytes + RESERVE_STEP) == 0)
            s->reserve_bytes += RESERVE_STEP;
        if (fd >= 0) close(fd);
    }
    pthread_mutex_unlock(&s->reserve_mu);
}

/* Unlinks dir/reserve; true if it held any space. Any thread. */
static bool reserve_release(fl_store_t *s)
{
    pthread_mutex_lock(&s->reserve_mu);
    bool had = s->reserve_bytes > 0;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/reserve", s->dir);
    if (unlink(p) != 0 && errno != ENOENT) fl_warn("store: unlink %s: %s", p, strerror(errno));
    s->reserve_bytes = 0;
    pthread_mutex_unlock(&s->reserve_mu);
    if (had) fl_warn("store: %s: disk full; released the reserve so that a delete can commit", s->dir);
    return had;
}

void fl_store_make_room(fl_store_t *s)
{
    if (s->remote) return;
    struct statvfs v;
    if (statvfs(s->dir, &v) == 0 && (uint64_t)v.f_bavail * v.f_frsize < FL_STORE_RESERVE_BYTES)
        reserve_release(s);
}

static void unlink_blob_now(fl_store_t *s, const char *id)
{
    char p[PATH_MAX];
    blob_path(s, id, p, sizeof p);
    if (unlink(p) != 0 && errno != ENOENT) fl_warn("store: unlink %s: %s", p, strerror(errno));
}

static void unlink_blob(fl_store_t *s, const char *id)
{
    if (!s->reaper_on) {
        unlink_blob_now(s, id);
        return;
    }
    struct reap_item *it = fl_malloc(sizeof *it);
    memcpy(it->id, id, ID_HEX + 1);
    pthread_mutex_lock(&s->reap_mu);
    it->next = s->reap_head;
    s->reap_head = it;
    pthread_cond_broadcast(&s->reap_cv);
    pthread_mutex_unlock(&s->reap_mu);
}

void fl_store_drain(fl_store_t *s)
{
    if (s->remote) return;
    pthread_mutex_lock(&s->reap_mu);
    while (s->reaper_on && (s->reap_head || s->reaping)) pthread_cond_wait(&s->reap_cv, &s->reap_mu);
    pthread_mutex_unlock(&s->reap_mu);
}

static void *reaper_main(void *arg)
{
    fl_store_t *s = arg;
    pthread_mutex_lock(&s->reap_mu);
    for (;;) {
        while (!s->reap_head && !s->reap_stop) pthread_cond_wait(&s->reap_cv, &s->reap_mu);
        struct reap_item *list = s->reap_head;
        s->reap_head = NULL;
        if (!list && s->reap_stop) break;
        s->reaping = true;
        pthread_mutex_unlock(&s->reap_mu);
        while (list) {
            struct reap_item *next = list->next;
            unlink_blob_now(s, list->id);
            free(list);
            list = next;
        }
        reserve_take(s); /* a no-op unless a full disk released it */
        pthread_mutex_lock(&s->reap_mu);
        s->reaping = false;
        pthread_cond_broadcast(&s->reap_cv);
    }
    pthread_mutex_unlock(&s->reap_mu);
    return NULL;
}

/* Unlinks every blob named in an objects.blobs list (NULL or "" = none). */
static void unlink_blob_list(fl_store_t *s, const char *list)
{
    if (!list) return;
    for (const char *p = list; *p;) {
        if (is_id(p, strnlen(p, ID_HEX)) && (p[ID_HEX] == ':' || !p[ID_HEX])) {
            char id[ID_HEX + 1];
            memcpy(id, p, ID_HEX);
            id[ID_HEX] = 0;
            unlink_blob(s, id);
        }
        const char *c = strchr(p, ',');
        if (!c) break;
        p = c + 1;
    }
}

static int fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Keys are always bound as BLOBs (never NULL, never TEXT) so they compare by memcmp. */
static void bind_key(sqlite3_stmt *st, int i, const char *k, size_t n)
{
    sqlite3_bind_blob(st, i, n ? k : "", (int)n, SQLITE_STATIC);
}

/* ---- connections and transactions ---- */

/* FL_OK if the bucket exists, FL_ERR_NO_BUCKET if not. */
static fl_err_t bucket_exists(fl_conn_t *c, const char *bucket, int64_t *created)
{
    sqlite3_stmt *st = c->st[ST_BUCKET_GET];
    fl_sqlite_bind_str(st, 1, bucket);
    int rc = sqlite3_step(st);
    fl_err_t err = FL_OK;
    if (rc == SQLITE_ROW) {
        if (created) *created = sqlite3_column_int64(st, 0);
    } else if (rc == SQLITE_DONE) {
        err = FL_ERR_NO_BUCKET;
    } else {
        err = fl_sqlite_err(c, rc, "bucket lookup");
    }
    sqlite3_reset(st);
    return err;
}

/* Inside a write transaction: evaluates cond against the current row of
 * bucket/key, and hands back its blob list (*old, malloc'd, NULL if no row). */
static fl_err_t obj_check(fl_conn_t *c, const char *bucket, const char *key, size_t keylen,
                          const fl_put_cond_t *cond, char **old, bool *existed)
{
    sqlite3_stmt *st = c->st[ST_OBJ_GET];
    fl_err_t err = FL_OK;
    fl_sqlite_bind_str(st, 1, bucket);
    bind_key(st, 2, key, keylen);
    int rc = sqlite3_step(st);
    *old = NULL;
    if (existed) *existed = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW) {
        const char *etag = (const char *)sqlite3_column_text(st, 1);
        if (cond && cond->if_none_match_star) err = FL_ERR_PRECONDITION;
        else if (cond && cond->if_match && strcmp(cond->if_match, "*") != 0 &&
                 !etag_eq(etag ? etag : "", cond->if_match))
            err = FL_ERR_PRECONDITION;
        if (!err) *old = fl_sqlite_col_strdup(st, 5);
    } else if (rc == SQLITE_DONE) {
        if (cond && cond->if_match) err = FL_ERR_NOT_FOUND;
    } else {
        err = fl_sqlite_err(c, rc, "object lookup");
    }
    sqlite3_reset(st);
    return err;
}

/* ---- opening, schema, sweeping ---- */

static int id_cmp(const void *a, const void *b) { return memcmp(a, b, ID_HEX); }

typedef struct id_set { char (*ids)[ID_HEX]; size_t n, alloc; } id_set_t;

static void id_set_add(id_set_t *set, const char *id)
{
    if (set->n == set->alloc) {
        set->alloc = set->alloc ? set->alloc * 2 : 1024;
        set->ids = fl_realloc(set->ids, set->alloc * sizeof *set->ids);
    }
    memcpy(set->ids[set->n++], id, ID_HEX);
}

static void remove_tmp(fl_store_t *s)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/blobs/tmp", s->dir);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0) fl_info("store: swept temp file %s", e->d_name);
    }
    closedir(d);
}

/* Unlinks blob files that no objects or parts row names. Only at open: a
 * running store has blobs published but not yet committed. */
static fl_err_t sweep_orphans(fl_store_t *s, fl_conn_t *c)
{
    id_set_t set = { 0 };
    fl_err_t err = FL_OK;
    sqlite3_stmt *st = NULL;
    size_t swept = 0;
    const char *sql = "SELECT blobs FROM objects UNION ALL SELECT blob FROM parts";
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
        err = fl_sqlite_err(c, SQLITE_ERROR, "sweep");
        goto out;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(st, 0);
        while (p && *p) {
            if (strnlen(p, ID_HEX) == ID_HEX) id_set_add(&set, p);
            p = strchr(p, ',');
            if (p) p++;
        }
    }
    if (rc != SQLITE_DONE) { err = fl_sqlite_err(c, rc, "sweep"); goto out; }
    if (set.n) qsort(set.ids, set.n, sizeof *set.ids, id_cmp);
    for (int shard = 0; shard < 256; shard++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/blobs/%02x", s->dir, shard);
        DIR *d = opendir(path);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!is_id(e->d_name, strlen(e->d_name))) continue;
            if (set.n && bsearch(e->d_name, set.ids, set.n, sizeof *set.ids, id_cmp)) continue;
            if (unlinkat(dirfd(d), e->d_name, 0) == 0) swept++;
        }
        closedir(d);
    }
    if (swept) fl_info("store: %s: swept %zu orphan blob(s)", s->dir, swept);
out:
    sqlite3_finalize(st);
    free(set.ids);
    return err;
}

static fl_err_t mkdir_p1(const char *path)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST) return FL_OK;
    fl_error("store: mkdir %s: %s", path, strerror(errno));
    return FL_ERR_IO;
}

/* The start both fl_store_open and fl_store_open_s3 share: s's fields (fl_store_close
 * can then undo s whatever follows) and dir, dir/blobs and dir/blobs/tmp. */
static fl_err_t store_init(fl_store_t *s, const char *dir)
{
    char path[PATH_MAX];
    s->dir = fl_strdup(dir);
    s->lockfd = -1;
    pthread_mutex_init(&s->gc_mu, NULL);
    pthread_cond_init(&s->gc_cv, NULL);
    s->gc_tail = &s->gc_head;
    pthread_mutex_init(&s->reap_mu, NULL);
    pthread_cond_init(&s->reap_cv, NULL);
    pthread_mutex_init(&s->reserve_mu, NULL);
    if (mkdir_p1(dir)) return FL_ERR_IO;
    snprintf(path, sizeof path, "%s/blobs", dir);
    if (mkdir_p1(path)) return FL_ERR_IO;
    snprintf(path, sizeof path, "%s/blobs/tmp", dir);
    return mkdir_p1(path);
}

/* Takes dir/LOCK (flock, held by s->lockfd until fl_store_close): one process per store. */
static fl_err_t store_lock(fl_store_t *s, const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/LOCK", dir);
    s->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (s->lockfd < 0 || flock(s->lockfd, LOCK_EX | LOCK_NB) != 0) {
        fl_error("store: %s is in use by another process (or unlockable): %s", dir, strerror(errno));
        return FL_ERR_IO;
    }
    return FL_OK;
}

fl_store_t *fl_store_open(const char *dir)
{
    fl_store_t *s = fl_calloc(1, sizeof *s);
    fl_conn_t *c = NULL;
    char path[PATH_MAX];
    if (store_init(s, dir)) goto fail;
    for (int i = 0; i < 256; i++) {
        snprintf(path, sizeof path, "%s/blobs/%02x", dir, i);
        if (mkdir_p1(path)) goto fail;
    }
    snprintf(path, sizeof path, "%s/blobs", dir);
    fsync_dir(path);
    fsync_dir(dir);

    if (store_lock(s, dir)) goto fail;

    snprintf(path, sizeof path, "%s/index.db", dir);
    fl_sqlite_cfg_t dbc = { .label = "store", .path = path, .migrations = migrations,
                            .n_migrations = SCHEMA_VERSION, .statements = st_sql, .n_statements = ST_COUNT,
                            .sync_normal = !FL_STORE_SYNC_FULL };
    if (!(s->db = fl_sqlite_open(&dbc)) || !(c = fl_sqlite_get(s->db))) goto fail;
    remove_tmp(s);
    if (fl_store_sweep(s, fl_now_ms())) goto fail;
    if (sweep_orphans(s, c)) goto fail;
    fl_sqlite_put(s->db, c);
    reserve_take(s);
    s->reaper_on = pthread_create(&s->reaper, NULL, reaper_main, s) == 0;
    return s;
fail:
    if (s->db) fl_sqlite_put(s->db, c);
    fl_store_close(s);
    return NULL;
}

fl_store_t *fl_store_open_s3(const char *dir, const fl_store_s3_cfg_t *cfg)
{
    fl_store_t *s = fl_calloc(1, sizeof *s);
    if (store_init(s, dir)) goto fail;
    if (store_lock(s, dir)) goto fail;
    remove_tmp(s);
    if (!(s->remote = fl_s3s_open(cfg))) goto fail;
    return s;
fail:
    fl_store_close(s);
    return NULL;
}

fl_err_t fl_store_part_range(fl_store_t *s, const char *bucket, const char *key, size_t keylen, int part,
                             int64_t *off, int64_t *len)
{
    if (!s->remote) return FL_ERR_INVALID; /* fl_store_get gives part_sizes */
    return fl_s3s_part_range(s->remote, bucket, key, keylen, part, off, len);
}

size_t fl_store_max_key(const fl_store_t *s, const char *bucket)
{
    return s && s->remote ? fl_s3s_max_key(s->remote, bucket) : FL_S3_MAX_KEY_BYTES;
}

bool fl_store_is_remote(const fl_store_t *s)
{
    return s && s->remote;
}

ssize_t fl_obj_seg_read(const fl_obj_t *o, size_t i, void *buf, size_t n, int64_t off)
{
    if (i >= o->nsegs) return -1;
    if (off >= o->segs[i].len) return 0;
    if ((int64_t)n > o->segs[i].len - off) n = (size_t)(o->segs[i].len - off);
    if (o->segs[i].fd < 0) return o->rd ? fl_s3s_read(o->rd, buf, n, off) : -1;
    size_t done = 0;
    while (done < n) {
        ssize_t k = pread(o->segs[i].fd, (char *)buf + done, n - done, (off_t)(off + (int64_t)done));
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -1;
        if (k == 0) break;
        done += (size_t)k;
    }
    return (ssize_t)done;
}

fl_err_t fl_blob_w_copy_seg(fl_blob_w_t *w, const fl_obj_t *o, size_t i, int64_t off, int64_t len)
{
    if (i >= o->nsegs) return FL_ERR_INVALID;
    if (o->segs[i].fd >= 0) return fl_blob_w_copy_fd(w, o->segs[i].fd, off, len);
    enum { STEP = 4 << 20 };
    char *buf = fl_malloc(STEP);
    fl_err_t e = FL_OK;
    while (len > 0 && !e) {
        ssize_t k = fl_obj_seg_read(o, i, buf, (size_t)(len < STEP ? len : STEP), off);
        if (k <= 0) { e = FL_ERR_IO; break; }
        e = fl_blob_w_write(w, buf, (size_t)k);
        off += k;
        len -= k;
    }
    free(buf);
    return e;
}

void fl_store_close(fl_store_t *s)
{
    if (!s) return;
    fl_s3s_close(s->remote);
    if (s->reaper_on) {
        pthread_mutex_lock(&s->reap_mu);
        s->reap_stop = true;
        pthread_cond_broadcast(&s->reap_cv);
        pthread_mutex_unlock(&s->reap_mu);
        pthread_join(s->reaper, NULL); /* drains the queue first */
        s->reaper_on = false;
    }
    pthread_cond_destroy(&s->reap_cv);
    pthread_mutex_destroy(&s->reap_mu);
    fl_sqlite_close(s->db);
    if (s->lockfd >= 0) close(s->lockfd);
    pthread_mutex_destroy(&s->reserve_mu);
    pthread_cond_destroy(&s->gc_cv);
    pthread_mutex_destroy(&s->gc_mu);
    free(s->dir);
    free(s);
}

/* Removes one upload's rows inside the caller's transaction; appends its part
 * blob ids to *ids (malloc'd, ID_HEX+1 each). */
static fl_err_t upload_drop(fl_conn_t *c, const char *upload_id, char (**ids)[ID_HEX + 1],
                            size_t *nids)
{
    sqlite3_stmt *st = c->st[ST_PART_ALL];
    fl_sqlite_bind_str(st, 1, upload_id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *ids = fl_realloc(*ids, (*nids + 1) * sizeof **ids);
        fl_sqlite_col_copy(st, 3, (*ids)[(*nids)++], ID_HEX + 1);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return fl_sqlite_err(c, rc, "upload parts");
    sqlite3_bind_text(c->st[ST_PART_DEL_ALL], 1, upload_id, -1, SQLITE_STATIC);
    fl_err_t err = fl_sqlite_done(c, c->st[ST_PART_DEL_ALL], "delete parts");
    if (err) return err;
    sqlite3_bind_text(c->st[ST_UP_DEL], 1, upload_id, -1, SQLITE_STATIC);
    return fl_sqlite_done(c, c->st[ST_UP_DEL], "delete upload");
}

fl_err_t fl_store_sweep(fl_store_t *s, int64_t now_ms)
{
    if (s->remote) return FL_OK; /* the remote store's lifecycle rules expire stale uploads */
    fl_err_t err = FL_OK;
    fl_conn_t *c = fl_sqlite_get(s->db);
    char (*ids)[ID_HEX + 1] = NULL;
    size_t nids = 0, nup = 0;
    if (!c) return FL_ERR_IO;
    for (;;) {  /* batches, so a huge backlog does not hold the write lock long */
        char batch[256][65];
        size_t nb = 0;
        if ((err = fl_sqlite_begin(s->db, c))) goto out;
        sqlite3_stmt *st = c->st[ST_UP_STALE];
        sqlite3_bind_int64(st, 1, now_ms - (int64_t)FL_STALE_UPLOAD_S * 1000);
        int rc = SQLITE_DONE;
        while (nb < 256 && (rc = sqlite3_step(st)) == SQLITE_ROW) fl_sqlite_col_copy(st, 0, batch[nb++], 65);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW) { err = fl_sqlite_err(c, rc, "sweep uploads"); goto out; }
        for (size_t i = 0; i < nb && !err; i++) err = upload_drop(c, batch[i], &ids, &nids);
        if (err) goto out;
        if ((err = fl_sqlite_end(s->db, c, FL_OK))) goto out;
        for (size_t i = 0; i < nids; i++) unlink_blob(s, ids[i]);
        nids = 0;
        nup += nb;
        if (nb < 256) break;
    }
    if (nup) fl_info("store: %s: swept %zu stale multipart upload(s)", s->dir, nup);
out:
    fl_sqlite_end(s->db, c, FL_ERR_IO);
    fl_sqlite_put(s->db, c);
    free(ids);
    return err;
}

/* ---- buckets ---- */

fl_err_t fl_store_bucket_create(fl_store_t *s, const char *name)
{
    if (s->remote) return fl_s3s_bucket_create(s->remote, name);
    if (!name || !*name || strlen(name) >= sizeof ((fl_bucket_info_t *)0)->name)
        return FL_ERR_INVALID;
    fl_conn_t *c = fl_sqlite_get(s->db);
    fl_err_t err;
    if (!c) return FL_ERR_IO;
    if ((err = fl_sqlite_begin(s->db, c))) goto out;
    sqlite3_stmt *st = c->st[ST_BUCKET_INS];
    fl_sqlite_bind_str(st, 1, name);
    sqlite3_bind_int64(st, 2, fl_now_ms());
    if ((err = fl_sqlite_done(c, st, "bucket create"))) goto out;
    if (sqlite3_changes(c->db) == 0) { err = FL_ERR_EXISTS; goto out; }
    err = fl_sqlite_end(s->db, c, FL_OK);
out:
    fl_sqlite_end(s->db, c, FL_ERR_IO);
    fl_sqlite_put(s->db, c);
    return err;
}

/* A delete's transaction failed on a full disk: true if the reserve was
 * released, so that the caller runs it once more. */
static bool retry_full(fl_store_t *s, fl_conn_t *c, fl_err_t err)
{
    bool full = err && c->full;
    c->full = false;
    return full && reserve_release(s);
}

static fl_err_t bucket_delete_tx(fl_store_t *s, fl_conn_t *c, const char *name)
{
    fl_err_t err;
    int rc;
    if ((err = fl_sqlite_begin(s->db, c))) goto out;
    if ((err = bucket_exists(c, name, NULL))) goto out;
    for (int which = ST_BUCKET_HASOBJ; which <= ST_BUCKET_HASUP; which++) {
        sqlite3_stmt *st = c->st[which];
        fl_sqlite_bind_str(st, 1, name);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc == SQLITE_ROW) { err = FL_ERR_NOT_EMPTY; goto out; }
        if (rc != SQLITE_DONE) { err = fl_sqlite_err(c, rc, "bucket delete"); goto out; }
    }
    fl_sqlite_bind_str(c->st[ST_BUCKET_DEL], 1, name);
    if ((err = fl_sqlite_done(c, c->st[ST_BUCKET_DEL], "bucket delete"))) goto out;
    err = fl_sqlite_end(s->db, c, FL_OK);
out:
    fl_sqlite_end(s->db, c, FL_ERR_IO);
    return err;
}

fl_err_t fl_store_bucket_delete(fl_store_t *s, const char *name)
{
    if (s->remote) return fl_s3s_bucket_delete(s->remote, name);
    fl_conn_t *c = fl_sqlite_get(s->db);
    if (!c) return FL_ERR_IO;
    fl_err_t err = bucket_delete_tx(s, c, name);
    if (retry_full(s, c, err)) err = bucket_delete_tx(s, c, name);
    fl_sqlite_put(s->db, c);
    return err;
}

fl_err_t fl_store_bucket_head(fl_store_t *s, const char *name, fl_bucket_info_t *out)
{
    if (s->remote) return fl_s3s_bucket_head(s->remote, name, out);
    fl_conn_t *c = fl_sqlite_get(s->db);
    int64_t created = 0;
    if (!c) return FL_ERR_IO;
    fl_err_t err = bucket_exists(c, name, &created);
    if (!err && out) {
        fl_strlcpy(out->name, name, sizeof out->name);
        out->created_ms = created;
    }
    fl_sqlite_put(s->db, c);
    return err;
}

fl_err_t fl_store_bucket_list(fl_store_t *s, fl_bucket_info_t **out, size_t *n)
{
    if (s->remote) return fl_s3s_bucket_list(s->remote, out, n);
    fl_conn_t *c = fl_sqlite_get(s->db);
    fl_err_t err = FL_OK;
    fl_bucket_info_t *v = NULL;
    size_t nv = 0, alloc = 0;
    int rc;
    *out = NULL;
    *n = 0;
    if (!c) return FL_ERR_IO;
    sqlite3_stmt *st = c->st[ST_BUCKET_LIST];
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (nv == alloc) {
            alloc = alloc ? alloc * 2 : 16;
            v = fl_realloc(v, alloc * sizeof *v);
        }
        fl_sqlite_col_copy(st, 0, v[nv].name, sizeof v[nv].name);
        v[nv++].created_ms = sqlite3_column_int64(st, 1);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        err = fl_sqlite_err(c, rc, "bucket list");
        free(v);
        goto out;
    }
    *out = v;
    *n = nv;
out:
    fl_sqlite_put(s->db, c);
    return err;
}

/* ---- writing blobs ---- */

fl_err_t fl_blob_w_open(fl_store_t *s, fl_blob_w_t **out)
{
    char path[PATH_MAX];
    fl_blob_w_t *w = fl_calloc(1, sizeof *w);
    w->s = s;
    new_id(w->id);
    tmp_path(s, w->id, path, sizeof path);
    w->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644); /* read back by the s3 backend */
    if (w->fd < 0) {
        fl_error("store: create %s: %s", path, strerror(errno));
        free(w);
        *out = NULL;
        return FL_ERR_IO;
    }
    *out = w;
    return FL_OK;
}

static void *stream_main(void *arg)
{
    stream_t *t = arg;
    fl_s3s_t *r = t->s->remote;
    if (t->part) {
        t->err = fl_s3s_mpu_put_part(r, t->bucket, t->key, t->keylen, t->upload_id, t->part, t->rd, true, t->size,
                                     t->etag);
    } else {
        fl_obj_meta_t m = { .size = t->size, .headers = t->headers };
        t->err = fl_s3s_put(r, t->rd, true, t->size, t->bucket, t->key, t->keylen, &m, &t->cond);
        snprintf(t->etag, sizeof t->etag, "%s", m.etag);
    }
    return NULL;
}

static void stream_free(stream_t *t)
{
    if (!t) return;
    if (t->rd >= 0) close(t->rd);
    free(t->bucket); free(t->key); free(t->headers); free(t->upload_id); free(t->if_match);
    free(t);
}

fl_err_t fl_blob_w_open_stream(fl_store_t *s, const char *bucket, const char *key, size_t keylen, int64_t size,
                               const char *headers, const fl_put_cond_t *cond, const char *upload_id, int part,
                               fl_blob_w_t **out)
{
    int p[2] = { -1, -1 };
    *out = NULL;
    if (!s->remote || size < 1 || (part && !upload_id)) return FL_ERR_INVALID;
    if (pipe2(p, O_CLOEXEC) != 0) return FL_ERR_IO;
    (void)fcntl(p[1], F_SETPIPE_SZ, FL_STORE_STREAM_PIPE); /* a hint: the default is 64 KiB */
    stream_t *t = fl_calloc(1, sizeof *t);
    t->s = s;
    t->rd = p[0];
    t->bucket = fl_strdup(bucket);
    t->key = fl_malloc(keylen + 1);
    memcpy(t->key, key, keylen);
    t->key[keylen] = 0;
    t->keylen = keylen;
    t->headers = headers ? fl_strdup(headers) : NULL;
    t->upload_id = upload_id ? fl_strdup(upload_id) : NULL;
    t->part = part;
    t->size = size;
    if (cond) {
        t->cond.if_none_match_star = cond->if_none_match_star;
        t->if_match = cond->if_match ? fl_strdup(cond->if_match) : NULL;
        t->cond.if_match = t->if_match;
    }
    if (pthread_create(&t->th, NULL, stream_main, t) != 0) {
        close(p[1]);
        stream_free(t);
        return FL_ERR_IO;
    }
    fl_blob_w_t *w = fl_calloc(1, sizeof *w);
    w->s = s;
    w->fd = p[1];
    w->st = t;
    *out = w;
    return FL_OK;
}

/* Ends a streamed writer: with publish, sends the held-back last byte first.
 * Joins the request's thread and returns its outcome (FL_ERR_IO when the
 * body was cut short). Frees w. */
static fl_err_t stream_end(fl_blob_w_t *w, bool publish, char etag_out[48])
{
    stream_t *t = w->st;
    bool whole = publish && !w->failed && w->size == t->size;
    if (whole && !t->ended) {
        ssize_t k;
        do k = write(w->fd, &t->last, 1);
        while (k < 0 && errno == EINTR);
        if (k != 1) whole = false;
    }
    close(w->fd); /* short of size bytes: the request aborts */
    pthread_join(t->th, NULL);
    fl_err_t e = !whole ? FL_ERR_IO : t->err;
    if (!e && etag_out) snprintf(etag_out, 48, "%s", t->etag);
    stream_free(t);
    free(w);
    return e;
}

/* A streamed writer's write: to the pipe, all but the body's last byte; once
 * the request has ended early (the store refused it), bytes are dropped so
 * that the client's body is still read and the store's answer reported. */
static fl_err_t stream_write(fl_blob_w_t *w, const char *p, size_t n)
{
    stream_t *t = w->st;
    if ((int64_t)n > t->size - w->size) {
        w->failed = true;
        return FL_ERR_TOO_LARGE;
    }
    bool last = w->size + (int64_t)n == t->size;
    if (last && n) t->last = p[n - 1];
    size_t m = last && n ? n - 1 : n;
    w->size += (int64_t)n;
    while (m > 0 && !t->ended) {
        ssize_t k = write(w->fd, p, m);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) { /* EPIPE: the request is over; its answer comes with the publish */
            t->ended = true;
            break;
        }
        p += k;
        m -= (size_t)k;
    }
    return FL_OK;
}

static fl_err_t write_all(fl_blob_w_t *w, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            fl_error("store: write blob %s: %s", w->id, strerror(errno));
            w->failed = true;
            return FL_ERR_IO;
        }
        p += k;
        n -= (size_t)k;
        w->size += k;
    }
    return FL_OK;
}

fl_err_t fl_blob_w_write(fl_blob_w_t *w, const void *p, size_t n)
{
    if (w->failed) return FL_ERR_IO;
    if (w->st) return stream_write(w, p, n);
    fl_err_t e = write_all(w, p, n);
    if (!e && w->size - w->flushed >= WRITEBACK_STEP) {
        /* a hint: errors surface at the fsync before publish */
        (void)sync_file_range(w->fd, w->flushed, w->size - w->flushed, SYNC_FILE_RANGE_WRITE);
        w->flushed = w->size;
    }
    return e;
}

int64_t fl_blob_w_size(const fl_blob_w_t *w)
{
    return w->size;
}

fl_err_t fl_blob_w_copy_fd(fl_blob_w_t *w, int fd, int64_t off, int64_t len)
{
    char *buf = NULL;
    fl_err_t err = FL_OK;
    loff_t in = off;
    if (w->failed) return FL_ERR_IO;
    if (w->st) return FL_ERR_INVALID; /* CopyObject spools */
    if (off < 0 || len < 0) return FL_ERR_INVALID;
    while (len > 0) {
        size_t chunk = len > (1 << 30) ? (size_t)1 << 30 : (size_t)len;
        ssize_t k = copy_file_range(fd, &in, w->fd, NULL, chunk, 0);
        if (k < 0) {
            if (errno == EINTR) continue;
            if (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL ||
                errno == EBADF || errno == EPERM)
                break; /* fall back to read/write */
            fl_error("store: copy_file_range: %s", strerror(errno));
            err = FL_ERR_IO;
            goto out;
        }
        if (k == 0) { err = FL_ERR_IO; fl_error("store: copy source shorter than range"); goto out; }
        in += k;
        len -= k;
        w->size += k;
    }
    if (len > 0) buf = fl_malloc(1 << 16);
    while (len > 0) {
        size_t chunk = len > (1 << 16) ? (size_t)1 << 16 : (size_t)len;
        ssize_t k = pread(fd, buf, chunk, in);
        if (k < 0) {
            if (errno == EINTR) continue;
            fl_error("store: copy read: %s", strerror(errno));
            err = FL_ERR_IO;
            goto out;
        }
        if (k == 0) { err = FL_ERR_IO; fl_error("store: copy source shorter than range"); goto out; }
        if ((err = write_all(w, buf, (size_t)k))) goto out;
        in += k;
        len -= k;
    }
out:
    if (err) w->failed = true;
    free(buf);
    return err;
}

void fl_blob_w_abort(fl_blob_w_t *w)
{
    char path[PATH_MAX];
    if (!w) return;
    if (w->st) {
        stream_end(w, false, NULL);
        return;
    }
    if (w->fd >= 0) close(w->fd);
    tmp_path(w->s, w->id, path, sizeof path);
    unlink(path);
    free(w);
}

/* Makes w durable under blobs/xx/ID and frees w. With drop_empty, an empty
 * blob is discarded instead (id_out = ""). On failure nothing is left behind. */
static fl_err_t blob_publish(fl_blob_w_t *w, bool drop_empty, char id_out[ID_HEX + 1])
{
    char tmp[PATH_MAX], dst[PATH_MAX];
    fl_store_t *s = w->s;
    fl_err_t err = FL_ERR_IO;
    id_out[0] = 0;
    if (w->failed) goto fail;
    if (drop_empty && w->size == 0) { fl_blob_w_abort(w); return FL_OK; }
    tmp_path(s, w->id, tmp, sizeof tmp);
    blob_path(s, w->id, dst, sizeof dst);
    if (fsync(w->fd) != 0) { fl_error("store: fsync %s: %s", tmp, strerror(errno)); goto fail; }
    close(w->fd);
    w->fd = -1;
    if (rename(tmp, dst) != 0) { fl_error("store: rename %s: %s", tmp, strerror(errno)); goto fail; }
    dst[strlen(dst) - ID_HEX - 1] = 0; /* the shard directory */
    if (fsync_dir(dst) != 0) {
        fl_error("store: fsync %s: %s", dst, strerror(errno));
        unlink_blob(s, w->id);
        goto fail;
    }
    memcpy(id_out, w->id, ID_HEX + 1);
    free(w);
    return FL_OK;
fail:
    fl_blob_w_abort(w);
    return err;
}

/* ---- objects ---- */

void fl_obj_meta_free(fl_obj_meta_t *m)
{
    if (!m) return;
    free(m->headers);
    m->headers = NULL;
}

/* Leader side of the group commit: applies every item of the batch in one
 * transaction and commits once. Sets each item's err and old; one item's
 * bucket or condition check fails that item only. */
static void put_batch_commit(fl_store_t *s, struct put_item *batch)
{
    fl_err_t err = FL_OK;
    fl_conn_t *c = NULL;
    for (struct put_item *it = batch; it; it = it->next) it->err = FL_OK;
    if (!(c = fl_sqlite_get(s->db))) { err = FL_ERR_IO; goto out; }
    if ((err = fl_sqlite_begin(s->db, c))) goto out;
    for (struct put_item *it = batch; it; it = it->next) {
        if (it->err) continue;
        if ((it->err = bucket_exists(c, it->bucket, NULL))) continue;
        if ((it->err = obj_check(c, it->bucket, it->key, it->keylen, it->cond, &it->old, NULL)))
            continue;
        sqlite3_stmt *st = c->st[ST_OBJ_PUT];
        fl_sqlite_bind_str(st, 1, it->bucket);
        bind_key(st, 2, it->key, it->keylen);
        sqlite3_bind_int64(st, 3, it->meta->size);
        fl_sqlite_bind_str(st, 4, it->meta->etag);
        sqlite3_bind_int64(st, 5, it->meta->mtime_ms);
        sqlite3_bind_int(st, 6, 0);
        fl_sqlite_bind_str(st, 7, it->meta->headers);
        fl_sqlite_bind_str(st, 8, it->blobs);
        if ((it->err = fl_sqlite_done(c, st, "put"))) {
            free(it->old);
            it->old = NULL;
            /* An I/O error or a full disk can end the whole transaction. */
            if (sqlite3_get_autocommit(c->db)) { err = it->err; goto out; }
        }
    }
    err = fl_sqlite_end(s->db, c, FL_OK);
out:
    fl_sqlite_end(s->db, c, FL_ERR_IO);
    fl_sqlite_put(s->db, c);
    if (err) {
        for (struct put_item *it = batch; it; it = it->next) {
            if (!it->err) it->err = err;
            free(it->old);
            it->old = NULL;
        }
    }
}

/* Queues it and returns once a leader (maybe this thread) has committed it. */
static void put_group_commit(fl_store_t *s, struct put_item *it)
{
    pthread_mutex_lock(&s->gc_mu);
    *s->gc_tail = it;
    s->gc_tail = &it->next;
    while (!it->done) {
        if (s->gc_leader) {
            pthread_cond_wait(&s->gc_cv, &s->gc_mu);
            continue;
        }
        /* Lead: take the queue (this thread's item is in it). */
        struct put_item *batch = s->gc_head;
        s->gc_head = NULL;
        s->gc_tail = &s->gc_head;
        s->gc_leader = true;
        pthread_mutex_unlock(&s->gc_mu);
        put_batch_commit(s, batch);
        pthread_mutex_lock(&s->gc_mu);
        for (struct put_item *b = batch, *next; b; b = next) {
            next = b->next; /* b is on its owner's stack: read next before done */
            b->done = true;
        }
        s->gc_leader = false;
        pthread_cond_broadcast(&s->gc_cv);
    }
    pthread_mutex_unlock(&s->gc_mu);
}

/* Publishes an index row for bucket/key naming blobs; unlinks the replaced
 * row's blobs after commit. Blobs are the caller's to unlink on failure.
 * Concurrent calls share fsyncs and one index commit (group commit). */
fl_err_t fl_store_put(fl_store_t *s, fl_blob_w_t *w, const char *bucket, const char *key,
                      size_t keylen, fl_obj_meta_t *meta, const fl_put_cond_t *cond)
{
    fl_err_t err;
    char id[ID_HEX + 1] = "", blobs[ID_HEX + 32] = "";
    if (!w) return FL_ERR_INVALID;
    if ((err = check_key(key, keylen))) { fl_blob_w_abort(w); return err; }
    if (!meta || strnlen(meta->etag, sizeof meta->etag) >= sizeof meta->etag ||
        meta->size != w->size) {
        fl_error("store: put: meta does not match the blob (size %lld vs %lld)",
                 meta ? (long long)meta->size : -1LL, (long long)w->size);
        fl_blob_w_abort(w);
        return FL_ERR_INVALID;
    }
    if (w->st) { /* streamed: bucket, key, headers and cond were given at open */
        char got[48] = "";
        err = stream_end(w, true, got);
        if (!err && got[0] && strcmp(got, meta->etag))
            fl_warn("store s3: %s/%.*s: remote ETag %s, floe's %s", bucket, (int)keylen, key, got, meta->etag);
        meta->mtime_ms = fl_now_ms();
        meta->parts = 0;
        return err;
    }
    if (s->remote) {
        /* a spool that failed to fill (disk full) must not reach the store: it would
         * replace the object with what little was written */
        err = w->failed ? FL_ERR_IO : fl_s3s_put(s->remote, w->fd, false, w->size, bucket, key, keylen, meta, cond);
        fl_blob_w_abort(w);
        return err;
    }
    if ((err = blob_publish(w, true, id))) return err;
    if (id[0]) snprintf(blobs, sizeof blobs, "%s:%lld", id, (long long)meta->size);
    meta->mtime_ms = fl_now_ms();
    meta->parts = 0;
    struct put_item it = { .bucket = bucket, .key = key, .keylen = keylen, .meta = meta,
                           .cond = cond, .blobs = blobs };
    put_group_commit(s, &it);
    err = it.err;
    if (!err) unlink_blob_list(s, it.old);
    if (err && id[0]) unlink_blob(s, id);
    free(it.old);
    return err;
}

/* Fills meta from an ST_OBJ_GET row. */
static void row_meta(sqlite3_stmt *st, fl_obj_meta_t *m)
{
    m->size = sqlite3_column_int64(st, 0);
    fl_sqlite_col_copy(st, 1, m->etag, sizeof m->etag);
    m->mtime_ms = sqlite3_column_int64(st, 2);
    m->parts = sqlite3_column_int(st, 3);
    m->headers = fl_sqlite_col_strdup(st, 4);
}

fl_err_t fl_store_head(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                       fl_obj_meta_t *out)
{
    if (s->remote) return fl_s3s_head(s->remote, bucket, key, keylen, out);
    fl_conn_t *c = fl_sqlite_get(s->db);
    fl_err_t err = FL_OK;
    if (!c) return FL_ERR_IO;
    sqlite3_stmt *st = c->st[ST_OBJ_GET];
    fl_sqlite_bind_str(st, 1, bucket);
    bind_key(st, 2, key, keylen);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) row_meta(st, out);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE) err = bucket_exists(c, bucket, NULL) ? FL_ERR_NO_BUCKET : FL_ERR_NOT_FOUND;
    else if (rc != SQLITE_ROW) err = fl_sqlite_err(c, rc, "head");
    fl_sqlite_put(s->db, c);
    return err;
}

void fl_obj_close(fl_obj_t *o)
{
    if (!o) return;
    fl_s3s_rd_free(o->rd);
    for (size_t i = 0; i < o->nsegs; i++)
        if (o->segs[i].fd >= 0) close(o->segs[i].fd);
    free(o->meta.headers);
    free(o);
}

/* Opens the blobs of a row's list into a new fl_obj_t. FL_ERR_NOT_FOUND if a
 * blob is gone (the row was replaced meanwhile: look again). */
static fl_err_t open_blobs(fl_store_t *s, const char *list, fl_obj_t **out)
{
    size_t n = 0;
    fl_obj_t *o;
    if (*list) {
        n = 1;
        for (const char *p = list; (p = strchr(p, ',')); p++) n++;
    }
    o = fl_calloc(1, sizeof *o + n * (sizeof *o->segs + sizeof *o->part_sizes));
    o->segs = n ? (fl_obj_seg_t *)(o + 1) : NULL;
    o->part_sizes = n ? (int64_t *)(o->segs + n) : NULL;
    const char *p = list;
    for (size_t i = 0; i < n; i++) {
        char id[ID_HEX + 1], path[PATH_MAX], *end;
        if (strnlen(p, ID_HEX + 1) <= ID_HEX || p[ID_HEX] != ':') goto corrupt;
        memcpy(id, p, ID_HEX);
        id[ID_HEX] = 0;
        long long len = strtoll(p + ID_HEX + 1, &end, 10);
        if (*end != ',' && *end != 0) goto corrupt;
        p = end + (*end == ',');
        blob_path(s, id, path, sizeof path);
        o->segs[i].fd = open(path, O_RDONLY | O_CLOEXEC);
        o->segs[i].len = o->part_sizes[i] = len;
        o->nsegs = i + 1;
        if (o->segs[i].fd < 0) {
            int e = errno;
            fl_obj_close(o);
            if (e == ENOENT) return FL_ERR_NOT_FOUND;
            fl_error("store: open %s: %s", path, strerror(e));
            return FL_ERR_IO;
        }
    }
    *out = o;
    return FL_OK;
corrupt:
    fl_error("store: corrupt blob list \"%s\"", list);
    fl_obj_close(o);
    return FL_ERR_IO;
}

fl_err_t fl_store_get(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                      fl_obj_t **out)
{
    if (s->remote) return fl_s3s_get(s->remote, bucket, key, keylen, out);
    fl_conn_t *c = fl_sqlite_get(s->db);
    fl_err_t err = FL_ERR_IO;
    *out = NULL;
    if (!c) return FL_ERR_IO;
    sqlite3_stmt *st = c->st[ST_OBJ_GET];
    for (int attempt = 0; attempt < GET_RETRIES; attempt++) {
        fl_sqlite_bind_str(st, 1, bucket);
        bind_key(st, 2, key, keylen);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
            sqlite3_reset(st);
            err = bucket_exists(c, bucket, NULL) ? FL_ERR_NO_BUCKET : FL_ERR_NOT_FOUND;
            goto out;
        }
        if (rc != SQLITE_ROW) { sqlite3_reset(st); err = fl_sqlite_err(c, rc, "get"); goto out; }
        const unsigned char *list = sqlite3_column_text(st, 5);
        err = open_blobs(s, list ? (const char *)list : "", out);
        if (!err) row_meta(st, &(*out)->meta);
        sqlite3_reset(st);
        if (err != FL_ERR_NOT_FOUND) goto out;
    }
    fl_error("store: get %s: blob missing for an index row", bucket);
    err = FL_ERR_IO;
out:
    fl_sqlite_put(s->db, c);
    return err;
}

static fl_err_t delete_tx(fl_store_t *s, fl_conn_t *c, const char *bucket, const char *key,
                          size_t keylen, const fl_put_cond_t *cond)
{
    fl_err_t err;
    char *old = NULL;
    bool existed = false;
    fl_put_cond_t dcond = { .if_match = cond ? cond->if_match : NULL };
    if ((err = fl_sqlite_begin(s->db, c))) goto out;
    if ((err = bucket_exists(c, bucket, NULL))) goto out;
    if ((err = obj_check(c, bucket, key, keylen, &dcond, &old, &existed))) goto out;
    if (!existed) goto out;
    fl_sqlite_bind_str(c->st[ST_OBJ_DEL], 1, bucket);
    bind_key(c->st[ST_OBJ_DEL], 2, key, keylen);
    if ((err = fl_sqlite_done(c, c->st[ST_OBJ_DEL], "delete"))) goto out;
    if ((err = fl_sqlite_end(s->db, c, FL_OK))) goto out;
    unlink_blob_list(s, old);
out:
    fl_sqlite_end(s->db, c, FL_ERR_IO);
    free(old);
    return err;
}

fl_err_t fl_store_delete(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                         const fl_put_cond_t *cond)
{
    if (s->remote) return fl_s3s_delete(s->remote, bucket, key, keylen, cond);
    fl_conn_t *c = fl_sqlite_get(s->db);
    if (!c) return FL_ERR_IO;
    fl_err_t err = delete_tx(s, c, bucket, key, keylen, cond);
    if (retry_full(s, c, err)) err = delete_tx(s, c, bucket, key, keylen, cond);
    fl_sqlite_put(s->db, c);
    return err;
}

/* ---- listing ---- */

void fl_list_res_free(fl_list_res_t *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->nents; i++) free(r->ents[i].key);
    for (size_t i = 0; i < r->nprefixes; i++) free(r->prefixes[i]);
    free(r->ents);
    free(r->prefixes);
    free(r->next_after);
    memset(r, 0, sizeof *r);
}

/* The smallest byte string greater than every string starting with p[0..n):
 * increments the last byte below 0xFF and drops what follows. Returns the new
 * length, 0 if there is none (p is all 0xFF: nothing sorts after the group). */
static size_t prefix_successor(unsigned char *p, size_t n)
{
    while (n > 0 && p[n - 1] == 0xFF) n--;
    if (n == 0) return 0;
    p[n - 1]++;
    return n;
}

static const void *find_bytes(const char *h, size_t hn, const char *nd, size_t nn)
{
    return memmem(h, hn, nd, nn);
}

fl_err_t fl_store_list(fl_store_t *s, const char *bucket, const char *prefix,
                       const char *delimiter, const char *start_after, int max_keys,
                       fl_list_res_t *out)
{
    if (s->remote) return fl_s3s_list(s->remote, bucket, prefix, delimiter, start_after, max_keys, out);
    fl_conn_t *c = NULL;
    fl_err_t err;
    size_t plen, dlen, salen, seeklen, entalloc = 0, pfxalloc = 0;
    unsigned char *seek = NULL;
    bool excl = false, done = false;
    int count = 0;
    sqlite3_stmt *st = NULL;

    memset(out, 0, sizeof *out);
    prefix = prefix ? prefix : "";
    plen = strlen(prefix);
    dlen = delimiter ? strlen(delimiter) : 0;
    salen = start_after ? strlen(start_after) : 0;
    if (!(c = fl_sqlite_get(s->db))) return FL_ERR_IO;
    if ((err = bucket_exists(c, bucket, NULL))) goto out;
    if (max_keys <= 0) goto out;

    /* Start at the later of prefix (inclusive) and start_after (exclusive). */
    if (start_after && bytes_cmp(start_after, salen, prefix, plen) >= 0) {
        seek = (unsigned char *)fl_strndup(start_after, salen);
        seeklen = salen;
        excl = true;
    } else {
        seek = (unsigned char *)fl_strndup(prefix, plen);
        seeklen = plen;
    }

    while (!done) {
        st = c->st[excl ? ST_LIST_GT : ST_LIST_GE];
        fl_sqlite_bind_str(st, 1, bucket);
        bind_key(st, 2, (const char *)seek, seeklen);
        bool reseek = false;
        int rc = SQLITE_DONE;
        while (!reseek && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *k = sqlite3_column_blob(st, 0);
            size_t klen = (size_t)sqlite3_column_bytes(st, 0);
            if (!k) k = "";
            if (klen < plen || memcmp(k, prefix, plen) != 0) { done = true; break; }
            const char *d = dlen ? find_bytes(k + plen, klen - plen, delimiter, dlen) : NULL;
            if (d) {
                size_t cplen = (size_t)(d - k) + dlen;
                /* start_after naming this very prefix (a continuation): skip it. */
                bool seen = start_after && cplen == salen && memcmp(k, start_after, salen) == 0;
                if (!seen) {
                    if (count == max_keys) { out->truncated = true; done = true; break; }
                    if (out->nprefixes == pfxalloc) {
                        pfxalloc = pfxalloc ? pfxalloc * 2 : 16;
                        out->prefixes = fl_realloc(out->prefixes, pfxalloc * sizeof(char *));
                    }
                    out->prefixes[out->nprefixes++] = fl_strndup(k, cplen);
                    count++;
                }
                /* Jump past every key with this common prefix. */
                free(seek);
                seek = (unsigned char *)fl_strndup(k, cplen);
                seeklen = prefix_successor(seek, cplen);
                excl = false;
                if (seeklen == 0) done = true;
                reseek = true;
                break;
            }
            if (count == max_keys) { out->truncated = true; done = true; break; }
            if (out->nents == entalloc) {
                entalloc = entalloc ? entalloc * 2 : 16;
                out->ents = fl_realloc(out->ents, entalloc * sizeof *out->ents);
            }
            fl_list_ent_t *e = &out->ents[out->nents++];
            e->key = fl_strndup(k, klen);
            e->keylen = klen;
            e->size = sqlite3_column_int64(st, 1);
            e->mtime_ms = sqlite3_column_int64(st, 2);
            fl_sqlite_col_copy(st, 3, e->etag, sizeof e->etag);
            count++;
        }
        if (!reseek && !done) {
            if (rc != SQLITE_DONE) { err = fl_sqlite_err(c, rc, "list"); goto out; }
            done = true;
        }
        sqlite3_reset(st);
        st = NULL;
    }
    if (out->truncated) {
        /* The last item returned, key or prefix, whichever sorts later. */
        const char *lk = out->nents ? out->ents[out->nents - 1].key : NULL;
        const char *lp = out->nprefixes ? out->prefixes[out->nprefixes - 1] : NULL;
        const char *last = !lk ? lp : !lp ? lk : (strcmp(lk, lp) > 0 ? lk : lp);
        out->next_after = last ? fl_strdup(last) : NULL;
    }
out:
    if (st) sqlite3_reset(st);
    fl_sqlite_put(s->db, c);
    free(seek);
    if (err) fl_list_res_free(out);
    return err;
}

/* ---- multipart uploads ---- */

void fl_part_infos_free(fl_part_info_t *p, size_t n)
{
    if (!p) return;
    for (size_t i = 0; i < n; i++) free(p[i].headers);
    free(p);
}

void fl_upload_infos_free(fl_upload_info_t *u, size_t n)
{
    if (!u) return;
    for (size_t i = 0; i < n; i++) free(u[i].key);
    free(u);
}

/* Checks that upload_id is an upload of bucket/key; FL_ERR_NO_BUCKET first.
 * *headers (optional) gets the upload's headers (malloc'd). */
static fl_err_t upload_check(fl_conn_t *c, const char *bucket, const char *key, size_t keylen,
                             const char *upload_id, char **headers)
{
    fl_err_t err;
    if ((err = bucket_exists(c, bucket, NULL))) return err;
    if (!upload_id) return FL_ERR_NO_UPLOAD;
    sqlite3_stmt *st = c->st[ST_UP_GET];
    fl_sqlite_bind_str(st, 1, upload_id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *b = (const char *)sqlite3_column_text(st, 0);
        const void *k = sqlite3_column_blob(st, 1);
        size_t kn = (size_t)sqlite3_column_bytes(st, 1);
        if (!b || strcmp(b, bucket) != 0 || kn != keylen || (kn && memcmp(k, key, kn) != 0))
            err = FL_ERR_NO_UPLOAD;
        else if (headers)
            *headers = fl_sqlite_col_strdup(st, 2);
    } else {
        err = rc == SQLITE_DONE ? FL_ERR_NO_UPLOAD : fl_sqlite_err(c, rc, "upload lookup");
    }
    sqlite3_reset(st);
    return err;
}

fl_err_t fl_store_mpu_create(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                             const char *headers, char upload_id_out[FL_STORE_UPLOAD_ID_MAX + 1])
{
    if (s->remote) return fl_s3s_mpu_create(s->remote, bucket, key, keylen, headers, upload_id_out);
    fl_conn_t *c;
    fl_err_t err;
    char id[ID_HEX + 1];
    if ((err = check_key(key, keylen))) return err;
    if (!(c = fl_sqlite_get(s->db))) return FL_ERR_IO;
    new_id(id);
    if ((err = fl_sqlite_begin(s->db, c))) goto out;
    if ((err = bucket_exists(c, bucket, NULL))) goto out;
    sqlite3_stmt *st = c->st[ST_UP_INS];
    fl_sqlite_bind_str(st, 1, id);
    fl_sqlite_bind_str(st, 2, bucket);
    bind_key(st, 3, key, keylen);
    fl_sqlite_bind_str(st, 4, headers);
    sqlite3_bind_int64(st, 5, fl_now_ms());
    if ((err = fl_sqlite_done(c, st, "upload create"))) goto out;
    if ((err = fl_sqlite_end(s->db, c, FL_OK))) goto out;
    memcpy(upload_id_out, id, ID_HEX + 1);
out:
    fl_sqlite_end(s->db, c, FL_ERR_IO);
    fl_sqlite_put(s->db, c);
    return err;
}

fl_err_t fl_store_mpu_put_part(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                               const char *upload_id, int number, fl_blob_w_t *w,
                               const char *etag, const char *headers)
{
    fl_conn_t *c = NULL;
    fl_err_t err;
    char id[ID_HEX + 1] = "", old[ID_HEX + 1] = "", tag[48];
    if (!w) return FL_ERR_INVALID;
    if (number < 1 || number > FL_S3_MAX_PARTS || !etag || !etag_unquote(etag, tag) ||
        strlen(tag) != ID_HEX) {
        fl_blob_w_abort(w);
        return FL_ERR_INVALID;
    }
    for (char *p = tag; *p; p++) {
        if (hexval(*p) < 0) { fl_blob_w_abort(w); return FL_ERR_INVALID; }
        if (*p >= 'A' && *p <= 'F') *p = (char)(*p - 'A' + 'a');
    }
    int64_t size = w->size;
    if (s->remote) {
        char got[48] = "";
        if (w->st) {
            err = stream_end(w, true, got);
        } else {
            err = w->failed ? FL_ERR_IO
                            : fl_s3s_mpu_put_part(s->remote, bucket, key, keylen, upload_id, number, w->fd, false,
                                                  size, got);
            fl_blob_w_abort(w);
        }
        if (!err && got[0] && strcasecmp(got, tag)) {
            fl_error("store s3: part %d: the remote store's ETag %s is not the MD5 %s floe computed", number, got, tag);
            err = FL_ERR_IO;
        }
        return err;
    }
    if ((err = blob_publish(w, false, id))) return err;
    if (!(c = fl_sqlite_get(s->db))) { err = FL_ERR_IO; goto out; }
    if ((err = fl_sqlite_begin(s->db, c))) goto out;
    if ((err = upload_check(c, bucket, key, keylen, upload_id, NULL))) goto out;
    sqlite3_stmt *st = c->st[ST_PART_GET];
    fl_sqlite_bind_str(st, 1, upload_id);
    sqlite3_bind_int(st, 2, number);
    if (sqlite3_step(st) == SQLITE_ROW) fl_sqlite_col_copy(st, 0, old, sizeof old);
    sqlite3_reset(st);
    st = c->st[ST_PART_PUT];
    fl_sqlite_bind_str(st, 1, upload_id);
    sqlite3_bind_int(st, 2, number);
    fl_sqlite_bind_str(st, 3, tag);
    sqlite3_bind_int64(st, 4, size);
    sqlite3_bind_int64(st, 5, fl_now_ms());
    fl_sqlite_bind_str(st, 6, headers);
    fl_sqlite_bind_str(st, 7, id);
    if ((err = fl_sqlite_done(c, st, "put part"))) goto out;
    if ((err = fl_sqlite_end(s->db, c, FL_OK))) goto out;
    if (old[0]) unlink_blob(s, old);
out:
    fl_sqlite_end(s->db, c, FL_ERR_IO);
    fl_sqlite_put(s->db, c);
    if (err && id[0]) unlink_blob(s, id);
    return err;
}

fl_err_t fl_store_mpu_parts(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                            const char *upload_id, int after, int max,
                            fl_part_info_t **out, size_t *n, bool *truncated,
                            char **upload_headers)
{
    if (s->remote)
        return fl_s3s_mpu_parts(s->remote, bucket, key, keylen, upload_id, after, max, out, n, truncated,
                                upload_headers);
    fl_conn_t *c = fl_sqlite_get(s->db);
    fl_err_t err;
    fl_part_info_t *v = NULL;
    size_t nv = 0;
    int rc;
    *out = NULL;
    *n = 0;
    *truncated = false;
    if (upload_headers) *upload_headers = NULL;
    if (!c) return FL_ERR_IO;
    if (max < 0) max = 0;
    if (max > FL_S3_MAX_PARTS) max = FL_S3_MAX_PARTS;
    if ((err = upload_check(c, bucket, key, keylen, upload_id, upload_headers))) goto out;
    sqlite3_stmt *st = c->st[ST_PART_LIST];
    fl_sqlite_bind_str(st, 1, upload_id);
    sqlite3_bind_int(st, 2, after);
    sqlite3_bind_int64(st, 3, (int64_t)max + 1);
    v = fl_calloc((size_t)max + 1, sizeof *v);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (nv == (size_t)max) { *truncated = true; break; }
        fl_part_info_t *p = &v[nv++];
        p->number = sqlite3_column_int(st, 0);
        fl_sqlite_col_copy(st, 1, p->etag, sizeof p->etag);
        p->size = sqlite3_column_int64(st, 2);
        p->mtime_ms = sqlite3_column_int64(st, 3);
        p->headers = fl_sqlite_col_strdup(st, 4);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) { err = fl_sqlite_err(c, rc, "list parts"); goto out; }
    *out = v;
    *n = nv;
    v = NULL;
out:
    if (err && upload_headers) { free(*upload_headers); *upload_headers = NULL; }
    fl_part_infos_free(v, nv);
    fl_sqlite_put(s->db, c);
    return err;
}

typedef struct part_row {
    int number;
    bool used;
    char etag[48];
    int64_t size;
    char blob[ID_HEX + 1];
} part_row_t;

static int part_row_find(const void *key, const void *elem)
{
    int k = *(const int *)key, e = ((const part_row_t *)elem)->number;
    return (k > e) - (k < e);
}

fl_err_t fl_store_mpu_complete(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                               const char *upload_id, const fl_part_ref_t *parts, size_t nparts,
                               int64_t min_part_size, const char *headers,
                               const fl_put_cond_t *cond, fl_obj_meta_t *meta_out)
{
    if (s->remote) /* the object's headers are those given at create */
        return fl_s3s_mpu_complete(s->remote, bucket, key, keylen, upload_id, parts, nparts, cond, meta_out);
    fl_conn_t *c = NULL;
    fl_err_t err;
    part_row_t *rows = NULL;
    size_t nrows = 0, alloc = 0;
    char *up_headers = NULL, *old = NULL, etag[48];
    fl_buf_t blobs;
    EVP_MD_CTX *md = NULL;
    int64_t total = 0, now = fl_now_ms();
    int rc;

    fl_buf_init(&blobs, 0);
    if (nparts == 0 || !parts) return FL_ERR_INVALID;
    if (nparts > FL_S3_MAX_PARTS) return FL_ERR_INVALID;
    if (!(c = fl_sqlite_get(s->db))) return FL_ERR_IO;
    if ((err = fl_sqlite_begin(s->db, c))) goto out;
    if ((err = upload_check(c, bucket, key, keylen, upload_id, &up_headers))) goto out;
    for (size_t i = 1; i < nparts; i++)
        if (parts[i].number <= parts[i - 1].number) { err = FL_ERR_PART_ORDER; goto out; }

    sqlite3_stmt *st = c->st[ST_PART_ALL];
    fl_sqlite_bind_str(st, 1, upload_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (nrows == alloc) {
            alloc = alloc ? alloc * 2 : 16;
            rows = fl_realloc(rows, alloc * sizeof *rows);
        }
        part_row_t *r = &rows[nrows++];
        r->number = sqlite3_column_int(st, 0);
        r->used = false;
        fl_sqlite_col_copy(st, 1, r->etag, sizeof r->etag);
        r->size = sqlite3_column_int64(st, 2);
        fl_sqlite_col_copy(st, 3, r->blob, sizeof r->blob);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) { err = fl_sqlite_err(c, rc, "complete"); goto out; }

    md = EVP_MD_CTX_new();
    if (!md || !EVP_DigestInit_ex(md, EVP_md5(), NULL)) { err = FL_ERR_IO; goto out; }
    for (size_t i = 0; i < nparts; i++) {
        part_row_t *r = nrows ? bsearch(&parts[i].number, rows, nrows, sizeof *rows,
                                        part_row_find) : NULL;
        if (!r || !parts[i].etag || !etag_eq(r->etag, parts[i].etag)) {
            err = FL_ERR_INVALID_PART;
            goto out;
        }
        if (i + 1 < nparts && r->size < min_part_size) { err = FL_ERR_TOO_SMALL; goto out; }
        unsigned char bin[16];
        for (int j = 0; j < 16; j++)
            bin[j] = (unsigned char)(hexval(r->etag[2 * j]) << 4 | hexval(r->etag[2 * j + 1]));
        if (!EVP_DigestUpdate(md, bin, sizeof bin)) { err = FL_ERR_IO; goto out; }
        r->used = true;
        total += r->size;
        fl_buf_printf(&blobs, "%s%s:%lld", i ? "," : "", r->blob, (long long)r->size);
    }
    {
        unsigned char dig[EVP_MAX_MD_SIZE];
        unsigned int dn = 0;
        char hex[33];
        if (!EVP_DigestFinal_ex(md, dig, &dn) || dn != 16) { err = FL_ERR_IO; goto out; }
        fl_hex(dig, 16, hex);
        snprintf(etag, sizeof etag, "%s-%zu", hex, nparts);
    }
    if ((err = obj_check(c, bucket, key, keylen, cond, &old, NULL))) goto out;

    const char *final_headers = headers ? headers : up_headers;
    st = c->st[ST_OBJ_PUT];
    fl_sqlite_bind_str(st, 1, bucket);
    bind_key(st, 2, key, keylen);
    sqlite3_bind_int64(st, 3, total);
    fl_sqlite_bind_str(st, 4, etag);
    sqlite3_bind_int64(st, 5, now);
    sqlite3_bind_int(st, 6, (int)nparts);
    fl_sqlite_bind_str(st, 7, final_headers);
    fl_sqlite_bind_str(st, 8, blobs.ptr ? blobs.ptr : "");
    if ((err = fl_sqlite_done(c, st, "complete"))) goto out;
    sqlite3_bind_text(c->st[ST_PART_DEL_ALL], 1, upload_id, -1, SQLITE_STATIC);
    if ((err = fl_sqlite_done(c, c->st[ST_PART_DEL_ALL], "complete"))) goto out;
    sqlite3_bind_text(c->st[ST_UP_DEL], 1, upload_id, -1, SQLITE_STATIC);
    if ((err = fl_sqlite_done(c, c->st[ST_UP_DEL], "complete"))) goto out;
    if ((err = fl_sqlite_end(s->db, c, FL_OK))) goto out;

    unlink_blob_list(s, old);
    for (size_t i = 0; i < nrows; i++)
        if (!rows[i].used) unlink_blob(s, rows[i].blob);
    if (meta_out) {
        memset(meta_out, 0, sizeof *meta_out);
        fl_strlcpy(meta_out->etag, etag, sizeof meta_out->etag);
        meta_out->size = total;
        meta_out->mtime_ms = now;
        meta_out->parts = (int)nparts;
        meta_out->headers = fl_strdup(final_headers ? final_headers : "");
    }
out:
    fl_sqlite_end(s->db, c, FL_ERR_IO);
    fl_sqlite_put(s->db, c);
    EVP_MD_CTX_free(md);
    fl_buf_free(&blobs);
    free(rows);
    free(up_headers);
    free(old);
    return err;
}

static fl_err_t mpu_abort_tx(fl_store_t *s, fl_conn_t *c, const char *bucket, const char *key,
                             size_t keylen, const char *upload_id)
{
    fl_err_t err;
    char (*ids)[ID_HEX + 1] = NULL;
    size_t nids = 0;
    if ((err = fl_sqlite_begin(s->db, c))) goto out;
    if ((err = upload_check(c, bucket, key, keylen, upload_id, NULL))) goto out;
    if ((err = upload_drop(c, upload_id, &ids, &nids))) goto out;
    if ((err = fl_sqlite_end(s->db, c, FL_OK))) goto out;
    for (size_t i = 0; i < nids; i++) unlink_blob(s, ids[i]);
out:
    fl_sqlite_end(s->db, c, FL_ERR_IO);
    free(ids);
    return err;
}

fl_err_t fl_store_mpu_abort(fl_store_t *s, const char *bucket, const char *key, size_t keylen,
                            const char *upload_id)
{
    if (s->remote) return fl_s3s_mpu_abort(s->remote, bucket, key, keylen, upload_id);
    fl_conn_t *c = fl_sqlite_get(s->db);
    if (!c) return FL_ERR_IO;
    fl_err_t err = mpu_abort_tx(s, c, bucket, key, keylen, upload_id);
    if (retry_full(s, c, err)) err = mpu_abort_tx(s, c, bucket, key, keylen, upload_id);
    fl_sqlite_put(s->db, c);
    return err;
}

fl_err_t fl_store_mpu_list(fl_store_t *s, const char *bucket, const char *prefix,
                           const char *key_marker, const char *upload_id_marker, int max,
                           fl_upload_info_t **out, size_t *n, bool *truncated)
{
    if (s->remote)
        return fl_s3s_mpu_list(s->remote, bucket, prefix, key_marker, upload_id_marker, max, out, n, truncated);
    fl_conn_t *c = fl_sqlite_get(s->db);
    fl_err_t err;
    fl_upload_info_t *v = NULL;
    size_t nv = 0, alloc = 0, plen, mlen = 0;
    int64_t mcreated = 0;
    bool have_mcreated = false;
    const char *seek;
    int rc;
    *out = NULL;
    *n = 0;
    *truncated = false;
    if (!c) return FL_ERR_IO;
    prefix = prefix ? prefix : "";
    plen = strlen(prefix);
    if (key_marker && !*key_marker) key_marker = NULL;
    if (upload_id_marker && !*upload_id_marker) upload_id_marker = NULL;
    if (key_marker) mlen = strlen(key_marker);
    if ((err = bucket_exists(c, bucket, NULL))) goto out;
    if (max <= 0) goto out;
    if (key_marker && upload_id_marker) {
        sqlite3_stmt *st = c->st[ST_UP_GET];
        fl_sqlite_bind_str(st, 1, upload_id_marker);
        if (sqlite3_step(st) == SQLITE_ROW) {
            have_mcreated = true;
            mcreated = sqlite3_column_int64(st, 3);
        }
        sqlite3_reset(st);
    }
    seek = key_marker && strcmp(key_marker, prefix) > 0 ? key_marker : prefix;
    sqlite3_stmt *st = c->st[ST_UP_LIST];
    fl_sqlite_bind_str(st, 1, bucket);
    bind_key(st, 2, seek, strlen(seek));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *k = sqlite3_column_blob(st, 0);
        size_t klen = (size_t)sqlite3_column_bytes(st, 0);
        const char *uid = (const char *)sqlite3_column_text(st, 1);
        int64_t created = sqlite3_column_int64(st, 2);
        if (!k) k = "";
        if (!uid) uid = "";
        if (klen < plen || memcmp(k, prefix, plen) != 0) break;
        if (key_marker && klen == mlen && memcmp(k, key_marker, mlen) == 0) {
            /* Same key as the marker: only uploads after the marker upload. */
            if (!upload_id_marker) continue;
            if (have_mcreated ? (created < mcreated ||
                                 (created == mcreated && strcmp(uid, upload_id_marker) <= 0))
                              : strcmp(uid, upload_id_marker) <= 0)
                continue;
        }
        if (nv == (size_t)max) { *truncated = true; break; }
        if (nv == alloc) {
            alloc = alloc ? alloc * 2 : 16;
            v = fl_realloc(v, alloc * sizeof *v);
        }
        fl_upload_info_t *u = &v[nv++];
        u->key = fl_strndup(k, klen);
        u->keylen = klen;
        fl_strlcpy(u->upload_id, uid, sizeof u->upload_id);
        u->created_ms = created;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) { err = fl_sqlite_err(c, rc, "list uploads"); goto out; }
    *out = v;
    *n = nv;
    v = NULL;
out:
    fl_upload_infos_free(v, nv);
    fl_sqlite_put(s->db, c);
    return err;
}
