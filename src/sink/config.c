/* Connector configuration (see config.h). One table says what every key
 * means to floe: used, accepted with no effect for one process, or not
 * supported (with why). Anything else is unknown and refused. */
#include "sink/config.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/mem.h"

enum { K_USE, K_NOTE, K_NO };

typedef struct key_rule {
    const char *key;      /* exact key, or a prefix when it ends in '.' or '*' */
    int kind;
    const char *why;      /* K_NOTE / K_NO: shown to the user */
} key_rule_t;

static const key_rule_t RULES[] = {
    /* Kafka Connect framework */
    { "name", K_USE, NULL },
    { "connector.class", K_USE, NULL },
    { "tasks.max", K_NOTE, "one floe sink process is one consumer-group member; run more processes to scale out" },
    { "topics", K_USE, NULL },
    { "topics.regex", K_USE, NULL },
    { "key.converter", K_NOTE, "record keys are not written (as the Iceberg sink)" },
    { "key.converter.*", K_NOTE, "record keys are not written (as the Iceberg sink)" },
    { "header.converter", K_NOTE, "record headers are not written (as the Iceberg sink)" },
    { "value.converter", K_USE, NULL },
    { "value.converter.schemas.enable", K_USE, NULL },
    /* Confluent's AvroConverter */
    { "value.converter.schema.registry.url", K_USE, NULL },
    { "value.converter.basic.auth.credentials.source", K_USE, NULL },
    { "value.converter.basic.auth.user.info", K_USE, NULL },
    { "value.converter.schema.registry.basic.auth.user.info", K_USE, NULL },
    { "value.converter.auto.register.schemas", K_NOTE, "floe sink only reads schemas by the id in each record" },
    { "value.converter.use.latest.version", K_NOTE, "floe sink reads each record with the schema its id names" },
    { "value.converter.latest.compatibility.strict", K_NOTE, "floe sink reads each record with the schema its id names" },
    { "value.converter.value.subject.name.strategy", K_NOTE, "floe sink reads schemas by id, not by subject" },
    { "value.converter.key.subject.name.strategy", K_NOTE, "floe sink reads schemas by id, not by subject" },
    { "value.converter.enhanced.avro.schema.support", K_NOTE, "Avro enums are read as strings either way" },
    { "value.converter.connect.meta.data", K_NOTE, "no effect on how floe sink reads values" },
    { "value.converter.schemas.cache.config", K_NOTE, "floe sink caches up to 4096 schema ids" },
    { "value.converter.scrub.invalid.names", K_NOTE, "field names are used as the schema writes them" },
    { "value.converter.schema.registry.ssl.*", K_NOTE, "HTTPS to the registry uses the system's CA store" },
    { "errors.tolerance", K_USE, NULL },
    { "errors.deadletterqueue.topic.name", K_USE, NULL },
    { "errors.deadletterqueue.context.headers.enable", K_NOTE, "floe always adds the __connect.errors.* headers" },
    { "errors.deadletterqueue.topic.replication.factor", K_NOTE, "create the dead-letter topic beforehand" },
    { "errors.log.enable", K_USE, NULL },
    { "errors.log.include.messages", K_NOTE, "messages are not logged" },
    { "errors.retry.timeout", K_NOTE, "conversion errors are not retried" },
    { "errors.retry.delay.max.ms", K_NOTE, "conversion errors are not retried" },
    { "transforms", K_USE, NULL },   /* only KafkaMetadataTransform: checked in fl_sink_config_finish */
    { "transforms.*", K_USE, NULL },
    { "predicates", K_NO, "predicates are not supported" },
    { "predicates.*", K_NO, "predicates are not supported" },
    { "consumer.override.*", K_USE, NULL },
    { "producer.override.*", K_USE, NULL },
    /* worker settings */
    { "bootstrap.servers", K_USE, NULL },
    { "group.id", K_USE, NULL },
    { "client.id", K_USE, NULL },
    { "security.protocol", K_USE, NULL },
    { "sasl.*", K_USE, NULL },
    { "ssl.*", K_USE, NULL },
    { "consumer.*", K_USE, NULL },
    { "producer.*", K_USE, NULL },
    /* the Iceberg sink */
    { "iceberg.tables", K_USE, NULL },
    { "iceberg.tables.dynamic-enabled", K_USE, NULL },
    { "iceberg.tables.route-field", K_USE, NULL },
    { "iceberg.tables.default-partition-by", K_USE, NULL },
    { "iceberg.tables.auto-create-enabled", K_USE, NULL },
    { "iceberg.tables.evolve-schema-enabled", K_USE, NULL },
    { "iceberg.tables.schema-force-optional", K_USE, NULL },
    { "iceberg.tables.schema-case-insensitive", K_USE, NULL },
    { "iceberg.tables.auto-create-props.*", K_USE, NULL },
    { "iceberg.tables.default-commit-branch", K_NO, "commits go to main; branches are not supported yet" },
    { "iceberg.tables.default-id-columns", K_NO, "floe sink is append-only (id columns have no effect in the Apache sink either)" },
    { "iceberg.tables.write-props.*", K_NO, "set write.* as table properties instead" },
    { "iceberg.tables.upsert-mode-enabled", K_NO, "upsert is a Tabular-sink feature; floe sink appends only" },
    { "iceberg.tables.cdc-field", K_NO, "CDC is a Tabular-sink feature; floe sink appends only" },
    { "iceberg.control.commit.interval-ms", K_USE, NULL },
    { "floe.commit.max-records", K_USE, NULL },
    { "floe.commit.max-bytes", K_USE, NULL },
    { "floe.metrics.listen", K_USE, NULL },
    { "floe.memory.max-bytes", K_USE, NULL },
    { "iceberg.control.commit.timeout-ms", K_NOTE, "floe sink has no coordinator to wait for" },
    { "iceberg.control.commit.threads", K_NOTE, "tables are committed in turn" },
    { "iceberg.control.commit.max-consecutive-failures", K_NOTE, "a failed commit re-reads the batch and retries" },
    { "iceberg.control.topic", K_USE, NULL },  /* read once per table, to take it over from the Java sink (sink/handoff.h) */
    { "iceberg.control.group-id-prefix", K_NOTE, "floe sink has no control topic" },
    { "iceberg.control.group-id", K_NO, "a Tabular-sink key: use group.id or iceberg.connect.group-id" },
    { "iceberg.coordinator.transactional.prefix", K_NOTE, "floe sink uses no Kafka transactions" },
    { "iceberg.coordinator-executor-keep-alive-timeout-ms", K_NOTE, "floe sink has no coordinator" },
    { "iceberg.connect.group-id", K_USE, NULL },
    { "iceberg.catalog", K_NOTE, "the catalog name has no effect" },
    { "iceberg.kafka.*", K_USE, NULL },
    { "iceberg.hadoop-conf-dir", K_NO, "Hadoop configuration is not used: floe sink talks to REST catalogs" },
    { "iceberg.hadoop.*", K_NO, "Hadoop configuration is not used: floe sink talks to REST catalogs" },
    { "iceberg.catalog.type", K_USE, NULL },
    { "iceberg.catalog.catalog-impl", K_NO, "only REST catalogs (iceberg.catalog.type=rest)" },
    { "iceberg.catalog.uri", K_USE, NULL },
    { "iceberg.catalog.warehouse", K_USE, NULL },
    { "iceberg.catalog.rest.sigv4-enabled", K_USE, NULL },
    { "iceberg.catalog.rest.auth.type", K_USE, NULL },
    { "iceberg.catalog.rest.signing-name", K_USE, NULL },
    { "iceberg.catalog.rest.signing-region", K_USE, NULL },
    { "iceberg.catalog.rest.access-key-id", K_USE, NULL },
    { "iceberg.catalog.rest.secret-access-key", K_USE, NULL },
    { "iceberg.catalog.rest.session-token", K_USE, NULL },
    { "iceberg.catalog.token", K_USE, NULL },
    { "iceberg.catalog.credential", K_USE, NULL },
    { "iceberg.catalog.oauth2-server-uri", K_USE, NULL },
    { "iceberg.catalog.scope", K_USE, NULL },
    { "iceberg.catalog.token-refresh-enabled", K_NOTE, "OAuth2 tokens are fetched again when they expire" },
    { "iceberg.catalog.io-impl", K_USE, NULL },
    { "iceberg.catalog.client.region", K_USE, NULL },
    { "iceberg.catalog.s3.endpoint", K_USE, NULL },
    { "iceberg.catalog.s3.access-key-id", K_USE, NULL },
    { "iceberg.catalog.s3.secret-access-key", K_USE, NULL },
    { "iceberg.catalog.s3.session-token", K_USE, NULL },
    { "iceberg.catalog.s3.path-style-access", K_USE, NULL },
    { "iceberg.catalog.header.X-Iceberg-Access-Delegation", K_NOTE, "vended credentials are used when the catalog sends them" },
};

/* Per-table keys iceberg.table.<t>.<suffix>. */
static const key_rule_t TABLE_RULES[] = {
    { "route-regex", K_USE, NULL },
    { "partition-by", K_USE, NULL },
    { "id-columns", K_NO, "floe sink is append-only (id columns have no effect in the Apache sink either)" },
    { "commit-branch", K_NO, "commits go to main; branches are not supported yet" },
};

static const key_rule_t *rule_for(const char *key, const key_rule_t *rules, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t m = strlen(rules[i].key);
        if (rules[i].key[m - 1] == '*') {
            if (!strncmp(key, rules[i].key, m - 1) && key[m - 1]) return &rules[i];
        } else if (!strcmp(key, rules[i].key)) {
            return &rules[i];
        }
    }
    return NULL;
}

/* ---- reading ---- */

static fl_err_t put(fl_sink_config_t *cfg, const char *key, json_t *v, char *err, size_t errlen)
{
    char num[64];
    const char *s;
    if (json_is_string(v)) s = json_string_value(v);
    else if (json_is_true(v)) s = "true";
    else if (json_is_false(v)) s = "false";
    else if (json_is_integer(v)) { snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v)); s = num; }
    else if (json_is_real(v)) { snprintf(num, sizeof num, "%.17g", json_real_value(v)); s = num; }
    else return fl_err_fmt(err, errlen, FL_ERR_INVALID, "\"%s\": the value must be a string, number or boolean", key);
    json_object_set_new(cfg->props, key, json_string(s));
    return FL_OK;
}

static fl_err_t parse_json(const char *text, size_t len, fl_sink_config_t *cfg, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "line %d: %s", je.line, je.text);
    fl_err_t e = FL_OK;
    json_t *conf = json_object_get(root, "config");
    json_t *name = json_object_get(root, "name");
    if (json_is_object(conf)) {
        /* {"name": ..., "config": {...}} as posted to Connect's REST API */
        const char *k;
        json_t *v;
        json_object_foreach(root, k, v)
            if (strcmp(k, "name") && strcmp(k, "config")) {
                e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "\"%s\": unknown top-level key (expected \"name\" and \"config\")", k);
                goto out;
            }
        if (name && !json_is_string(name)) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "\"name\" must be a string");
            goto out;
        }
        if (name) json_object_set_new(cfg->props, "name", json_copy(name));
    } else {
        conf = root;
    }
    const char *k;
    json_t *v;
    json_object_foreach(conf, k, v)
        if ((e = put(cfg, k, v, err, errlen))) goto out;
out:
    json_decref(root);
    return e;
}

static fl_err_t parse_properties(const char *text, size_t len, fl_sink_config_t *cfg, char *err, size_t errlen)
{
    size_t i = 0;
    int lineno = 0;
    fl_buf_t key, val;
    fl_buf_init(&key, 0);
    fl_buf_init(&val, 0);
    fl_err_t e = FL_OK;
    while (i < len) {
        lineno++;
        size_t end = i;
        while (end < len && text[end] != '\n') end++;
        size_t a = i, b = end;
        i = end + 1;
        while (a < b && isspace((unsigned char)text[a])) a++;
        while (b > a && isspace((unsigned char)text[b - 1])) b--;
        if (a == b || text[a] == '#' || text[a] == '!') continue;
        size_t sep = a;
        while (sep < b && text[sep] != '=' && text[sep] != ':') sep++;
        if (sep == b) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "line %d: expected key=value", lineno);
            goto out;
        }
        size_t ke = sep, vs = sep + 1;
        while (ke > a && isspace((unsigned char)text[ke - 1])) ke--;
        while (vs < b && isspace((unsigned char)text[vs])) vs++;
        fl_buf_reset(&key);
        fl_buf_reset(&val);
        fl_buf_add(&key, text + a, ke - a);
        fl_buf_add(&val, text + vs, b - vs);
        fl_buf_addc(&key, 0);
        fl_buf_addc(&val, 0);
        if (!key.ptr[0]) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "line %d: empty key", lineno);
            goto out;
        }
        json_object_set_new(cfg->props, key.ptr, json_string(val.ptr));
    }
out:
    fl_buf_free(&key);
    fl_buf_free(&val);
    return e;
}

fl_err_t fl_sink_config_parse(const char *text, size_t len, fl_sink_config_t *cfg, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->props = json_object();
    cfg->s3_path_style = -1;
    size_t i = 0;
    while (i < len && isspace((unsigned char)text[i])) i++;
    if (i < len && text[i] == '{') return parse_json(text, len, cfg, err, errlen);
    return parse_properties(text, len, cfg, err, errlen);
}

fl_err_t fl_sink_config_set(fl_sink_config_t *cfg, const char *key, const char *value, char *err, size_t errlen)
{
    if (!*key) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "empty key");
    json_object_set_new(cfg->props, key, json_string(value));
    return FL_OK;
}

const char *fl_sink_config_get(const fl_sink_config_t *cfg, const char *key)
{
    return json_string_value(json_object_get(cfg->props, key));
}

/* ---- checking ---- */

static fl_err_t get_bool(const fl_sink_config_t *cfg, const char *key, bool def, bool *out, char *err, size_t errlen)
{
    const char *v = fl_sink_config_get(cfg, key);
    *out = def;
    if (!v) return FL_OK;
    if (!strcasecmp(v, "true")) *out = true;
    else if (!strcasecmp(v, "false")) *out = false;
    else return fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s: \"%s\" is not true or false", key, v);
    return FL_OK;
}

static char *dup_opt(const fl_sink_config_t *cfg, const char *key)
{
    const char *v = fl_sink_config_get(cfg, key);
    return v && *v ? fl_strdup(v) : NULL;
}

/* Splits a comma list (trimmed, empty entries dropped). */
static char **split_list(const char *s, size_t *n)
{
    char **out = NULL;
    *n = 0;
    while (s && *s) {
        const char *c = strchr(s, ',');
        size_t m = c ? (size_t)(c - s) : strlen(s);
        const char *a = s, *b = s + m;
        while (a < b && isspace((unsigned char)*a)) a++;
        while (b > a && isspace((unsigned char)b[-1])) b--;
        if (b > a) {
            out = fl_realloc(out, (*n + 1) * sizeof *out);
            out[(*n)++] = fl_strndup(a, (size_t)(b - a));
        }
        s = c ? c + 1 : NULL;
    }
    return out;
}

static fl_err_t check_key(fl_sink_config_t *cfg, const char *key, char *err, size_t errlen)
{
    const key_rule_t *r = rule_for(key, RULES, sizeof RULES / sizeof RULES[0]);
    if (!r && !strncmp(key, "iceberg.table.", 14)) {
        const char *dot = strrchr(key + 14, '.');
        if (dot && dot > key + 14) r = rule_for(dot + 1, TABLE_RULES, sizeof TABLE_RULES / sizeof TABLE_RULES[0]);
    }
    if (!r) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s: unknown key (not a key of the Iceberg sink or a Kafka worker setting floe sink supports)", key);
    if (r->kind == K_NO) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s: not supported: %s", key, r->why);
    if (r->kind == K_NOTE) fl_info("sink config: %s has no effect: %s", key, r->why);
    return FL_OK;
}

/* Kafka settings: worker keys, then consumer.*, then iceberg.kafka.* and the
 * overrides (later wins), as Connect layers them. */
static void kafka_props(fl_sink_config_t *cfg)
{
    static const char *const worker[] = { "bootstrap.servers", "client.id", "security.protocol" };
    cfg->consumer = json_object();
    cfg->producer = json_object();
    const char *k;
    json_t *v;
    for (size_t i = 0; i < sizeof worker / sizeof worker[0]; i++) {
        const char *s = fl_sink_config_get(cfg, worker[i]);
        if (s) {
            json_object_set_new(cfg->consumer, worker[i], json_string(s));
            json_object_set_new(cfg->producer, worker[i], json_string(s));
        }
    }
    json_object_foreach(cfg->props, k, v)
        if (!strncmp(k, "sasl.", 5) || !strncmp(k, "ssl.", 4)) {
            json_object_set(cfg->consumer, k, v);
            json_object_set(cfg->producer, k, v);
        }
    static const struct { const char *prefix; int to; } layers[] = {
        { "consumer.", 0 }, { "producer.", 1 }, { "iceberg.kafka.", 2 },
        { "consumer.override.", 0 }, { "producer.override.", 1 },
    };
    for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++) {
        size_t m = strlen(layers[l].prefix);
        json_object_foreach(cfg->props, k, v) {
            if (strncmp(k, layers[l].prefix, m)) continue;
            if (l < 2 && !strncmp(k + m, "override.", 9)) continue;
            if (layers[l].to != 1) json_object_set(cfg->consumer, k + m, v);
            if (layers[l].to != 0) json_object_set(cfg->producer, k + m, v);
        }
    }
}

/* transforms: one alias whose type is the Iceberg sink's KafkaMetadataTransform
 * (field_name, nested, external_field as it reads them); anything else is not
 * supported and named. */
static fl_err_t transforms(fl_sink_config_t *cfg, char *err, size_t errlen)
{
    static const char *const kmeta = "org.apache.iceberg.connect.transforms.KafkaMetadataTransform";
    const char *list = fl_sink_config_get(cfg, "transforms");
    size_t n = 0;
    char **names = split_list(list, &n);
    fl_err_t e = FL_OK;
    fl_buf_t k;
    fl_buf_init(&k, 0);
    const char *key;
    json_t *v;
    if (n > 1) {
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "transforms: \"%s\": floe sink runs one transform, "
                       "KafkaMetadataTransform; other single message transforms are not supported", list);
        goto out;
    }
    json_object_foreach(cfg->props, key, v) {
        if (strncmp(key, "transforms.", 11)) continue;
        size_t m = n ? strlen(names[0]) : 0;
        const char *rest = key + 11 + m;
        if (!n || strncmp(key + 11, names[0], m) || *rest != '.' ||
            (strcmp(rest, ".type") && strcmp(rest, ".field_name") && strcmp(rest, ".nested") &&
             strcmp(rest, ".external_field"))) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s: not supported: floe sink runs only "
                           "KafkaMetadataTransform (type, field_name, nested, external_field) of the alias in transforms", key);
            goto out;
        }
    }
    if (!n) goto out;
    fl_buf_printf(&k, "transforms.%s.type", names[0]);
    const char *type = fl_sink_config_get(cfg, k.ptr);
    if (!type || strcmp(type, kmeta)) {
        e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s: \"%s\" is not supported (single message transforms are not, "
                       "except %s)", k.ptr, type ? type : "", kmeta);
        goto out;
    }
    fl_buf_reset(&k);
    fl_buf_printf(&k, "transforms.%s.field_name", names[0]);
    const char *fn = fl_sink_config_get(cfg, k.ptr);
    cfg->kmeta_field = fl_strdup(fn && *fn ? fn : "_kafka_metadata");
    fl_buf_reset(&k);
    fl_buf_printf(&k, "transforms.%s.nested", names[0]);
    if ((e = get_bool(cfg, k.ptr, false, &cfg->kmeta_nested, err, errlen))) goto out;
    fl_buf_reset(&k);
    fl_buf_printf(&k, "transforms.%s.external_field", names[0]);
    const char *ext = fl_sink_config_get(cfg, k.ptr);
    if (ext) {
        const char *c = strchr(ext, ',');
        if (!c || c == ext || strchr(c + 1, ',')) {
            e = fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s: \"%s\" is not name,value", k.ptr, ext);
            goto out;
        }
        cfg->kmeta_ext_name = fl_strndup(ext, (size_t)(c - ext));
        cfg->kmeta_ext_value = fl_strdup(c + 1);
    }
out:
    fl_buf_free(&k);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return e;
}

fl_err_t fl_sink_config_finish(fl_sink_config_t *cfg, char *err, size_t errlen)
{
    fl_err_t e;
    const char *k;
    json_t *v;
    json_object_foreach(cfg->props, k, v)
        if ((e = check_key(cfg, k, err, errlen))) return e;

    const char *name = fl_sink_config_get(cfg, "name");
    cfg->name = fl_strdup(name && *name ? name : "floe-sink");
    const char *cls = fl_sink_config_get(cfg, "connector.class");
    if (cls && strcmp(cls, "org.apache.iceberg.connect.IcebergSinkConnector"))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "connector.class: \"%s\" is not "
                          "org.apache.iceberg.connect.IcebergSinkConnector (the Apache Iceberg sink)", cls);

    cfg->topics = split_list(fl_sink_config_get(cfg, "topics"), &cfg->n_topics);
    cfg->topics_regex = dup_opt(cfg, "topics.regex");
    if (!cfg->n_topics == !cfg->topics_regex)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "set exactly one of topics and topics.regex");

    size_t nt = 0;
    char **tables = split_list(fl_sink_config_get(cfg, "iceberg.tables"), &nt);
    cfg->tables = fl_calloc(nt ? nt : 1, sizeof *cfg->tables);
    for (size_t i = 0; i < nt; i++) cfg->tables[i].table = tables[i];
    cfg->n_tables = nt;
    free(tables);
    if ((e = get_bool(cfg, "iceberg.tables.dynamic-enabled", false, &cfg->dynamic, err, errlen)) ||
        (e = get_bool(cfg, "iceberg.tables.auto-create-enabled", false, &cfg->auto_create, err, errlen)) ||
        (e = get_bool(cfg, "iceberg.tables.evolve-schema-enabled", false, &cfg->evolve, err, errlen)) ||
        (e = get_bool(cfg, "iceberg.tables.schema-force-optional", false, &cfg->force_optional, err, errlen)) ||
        (e = get_bool(cfg, "iceberg.tables.schema-case-insensitive", false, &cfg->case_insensitive, err, errlen)) ||
        (e = get_bool(cfg, "value.converter.schemas.enable", true, &cfg->schemas_enable, err, errlen)) ||
        (e = get_bool(cfg, "errors.log.enable", false, &cfg->errors_log, err, errlen)))
        return e;
    cfg->route_field = dup_opt(cfg, "iceberg.tables.route-field");
    cfg->default_partition_by = dup_opt(cfg, "iceberg.tables.default-partition-by");
    if (cfg->dynamic && cfg->n_tables)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "iceberg.tables and iceberg.tables.dynamic-enabled exclude each other");
    if (!cfg->dynamic && !cfg->n_tables)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "set iceberg.tables, or iceberg.tables.dynamic-enabled=true with iceberg.tables.route-field");
    if (cfg->dynamic && !cfg->route_field)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "iceberg.tables.dynamic-enabled needs iceberg.tables.route-field");
    json_object_foreach(cfg->props, k, v) {
        size_t kl = strlen(k), sl = strlen(".route-regex");
        if (strncmp(k, "iceberg.table.", 14) || kl <= 14 + sl || strcmp(k + kl - sl, ".route-regex")) continue;
        char *t = fl_strndup(k + 14, kl - 14 - sl);
        size_t i = 0;
        while (i < cfg->n_tables && strcmp(cfg->tables[i].table, t)) i++;
        free(t);
        if (i == cfg->n_tables)
            return fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s: the table is not in iceberg.tables", k);
        fl_buf_t re;
        fl_buf_init(&re, 0);
        fl_buf_printf(&re, "^(%s)$", json_string_value(v));
        int rc = regcomp(&cfg->tables[i].regex, re.ptr, REG_EXTENDED | REG_NOSUB);
        fl_buf_free(&re);
        if (rc) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s: not a valid (POSIX extended) regular expression", k);
        cfg->tables[i].has_regex = true;
    }
    if (cfg->n_tables && cfg->route_field) {
        for (size_t i = 0; i < cfg->n_tables; i++)
            if (!cfg->tables[i].has_regex)
                fl_warn("sink config: iceberg.table.%s.route-regex is not set: no record is routed to it",
                        cfg->tables[i].table);
    }

    const char *iv = fl_sink_config_get(cfg, "iceberg.control.commit.interval-ms");
    cfg->commit_interval_ms = 300000;
    if (iv) {
        char *end;
        errno = 0;
        long long x = strtoll(iv, &end, 10);
        if (errno || *end || x <= 0)
            return fl_err_fmt(err, errlen, FL_ERR_INVALID, "iceberg.control.commit.interval-ms: \"%s\" is not a positive integer", iv);
        cfg->commit_interval_ms = x;
    }

    cfg->memory_max = FL_SINK_MEMORY_DEFAULT;
    static const char *const caps[] = { "floe.commit.max-records", "floe.commit.max-bytes", "floe.memory.max-bytes" };
    int64_t *capv[] = { &cfg->commit_max_records, &cfg->commit_max_bytes, &cfg->memory_max };
    for (size_t i = 0; i < 3; i++) {
        const char *cv = fl_sink_config_get(cfg, caps[i]);
        if (!cv) continue;
        char *end;
        errno = 0;
        long long x = strtoll(cv, &end, 10);
        if (errno || *end || x < 0)
            return fl_err_fmt(err, errlen, FL_ERR_INVALID, "%s: \"%s\" is not a non-negative integer", caps[i], cv);
        *capv[i] = x;
    }
    if ((e = transforms(cfg, err, errlen))) return e;

    const char *vc = fl_sink_config_get(cfg, "value.converter");
    cfg->avro = vc && !strcmp(vc, "io.confluent.connect.avro.AvroConverter");
    if (vc && !cfg->avro && strcmp(vc, "org.apache.kafka.connect.json.JsonConverter"))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "value.converter: \"%s\" is not supported (only "
                          "org.apache.kafka.connect.json.JsonConverter, with or without schemas, and "
                          "io.confluent.connect.avro.AvroConverter)", vc);
    cfg->registry_url = dup_opt(cfg, "value.converter.schema.registry.url");
    if (cfg->avro && !cfg->registry_url)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "value.converter.schema.registry.url is required with the AvroConverter");
    if (!cfg->avro && cfg->registry_url)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "value.converter.schema.registry.url: only with "
                          "value.converter=io.confluent.connect.avro.AvroConverter");
    const char *src = fl_sink_config_get(cfg, "value.converter.basic.auth.credentials.source");
    const char *ui = fl_sink_config_get(cfg, "value.converter.basic.auth.user.info");
    if (!ui) ui = fl_sink_config_get(cfg, "value.converter.schema.registry.basic.auth.user.info");
    if (src && strcmp(src, "USER_INFO") && strcmp(src, "URL"))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "value.converter.basic.auth.credentials.source: \"%s\" is not "
                          "supported (USER_INFO or URL)", src);
    /* as Confluent's client: USER_INFO takes user.info, URL the URL's user:password@ (the default) */
    if (src && !strcmp(src, "USER_INFO")) {
        if (!ui || !strchr(ui, ':'))
            return fl_err_fmt(err, errlen, FL_ERR_INVALID, "value.converter.basic.auth.user.info must be user:password "
                              "with credentials source USER_INFO");
        cfg->registry_user_info = fl_strdup(ui);
    } else if (ui) {
        fl_warn("sink config: value.converter.basic.auth.user.info is ignored without "
                "value.converter.basic.auth.credentials.source=USER_INFO (as in Confluent's client)");
    }
    const char *tol = fl_sink_config_get(cfg, "errors.tolerance");
    if (tol && strcmp(tol, "none") && strcmp(tol, "all"))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "errors.tolerance: \"%s\" is not none or all", tol);
    cfg->tolerance_all = tol && !strcmp(tol, "all");
    cfg->dlq_topic = dup_opt(cfg, "errors.deadletterqueue.topic.name");
    cfg->metrics_listen = dup_opt(cfg, "floe.metrics.listen");
    if (cfg->dlq_topic && !cfg->tolerance_all)
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "errors.deadletterqueue.topic.name needs errors.tolerance=all (as in Kafka Connect)");

    /* catalog */
    const char *type = fl_sink_config_get(cfg, "iceberg.catalog.type");
    if (!type || strcmp(type, "rest"))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "iceberg.catalog.type: floe sink needs \"rest\"%s%s%s",
                          type ? " (not \"" : "", type ? type : "", type ? "\")" : "");
    cfg->catalog_uri = dup_opt(cfg, "iceberg.catalog.uri");
    if (!cfg->catalog_uri) return fl_err_fmt(err, errlen, FL_ERR_INVALID, "iceberg.catalog.uri is required");
    cfg->warehouse = dup_opt(cfg, "iceberg.catalog.warehouse");
    bool sig = false;
    if ((e = get_bool(cfg, "iceberg.catalog.rest.sigv4-enabled", false, &sig, err, errlen))) return e;
    const char *at = fl_sink_config_get(cfg, "iceberg.catalog.rest.auth.type");
    if (at && strcmp(at, "sigv4") && strcmp(at, "none") && strcmp(at, "oauth2"))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "iceberg.catalog.rest.auth.type: \"%s\" is not sigv4, oauth2 or none", at);
    cfg->sigv4 = sig || (at && !strcmp(at, "sigv4"));
    cfg->signing_name = dup_opt(cfg, "iceberg.catalog.rest.signing-name");
    cfg->signing_region = dup_opt(cfg, "iceberg.catalog.rest.signing-region");
    cfg->access_key_id = dup_opt(cfg, "iceberg.catalog.rest.access-key-id");
    cfg->secret_access_key = dup_opt(cfg, "iceberg.catalog.rest.secret-access-key");
    cfg->session_token = dup_opt(cfg, "iceberg.catalog.rest.session-token");
    cfg->token = dup_opt(cfg, "iceberg.catalog.token");
    cfg->credential = dup_opt(cfg, "iceberg.catalog.credential");
    cfg->oauth2_server_uri = dup_opt(cfg, "iceberg.catalog.oauth2-server-uri");
    cfg->scope = dup_opt(cfg, "iceberg.catalog.scope");
    cfg->s3_endpoint = dup_opt(cfg, "iceberg.catalog.s3.endpoint");
    cfg->s3_access_key_id = dup_opt(cfg, "iceberg.catalog.s3.access-key-id");
    cfg->s3_secret_access_key = dup_opt(cfg, "iceberg.catalog.s3.secret-access-key");
    cfg->s3_session_token = dup_opt(cfg, "iceberg.catalog.s3.session-token");
    cfg->client_region = dup_opt(cfg, "iceberg.catalog.client.region");
    bool ps;
    if (fl_sink_config_get(cfg, "iceberg.catalog.s3.path-style-access")) {
        if ((e = get_bool(cfg, "iceberg.catalog.s3.path-style-access", false, &ps, err, errlen))) return e;
        cfg->s3_path_style = ps;
    }
    const char *io = fl_sink_config_get(cfg, "iceberg.catalog.io-impl");
    if (io && strcmp(io, "org.apache.iceberg.aws.s3.S3FileIO") && strcmp(io, "org.apache.iceberg.io.ResolvingFileIO"))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "iceberg.catalog.io-impl: \"%s\" is not supported (S3FileIO or ResolvingFileIO)", io);
    cfg->create_props = json_object();
    json_object_foreach(cfg->props, k, v)
        if (!strncmp(k, "iceberg.tables.auto-create-props.", 33))
            json_object_set(cfg->create_props, k + 33, v);

    /* Kafka */
    kafka_props(cfg);
    const char *g = fl_sink_config_get(cfg, "group.id");
    if (!g) g = json_string_value(json_object_get(cfg->consumer, "group.id"));
    if (!g) g = fl_sink_config_get(cfg, "iceberg.connect.group-id");
    if (g) {
        cfg->group_id = fl_strdup(g);
    } else {
        fl_buf_t b;
        fl_buf_init(&b, 0);
        fl_buf_printf(&b, "connect-%s", cfg->name);
        cfg->group_id = fl_buf_steal(&b);
    }
    json_object_set_new(cfg->consumer, "group.id", json_string(cfg->group_id));
    if (!json_object_get(cfg->consumer, "bootstrap.servers"))
        return fl_err_fmt(err, errlen, FL_ERR_INVALID, "bootstrap.servers is required (in the file, --bootstrap-servers or FLOE_BOOTSTRAP_SERVERS)");
    if (!json_object_get(cfg->producer, "bootstrap.servers"))
        json_object_set(cfg->producer, "bootstrap.servers", json_object_get(cfg->consumer, "bootstrap.servers"));
    return FL_OK;
}

const char *fl_sink_config_partition_by(const fl_sink_config_t *cfg, const char *table)
{
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_buf_printf(&b, "iceberg.table.%s.partition-by", table);
    const char *v = fl_sink_config_get(cfg, b.ptr);
    fl_buf_free(&b);
    return v && *v ? v : cfg->default_partition_by;
}

void fl_sink_config_free(fl_sink_config_t *cfg)
{
    if (!cfg) return;
    free(cfg->name);
    json_decref(cfg->props);
    for (size_t i = 0; i < cfg->n_topics; i++) free(cfg->topics[i]);
    free(cfg->topics);
    free(cfg->topics_regex);
    for (size_t i = 0; i < cfg->n_tables; i++) {
        free(cfg->tables[i].table);
        if (cfg->tables[i].has_regex) regfree(&cfg->tables[i].regex);
    }
    free(cfg->tables);
    free(cfg->route_field);
    free(cfg->default_partition_by);
    free(cfg->dlq_topic);
    free(cfg->metrics_listen);
    free(cfg->registry_url);
    free(cfg->registry_user_info);
    free(cfg->kmeta_field);
    free(cfg->kmeta_ext_name);
    free(cfg->kmeta_ext_value);
    char **strs[] = { &cfg->catalog_uri, &cfg->warehouse, &cfg->signing_name, &cfg->signing_region,
                      &cfg->access_key_id, &cfg->secret_access_key, &cfg->session_token, &cfg->token,
                      &cfg->credential, &cfg->oauth2_server_uri, &cfg->scope, &cfg->s3_endpoint,
                      &cfg->s3_access_key_id, &cfg->s3_secret_access_key, &cfg->s3_session_token,
                      &cfg->client_region, &cfg->group_id };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) free(*strs[i]);
    json_decref(cfg->create_props);
    json_decref(cfg->consumer);
    json_decref(cfg->producer);
    memset(cfg, 0, sizeof *cfg);
}
