/* floe sink: Kafka topics into Iceberg tables through any Iceberg REST
 * catalog, exactly once, without a control topic.
 *
 * One process is one member of the Kafka consumer group (librdkafka,
 * cooperative-sticky). Records are converted (sink/convert.h), routed to
 * their tables (static list, route regexes, or dynamic), and written through
 * floe's appender (iceberg/append.h: Parquet files, manifests, a fast-append
 * commit). Every iceberg.control.commit.interval-ms the batch commits, one
 * snapshot per table it touched, then the Kafka group offsets.
 *
 * Exactly once: each snapshot's summary carries floe.offsets.<group>, a JSON
 * map {"topic": {"partition": next offset}} for all the partitions the group
 * has committed to that table, merged (max per partition) with the value on
 * the snapshot it builds on, at every attempt. The commit asserts that parent
 * snapshot, so the map and the data land together or not at all. A member
 * keeps, per table, the map it last saw; a commit whose parent carries a
 * larger offset for a partition of the batch than that (another member wrote
 * it, or an earlier commit of this one whose answer was lost) is refused
 * (fenced): nothing lands, the files are deleted, and the process re-reads
 * from the last committed position with the tables' maps reloaded. On start,
 * assignment, rewind: a partition resumes at the Kafka group offset (a hint,
 * committed only after all tables of a batch), moved up to the smallest
 * offset all static tables have; any record below a table's offset for its
 * partition is not written to that table again. The batch is committed
 * before partitions are revoked or assigned, so a batch only holds
 * partitions this member owns.
 *
 * Bad records (not JSON, no envelope, a value that does not fit its column,
 * no route): errors.tolerance=none stops the sink with the record's
 * coordinates and the reason, committing nothing of the open batch;
 * errors.tolerance=all sends the record to the dead-letter topic (if set)
 * with __connect.errors.* headers and goes on.
 *
 * Threads: fl_sink_run runs on the caller's thread until *stop is set (then it
 * commits what it holds and leaves the group) or a fatal error; it starts one
 * committer thread, which commits the batch handed to it (its tables'
 * appenders, the partitions' ranges) while the caller's thread consumes the
 * next, and joins it before it returns. */
#ifndef FL_SINK_SINK_H
#define FL_SINK_SINK_H
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include "base/err.h"
#include "sink/config.h"

/* Runs the sink. cfg is borrowed (finished by fl_sink_config_finish). Returns
 * FL_OK after a clean stop, else the error (err says why). */
fl_err_t fl_sink_run(const fl_sink_config_t *cfg, volatile sig_atomic_t *stop, char *err, size_t errlen);

/* The summary key of a group's offsets ("floe.offsets.<group>"), into buf. */
void fl_sink_offsets_key(const char *group, char *buf, size_t n);
/* The group's offset map on the snapshot snap_id of table metadata md or its
 * nearest ancestor that carries one (new reference; an empty object if
 * none). Walks at most FL_SINK_MAX_ANCESTRY snapshots. */
json_t *fl_sink_table_offsets(json_t *md, int64_t snap_id, const char *key);
/* The same; *cut tells whether the walk stopped at a snapshot that is no
 * longer in md (expired) before it found the key. */
json_t *fl_sink_table_offsets_cut(json_t *md, int64_t snap_id, const char *key, bool *cut);

#endif
