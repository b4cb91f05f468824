/* floe sink's Prometheus metrics: records and bytes in, bad records, batch
 * commits and their latency, table snapshots, files and bytes written, and
 * per assigned partition its position, the offset the tables hold, and the
 * lag behind the partition's high watermark.
 *
 * One fl_sink_metrics_t per fl_sink_run. It registers itself as a source of
 * net/metrics.h's /metrics, so any HTTP server in the process shows it;
 * `floe sink --metrics-listen ADDR` starts one (fl_sink_metrics_listen).
 * Counters are relaxed atomics (the consume loop pays two adds per record);
 * per-partition offsets sit behind a mutex and change once per commit.
 * Updates: any thread. The consumer handle is borrowed: set it once it exists
 * and clear it (NULL) before it is closed; rendering asks librdkafka for the
 * assignment, positions and cached watermarks (no broker round trip). */
#ifndef FL_SINK_METRICS_H
#define FL_SINK_METRICS_H
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>
#include "base/err.h"

typedef struct fl_sink_metrics fl_sink_metrics_t;

/* Creates and registers. Free with fl_sink_metrics_free (which stops the
 * listener, if any, and unregisters). */
fl_sink_metrics_t *fl_sink_metrics_new(void);
void fl_sink_metrics_free(fl_sink_metrics_t *m);
/* Serves /metrics and /health on addr ("127.0.0.1:9464"; port 0 picks one).
 * FL_ERR_IO (logged) when it cannot bind. */
fl_err_t fl_sink_metrics_listen(fl_sink_metrics_t *m, const char *addr);
/* The bound port, 0 when not listening. */
int fl_sink_metrics_port(const fl_sink_metrics_t *m);
/* The consumer whose assignment is shown (borrowed), or NULL before it closes. */
void fl_sink_metrics_consumer(fl_sink_metrics_t *m, rd_kafka_t *rk);

/* One record of `bytes` value bytes consumed. */
void fl_sink_metrics_record(fl_sink_metrics_t *m, int64_t bytes);
/* A bad record; dead_lettered when it went to the dead-letter topic. */
void fl_sink_metrics_bad(fl_sink_metrics_t *m, bool dead_lettered);
/* A table snapshot landed with rows rows in files data files of bytes bytes. */
void fl_sink_metrics_snapshot(fl_sink_metrics_t *m, int64_t rows, int64_t files, int64_t bytes);
/* A batch's commit ended after ms milliseconds (ok: every table and the
 * group offsets committed). */
void fl_sink_metrics_batch(fl_sink_metrics_t *m, bool ok, int64_t ms);
/* Memory held by rows and row groups not yet committed (floe.memory.max-bytes):
 * the gauge and its peak. */
void fl_sink_metrics_memory(fl_sink_metrics_t *m, int64_t bytes);
/* A batch cut because memory reached the cap. */
void fl_sink_metrics_memory_cut(fl_sink_metrics_t *m);
/* The assignment was paused (on) or resumed for memory. */
void fl_sink_metrics_paused(fl_sink_metrics_t *m, bool on);
/* The tables hold topic-partition up to next (exclusive): after a commit, or
 * where an assigned partition starts. */
void fl_sink_metrics_committed(fl_sink_metrics_t *m, const char *topic, int32_t partition, int64_t next);

#endif
