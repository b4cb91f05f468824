/* The maintenance scheduler (sched.h): a pass thread, a bounded queue, a
 * bounded pool of workers, and the job table. */
#include "maint/sched.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "base/uuid.h"
#include "catalog/maintcfg.h"
#include "iceberg/expire.h"
#include "iceberg/orphans.h"
#include "iceberg/metadata.h"
#include "iceberg/rewrite.h"
#include "maint/ops.h"
#include "net/metrics.h"

#define N_JOBS 3
#define N_STATUS 4
#define MEMO_N 256          /* direct-mapped "compaction: nothing to do" memo */
#define PAGE 100            /* buckets / tables listed per catalog call */
#define TICK_MS 1000        /* heartbeat and stop check period */

static const char *const status_names[N_STATUS] = { "Successful", "Failed", "Disabled", "Cancelled" };
enum { ST_OK, ST_FAILED, ST_DISABLED, ST_CANCELLED };

typedef enum { NEED_NO, NEED_YES } need_t;

struct job;
typedef struct worker {
    pthread_t th;
    fl_maint_t *m;
    /* the job running now, under m->mu */
    bool busy;
    char arn[FL_ARN_MAX];
    int64_t last_beat_ms;
    atomic_bool cancel;
} worker_t;

typedef struct qitem {
    fl_table_t t;
    unsigned jobs;
} qitem_t;

struct fl_maint {
    fl_maint_cfg_t cfg;
    char owner[128];
    char tmp_dir[1024];
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* queue non-empty, or stop */
    pthread_cond_t tick;        /* stop (wakes the pass thread) */
    bool stop, started;
    qitem_t *q;                 /* FL_MAINT_QUEUE_MAX */
    size_t qhead, qlen;
    pthread_t pass_th;
    worker_t *workers;
    int n_workers;
    pthread_mutex_t memo_mu;
    struct { uint64_t key, val; } memo[MEMO_N];
    /* metrics */
    _Atomic uint64_t runs[N_JOBS][N_STATUS];
    _Atomic uint64_t dur_ms[N_JOBS];
    _Atomic uint64_t bytes_rewritten, files_rewritten, bytes_written, snapshots_expired, objects_deleted;
    _Atomic int64_t running;
};

/* ---- the job table ---- */

typedef struct job {
    unsigned bit;
    const char *type;                 /* configuration type (catalog/maintcfg.h) */
    bool bucket_level;
    /* Need, given the effective configuration conf and the loaded metadata md. */
    need_t (*need)(fl_maint_t *m, const fl_table_t *t, json_t *conf, json_t *md, const char *loc, int64_t now_ms);
    /* Runs the job over ops; fills r (status, counts, message). */
    void (*run)(fl_maint_t *m, const fl_table_ops_t *ops, json_t *conf, int64_t now_ms, fl_maint_run_t *r);
} job_t;

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void compaction_opts(fl_maint_t *m, json_t *conf, fl_rewrite_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->target_file_bytes = fl_maintcfg_int(conf, FL_MAINT_COMPACTION, "targetFileSizeMB") * 1024 * 1024;
    o->min_input_files = m->cfg.min_small_files;
    o->merge_manifests_min = FL_MAINT_MERGE_MANIFESTS_MIN;
    o->tmp_dir = m->tmp_dir[0] ? m->tmp_dir : NULL;
    /* auto|binpack|sort|z-order (validated when stored; anything else: auto, the default) */
    if (fl_rewrite_strategy_parse(fl_maintcfg_str(conf, FL_MAINT_COMPACTION, "strategy"), &o->strategy))
        o->strategy = FL_REWRITE_AUTO;
}

static need_t need_compaction(fl_maint_t *m, const fl_table_t *t, json_t *conf, json_t *md, const char *loc,
                              int64_t now_ms)
{
    (void)now_ms;
    if (fl_iceberg_current_snapshot_id(md) < 0) return NEED_NO;
    fl_rewrite_opts_t o;
    compaction_opts(m, conf, &o);
    /* unchanged pointer and settings since the last "nothing to do": still nothing */
    uint64_t key = fnv(14695981039346656037ULL, t->arn);
    char sk[64];
    snprintf(sk, sizeof sk, "%" PRId64 "/%d/%d", o.target_file_bytes, o.min_input_files, (int)o.strategy);
    uint64_t val = fnv(fnv(14695981039346656037ULL, loc), sk);
    size_t slot = key % MEMO_N;
    pthread_mutex_lock(&m->memo_mu);
    bool same = m->memo[slot].key == key && m->memo[slot].val == val;
    pthread_mutex_unlock(&m->memo_mu);
    if (same) return NEED_NO;
    fl_maint_ops_ctx_t ctx;
    fl_table_ops_t ops;
    if (fl_maint_table_ops(&ctx, m->cfg.svc, t, &ops)) return NEED_NO;
    fl_rewrite_plan_t plan;
    char err[256] = "";
    need_t need = NEED_NO;
    if (fl_rewrite_plan(&ops, &o, &plan, err, sizeof err) == FL_OK) {
        need = plan.n_groups > 0 ? NEED_YES : NEED_NO;
        fl_rewrite_plan_free(&plan);
    } else {
        fl_debug("maintenance: %s.%s: compaction plan: %s", t->ns, t->name, err);
    }
    if (need == NEED_NO) {
        pthread_mutex_lock(&m->memo_mu);
        m->memo[slot].key = key;
        m->memo[slot].val = val;
        pthread_mutex_unlock(&m->memo_mu);
    }
    return need;
}

static void expire_opts(json_t *conf, int64_t now_ms, fl_expire_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->as_of_ms = now_ms;
    o->min_snapshots_to_keep = (int32_t)fl_maintcfg_int(conf, FL_MAINT_SNAPSHOTS, "minSnapshotsToKeep");
    o->max_snapshot_age_ms = fl_maintcfg_int(conf, FL_MAINT_SNAPSHOTS, "maxSnapshotAgeHours") * 3600 * 1000;
}

/* Writes status Disabled with msg as the job's status when it is not that already. */
static void record_disabled(fl_maint_t *m, const fl_table_t *t, const char *type, const char *msg, int64_t now_ms)
{
    fl_catalog_t *cat = fl_tablesvc_cfg(m->cfg.svc)->cat;
    char kind[96], *old = NULL;
    snprintf(kind, sizeof kind, "maintenance-job:%s", type);
    fl_catalog_doc_get(cat, t->arn, kind, &old);
    json_t *o = old ? json_loads(old, 0, NULL) : NULL;
    free(old);
    bool same = o && !strcmp(json_string_value(json_object_get(o, "status")) ?: "", "Disabled") &&
                !strcmp(json_string_value(json_object_get(o, "failureMessage")) ?: "", msg);
    json_decref(o);
    if (same) return;
    json_t *d = json_pack("{s:s,s:I,s:s}", "status", "Disabled", "lastRunTimestamp", (json_int_t)now_ms,
                          "failureMessage", msg);
    char *text = json_dumps(d, JSON_COMPACT);
    if (text) fl_catalog_doc_put(cat, t->arn, kind, text);
    free(text);
    json_decref(d);
}

static need_t need_snapshots(fl_maint_t *m, const fl_table_t *t, json_t *conf, json_t *md, const char *loc,
                             int64_t now_ms)
{
    (void)loc;
    fl_expire_opts_t o;
    expire_opts(conf, now_ms, &o);
    fl_expire_plan_t p;
    char err[256] = "";
    if (fl_expire_plan(md, &o, &p, err, sizeof err)) {
        fl_debug("maintenance: %s.%s: expiry plan: %s", t->ns, t->name, err);
        return NEED_NO;
    }
    need_t need = p.n_expire > 0 || p.n_refs > 0 ? NEED_YES : NEED_NO;
    if (p.disabled) record_disabled(m, t, FL_MAINT_SNAPSHOTS, p.message, now_ms);
    fl_expire_plan_free(&p);
    return need;
}

static void run_compaction(fl_maint_t *m, const fl_table_ops_t *ops, json_t *conf, int64_t now_ms, fl_maint_run_t *r)
{
    (void)now_ms;
    fl_rewrite_opts_t o;
    compaction_opts(m, conf, &o);
    fl_rewrite_result_t res;
    char err[512] = "";
    fl_err_t e = fl_rewrite_run(ops, &o, &res, err, sizeof err);
    r->files_in = res.files_in;
    r->bytes_in = res.bytes_in;
    r->files_out = res.files_out;
    r->bytes_out = res.bytes_out;
    if (e) {
        snprintf(r->status, sizeof r->status, "Failed");
        snprintf(r->message, sizeof r->message, "%s", err[0] ? err : "compaction failed");
    } else {
        snprintf(r->status, sizeof r->status, "Successful");
        if (res.groups_failed || res.groups_skipped)
            snprintf(r->message, sizeof r->message, "%s%s%d groups left for the next run: %s", res.note,
                     res.note[0] ? "; " : "", res.groups_failed + res.groups_skipped, res.last_failure);
        else
            snprintf(r->message, sizeof r->message, "%s", res.note);
    }
    atomic_fetch_add(&m->bytes_rewritten, (uint64_t)res.bytes_in);
    atomic_fetch_add(&m->files_rewritten, (uint64_t)res.files_in);
    atomic_fetch_add(&m->bytes_written, (uint64_t)res.bytes_out);
}

static void run_snapshots(fl_maint_t *m, const fl_table_ops_t *ops, json_t *conf, int64_t now_ms, fl_maint_run_t *r)
{
    fl_expire_opts_t o;
    expire_opts(conf, now_ms, &o);
    fl_expire_result_t res;
    fl_expire_snapshots(ops, &o, &res);
    r->snapshots_removed = res.snapshots_removed;
    for (int k = 0; k < FL_EXPIRE_KINDS; k++) r->objects_removed += res.files[k];
    snprintf(r->status, sizeof r->status, "%s",
             res.status == FL_EXPIRE_SUCCESSFUL ? "Successful" : res.status == FL_EXPIRE_DISABLED ? "Disabled" : "Failed");
    snprintf(r->message, sizeof r->message, "%s", res.message);
    if (res.status == FL_EXPIRE_SUCCESSFUL && res.delete_errors)
        snprintf(r->message, sizeof r->message, "%" PRId64 " files could not be deleted (first: %s)",
                 res.delete_errors, res.delete_error);
    atomic_fetch_add(&m->snapshots_expired, (uint64_t)res.snapshots_removed);
    fl_expire_result_free(&res);
}

#define FL_MAINT_UNREFERENCED_EVERY_MS ((int64_t)24 * 3600 * 1000)

/* Unreferenced-file removal lists the whole warehouse: it runs when its last run (any
 * outcome) is older than FL_MAINT_UNREFERENCED_EVERY_MS, and not before a table's
 * first snapshot. */
static need_t need_unreferenced(fl_maint_t *m, const fl_table_t *t, json_t *conf, json_t *md, const char *loc,
                                int64_t now_ms)
{
    (void)conf;
    (void)loc;
    if (fl_iceberg_current_snapshot_id(md) < 0) return NEED_NO;
    char kind[96], *doc = NULL;
    snprintf(kind, sizeof kind, "maintenance-job:%s", FL_MAINT_UNREFERENCED);
    if (fl_catalog_doc_get(fl_tablesvc_cfg(m->cfg.svc)->cat, t->arn, kind, &doc) != FL_OK) return NEED_YES;
    json_t *o = json_loads(doc, 0, NULL);
    free(doc);
    int64_t last = (int64_t)json_integer_value(json_object_get(o, "lastRunTimestamp"));
    json_decref(o);
    return now_ms - last >= FL_MAINT_UNREFERENCED_EVERY_MS ? NEED_YES : NEED_NO;
}

static void run_unreferenced(fl_maint_t *m, const fl_table_ops_t *ops, json_t *conf, int64_t now_ms,
                             fl_maint_run_t *r)
{
    fl_orphans_opts_t o = {
        .as_of_ms = now_ms,
        .unreferenced_days = (int32_t)fl_maintcfg_int(conf, FL_MAINT_UNREFERENCED, "unreferencedDays"),
        .noncurrent_days = (int32_t)fl_maintcfg_int(conf, FL_MAINT_UNREFERENCED, "nonCurrentDays"),
    };
    fl_orphans_result_t res;
    fl_orphans_run(ops, &o, &res);
    r->objects_removed = res.deleted;
    snprintf(r->status, sizeof r->status, "%s",
             res.status == FL_EXPIRE_SUCCESSFUL ? "Successful" : res.status == FL_EXPIRE_DISABLED ? "Disabled" : "Failed");
    snprintf(r->message, sizeof r->message, "%s", res.message);
    if (res.status == FL_EXPIRE_SUCCESSFUL && res.errors)
        snprintf(r->message, sizeof r->message, "%" PRId64 " objects could not be moved or deleted (first: %s)",
                 res.errors, res.error);
    else if (res.status == FL_EXPIRE_SUCCESSFUL && res.marked)
        snprintf(r->message, sizeof r->message, "%" PRId64 " objects (%" PRId64 " bytes) became noncurrent",
                 res.marked, res.marked_bytes);
}

/* One row per job; the order is the order a table's jobs run in. */
static const job_t jobs[N_JOBS] = {
    { FL_MAINT_JOB_COMPACTION, FL_MAINT_COMPACTION, false, need_compaction, run_compaction },
    { FL_MAINT_JOB_SNAPSHOTS, FL_MAINT_SNAPSHOTS, false, need_snapshots, run_snapshots },
    { FL_MAINT_JOB_UNREFERENCED, FL_MAINT_UNREFERENCED, true, need_unreferenced, run_unreferenced },
};

static const job_t *job_of(unsigned bit, int *idx)
{
    for (int i = 0; i < N_JOBS; i++)
        if (jobs[i].bit == bit) {
            if (idx) *idx = i;
            return &jobs[i];
        }
    return NULL;
}

/* The configuration of job j for t (new reference). */
static json_t *job_conf(fl_maint_t *m, const fl_table_t *t, const job_t *j)
{
    fl_catalog_t *cat = fl_tablesvc_cfg(m->cfg.svc)->cat;
    if (!j->bucket_level) return fl_maintcfg_get(cat, t->arn, j->type);
    fl_tbucket_t b;
    if (fl_catalog_bucket_get(cat, t->bucket, &b)) return fl_maintcfg_default(j->type);
    return fl_maintcfg_get(cat, b.arn, j->type);
}

/* ---- picking and running ---- */

unsigned fl_maint_pick(fl_maint_t *m, const fl_table_t *t, int64_t now_ms)
{
    if (!t->metadata_location[0] || strcmp(t->kind, "table") != 0) return 0;
    fl_tmeta_t *tm = NULL;
    char msg[256];
    if (fl_tablesvc_load(m->cfg.svc, t, &tm, msg, sizeof msg)) return 0;
    unsigned mask = 0;
    for (int i = 0; i < N_JOBS; i++) {
        if (!jobs[i].need) continue;
        json_t *conf = job_conf(m, t, &jobs[i]);
        if (fl_maintcfg_enabled(conf) &&
            jobs[i].need(m, t, conf, fl_tmeta_json(tm), t->metadata_location, now_ms) == NEED_YES)
            mask |= jobs[i].bit;
        json_decref(conf);
    }
    fl_tmeta_release(tm);
    return mask;
}

static int status_index(const char *s)
{
    for (int i = 0; i < N_STATUS; i++)
        if (!strcmp(s, status_names[i])) return i;
    return ST_FAILED;
}

static fl_err_t run_job(fl_maint_t *m, worker_t *w, const fl_table_t *t, unsigned bit, int64_t now_ms,
                        fl_maint_run_t *out)
{
    int ji = 0;
    const job_t *j = job_of(bit, &ji);
    if (!j || !j->run) return FL_ERR_INVALID;
    fl_catalog_t *cat = fl_tablesvc_cfg(m->cfg.svc)->cat;
    fl_err_t e = fl_catalog_maint_claim(cat, t->arn, j->type, m->owner, now_ms, m->cfg.lease_ms);
    if (e) return e;
    /* a worker holds t (busy, arn) for its whole queue item; a direct call
     * has no slot and no heartbeat (its lease must outlast the job) */
    worker_t local = { 0 };
    if (!w) w = &local;
    pthread_mutex_lock(&m->mu);
    w->last_beat_ms = fl_mono_ms();
    atomic_store(&w->cancel, m->stop);
    pthread_mutex_unlock(&m->mu);
    atomic_fetch_add(&m->running, 1);

    fl_maint_run_t r;
    memset(&r, 0, sizeof r);
    fl_strlcpy(r.table_arn, t->arn, sizeof r.table_arn);
    fl_strlcpy(r.type, j->type, sizeof r.type);
    fl_strlcpy(r.owner, m->owner, sizeof r.owner);
    r.start_ms = fl_now_ms();
    int64_t t0 = fl_mono_ms();
    json_t *conf = job_conf(m, t, j);
    fl_maint_ops_ctx_t ctx;
    fl_table_ops_t ops;
    if (!fl_maintcfg_enabled(conf)) {
        /* disabled since it was picked: nothing ran, nothing to record */
        json_decref(conf);
        e = FL_OK;
        goto release;
    }
    if (fl_maint_table_ops(&ctx, m->cfg.svc, t, &ops)) {
        snprintf(r.status, sizeof r.status, "Failed");
        snprintf(r.message, sizeof r.message, "the table's warehouse is not on this server's store");
    } else {
        ctx.cancel = &w->cancel;
        j->run(m, &ops, conf, now_ms, &r);
        r.commits = ctx.commits;
        if (atomic_load(&w->cancel) && strcmp(r.status, "Successful") != 0) {
            snprintf(r.status, sizeof r.status, "Cancelled");
            snprintf(r.message, sizeof r.message, "%s", m->stop ? "the server is shutting down" : "the lease was lost");
        }
    }
    json_decref(conf);
    r.end_ms = fl_now_ms();
    int si = status_index(r.status);
    char *doc = NULL;
    if (si != ST_CANCELLED) {
        json_t *d = json_pack("{s:s,s:I}", "status", r.status, "lastRunTimestamp", (json_int_t)r.start_ms);
        if (si != ST_OK && r.message[0]) json_object_set_new(d, "failureMessage", json_string(r.message));
        doc = json_dumps(d, JSON_COMPACT);
        json_decref(d);
    }
    if (fl_catalog_maint_run_add(cat, &r, doc)) fl_warn("maintenance: %s: %s: recording the run failed", t->arn, j->type);
    free(doc);
    atomic_fetch_add(&m->runs[ji][si], 1);
    atomic_fetch_add(&m->dur_ms[ji], (uint64_t)(fl_mono_ms() - t0));
    atomic_fetch_add(&m->objects_deleted, (uint64_t)r.objects_removed);
    fl_info("maintenance: %s.%s.%s: %s %s in %" PRId64 " ms (files %" PRId64 " -> %" PRId64 ", snapshots removed %"
            PRId64 ", objects removed %" PRId64 ")%s%s", t->bucket, t->ns, t->name, j->type, r.status,
            r.end_ms - r.start_ms, r.files_in, r.files_out, r.snapshots_removed, r.objects_removed,
            r.message[0] ? ": " : "", r.message);
    e = si == ST_OK || si == ST_DISABLED ? FL_OK : si == ST_CANCELLED ? FL_ERR_CLOSED : FL_ERR_INTERNAL;
    if (out) *out = r;
release:
    fl_catalog_maint_release(cat, t->arn, m->owner);
    atomic_fetch_sub(&m->running, 1);
    return e;
}

fl_err_t fl_maint_run_job(fl_maint_t *m, const fl_table_t *t, unsigned job, int64_t now_ms, fl_maint_run_t *run)
{
    return run_job(m, NULL, t, job, now_ms, run);
}

/* ---- passes ---- */

/* Calls fn for every table of every bucket until fn returns false. */
static void each_table(fl_maint_t *m, bool (*fn)(fl_maint_t *m, const fl_table_t *t, void *arg), void *arg)
{
    fl_catalog_t *cat = fl_tablesvc_cfg(m->cfg.svc)->cat;
    char after_b[64] = "";
    bool go = true;
    while (go) {
        fl_tbucket_t *bs = NULL;
        size_t nb = 0;
        bool more_b = false;
        if (fl_catalog_bucket_list(cat, NULL, after_b[0] ? after_b : NULL, PAGE, &bs, &nb, &more_b)) break;
        for (size_t i = 0; i < nb && go; i++) {
            char after_ns[FL_NAME_MAX] = "", after_n[FL_NAME_MAX] = "";
            bool more_t = true;
            while (more_t && go) {
                fl_table_t *ts = NULL;
                size_t nt = 0;
                more_t = false;
                if (fl_catalog_table_list(cat, bs[i].name, NULL, "table", NULL, after_ns[0] ? after_ns : NULL,
                                          after_n[0] ? after_n : NULL, PAGE, &ts, &nt, &more_t))
                    break;
                for (size_t k = 0; k < nt && go; k++) go = fn(m, &ts[k], arg);
                if (nt) {
                    fl_strlcpy(after_ns, ts[nt - 1].ns, sizeof after_ns);
                    fl_strlcpy(after_n, ts[nt - 1].name, sizeof after_n);
                }
                free(ts);
            }
        }
        if (nb) fl_strlcpy(after_b, bs[nb - 1].name, sizeof after_b);
        free(bs);
        if (!more_b) break;
        pthread_mutex_lock(&m->mu);
        if (m->stop) go = false;
        pthread_mutex_unlock(&m->mu);
    }
}

typedef struct pass_ctx {
    int64_t now_ms;
    int queued, ran;
    bool inline_run;
} pass_ctx_t;

/* True if t is queued or running in this process (under m->mu). */
static bool in_flight(fl_maint_t *m, const char *arn)
{
    for (size_t i = 0; i < m->qlen; i++)
        if (!strcmp(m->q[(m->qhead + i) % FL_MAINT_QUEUE_MAX].t.arn, arn)) return true;
    for (int i = 0; i < m->n_workers; i++)
        if (m->workers[i].busy && !strcmp(m->workers[i].arn, arn)) return true;
    return false;
}

static bool pass_one(fl_maint_t *m, const fl_table_t *t, void *arg)
{
    pass_ctx_t *p = arg;
    pthread_mutex_lock(&m->mu);
    bool skip = m->stop || in_flight(m, t->arn);
    bool stop = m->stop;
    pthread_mutex_unlock(&m->mu);
    if (stop) return false;
    if (skip) return true;
    unsigned mask = fl_maint_pick(m, t, p->now_ms);
    if (!mask) return true;
    if (p->inline_run) {
        for (int i = 0; i < N_JOBS; i++)
            if ((mask & jobs[i].bit) && jobs[i].run && fl_maint_run_job(m, t, jobs[i].bit, p->now_ms, NULL) != FL_ERR_CONFLICT)
                p->ran++;
        return ++p->queued < m->cfg.max_jobs_per_pass;
    }
    pthread_mutex_lock(&m->mu);
    bool room = m->qlen < FL_MAINT_QUEUE_MAX && !m->stop;
    if (room) {
        qitem_t *q = &m->q[(m->qhead + m->qlen++) % FL_MAINT_QUEUE_MAX];
        q->t = *t;
        q->jobs = mask;
        pthread_cond_signal(&m->cv);
    }
    pthread_mutex_unlock(&m->mu);
    return room && ++p->queued < m->cfg.max_jobs_per_pass;
}

int fl_maint_pass(fl_maint_t *m, int64_t now_ms)
{
    pass_ctx_t p = { .now_ms = now_ms, .inline_run = true };
    each_table(m, pass_one, &p);
    return p.ran;
}

/* ---- threads ---- */

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    fl_maint_t *m = w->m;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (!m->stop && m->qlen == 0) pthread_cond_wait(&m->cv, &m->mu);
        if (m->stop) break;
        qitem_t it = m->q[m->qhead];
        m->qhead = (m->qhead + 1) % FL_MAINT_QUEUE_MAX;
        m->qlen--;
        /* claim the table in this process before the lock drops (in_flight) */
        w->busy = true;
        fl_strlcpy(w->arn, it.t.arn, sizeof w->arn);
        pthread_mutex_unlock(&m->mu);
        for (int i = 0; i < N_JOBS; i++) {
            if (!(it.jobs & jobs[i].bit) || !jobs[i].run) continue;
            pthread_mutex_lock(&m->mu);
            bool stop = m->stop;
            pthread_mutex_unlock(&m->mu);
            if (stop) break;
            fl_err_t e = run_job(m, w, &it.t, jobs[i].bit, fl_now_ms(), NULL);
            if (e == FL_ERR_CONFLICT) break; /* another node has the table */
        }
        pthread_mutex_lock(&m->mu);
        w->busy = false;
        w->arn[0] = 0;
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* Heartbeats the leases of running jobs; cancels a job whose lease is gone. */
static void heartbeat(fl_maint_t *m)
{
    fl_catalog_t *cat = fl_tablesvc_cfg(m->cfg.svc)->cat;
    int64_t due = m->cfg.lease_ms / 3;
    for (int i = 0; i < m->n_workers; i++) {
        worker_t *w = &m->workers[i];
        char arn[FL_ARN_MAX] = "";
        pthread_mutex_lock(&m->mu);
        if (w->busy && fl_mono_ms() - w->last_beat_ms >= due) fl_strlcpy(arn, w->arn, sizeof arn);
        pthread_mutex_unlock(&m->mu);
        if (!arn[0]) continue;
        fl_err_t e = fl_catalog_maint_heartbeat(cat, arn, m->owner, fl_now_ms(), m->cfg.lease_ms);
        pthread_mutex_lock(&m->mu);
        if (w->busy && !strcmp(w->arn, arn)) {
            if (!e) w->last_beat_ms = fl_mono_ms();
            else if (e == FL_ERR_NOT_FOUND) {
                fl_warn("maintenance: %s: lease lost; cancelling the job", arn);
                atomic_store(&w->cancel, true);
            }
        }
        pthread_mutex_unlock(&m->mu);
    }
}

static void *pass_main(void *arg)
{
    fl_maint_t *m = arg;
    int64_t next = fl_mono_ms() + (m->cfg.interval_ms < 1000 ? m->cfg.interval_ms : 1000); /* first pass soon */
    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += TICK_MS / 1000;
        pthread_cond_timedwait(&m->tick, &m->mu, &ts);
        if (m->stop) break;
        pthread_mutex_unlock(&m->mu);
        heartbeat(m);
        if (fl_mono_ms() >= next) {
            pass_ctx_t p = { .now_ms = fl_now_ms() };
            each_table(m, pass_one, &p);
            if (p.queued) fl_debug("maintenance: pass queued %d tables", p.queued);
            next = fl_mono_ms() + m->cfg.interval_ms;
        }
        pthread_mutex_lock(&m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* ---- metrics ---- */

static fl_err_t render(void *arg, fl_buf_t *out)
{
    fl_maint_t *m = arg;
    fl_err_t e = fl_buf_adds(out, "# HELP floe_maintenance_runs_total Maintenance job runs by type and status.\n"
                                  "# TYPE floe_maintenance_runs_total counter\n");
    for (int j = 0; j < N_JOBS && !e; j++)
        for (int s = 0; s < N_STATUS && !e; s++)
            e = fl_buf_printf(out, "floe_maintenance_runs_total{type=\"%s\",status=\"%s\"} %llu\n", jobs[j].type,
                              status_names[s], (unsigned long long)atomic_load(&m->runs[j][s]));
    if (!e) e = fl_buf_adds(out, "# HELP floe_maintenance_run_seconds Time spent in maintenance jobs by type.\n"
                                 "# TYPE floe_maintenance_run_seconds summary\n");
    for (int j = 0; j < N_JOBS && !e; j++) {
        uint64_t n = 0;
        for (int s = 0; s < N_STATUS; s++) n += atomic_load(&m->runs[j][s]);
        e = fl_buf_printf(out, "floe_maintenance_run_seconds_sum{type=\"%s\"} %.3f\n"
                               "floe_maintenance_run_seconds_count{type=\"%s\"} %llu\n",
                          jobs[j].type, atomic_load(&m->dur_ms[j]) / 1000.0, jobs[j].type, (unsigned long long)n);
    }
    static const char *const fam[5][2] = {
        { "floe_maintenance_bytes_rewritten_total", "data bytes replaced by compaction" },
        { "floe_maintenance_files_rewritten_total", "data files replaced by compaction" },
        { "floe_maintenance_bytes_written_total", "data bytes written by compaction" },
        { "floe_maintenance_snapshots_expired_total", "snapshots removed by expiry" },
        { "floe_maintenance_objects_deleted_total", "files deleted by maintenance jobs" },
    };
    _Atomic uint64_t *vals[5] = { &m->bytes_rewritten, &m->files_rewritten, &m->bytes_written, &m->snapshots_expired,
                                  &m->objects_deleted };
    for (int f = 0; f < 5 && !e; f++)
        e = fl_buf_printf(out, "# HELP %s Total %s.\n# TYPE %s counter\n%s %llu\n", fam[f][0], fam[f][1], fam[f][0],
                          fam[f][0], (unsigned long long)atomic_load(vals[f]));
    if (!e) e = fl_buf_printf(out, "# HELP floe_maintenance_jobs_running Maintenance jobs running now.\n"
                                   "# TYPE floe_maintenance_jobs_running gauge\nfloe_maintenance_jobs_running %lld\n",
                              (long long)atomic_load(&m->running));
    return e;
}

/* ---- life cycle ---- */

fl_maint_t *fl_maint_new(const fl_maint_cfg_t *cfg)
{
    fl_maint_t *m = fl_calloc(1, sizeof *m);
    m->cfg = *cfg;
    if (m->cfg.threads <= 0) m->cfg.threads = 1;
    if (m->cfg.threads > FL_MAINT_MAX_THREADS) m->cfg.threads = FL_MAINT_MAX_THREADS;
    if (m->cfg.lease_ms <= 0) m->cfg.lease_ms = FL_MAINT_LEASE_MS;
    if (m->cfg.min_small_files <= 0) m->cfg.min_small_files = FL_MAINT_MIN_SMALL_FILES;
    if (m->cfg.max_jobs_per_pass <= 0) m->cfg.max_jobs_per_pass = FL_MAINT_JOBS_PER_PASS;
    if (cfg->owner && *cfg->owner) {
        fl_strlcpy(m->owner, cfg->owner, sizeof m->owner);
    } else {
        char host[64] = "", id[37];
        gethostname(host, sizeof host - 1);
        fl_uuid4(id);
        snprintf(m->owner, sizeof m->owner, "%.63s:%d:%.8s", host[0] ? host : "floe", (int)getpid(), id);
    }
    if (cfg->tmp_dir) fl_strlcpy(m->tmp_dir, cfg->tmp_dir, sizeof m->tmp_dir);
    m->cfg.owner = m->owner;
    m->cfg.tmp_dir = NULL;
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->memo_mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    pthread_cond_init(&m->tick, NULL);
    m->q = fl_calloc(FL_MAINT_QUEUE_MAX, sizeof *m->q);
    fl_metrics_add_source(render, m);
    return m;
}

fl_err_t fl_maint_start(fl_maint_t *m)
{
    if (m->started) return FL_OK;
    /* leases this owner still holds are a killed process's: no job runs under them */
    int freed = 0;
    if (fl_catalog_maint_release_owner(fl_tablesvc_cfg(m->cfg.svc)->cat, m->owner, &freed))
        fl_warn("maintenance: cannot free the leases of %s", m->owner);
    else if (freed)
        fl_info("maintenance: freed %d lease%s %s held before a restart", freed, freed == 1 ? "" : "s", m->owner);
    if (m->cfg.interval_ms <= 0) return FL_OK;
    m->workers = fl_calloc((size_t)m->cfg.threads, sizeof *m->workers);
    for (int i = 0; i < m->cfg.threads; i++) {
        m->workers[i].m = m;
        if (pthread_create(&m->workers[i].th, NULL, worker_main, &m->workers[i]) != 0) {
            fl_error("maintenance: cannot start a worker thread");
            break;
        }
        m->n_workers++;
    }
    if (m->n_workers == 0 || pthread_create(&m->pass_th, NULL, pass_main, m) != 0) {
        fl_error("maintenance: cannot start the scheduler");
        pthread_mutex_lock(&m->mu);
        m->stop = true;
        pthread_cond_broadcast(&m->cv);
        pthread_mutex_unlock(&m->mu);
        for (int i = 0; i < m->n_workers; i++) pthread_join(m->workers[i].th, NULL);
        m->n_workers = 0;
        return FL_ERR_INTERNAL;
    }
    m->started = true;
    return FL_OK;
}

void fl_maint_free(fl_maint_t *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    m->stop = true;
    for (int i = 0; i < m->n_workers; i++) atomic_store(&m->workers[i].cancel, true);
    pthread_cond_broadcast(&m->cv);
    pthread_cond_broadcast(&m->tick);
    pthread_mutex_unlock(&m->mu);
    if (m->started) pthread_join(m->pass_th, NULL);
    for (int i = 0; i < m->n_workers; i++) pthread_join(m->workers[i].th, NULL);
    fl_metrics_remove_source(render, m);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->memo_mu);
    pthread_cond_destroy(&m->cv);
    pthread_cond_destroy(&m->tick);
    free(m->workers);
    free(m->q);
    free(m);
}
