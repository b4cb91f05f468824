/* Per-server HTTP metrics, rendered in the Prometheus text format.
 *
 * Each HTTP server owns one fl_metrics_t; all live ones are kept in a process
 * registry so /metrics on any listener shows every server (label `server`).
 * Updates are lock-free (relaxed atomics on fixed slots; no allocation per
 * request). Op labels are interned into at most FL_HTTP_METRICS_MAX_OPS slots
 * (then "other"); (op, status) pairs are capped at FL_HTTP_METRICS_MAX_SERIES
 * (then op="other",status="other"). */
#ifndef FL_NET_METRICS_H
#define FL_NET_METRICS_H
#include <stdint.h>
#include "base/buf.h"
#include "base/err.h"

typedef struct fl_metrics fl_metrics_t;

/* Creates and registers metrics for a server named `server` (copied).
 * Any thread. Free with fl_metrics_free. */
fl_metrics_t *fl_metrics_new(const char *server);
/* Unregisters and frees. No other thread may still update m. */
void fl_metrics_free(fl_metrics_t *m);
/* Records one finished request. op may be NULL ("unknown"); it is copied on
 * first sight, so any string works, but literals are the fast path. Any thread. */
void fl_metrics_request(fl_metrics_t *m, const char *op, int status, int64_t dur_ns,
                        uint64_t bytes_in, uint64_t bytes_out);
/* Adjusts the open-connection gauge by delta. Any thread. */
void fl_metrics_conn_add(fl_metrics_t *m, int delta);
/* Sets the gauges of parked (idle, threadless) and active (mid-request)
 * connections. Any thread (the server calls it under its own lock). */
void fl_metrics_conn_state(fl_metrics_t *m, int parked, int active);
/* Counts an idle connection closed to make room for a newcomer. Any thread. */
void fl_metrics_conn_evicted(fl_metrics_t *m);
/* Appends the text exposition of every registered server to out, then of
 * every registered source. Any thread. */
fl_err_t fl_metrics_render(fl_buf_t *out);

/* Other metric families on the same /metrics (e.g. the maintenance scheduler,
 * whose module sits above net/): fn appends its families to out; it runs
 * under the registry lock and must not call back into this module. Add and
 * remove from any thread; remove before arg goes away. At most
 * FL_METRICS_MAX_SOURCES at once (more are ignored). */
#define FL_METRICS_MAX_SOURCES 8
typedef fl_err_t (*fl_metrics_source_fn)(void *arg, fl_buf_t *out);
void fl_metrics_add_source(fl_metrics_source_fn fn, void *arg);
void fl_metrics_remove_source(fl_metrics_source_fn fn, void *arg);

#endif
