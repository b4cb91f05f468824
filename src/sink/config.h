/* floe sink configuration: the connector configuration a user already has for
 * the Apache Iceberg Kafka Connect sink (reference/sink.md §1), read with the
 * same keys and meanings, plus the Kafka worker settings.
 *
 * Input forms: the JSON posted to Kafka Connect's REST API ({"name": ..,
 * "config": {..}}), the bare config map, or a .properties file (key=value or
 * key: value, # and ! comments). Values may be JSON strings, numbers or
 * booleans. Every key is checked against one table (config.c): a key floe
 * does not support, or does not know, is an error naming it; a Connect
 * framework key with no meaning for one process (tasks.max, ...) is accepted
 * and noted. Worker keys (bootstrap.servers, group.id, security.protocol,
 * sasl.*, ssl.*, client.id) and consumer.* / consumer.override.* /
 * iceberg.kafka.* go to librdkafka as they are (librdkafka names an unknown
 * one); producer.* / producer.override.* to the dead-letter producer.
 *
 * Pure parsing: no network, any thread; the result is owned by the caller and
 * freed with fl_sink_config_free. */
#ifndef FL_SINK_CONFIG_H
#define FL_SINK_CONFIG_H
#include <jansson.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/err.h"

typedef struct fl_sink_route {
    char *table;                  /* "ns.table" as configured */
    bool has_regex;
    regex_t regex;                /* iceberg.table.<t>.route-regex, anchored at both ends */
} fl_sink_route_t;

typedef struct fl_sink_config {
    char *name;                   /* connector name; "floe-sink" when the file has none */
    json_t *props;                /* every key -> string value, as read (owned) */

    char **topics;                /* topics (comma list) */
    size_t n_topics;
    char *topics_regex;           /* topics.regex (librdkafka "^..." subscription) */

    fl_sink_route_t *tables;      /* iceberg.tables, with their route regexes */
    size_t n_tables;
    bool dynamic;                 /* iceberg.tables.dynamic-enabled */
    char *route_field;            /* iceberg.tables.route-field (dotted path) or NULL */
    char *default_partition_by;   /* iceberg.tables.default-partition-by or NULL */
    bool auto_create, evolve, force_optional, case_insensitive;
    int64_t commit_interval_ms;   /* iceberg.control.commit.interval-ms, default 300000 */

    bool schemas_enable;          /* value.converter.schemas.enable (JsonConverter default true) */
    bool avro;                    /* value.converter=io.confluent.connect.avro.AvroConverter */
    char *registry_url;           /* value.converter.schema.registry.url (comma list) */
    char *registry_user_info;     /* value.converter.basic.auth.user.info with credentials source USER_INFO */
    /* KafkaMetadataTransform (transforms=<name>, transforms.<name>.type=
     * org.apache.iceberg.connect.transforms.KafkaMetadataTransform), the only
     * transform floe sink runs: kmeta_field NULL when not configured */
    char *kmeta_field;            /* field_name, default _kafka_metadata */
    bool kmeta_nested;            /* nested: a struct under field_name, else field_name_<x> columns */
    char *kmeta_ext_name, *kmeta_ext_value;   /* external_field "name,value", or NULL */
    int64_t commit_max_records;   /* floe.commit.max-records: commit after this many records, 0 = off */
    int64_t commit_max_bytes;     /* floe.commit.max-bytes: commit after this many value bytes, 0 = off */
    int64_t memory_max;           /* floe.memory.max-bytes: rows buffered and Parquet row groups being
                                   * built, over every table, at most (default FL_SINK_MEMORY_DEFAULT; 0 = off) */
    bool tolerance_all;           /* errors.tolerance=all */
    char *dlq_topic;              /* errors.deadletterqueue.topic.name or NULL */
    bool errors_log;              /* errors.log.enable */
    char *metrics_listen;         /* floe.metrics.listen ("host:port", --metrics-listen): /metrics, or NULL */

    /* catalog (iceberg.catalog.*) */
    char *catalog_uri, *warehouse;
    bool sigv4;
    char *signing_name, *signing_region;
    char *access_key_id, *secret_access_key, *session_token;   /* REST signing keys */
    char *token, *credential, *oauth2_server_uri, *scope;
    char *s3_endpoint, *s3_access_key_id, *s3_secret_access_key, *s3_session_token, *client_region;
    int s3_path_style;            /* 1, 0, -1 unset */
    json_t *create_props;         /* iceberg.tables.auto-create-props.* (string map) */

    /* Kafka */
    json_t *consumer;             /* librdkafka consumer settings (string map) */
    json_t *producer;             /* librdkafka settings for the dead-letter producer */
    char *group_id;               /* group.id, else iceberg.connect.group-id, else connect-<name> */
} fl_sink_config_t;

/* Parses text (JSON object or .properties, told apart by the first
 * non-blank character) into cfg. On failure err names the key or line. */
fl_err_t fl_sink_config_parse(const char *text, size_t len, fl_sink_config_t *cfg, char *err, size_t errlen);
/* Applies one override (flags, FLOE_* variables) before fl_sink_config_finish:
 * the same key space as the file. */
fl_err_t fl_sink_config_set(fl_sink_config_t *cfg, const char *key, const char *value, char *err, size_t errlen);
/* Checks every key and fills the parsed fields. Call once, after the
 * overrides. */
fl_err_t fl_sink_config_finish(fl_sink_config_t *cfg, char *err, size_t errlen);
/* The value of key (borrowed) or NULL. */
const char *fl_sink_config_get(const fl_sink_config_t *cfg, const char *key);
/* iceberg.table.<t>.partition-by, else the default; borrowed or NULL. */
const char *fl_sink_config_partition_by(const fl_sink_config_t *cfg, const char *table);
void fl_sink_config_free(fl_sink_config_t *cfg);

#endif
