/* floe sink --config FILE: Kafka into Iceberg tables, configured like the
 * Kafka Connect Iceberg sink (sink/config.h, sink/sink.h).
 *
 *   floe sink --config FILE [--bootstrap-servers LIST] [--group-id G]
 *             [--set KEY=VALUE]... [--log-level debug|info|warn|error]
 *             [--metrics-listen HOST:PORT]
 * Kafka worker settings: the file, then FLOE_BOOTSTRAP_SERVERS, FLOE_GROUP_ID,
 * FLOE_SECURITY_PROTOCOL, FLOE_SASL_MECHANISM, FLOE_SASL_USERNAME,
 * FLOE_SASL_PASSWORD, FLOE_SINK_METRICS_LISTEN (floe.metrics.listen: Prometheus
 * /metrics), then the flags (later wins). SIGINT/SIGTERM commit what
 * is held and leave the group; exit 0. A fatal error exits 1, a bad
 * configuration 2. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/limits.h"
#include "base/log.h"
#include "cli/cli.h"
#include "sink/config.h"
#include "sink/sink.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: floe sink --config FILE [--bootstrap-servers LIST] [--group-id G]\n"
               "                 [--set KEY=VALUE]... [--log-level debug|info|warn|error]\n"
               "                 [--metrics-listen HOST:PORT]   (Prometheus /metrics and /health)\n"
               "Consumes Kafka topics into Iceberg tables through a REST catalog, exactly once.\n"
               "FILE is the Iceberg sink connector's configuration: Connect REST JSON\n"
               "({\"name\":..,\"config\":{..}}), the bare map, or a .properties file.\n"
               "Environment: FLOE_BOOTSTRAP_SERVERS, FLOE_GROUP_ID, FLOE_SECURITY_PROTOCOL,\n"
               "FLOE_SASL_MECHANISM, FLOE_SASL_USERNAME, FLOE_SASL_PASSWORD, FLOE_SINK_METRICS_LISTEN.\n");
}

static int read_file(const char *path, fl_buf_t *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "floe sink: %s: %s\n", path, strerror(errno));
        return 1;
    }
    char chunk[65536];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (fl_buf_add(out, chunk, n)) {
            fprintf(stderr, "floe sink: %s: larger than %d bytes\n", path, FL_SINK_MAX_CONFIG_BYTES);
            rc = 1;
            break;
        }
    if (ferror(f)) {
        fprintf(stderr, "floe sink: %s: %s\n", path, strerror(errno));
        rc = 1;
    }
    fclose(f);
    return rc;
}

int fl_cmd_sink(int argc, char **argv)
{
    const char *path = NULL, *lvl = NULL;
    const char *flag_kv[64][2];
    size_t n_flag = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (i + 1 >= argc) { fprintf(stderr, "floe sink: %s needs a value\n", a); usage(stderr); return 2; }
        const char *v = argv[++i];
        if (!strcmp(a, "--config")) path = v;
        else if (!strcmp(a, "--log-level")) lvl = v;
        else if (n_flag >= 64) { fprintf(stderr, "floe sink: too many settings\n"); return 2; }
        else if (!strcmp(a, "--bootstrap-servers")) { flag_kv[n_flag][0] = "bootstrap.servers"; flag_kv[n_flag++][1] = v; }
        else if (!strcmp(a, "--group-id")) { flag_kv[n_flag][0] = "group.id"; flag_kv[n_flag++][1] = v; }
        else if (!strcmp(a, "--metrics-listen")) { flag_kv[n_flag][0] = "floe.metrics.listen"; flag_kv[n_flag++][1] = v; }
        else if (!strcmp(a, "--set")) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v) { fprintf(stderr, "floe sink: --set wants KEY=VALUE\n"); return 2; }
            argv[i][eq - v] = 0;
            flag_kv[n_flag][0] = v;
            flag_kv[n_flag++][1] = eq + 1;
        } else {
            fprintf(stderr, "floe sink: unknown flag %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!path) { usage(stderr); return 2; }
    if (lvl) fl_log_level = !strcmp(lvl, "debug") ? FL_LOG_DEBUG : !strcmp(lvl, "warn") ? FL_LOG_WARN
                          : !strcmp(lvl, "error") ? FL_LOG_ERROR : FL_LOG_INFO;

    fl_buf_t text;
    fl_buf_init(&text, FL_SINK_MAX_CONFIG_BYTES);
    fl_sink_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    char err[1024] = "";
    int rc = 2;
    if (read_file(path, &text)) { rc = 1; goto out; }
    if (fl_sink_config_parse(text.ptr ? text.ptr : "", text.len, &cfg, err, sizeof err)) {
        fprintf(stderr, "floe sink: %s: %s\n", path, err);
        goto out;
    }
    static const char *const env[][2] = {
        { "FLOE_BOOTSTRAP_SERVERS", "bootstrap.servers" }, { "FLOE_GROUP_ID", "group.id" },
        { "FLOE_SECURITY_PROTOCOL", "security.protocol" }, { "FLOE_SASL_MECHANISM", "sasl.mechanism" },
        { "FLOE_SASL_USERNAME", "sasl.username" }, { "FLOE_SASL_PASSWORD", "sasl.password" },
        { "FLOE_SINK_METRICS_LISTEN", "floe.metrics.listen" },
    };
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
        const char *v = getenv(env[i][0]);
        if (v && *v) fl_sink_config_set(&cfg, env[i][1], v, err, sizeof err);
    }
    for (size_t i = 0; i < n_flag; i++)
        if (fl_sink_config_set(&cfg, flag_kv[i][0], flag_kv[i][1], err, sizeof err)) {
            fprintf(stderr, "floe sink: %s\n", err);
            goto out;
        }
    if (fl_sink_config_finish(&cfg, err, sizeof err)) {
        fprintf(stderr, "floe sink: %s: %s\n", path, err);
        goto out;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (fl_sink_run(&cfg, &stop_flag, err, sizeof err)) {
        fprintf(stderr, "floe sink: %s\n", err);
        rc = 1;
        goto out;
    }
    rc = 0;
out:
    fl_sink_config_free(&cfg);
    fl_buf_free(&text);
    return rc;
}
