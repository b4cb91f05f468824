/* Iceberg view metadata (view spec v1): creation from a REST CreateViewRequest and view updates,
 * following Java's ViewMetadata.Builder: schema and version reuse, -1 = last added, a
 * version-log entry per change of the current version, and only the newest
 * version.history.num-entries (default 10) versions kept. */
#include "iceberg/metadata_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct vupd {
    json_t *md;
    ice_err_t *e;
    json_int_t last_schema, last_version; /* -1 = none added in this commit */
    ice_schema_set_t schemas;
    /* add-view-version and set-current-view-version in O(1), built at first use:
     * version content -> version-id, and "id" -> version */
    json_t *by_content, *by_id;
    json_int_t max_version;
} vupd_t;

static json_t *varr(json_t *md, const char *key)
{
    json_t *a = json_object_get(md, key);
    if (!json_is_array(a)) {
        a = json_array();
        json_object_set_new(md, key, a);
    }
    return a;
}

static int v_add_schema(vupd_t *u, json_t *up)
{
    json_int_t next = 0, id = -1;
    json_t *s = ice_walk_schema(json_object_get(up, "schema"), false, ICE_MAX_FORMAT_VERSION, &next, NULL, u->e);
    if (!s) return u->e->status;
    int st = ice_schema_add(&u->schemas, varr(u->md, "schemas"), s, &id, u->e);
    json_decref(s);
    if (st) return st;
    u->last_schema = id;
    return 0;
}

/* Checks a view version and returns a copy with schema-id resolved (-1 = last added). */
static json_t *check_version(vupd_t *u, json_t *v)
{
    json_int_t sid, ts;
    json_t *reps = json_object_get(v, "representations"), *r, *x;
    size_t i, j;
    if (!json_is_object(v)) { ice_fail(u->e, 400, "view version must be an object"); return NULL; }
    if (!ice_get_int(v, "schema-id", &sid)) { ice_fail(u->e, 400, "view version needs an integer \"schema-id\""); return NULL; }
    if (sid == -1) {
        if (u->last_schema < 0) { ice_fail(u->e, 400, "Cannot set last added schema: no schema has been added"); return NULL; }
        sid = u->last_schema;
    }
    if (!ice_find_by_id(json_object_get(u->md, "schemas"), "schema-id", sid)) {
        ice_fail(u->e, 400, "Cannot add version with unknown schema: %" JSON_INTEGER_FORMAT, sid);
        return NULL;
    }
    if (!json_is_array(reps) || json_array_size(reps) == 0) {
        ice_fail(u->e, 400, "view version needs a non-empty \"representations\" array");
        return NULL;
    }
    json_array_foreach(reps, i, r) {
        const char *t = ice_get_str(r, "type"), *d = ice_get_str(r, "dialect");
        if (!t) { ice_fail(u->e, 400, "view representation needs a \"type\""); return NULL; }
        if (strcmp(t, "sql")) continue;
        if (!ice_get_str(r, "sql") || !d) { ice_fail(u->e, 400, "sql representation needs \"sql\" and \"dialect\""); return NULL; }
        for (j = 0; j < i; j++) {
            const char *d2 = ice_get_str(json_array_get(reps, j), "dialect");
            if (d2 && !strcasecmp(d, d2)) {
                ice_fail(u->e, 400, "Invalid view version: Cannot add multiple queries for dialect %.64s", d);
                return NULL;
            }
        }
    }
    if ((x = json_object_get(v, "default-namespace")) && !json_is_array(x)) {
        ice_fail(u->e, 400, "view version \"default-namespace\" must be an array");
        return NULL;
    }
    if ((x = json_object_get(v, "summary")) && !json_is_object(x)) {
        ice_fail(u->e, 400, "view version \"summary\" must be an object");
        return NULL;
    }
    json_t *c = json_deep_copy(v);
    ice_set_int(c, "schema-id", sid);
    if (!ice_get_int(c, "timestamp-ms", &ts)) ice_set_int(c, "timestamp-ms", ice_now_ms());
    if (!json_object_get(c, "summary")) json_object_set_new(c, "summary", json_object());
    if (!json_object_get(c, "default-namespace")) json_object_set_new(c, "default-namespace", json_array());
    return c;
}

/* A version's content as text, for reuse of an equal version (Java's ViewMetadata.Builder
 * compares schema-id, representations, default-catalog and default-namespace).
 * malloc'd; NULL on OOM. */
static char *version_fingerprint(json_t *v)
{
    static const char *const keys[] = { "schema-id", "representations", "default-catalog", "default-namespace" };
    json_t *c = json_object();
    for (int k = 0; k < 4; k++) {
        json_t *x = json_object_get(v, keys[k]);
        if (x) json_object_set(c, keys[k], x);
    }
    char *fp = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(c);
    return fp;
}

static int index_version(vupd_t *u, json_t *v, json_int_t id)
{
    char key[32], *fp = version_fingerprint(v);
    if (!fp) return ice_fail(u->e, 500, "out of memory");
    if (!json_object_get(u->by_content, fp)) json_object_set_new(u->by_content, fp, json_integer(id));
    free(fp);
    snprintf(key, sizeof key, "%" JSON_INTEGER_FORMAT, id);
    if (!json_object_get(u->by_id, key)) json_object_set(u->by_id, key, v);
    if (id > u->max_version) u->max_version = id;
    return 0;
}

static int index_versions(vupd_t *u, json_t *versions)
{
    json_t *x;
    size_t i;
    json_int_t id;
    if (u->by_content) return 0;
    u->by_content = json_object();
    u->by_id = json_object();
    u->max_version = 0;
    json_array_foreach(versions, i, x)
        if (ice_get_int(x, "version-id", &id) && index_version(u, x, id)) return u->e->status;
    return 0;
}

static int v_add_version(vupd_t *u, json_t *up)
{
    json_t *v = check_version(u, json_object_get(up, "view-version"));
    json_int_t id = -1;
    if (!v) return u->e->status;
    json_t *versions = varr(u->md, "versions");
    char *fp = NULL;
    if (index_versions(u, versions) || !(fp = version_fingerprint(v))) {
        json_decref(v);
        return u->e->status ? u->e->status : ice_fail(u->e, 500, "out of memory");
    }
    json_t *hit = json_object_get(u->by_content, fp);
    free(fp);
    if (hit) {
        id = json_integer_value(hit);
    } else {
        id = u->max_version + 1;
        ice_set_int(v, "version-id", id);
        json_array_append(versions, v);
        if (index_version(u, v, id)) { json_decref(v); return u->e->status; }
    }
    json_decref(v);
    u->last_version = id;
    return 0;
}

static int v_set_current_version(vupd_t *u, json_t *up)
{
    json_int_t id, cur = -1, ts;
    if (!ice_get_int(up, "view-version-id", &id))
        return ice_fail(u->e, 400, "set-current-view-version: needs an integer \"view-version-id\"");
    if (id == -1) {
        if (u->last_version < 0) return ice_fail(u->e, 400, "Cannot set last version: no view version has been added");
        id = u->last_version;
    }
    char key[32];
    snprintf(key, sizeof key, "%" JSON_INTEGER_FORMAT, id);
    if (index_versions(u, varr(u->md, "versions"))) return u->e->status;
    json_t *v = json_object_get(u->by_id, key);
    if (!v) return ice_fail(u->e, 400, "Cannot set current version to unknown version: %" JSON_INTEGER_FORMAT, id);
    ice_get_int(u->md, "current-version-id", &cur);
    if (cur == id) return 0;
    ice_set_int(u->md, "current-version-id", id);
    if (!ice_get_int(v, "timestamp-ms", &ts)) ts = ice_now_ms();
    json_array_append_new(varr(u->md, "version-log"), json_pack("{s:I,s:I}", "timestamp-ms", ts, "version-id", id));
    return 0;
}

static int v_assign_uuid(vupd_t *u, json_t *up)
{
    const char *s = ice_get_str(up, "uuid");
    if (!ice_is_uuid(s)) return ice_fail(u->e, 400, "assign-uuid: \"uuid\" must be a UUID string");
    json_object_set_new(u->md, "view-uuid", json_string(s));
    return 0;
}

static int v_upgrade(vupd_t *u, json_t *up)
{
    json_int_t v, cur = 1;
    if (!ice_get_int(up, "format-version", &v))
        return ice_fail(u->e, 400, "upgrade-format-version: needs an integer \"format-version\"");
    ice_get_int(u->md, "format-version", &cur);
    if (v > 1) return ice_fail(u->e, 400, "Cannot upgrade view to unsupported format version: v%" JSON_INTEGER_FORMAT, v);
    if (v < cur) return ice_fail(u->e, 400, "Cannot downgrade v%" JSON_INTEGER_FORMAT " view to v%" JSON_INTEGER_FORMAT, cur, v);
    return 0;
}

static int v_set_location(vupd_t *u, json_t *up)
{
    const char *l = ice_get_str(up, "location");
    if (!l || !*l) return ice_fail(u->e, 400, "set-location: needs a non-empty \"location\"");
    json_object_set_new(u->md, "location", json_string(l));
    return 0;
}

static json_t *vprops(json_t *md)
{
    json_t *p = json_object_get(md, "properties");
    if (!json_is_object(p)) {
        p = json_object();
        json_object_set_new(md, "properties", p);
    }
    return p;
}

static int v_set_properties(vupd_t *u, json_t *up)
{
    json_t *m = json_object_get(up, "updates");
    if (!m) m = json_object_get(up, "updated");
    if (ice_check_string_map(m, "set-properties: updates", u->e)) return u->e->status;
    json_object_update(vprops(u->md), m);
    return 0;
}

static int v_remove_properties(vupd_t *u, json_t *up)
{
    json_t *l = json_object_get(up, "removals"), *x;
    size_t i;
    if (!l) l = json_object_get(up, "removed");
    if (!json_is_array(l)) return ice_fail(u->e, 400, "remove-properties: needs a \"removals\" array");
    json_array_foreach(l, i, x)
        if (!json_is_string(x)) return ice_fail(u->e, 400, "remove-properties: removals must be strings");
    json_t *p = vprops(u->md);
    json_array_foreach(l, i, x) json_object_del(p, json_string_value(x));
    return 0;
}

static const struct {
    const char *action;
    int (*fn)(vupd_t *, json_t *);
} vactions[] = {
    { "assign-uuid", v_assign_uuid },
    { "upgrade-format-version", v_upgrade },
    { "add-schema", v_add_schema },
    { "set-location", v_set_location },
    { "set-properties", v_set_properties },
    { "remove-properties", v_remove_properties },
    { "add-view-version", v_add_version },
    { "set-current-view-version", v_set_current_version },
};

/* Keeps the newest version.history.num-entries versions (never the current one) and drops the
 * version-log up to the last entry naming a removed version. */
static void expire_versions(json_t *md)
{
    long max = 10;
    const char *p = ice_get_str(json_object_get(md, "properties"), "version.history.num-entries");
    if (p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (!errno && end != p && !*end) max = v < 1 ? 1 : v;
    }
    json_t *versions = varr(md, "versions"), *log = varr(md, "version-log"), *x;
    json_int_t cur = -1, id;
    ice_get_int(md, "current-version-id", &cur);
    while (json_array_size(versions) > (size_t)max) {
        size_t victim = json_array_size(versions);
        for (size_t i = 0; i < json_array_size(versions); i++)
            if (!ice_get_int(json_array_get(versions, i), "version-id", &id) || id != cur) { victim = i; break; }
        if (victim == json_array_size(versions)) break;
        json_array_remove(versions, victim);
    }
    size_t i, keep_from = 0;
    json_array_foreach(log, i, x)
        if (!ice_get_int(x, "version-id", &id) || !ice_find_by_id(versions, "version-id", id)) keep_from = i + 1;
    for (i = 0; i < keep_from; i++) json_array_remove(log, 0);
}

static int validate_view(json_t *md, ice_err_t *e)
{
    json_int_t v;
    if (!json_is_object(md)) return ice_fail(e, 500, "view metadata must be an object");
    if (!ice_get_str(md, "view-uuid") || !ice_get_str(md, "location") ||
        !ice_get_int(md, "format-version", &v) || !ice_get_int(md, "current-version-id", &v) ||
        !json_is_array(json_object_get(md, "versions")) || !json_is_array(json_object_get(md, "schemas")))
        return ice_fail(e, 500, "view metadata is missing required fields");
    if (!ice_find_by_id(json_object_get(md, "versions"), "version-id", v))
        return ice_fail(e, 500, "view metadata: current version %" JSON_INTEGER_FORMAT " does not exist", v);
    return 0;
}

static json_t *apply_view(json_t *base, json_t *updates, ice_err_t *e)
{
    vupd_t u = { .e = e, .last_schema = -1, .last_version = -1 };
    size_t i;
    json_t *up;
    if (validate_view(base, e)) return NULL;
    if (updates && !json_is_null(updates) && !json_is_array(updates)) {
        ice_fail(e, 400, "\"updates\" must be an array");
        return NULL;
    }
    u.md = json_deep_copy(base);
    json_array_foreach(updates, i, up) {
        const char *a = ice_get_str(up, "action");
        size_t k;
        if (!a) { ice_fail(e, 400, "update %zu: needs an \"action\"", i); break; }
        for (k = 0; k < sizeof vactions / sizeof vactions[0]; k++)
            if (!strcmp(a, vactions[k].action)) break;
        if (k == sizeof vactions / sizeof vactions[0]) {
            ice_fail(e, 400, "unknown view update action \"%.64s\"", a);
            break;
        }
        if (vactions[k].fn(&u, up)) break;
    }
    ice_schema_set_reset(&u.schemas);
    json_decref(u.by_content);
    json_decref(u.by_id);
    if (e->status) {
        json_decref(u.md);
        return NULL;
    }
    expire_versions(u.md);
    return u.md;
}

json_t *fl_iceberg_apply_view_updates(json_t *base, json_t *updates, const char *prev_location,
                                      int *status, char *err, size_t errlen)
{
    ice_err_t e = { err, errlen, 0 };
    if (err && errlen) err[0] = 0;
    (void)prev_location;
    json_t *md = apply_view(base, updates, &e);
    if (status) *status = e.status;
    return md;
}

json_t *fl_iceberg_new_view_metadata(json_t *req, const char *location, int *status, char *err,
                                     size_t errlen)
{
    ice_err_t e = { err, errlen, 0 };
    json_t *md = NULL, *base = NULL, *ups = NULL;
    if (err && errlen) err[0] = 0;
    if (!json_is_object(req)) { ice_fail(&e, 400, "create view request must be a JSON object"); goto out; }
    const char *name = ice_get_str(req, "name");
    if (!name || !*name) { ice_fail(&e, 400, "create view request needs a \"name\""); goto out; }
    if (!location || !*location) { ice_fail(&e, 400, "view location is empty"); goto out; }
    json_t *schema = json_object_get(req, "schema"), *ver = json_object_get(req, "view-version");
    json_t *props = json_object_get(req, "properties");
    if (!json_is_object(schema)) { ice_fail(&e, 400, "create view request needs a \"schema\""); goto out; }
    if (!json_is_object(ver)) { ice_fail(&e, 400, "create view request needs a \"view-version\""); goto out; }
    if (props && !json_is_null(props) && ice_check_string_map(props, "properties", &e)) goto out;

    /* Build through the update path so creation and commits share one set of rules. The
     * placeholder version 0 satisfies the base check and is dropped below. */
    char uuid[37];
    fl_iceberg_uuid4(uuid);
    size_t n = strlen(location);
    while (n > 1 && location[n - 1] == '/' && location[n - 2] != '/') n--;
    base = json_pack("{s:s,s:i,s:s#,s:i,s:[{s:i}],s:[],s:[],s:{}}", "view-uuid", uuid,
                     "format-version", 1, "location", location, n, "current-version-id", 0,
                     "versions", "version-id", 0, "version-log", "schemas", "properties");
    json_t *v = json_deep_copy(ver);
    ice_set_int(v, "schema-id", -1);
    ups = json_pack("[{s:s,s:O},{s:s,s:o},{s:s,s:i}]",
                    "action", "add-schema", "schema", schema,
                    "action", "add-view-version", "view-version", v,
                    "action", "set-current-view-version", "view-version-id", -1);
    if (json_is_object(props))
        json_array_append_new(ups, json_pack("{s:s,s:O}", "action", "set-properties", "updates", props));
    if (!(md = apply_view(base, ups, &e))) goto out;
    json_t *versions = json_object_get(md, "versions");
    for (size_t i = json_array_size(versions); i-- > 0;) {
        json_int_t id;
        if (ice_get_int(json_array_get(versions, i), "version-id", &id) && id == 0) json_array_remove(versions, i);
    }
    /* the first version-log entry is the create */
    json_t *log = json_object_get(md, "version-log");
    while (json_array_size(log) > 1) json_array_remove(log, 0);
out:
    json_decref(base);
    json_decref(ups);
    if (status) *status = e.status;
    if (e.status) {
        json_decref(md);
        md = NULL;
    }
    return md;
}
