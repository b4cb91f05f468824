/* Fuzz target: a Kafka Connect Iceberg sink control-topic event (src/sink/handoff.c):
 * Iceberg's self-describing Avro ("aVR" 1, schema length, schema JSON, datum), decoded
 * for a DATA_WRITTEN event of group connect-handoff naming table handoff.events. The
 * seeds are real events of the Java sink 1.10.1 (tests/compat/sink_handoff.py). Nothing
 * may crash or leak; a matched event's files must have a path. */
#include <stdint.h>
#include <stdlib.h>
#include "sink/handoff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fl_data_file_t *files = NULL;
    size_t n = 0;
    bool matched = false;
    char err[512];
    fl_sink_handoff_event(fl_slice((const char *)data, size), "connect-handoff", "handoff.events", &matched, &files,
                          &n, err, sizeof err);
    for (size_t i = 0; i < n; i++) {
        if (!files[i].file_path) abort();
        fl_data_file_free(&files[i]);
    }
    free(files);
    return 0;
}
