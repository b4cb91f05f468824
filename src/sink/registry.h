/* Avro record values through a Confluent-compatible schema registry, for
 * floe sink's io.confluent.connect.avro.AvroConverter.
 *
 * Wire format (Confluent): byte 0 = magic 0, bytes 1..4 = the schema id
 * (big-endian), then the Avro binary datum. The writer's schema is fetched
 * once per id, GET <url>/schemas/ids/<id> ({"schema": "<Avro JSON>"}), over
 * floe's one outbound HTTP client (net/httpc.h) with basic auth when given,
 * parsed into a decoding plan (format/avro_schema.h) and cached for the life
 * of the process (at most FL_SINK_MAX_SCHEMAS ids). An id the registry answers
 * 404 for is remembered for FL_SINK_UNKNOWN_SCHEMA_TTL_MS (the last
 * FL_SINK_MAX_UNKNOWN_SCHEMAS such ids): records naming it fail at once, without
 * a request each.
 *
 * A datum becomes what Confluent's AvroConverter hands the Java sink, in the
 * JSON forms of Kafka's JsonConverter, so the record goes through the same
 * conversion, inference and evolution as JSON input (sink/convert.h):
 *   record -> struct (object); array -> array; map -> map (object);
 *   [null, T] -> optional T; other unions -> a struct with one optional field
 *   per branch (named by the branch type), as AvroConverter does;
 *   enum, string -> string; bytes, fixed -> bytes (base64);
 *   date -> Connect Date (days); time-millis -> Connect Time (millis);
 *   timestamp-millis -> Connect Timestamp (epoch millis);
 *   timestamp-micros -> Connect Timestamp, the value an ISO-8601 string with
 *   microseconds (no precision lost); local-timestamp-millis/micros -> the
 *   same without a zone, inferred as timestamp (no time zone);
 *   time-micros -> Connect Time as "hh:mm:ss.ffffff";
 *   decimal (bytes or fixed) -> Connect Decimal (scale parameter);
 *   uuid -> string with schema name "uuid" (inferred as uuid, as the Java
 *   sink does from 1.11);
 *   timestamp-nanos and unknown logical types -> their physical type.
 *
 * Threads: one thread at a time per registry (the sink's run loop). */
#ifndef FL_SINK_REGISTRY_H
#define FL_SINK_REGISTRY_H
#include <jansson.h>
#include <stddef.h>
#include "base/err.h"
#include "format/avro.h"
#include "format/avro_schema.h"

typedef struct fl_sink_registry fl_sink_registry_t;

/* urls: schema.registry.url (a comma list; tried in turn when one cannot be
 * reached). user_info: "user:password" for HTTP basic auth, or NULL (a URL
 * may also carry user:password@). */
fl_err_t fl_sink_registry_new(const char *urls, const char *user_info, fl_sink_registry_t **out, char *err,
                              size_t errlen);
void fl_sink_registry_free(fl_sink_registry_t *r);

/* Decodes one message value in the wire format. *value: a new reference (an
 * object; NULL for a tombstone, p == NULL); *schema: the Connect schema of the
 * record, borrowed from the cache (valid while r lives). FL_ERR_INVALID or
 * FL_ERR_NOT_FOUND (unknown id): the record's fault. Anything else (registry
 * unreachable, 5xx, 401/403, a schema that cannot be parsed): the registry's;
 * err says which. */
fl_err_t fl_sink_avro_decode(fl_sink_registry_t *r, const void *p, size_t n, json_t **value, json_t **schema,
                             char *err, size_t errlen);

/* Pure parts, exposed for tests. The Connect schema (JsonConverter's schema
 * JSON) of node n, NULL when it cannot be expressed (a recursive record). */
json_t *fl_sink_avro_connect_schema(const fl_avro_schema_t *s, int32_t n);
/* One datum of node n from d as JSON (the forms above). */
fl_err_t fl_sink_avro_datum(const fl_avro_schema_t *s, int32_t n, fl_avro_dec_t *d, json_t **out, char *err,
                            size_t errlen);

#endif
