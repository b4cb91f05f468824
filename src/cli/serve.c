/* floe serve: configuration (flags > FLOE_* environment > config file >
 * defaults, from one table), the data-plane and catalog listeners, signal
 * handling (SIGTERM/SIGINT: graceful stop) and periodic store sweeping. */
#include "api/catalog.h"
#include "api/s3.h"
#include "catalog/iam.h"
#include "catalog/tablesvc.h"
#include "maint/sched.h"
#include "auth/keys.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "base/uuid.h"
#include "cli/cli.h"
#include "net/http.h"
#include "meta/catalog.h"
#include "store/store.h"
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OPT_DATA_DIR, OPT_S3_LISTEN, OPT_CATALOG_LISTEN, OPT_REGION, OPT_INSECURE, OPT_ACCESS_LOG,
       OPT_LOG_LEVEL, OPT_ROOT_AKID, OPT_ROOT_SECRET, OPT_ACCOUNT, OPT_ARN_STYLE, OPT_PUBLIC_S3,
       OPT_CONFIG, OPT_INSECURE_KEY_FILE, OPT_MAINT_INTERVAL, OPT_MAINT_THREADS, OPT_S3_DOMAIN,
       OPT_LOCATION_SCHEME, OPT_CATALOG_DB, OPT_DRAIN, OPT_OBJ_STORE, OPT_OBJ_ENDPOINT, OPT_OBJ_REGION,
       OPT_OBJ_AKID, OPT_OBJ_SECRET, OPT_OBJ_TOKEN, OPT_OBJ_PATH_STYLE, OPT_IAM_KEY_FILE, OPT__COUNT };

/* http://HOST:PORT for a listen address and the port it got (a wildcard host
 * is shown as 127.0.0.1; port 0 in the address is the bound port). */
static void listen_url(const char *listen, int port, char *out, size_t cap)
{
    const char *colon = strrchr(listen, ':');
    int hl = colon ? (int)(colon - listen) : 0;
    bool wild = hl == 0 || !strncmp(listen, "0.0.0.0", (size_t)hl) || !strncmp(listen, "[::]", (size_t)hl);
    snprintf(out, cap, "http://%.*s:%d", wild ? 9 : hl, wild ? "127.0.0.1" : listen, port);
}

/* The configuration keys: flag name (also the config-file key), environment
 * variable, default, help. */
static const struct {
    const char *name, *env, *def, *help;
    bool flag; /* boolean: given without a value */
} opts[OPT__COUNT] = {
    [OPT_DATA_DIR] = { "data-dir", "FLOE_DATA_DIR", "./floe-data", "directory for the catalog and objects", false },
    [OPT_S3_LISTEN] = { "s3-listen", "FLOE_S3_LISTEN", "127.0.0.1:9000", "S3 data plane address", false },
    [OPT_CATALOG_LISTEN] = { "catalog-listen", "FLOE_CATALOG_LISTEN", "127.0.0.1:8181", "S3 Tables / Iceberg REST address", false },
    [OPT_REGION] = { "region", "FLOE_REGION", "us-east-1", "region reported to clients", false },
    [OPT_INSECURE] = { "insecure-no-auth", "FLOE_INSECURE_NO_AUTH", "false", "accept unsigned requests (local development only)", true },
    [OPT_ACCESS_LOG] = { "access-log", "FLOE_ACCESS_LOG", "true", "log one line per request", false },
    [OPT_LOG_LEVEL] = { "log-level", "FLOE_LOG_LEVEL", "info", "debug, info, warn or error", false },
    [OPT_ROOT_AKID] = { "root-access-key-id", "FLOE_ROOT_ACCESS_KEY_ID", "", "root access key id (else generated)", false },
    [OPT_ROOT_SECRET] = { "root-secret-access-key", "FLOE_ROOT_SECRET_ACCESS_KEY", "", "root secret (else generated)", false },
    [OPT_ACCOUNT] = { "account", "FLOE_ACCOUNT", "000000000000", "account id in ARNs", false },
    [OPT_ARN_STYLE] = { "arn-style", "FLOE_ARN_STYLE", "osstables", "ARNs as 'osstables' (acs:osstables:...) or 'aws' (arn:aws:s3tables:...)", false },
    [OPT_PUBLIC_S3] = { "public-s3-endpoint", "FLOE_PUBLIC_S3_ENDPOINT", "", "data-plane URL handed to catalog clients (default: http://S3-LISTEN)", false },
    [OPT_CONFIG] = { "config", "FLOE_CONFIG", "", "config file: 'key value' lines with the flag names as keys", false },
    [OPT_INSECURE_KEY_FILE] = { "allow-insecure-key-file", "FLOE_ALLOW_INSECURE_KEY_FILE", "false", "use DATA-DIR/root-key even if group or others can access it (else: refuse to start)", true },
    [OPT_MAINT_INTERVAL] = { "maintenance-interval", "FLOE_MAINTENANCE_INTERVAL", "60", "seconds between maintenance passes over every table (0: no automatic maintenance)", false },
    [OPT_MAINT_THREADS] = { "maintenance-threads", "FLOE_MAINTENANCE_THREADS", "1", "maintenance jobs run at once (1-16)", false },
    [OPT_S3_DOMAIN] = { "s3-domain", "FLOE_S3_DOMAIN", "", "virtual-hosted buckets on the data plane: Host {bucket}.DOMAIN names the bucket (the path is the key); the catalog hands out oss.endpoint http://DOMAIN:PORT", false },
    [OPT_LOCATION_SCHEME] = { "location-scheme", "FLOE_LOCATION_SCHEME", "s3", "scheme of new tables' locations: 's3' (s3://) or 'oss' (oss://, as OSS Tables; both are read)", false },
    [OPT_CATALOG_DB] = { "catalog-db", "FLOE_CATALOG_DB", "", "catalog store: postgresql://USER:PASSWORD@HOST:PORT/DB, shared by several nodes (default: DATA-DIR/catalog.db, SQLite)", false },
    [OPT_OBJ_STORE] = { "object-store", "FLOE_OBJECT_STORE", "", "keep objects in an S3-compatible store, s3://BUCKET[/PREFIX], shared by several nodes (default: DATA-DIR/objects on local disk)", false },
    [OPT_OBJ_ENDPOINT] = { "object-store-endpoint", "FLOE_OBJECT_STORE_ENDPOINT", "", "the object store's URL, http(s)://HOST[:PORT] (default: AWS S3 in --object-store-region)", false },
    [OPT_OBJ_REGION] = { "object-store-region", "FLOE_OBJECT_STORE_REGION", "us-east-1", "the object store's SigV4 region", false },
    [OPT_OBJ_AKID] = { "object-store-access-key-id", "FLOE_OBJECT_STORE_ACCESS_KEY_ID", "", "access key id for the object store (empty: unsigned requests)", false },
    [OPT_OBJ_SECRET] = { "object-store-secret-access-key", "FLOE_OBJECT_STORE_SECRET_ACCESS_KEY", "", "secret for the object store (prefer the environment variable)", false },
    [OPT_OBJ_TOKEN] = { "object-store-session-token", "FLOE_OBJECT_STORE_SESSION_TOKEN", "", "session token for the object store's temporary credentials", false },
    [OPT_OBJ_PATH_STYLE] = { "object-store-path-style", "FLOE_OBJECT_STORE_PATH_STYLE", "false", "address the object store's bucket in the path (MinIO, Ceph, SeaweedFS, floe) instead of the host name", true },
    [OPT_IAM_KEY_FILE] = { "iam-master-key-file", "FLOE_IAM_MASTER_KEY_FILE", "", "32-byte key sealing IAM secrets in the catalog, the same file on every node (default: DATA-DIR/iam-master-key, made on first start)", false },
    [OPT_DRAIN] = { "drain-seconds", "FLOE_DRAIN_SECONDS", "0", "on SIGTERM, keep serving this long while /health answers 503 (a load balancer stops sending), then stop", false },
};

/* /health: the catalog store and the object store answer (checked at most
 * once a second; every connection thread may ask), and the node is not
 * draining. */
typedef struct health {
    fl_catalog_t *cat;
    fl_store_t *store;
    pthread_mutex_t mu;
    int64_t checked_ms;
    bool ok;
    char detail[256];
    bool draining;                     /* under mu */
} health_t;

static bool health_check(void *ud, char *detail, size_t cap)
{
    health_t *h = ud;
    pthread_mutex_lock(&h->mu);
    int64_t now = fl_mono_ms();
    if (!h->cat) {
        h->ok = false;
        snprintf(h->detail, sizeof h->detail, "node: starting\n");
    } else if (!h->checked_ms || now - h->checked_ms >= 1000) {
        fl_bucket_info_t bi;
        bool cat_ok = fl_catalog_ping(h->cat) == FL_OK;
        fl_err_t se = fl_store_bucket_head(h->store, "floe-health-probe", &bi);
        bool store_ok = se == FL_OK || se == FL_ERR_NO_BUCKET;
        snprintf(h->detail, sizeof h->detail, "catalog %s: %s\nstore: %s\n", fl_catalog_backend(h->cat),
                 cat_ok ? "ok" : "unreachable", store_ok ? "ok" : "unreachable");
        h->ok = cat_ok && store_ok;
        h->checked_ms = now;
    }
    bool ok = h->ok && !h->draining;
    snprintf(detail, cap, "%s%s", h->detail, h->draining ? "node: draining\n" : "");
    pthread_mutex_unlock(&h->mu);
    return ok;
}

/* where with any password replaced by "***" (for logs). */
static void redact_url(const char *where, char *out, size_t cap)
{
    const char *at = strchr(where, '@'), *scheme = strstr(where, "://");
    const char *colon = scheme && at ? memchr(scheme + 3, ':', (size_t)(at - scheme - 3)) : NULL;
    if (colon) snprintf(out, cap, "%.*s:***%s", (int)(colon - where), where, at);
    else snprintf(out, cap, "%s", where);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: floe serve [options]\n\noptions (flag, environment, default):\n");
    for (int i = 0; i < OPT__COUNT; i++)
        fprintf(f, "  --%-24s %-28s %-16s %s\n", opts[i].name, opts[i].env,
                opts[i].def[0] ? opts[i].def : "-", opts[i].help);
}

/* This node's id, kept in dir/node-id (made once, a UUID): the owner of its
 * maintenance leases, stable across restarts so that a restarted node frees
 * what its killed process held (maint/sched.h). The data dir's store lock
 * keeps two processes from being one node. */
static bool node_id(const char *dir, char out[37])
{
    char path[4200];
    snprintf(path, sizeof path, "%s/node-id", dir);
    bool ok = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, out, 36);
        out[n > 0 ? n : 0] = 0;
        ok = n == 36;
        if (!ok) errno = n < 0 ? errno : EINVAL;
        goto out;
    }
    if (errno != ENOENT) goto out;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) goto out;
    fl_uuid4(out);
    ok = write(fd, out, 36) == 36 && fsync(fd) == 0;
    if (!ok) unlink(path);
out:
    if (fd >= 0) close(fd);
    if (!ok) fl_error("cannot read or make the node id %s: %s", path, strerror(errno));
    return ok;
}

static bool truthy(const char *v)
{
    return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"));
}

static int find_opt(const char *name)
{
    for (int i = 0; i < OPT__COUNT; i++)
        if (!strcmp(opts[i].name, name)) return i;
    return -1;
}

/* Config file: "key value" or "key = value" lines, '#' comments. */
static bool load_config_file(const char *path, char **vals, const bool *from_flag)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "floe: cannot open config file %s: %s\n", path, strerror(errno));
        return false;
    }
    char line[4096];
    int lineno = 0;
    bool ok = true;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        p[strcspn(p, "\r\n")] = 0;
        if (!*p || *p == '#') continue;
        char *k = p;
        size_t kl = strcspn(p, " \t=");
        char *v = p + kl;
        while (*v == ' ' || *v == '\t' || *v == '=') v++;
        k[kl] = 0;
        int i = find_opt(k);
        if (i < 0 || i == OPT_CONFIG) {
            fprintf(stderr, "floe: %s:%d: unknown key '%s'\n", path, lineno, k);
            ok = false;
            continue;
        }
        if (!from_flag[i] && !getenv(opts[i].env)) {
            free(vals[i]);
            vals[i] = fl_strdup(v);
        }
    }
    fclose(f);
    return ok;
}

int fl_cmd_serve(int argc, char **argv)
{
    char *vals[OPT__COUNT] = { 0 };
    bool from_flag[OPT__COUNT] = { 0 };
    struct option lo[OPT__COUNT + 2];
    for (int i = 0; i < OPT__COUNT; i++)
        lo[i] = (struct option){ opts[i].name, opts[i].flag ? optional_argument : required_argument, NULL, 1000 + i };
    lo[OPT__COUNT] = (struct option){ "help", no_argument, NULL, 'h' };
    lo[OPT__COUNT + 1] = (struct option){ 0 };
    int c, rc = 1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 0;
        }
        if (c < 1000) {
            usage(stderr);
            return 2;
        }
        int i = c - 1000;
        free(vals[i]);
        vals[i] = fl_strdup(optarg ? optarg : "true");
        from_flag[i] = true;
    }
    if (optind < argc) {
        fprintf(stderr, "floe serve: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    for (int i = 0; i < OPT__COUNT; i++)
        if (!vals[i] && getenv(opts[i].env)) vals[i] = fl_strdup(getenv(opts[i].env));
    if (vals[OPT_CONFIG] && *vals[OPT_CONFIG] && !load_config_file(vals[OPT_CONFIG], vals, from_flag))
        return 2;
    for (int i = 0; i < OPT__COUNT; i++)
        if (!vals[i]) vals[i] = fl_strdup(opts[i].def);

    const char *lvl = vals[OPT_LOG_LEVEL];
    fl_log_level = !strcmp(lvl, "debug") ? FL_LOG_DEBUG : !strcmp(lvl, "warn") ? FL_LOG_WARN
                 : !strcmp(lvl, "error") ? FL_LOG_ERROR : FL_LOG_INFO;

    /* Signals: handled by sigwait in this thread only. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* A multipart object is read through one descriptor per part. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    fl_store_t *store = NULL;
    fl_catalog_t *cat = NULL;
    fl_tablesvc_t *svc = NULL;
    fl_iam_t *iam = NULL;
    fl_maint_t *maint = NULL;
    fl_http_server_t *s3srv = NULL, *catsrv = NULL;
    health_t hc = { .mu = PTHREAD_MUTEX_INITIALIZER };
    const char *dir = vals[OPT_DATA_DIR];
    char objdir[4096];
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        fl_error("cannot create data directory %s: %s", dir, strerror(errno));
        goto out;
    }
    fl_keys_t keys;
    bool generated;
    if (fl_keys_root(dir, vals[OPT_ROOT_AKID], vals[OPT_ROOT_SECRET], truthy(vals[OPT_INSECURE_KEY_FILE]),
                     &keys, &generated) != FL_OK)
        goto out;
    snprintf(objdir, sizeof objdir, "%s/objects", dir);
    if (mkdir(objdir, 0700) != 0 && errno != EEXIST) {
        fl_error("cannot create %s: %s", objdir, strerror(errno));
        goto out;
    }
    if (vals[OPT_OBJ_STORE][0]) {
        fl_store_s3_cfg_t oc = {
            .url = vals[OPT_OBJ_STORE], .endpoint = vals[OPT_OBJ_ENDPOINT][0] ? vals[OPT_OBJ_ENDPOINT] : NULL,
            .region = vals[OPT_OBJ_REGION], .akid = vals[OPT_OBJ_AKID], .secret = vals[OPT_OBJ_SECRET],
            .session_token = vals[OPT_OBJ_TOKEN], .path_style = truthy(vals[OPT_OBJ_PATH_STYLE]),
        };
        store = fl_store_open_s3(objdir, &oc);
    } else {
        store = fl_store_open(objdir);
    }
    if (!store) goto out;

    char catpath[4200], public_s3[512];
    if (vals[OPT_CATALOG_DB][0]) snprintf(catpath, sizeof catpath, "%s", vals[OPT_CATALOG_DB]);
    else snprintf(catpath, sizeof catpath, "%s/catalog.db", dir);
    cat = fl_catalog_open(catpath);
    if (!cat) goto out;
    pthread_mutex_lock(&hc.mu);
    hc.cat = cat;
    hc.store = store;
    pthread_mutex_unlock(&hc.mu);
    char keypath[4200];
    if (vals[OPT_IAM_KEY_FILE][0]) snprintf(keypath, sizeof keypath, "%s", vals[OPT_IAM_KEY_FILE]);
    else snprintf(keypath, sizeof keypath, "%s/iam-master-key", dir);
    iam = fl_iam_open(cat, keypath, &keys, vals[OPT_ACCOUNT]);
    if (!iam) goto out;
    fl_s3_cfg_t s3cfg = {
        .store = store, .region = vals[OPT_REGION], .insecure_no_auth = truthy(vals[OPT_INSECURE]),
        .lookup = fl_iam_lookup, .lookup_ud = iam, .iam = iam,
        .domain = vals[OPT_S3_DOMAIN][0] ? vals[OPT_S3_DOMAIN] : NULL,
    };
    bool access_log = truthy(vals[OPT_ACCESS_LOG]);
    fl_http_server_cfg_t hs = { .name = "s3", .listen = vals[OPT_S3_LISTEN], .handler = fl_s3_handle,
                                .ud = &s3cfg, .access_log = access_log, .health = health_check, .health_ud = &hc };
    s3srv = fl_http_server_start(&hs);
    if (!s3srv) goto out;
    if (vals[OPT_PUBLIC_S3][0]) snprintf(public_s3, sizeof public_s3, "%s", vals[OPT_PUBLIC_S3]);
    else listen_url(vals[OPT_S3_LISTEN], fl_http_server_port(s3srv), public_s3, sizeof public_s3);
    if (strcmp(vals[OPT_ARN_STYLE], "aws") && strcmp(vals[OPT_ARN_STYLE], "osstables")) {
        fl_error("--arn-style must be 'aws' or 'osstables'");
        goto out;
    }
    if (strcmp(vals[OPT_LOCATION_SCHEME], "s3") && strcmp(vals[OPT_LOCATION_SCHEME], "oss")) {
        fl_error("--location-scheme must be 's3' or 'oss'");
        goto out;
    }
    fl_tablesvc_cfg_t svccfg = {
        .cat = cat, .store = store,
        .scope = { .region = vals[OPT_REGION], .account = vals[OPT_ACCOUNT], .aws = !strcmp(vals[OPT_ARN_STYLE], "aws"),
                   .any_account = true },
        .oss_locations = !strcmp(vals[OPT_LOCATION_SCHEME], "oss"),
    };
    svc = fl_tablesvc_open(&svccfg);
    fl_catalog_cfg_t catcfg = {
        .svc = svc, .s3_endpoint = public_s3, .s3_domain = s3cfg.domain,
        .insecure_no_auth = s3cfg.insecure_no_auth, .lookup = fl_iam_lookup, .lookup_ud = iam, .iam = iam,
    };
    fl_http_server_cfg_t cs = { .name = "catalog", .listen = vals[OPT_CATALOG_LISTEN], .handler = fl_catalog_handle,
                                .ud = &catcfg, .access_log = access_log, .health = health_check, .health_ud = &hc };
    catsrv = fl_http_server_start(&cs);
    if (!catsrv) goto out;
    fl_tablesvc_sweep(svc, fl_now_ms() - FL_STALE_UPLOAD_S * 1000LL);
    char *end;
    double interval_s = strtod(vals[OPT_MAINT_INTERVAL], &end);
    long threads = strtol(vals[OPT_MAINT_THREADS], NULL, 10);
    if (*end || interval_s < 0 || interval_s > 86400 * 365 || threads < 1 || threads > FL_MAINT_MAX_THREADS) {
        fl_error("--maintenance-interval wants seconds (0 = off) and --maintenance-threads 1-%d", FL_MAINT_MAX_THREADS);
        goto out;
    }
    double drain_s = strtod(vals[OPT_DRAIN], &end);
    if (*end || drain_s < 0 || drain_s > 3600) {
        fl_error("--drain-seconds wants 0-3600");
        goto out;
    }
    char node[37];
    if (!node_id(dir, node)) goto out;
    fl_maint_cfg_t mcfg = { .svc = svc, .interval_ms = (int64_t)(interval_s * 1000), .threads = (int)threads,
                            .owner = node };
    maint = fl_maint_new(&mcfg);
    if (fl_maint_start(maint)) goto out;

    if (s3cfg.insecure_no_auth) fl_warn("--insecure-no-auth: unsigned requests are accepted");
    printf("floe serve\n");
    printf("  data dir        %s\n", dir);
    char redacted[4200];
    redact_url(catpath, redacted, sizeof redacted);
    printf("  catalog store   %s (%s)\n", fl_catalog_backend(cat), redacted);
    char cat_url[512];
    listen_url(vals[OPT_CATALOG_LISTEN], fl_http_server_port(catsrv), cat_url, sizeof cat_url);
    printf("  S3 data plane   %s (port %d)\n", public_s3, fl_http_server_port(s3srv));
    printf("  S3 Tables API   %s (port %d)\n", cat_url, fl_http_server_port(catsrv));
    printf("  Iceberg REST    %s/iceberg\n", cat_url);
    printf("  region          %s\n", vals[OPT_REGION]);
    if (mcfg.interval_ms > 0)
        printf("  maintenance     every %gs, %ld thread%s\n", interval_s, threads, threads == 1 ? "" : "s");
    else
        printf("  maintenance     off\n");
    printf("  root access key %s\n", keys.akid);
    if (generated)
        printf("  root secret     %s  (generated now; kept in %s/root-key, mode 0600)\n", keys.secret, dir);
    else
        printf("  root secret     (configured, or in %s/root-key)\n", dir);
    fflush(stdout);

    int64_t last_sweep = fl_mono_ms();
    for (;;) {
        struct timespec ts = { .tv_sec = 60 };
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            if (drain_s > 0 && !hc.draining) {
                /* /health says 503 from now on; keep serving until the balancer has noticed */
                fl_info("signal %d: draining for %gs (/health answers 503), then shutting down", sig, drain_s);
                pthread_mutex_lock(&hc.mu);
                hc.draining = 1;
                pthread_mutex_unlock(&hc.mu);
                int64_t until = fl_mono_ms() + (int64_t)(drain_s * 1000);
                while (fl_mono_ms() < until) {
                    int64_t left = until - fl_mono_ms();
                    struct timespec d = { .tv_sec = left / 1000, .tv_nsec = (left % 1000) * 1000000L };
                    if (sigtimedwait(&set, NULL, &d) == SIGINT) break;   /* a second ^C: now */
                }
            }
            fl_info("signal %d: shutting down", sig);
            break;
        }
        if (fl_mono_ms() - last_sweep > 3600 * 1000) {
            fl_store_sweep(store, fl_now_ms());
            fl_tablesvc_sweep(svc, fl_now_ms() - FL_STALE_UPLOAD_S * 1000LL);
            last_sweep = fl_mono_ms();
        }
    }
    rc = 0;
out:
    /* maintenance first: running jobs stop at their next step, before the
     * listeners and the service they commit through go away */
    fl_maint_free(maint);
    if (catsrv) fl_http_server_stop(catsrv, 10000);
    if (s3srv) fl_http_server_stop(s3srv, 10000);
    fl_tablesvc_close(svc);
    fl_iam_close(iam);
    if (cat) fl_catalog_close(cat);
    if (store) fl_store_close(store);
    for (int i = 0; i < OPT__COUNT; i++) free(vals[i]);
    return rc;
}
