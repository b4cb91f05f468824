/* Taking a table over from the Apache Iceberg Kafka Connect sink without a gap.
 *
 * That sink's workers write data files, then announce them on its control topic
 * (DATA_WRITTEN events) in the Kafka transaction that also commits their source
 * offsets to the group connect-<name>; its coordinator commits them to the table
 * afterwards, recording in the snapshot summary, under
 * kafka.connect.offsets.<control-topic>.<group>, the control-topic offsets it has
 * read up to. Stopped between the two (or after commits that failed), the group's
 * offsets are past records whose files only the control topic names: floe sink,
 * resuming from the group's offsets, would leave them out. Before floe sink first
 * commits to such a table, it reads the control topic from the offsets in the
 * table's summary, as the Java coordinator would on its restart, and commits the
 * data files announced for the table since (the same filter as the coordinator:
 * this group's events, record count above zero, each file once), in a snapshot of
 * their own whose summary moves the control-topic offsets on, so that a restart
 * finds nothing twice.
 *
 * Events are Iceberg's self-describing Avro (AvroEncoderUtil: 0xC2 0x01 and the
 * schema JSON as Java's writeUTF writes it, after a 2-byte big-endian length, or in
 * later versions "aVR" 1 and a 4-byte length; then the datum), decoded
 * by field ids (Event 10500-10504, DataWritten 10300-10305, data files as in
 * manifests). Malformed events are FL_ERR_INVALID with the control-topic
 * coordinates in err; so are delete files (the Java sink's upsert mode:
 * committing the data files without them would bring deleted rows back) and files
 * outside the table's location. The caller's thread only; everything returned is
 * the caller's. */
#ifndef FL_SINK_HANDOFF_H
#define FL_SINK_HANDOFF_H
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include "base/buf.h"
#include "base/err.h"
#include "iceberg/manifest.h"

/* What one control-topic record holds for a table: *matched when it is this group's
 * DATA_WRITTEN event for table (namespace levels joined with '.', then '.', then the
 * name); its data files (record count above zero) are appended to *files / *n. */
fl_err_t fl_sink_handoff_event(fl_slice_t rec, const char *group, const char *table, bool *matched,
                               fl_data_file_t **files, size_t *n, char *err, size_t errlen);

/* Whether path names an object under location (a "/" after it, and no "." or ".."
 * segment that would climb out): the only files a takeover commits. */
bool fl_sink_handoff_under(const char *path, const char *location);

typedef struct fl_sink_handoff {
    fl_data_file_t *files;   /* announced for the table and not yet committed, each once */
    size_t n_files;
    size_t events;           /* DATA_WRITTEN events of the table read */
    json_t *offsets;         /* control partition ("0", ...) -> the next offset to read */
} fl_sink_handoff_t;

/* Reads topic (the control topic) from the offsets in from (as the summary holds
 * them; a partition not in it from its start) to its end (read_committed) with a
 * consumer made from conf (consumed, also on failure), and collects the table's
 * files under location (others are refused: the table's own files only). */
fl_err_t fl_sink_handoff_read(rd_kafka_conf_t *conf, const char *topic, json_t *from, const char *group,
                              const char *table, const char *location, fl_sink_handoff_t *out, char *err,
                              size_t errlen);
void fl_sink_handoff_free(fl_sink_handoff_t *h);

#endif
