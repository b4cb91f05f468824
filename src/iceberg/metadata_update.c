/* Iceberg REST commits: requirements (checked against the current metadata) and table updates
 * (applied in order to a copy of the base), following Java's TableMetadata.Builder where the
 * spec is silent: reuse of identical schemas / equivalent specs and sort orders, -1 = "last
 * added in this commit", snapshot-log entries when main moves, snapshot-log pruning after
 * snapshots are removed, metadata-log trimming. */
#include "iceberg/metadata_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- requirements ----------------------------------------------------------------------- */

static const struct {
    const char *type, *field, *mdkey, *what;
} int_reqs[] = {
    { "assert-last-assigned-field-id", "last-assigned-field-id", "last-column-id", "last assigned field id" },
    { "assert-current-schema-id", "current-schema-id", "current-schema-id", "current schema id" },
    { "assert-last-assigned-partition-id", "last-assigned-partition-id", "last-partition-id", "last assigned partition id" },
    { "assert-default-spec-id", "default-spec-id", "default-spec-id", "default partition spec id" },
    { "assert-default-sort-order-id", "default-sort-order-id", "default-sort-order-id", "default sort order id" },
};

/* Snapshot id of ref in md (refs, or main synthesized from current-snapshot-id); false if none. */
static bool ref_snapshot(json_t *md, const char *ref, json_int_t *id)
{
    json_t *refs = json_object_get(md, "refs");
    if (json_is_object(refs)) {
        json_t *r = json_object_get(refs, ref);
        return r && ice_get_int(r, "snapshot-id", id);
    }
    if (!strcmp(ref, "main")) {
        *id = fl_iceberg_current_snapshot_id(md);
        return *id >= 0;
    }
    return false;
}

/* Syntax of one requirement: 0 or 400. */
static int check_req_syntax(json_t *r, size_t i, ice_err_t *e)
{
    const char *t = ice_get_str(r, "type");
    json_int_t v;
    if (!json_is_object(r) || !t) return ice_fail(e, 400, "requirement %zu: needs a \"type\"", i);
    if (!strcmp(t, "assert-create")) return 0;
    if (!strcmp(t, "assert-table-uuid") || !strcmp(t, "assert-view-uuid"))
        return ice_get_str(r, "uuid") ? 0 : ice_fail(e, 400, "%s: needs a string \"uuid\"", t);
    if (!strcmp(t, "assert-ref-snapshot-id")) {
        json_t *s = json_object_get(r, "snapshot-id");
        if (!ice_get_str(r, "ref")) return ice_fail(e, 400, "%s: needs a string \"ref\"", t);
        if (s && !json_is_null(s) && !json_is_integer(s))
            return ice_fail(e, 400, "%s: \"snapshot-id\" must be an integer or null", t);
        return 0;
    }
    for (size_t k = 0; k < sizeof int_reqs / sizeof int_reqs[0]; k++)
        if (!strcmp(t, int_reqs[k].type))
            return ice_get_int(r, int_reqs[k].field, &v) ? 0 :
                   ice_fail(e, 400, "%s: needs an integer \"%s\"", t, int_reqs[k].field);
    return ice_fail(e, 400, "unknown requirement type \"%.64s\"", t);
}

static int check_req(json_t *md, json_t *r, ice_err_t *e)
{
    const char *t = ice_get_str(r, "type");
    if (!strcmp(t, "assert-create"))
        return md ? ice_fail(e, 409, "Requirement failed: table already exists") : 0;
    if (!md) return ice_fail(e, 409, "Requirement failed: %s: table does not exist", t);
    if (!strcmp(t, "assert-table-uuid") || !strcmp(t, "assert-view-uuid")) {
        const char *key = t[7] == 't' ? "table-uuid" : "view-uuid";
        const char *want = ice_get_str(r, "uuid"), *have = ice_get_str(md, key);
        if (!have || strcasecmp(want, have))
            return ice_fail(e, 409, "Requirement failed: UUID does not match: expected %.64s != %.64s",
                            have ? have : "(none)", want);
        return 0;
    }
    if (!strcmp(t, "assert-ref-snapshot-id")) {
        const char *ref = ice_get_str(r, "ref");
        json_t *s = json_object_get(r, "snapshot-id");
        json_int_t have;
        bool exists = ref_snapshot(md, ref, &have);
        if (!s || json_is_null(s)) {
            if (exists)
                return ice_fail(e, 409, "Requirement failed: branch or tag %.200s was created concurrently", ref);
            return 0;
        }
        if (!exists)
            return ice_fail(e, 409, "Requirement failed: branch or tag %.200s is missing, expected %"
                            JSON_INTEGER_FORMAT, ref, json_integer_value(s));
        if (have != json_integer_value(s))
            return ice_fail(e, 409, "Requirement failed: branch or tag %.200s has changed: expected id %"
                            JSON_INTEGER_FORMAT " != %" JSON_INTEGER_FORMAT, ref,
                            json_integer_value(s), have);
        return 0;
    }
    for (size_t k = 0; k < sizeof int_reqs / sizeof int_reqs[0]; k++) {
        if (strcmp(t, int_reqs[k].type)) continue;
        json_int_t want = 0, have;
        ice_get_int(r, int_reqs[k].field, &want);
        if (!ice_get_int(md, int_reqs[k].mdkey, &have))
            return ice_fail(e, 409, "Requirement failed: %s is not set, expected %" JSON_INTEGER_FORMAT,
                            int_reqs[k].what, want);
        if (have != want)
            return ice_fail(e, 409, "Requirement failed: %s changed: expected id %" JSON_INTEGER_FORMAT
                            " != %" JSON_INTEGER_FORMAT, int_reqs[k].what, want, have);
        return 0;
    }
    return ice_fail(e, 400, "unknown requirement type \"%.64s\"", t);
}

int fl_iceberg_check_requirements(json_t *current, json_t *reqs, char *err, size_t errlen)
{
    ice_err_t e = { err, errlen, 0 };
    size_t i;
    json_t *r;
    if (err && errlen) err[0] = 0;
    if (!reqs || json_is_null(reqs)) return 0;
    if (!json_is_array(reqs)) return ice_fail(&e, 400, "\"requirements\" must be an array");
    if (current && !json_is_object(current)) return ice_fail(&e, 400, "current metadata is not an object");
    json_array_foreach(reqs, i, r)
        if (check_req_syntax(r, i, &e)) return e.status;
    json_array_foreach(reqs, i, r)
        if (check_req(current, r, &e)) return e.status;
    return 0;
}

/* ---- updates ---------------------------------------------------------------------------- */

typedef struct upd {
    json_t *md;
    ice_err_t *e;
    json_int_t fv;
    json_int_t last_schema, last_spec, last_order; /* -1 = none added in this commit */
    ice_idmap_t added;                            /* snapshot id -> timestamp-ms */
    int64_t last_updated;                         /* 0 = now */
    ice_schema_set_t schemas;                     /* add-schema in O(1); reset by remove-schemas */
} upd_t;

/* md[key] as an array, created when missing. */
static json_t *arr(json_t *md, const char *key)
{
    json_t *a = json_object_get(md, key);
    if (!json_is_array(a)) {
        a = json_array();
        json_object_set_new(md, key, a);
    }
    return a;
}

static json_t *obj(json_t *md, const char *key)
{
    json_t *o = json_object_get(md, key);
    if (!json_is_object(o)) {
        o = json_object();
        json_object_set_new(md, key, o);
    }
    return o;
}

static json_t *current_schema(upd_t *u)
{
    json_int_t id = 0;
    ice_get_int(u->md, "current-schema-id", &id);
    return ice_find_by_id(json_object_get(u->md, "schemas"), "schema-id", id);
}

/* Removes array elements whose integer member k is v; returns how many. */
static size_t remove_by_id(json_t *a, const char *k, json_int_t v)
{
    size_t n = 0;
    json_int_t id;
    for (size_t i = json_array_size(a); i-- > 0;)
        if (ice_get_int(json_array_get(a, i), k, &id) && id == v) {
            json_array_remove(a, i);
            n++;
        }
    return n;
}

/* Resolves an id argument where -1 means "last added in this commit". */
static int resolve_last(upd_t *u, json_t *up, const char *key, json_int_t last, const char *what,
                        json_int_t *id)
{
    if (!ice_get_int(up, key, id)) return ice_fail(u->e, 400, "%s: needs an integer \"%s\"", what, key);
    if (*id == -1) {
        if (last < 0) return ice_fail(u->e, 400, "%s: -1 but nothing was added in this commit", what);
        *id = last;
    }
    return 0;
}

static int u_assign_uuid(upd_t *u, json_t *up)
{
    const char *s = ice_get_str(up, "uuid");
    if (!ice_is_uuid(s)) return ice_fail(u->e, 400, "assign-uuid: \"uuid\" must be a UUID string");
    json_object_set_new(u->md, "table-uuid", json_string(s));
    return 0;
}

static int u_upgrade_format_version(upd_t *u, json_t *up)
{
    json_int_t v;
    if (!ice_get_int(up, "format-version", &v))
        return ice_fail(u->e, 400, "upgrade-format-version: needs an integer \"format-version\"");
    if (v > ICE_MAX_FORMAT_VERSION)
        return ice_fail(u->e, 400, "Cannot upgrade table to unsupported format version: v%" JSON_INTEGER_FORMAT
                        " (supported: v%d)", v, ICE_MAX_FORMAT_VERSION);
    if (v < u->fv)
        return ice_fail(u->e, 400, "Cannot downgrade v%" JSON_INTEGER_FORMAT " table to v%" JSON_INTEGER_FORMAT,
                        u->fv, v);
    if (v == u->fv) return 0;
    ice_set_int(u->md, "format-version", v);
    json_object_del(u->md, "schema");
    json_object_del(u->md, "partition-spec");
    if (!json_object_get(u->md, "last-sequence-number")) ice_set_int(u->md, "last-sequence-number", 0);
    if (v >= 3) {
        if (!json_object_get(u->md, "next-row-id")) ice_set_int(u->md, "next-row-id", 0);
        if (fl_iceberg_current_snapshot_id(u->md) < 0) json_object_del(u->md, "current-snapshot-id");
    }
    u->fv = v;
    return 0;
}

static int u_add_schema(upd_t *u, json_t *up)
{
    json_int_t next = 0, lc = 0, given;
    json_t *s = ice_walk_schema(json_object_get(up, "schema"), false, (int)u->fv, &next, NULL, u->e);
    if (!s) return u->e->status;
    json_int_t id = -1;
    int st = ice_schema_add(&u->schemas, arr(u->md, "schemas"), s, &id, u->e);
    json_decref(s);
    if (st) return st;
    ice_get_int(u->md, "last-column-id", &lc);
    if (next > lc) lc = next;
    if (ice_get_int(up, "last-column-id", &given) && given > lc) lc = given;
    ice_set_int(u->md, "last-column-id", lc);
    u->last_schema = id;
    return 0;
}

static int u_set_current_schema(upd_t *u, json_t *up)
{
    json_int_t id;
    if (resolve_last(u, up, "schema-id", u->last_schema, "set-current-schema", &id)) return u->e->status;
    if (!ice_find_by_id(json_object_get(u->md, "schemas"), "schema-id", id))
        return ice_fail(u->e, 400, "Cannot set current schema to unknown schema: %" JSON_INTEGER_FORMAT, id);
    ice_set_int(u->md, "current-schema-id", id);
    return 0;
}

/* Equivalent partition fields: same sources, transforms and names (field ids aside). */
static bool same_fields(json_t *a, json_t *b, const char *const *keys, size_t nkeys)
{
    if (json_array_size(a) != json_array_size(b)) return false;
    for (size_t i = 0; i < json_array_size(a); i++)
        for (size_t k = 0; k < nkeys; k++) {
            json_t *x = json_object_get(json_array_get(a, i), keys[k]);
            json_t *y = json_object_get(json_array_get(b, i), keys[k]);
            if (!x != !y || (x && !json_equal(x, y))) return false;
        }
    return true;
}

static const char *const spec_keys[] = { "source-id", "source-ids", "transform", "name" };
static const char *const sort_keys[] = { "source-id", "source-ids", "transform", "direction", "null-order" };

static int u_add_spec(upd_t *u, json_t *up)
{
    json_t *spec = json_object_get(up, "spec"), *fields = json_object_get(spec, "fields"), *x;
    json_int_t lp = 999, fid;
    size_t i;
    if (!json_is_object(spec) || !json_is_array(fields))
        return ice_fail(u->e, 400, "add-spec: needs a \"spec\" with a \"fields\" array");
    ice_get_int(u->md, "last-partition-id", &lp);
    json_t *nf = json_deep_copy(fields);
    json_int_t next = lp;
    json_array_foreach(nf, i, x) {
        if (!json_is_object(x)) { json_decref(nf); return ice_fail(u->e, 400, "add-spec: fields must be objects"); }
        if (!json_object_get(x, "field-id")) {
            if (next < 999) next = 999;
            if (next >= INT32_MAX) {
                json_decref(nf);
                return ice_fail(u->e, 400, "add-spec: no partition field id left to assign");
            }
            ice_set_int(x, "field-id", ++next);
        }
    }
    if (ice_check_spec_fields(nf, current_schema(u), u->e)) { json_decref(nf); return u->e->status; }
    json_t *specs = arr(u->md, "partition-specs");
    json_int_t id = -1;
    json_array_foreach(specs, i, x)
        if (same_fields(json_object_get(x, "fields"), nf, spec_keys, 4)) { ice_get_int(x, "spec-id", &id); break; }
    if (id < 0) {
        id = ice_max_id(specs, "spec-id", -1) + 1;
        json_array_append_new(specs, json_pack("{s:I,s:O}", "spec-id", id, "fields", nf));
        json_array_foreach(nf, i, x)
            if (ice_get_int(x, "field-id", &fid) && fid > lp) lp = fid;
        ice_set_int(u->md, "last-partition-id", lp);
    }
    json_decref(nf);
    u->last_spec = id;
    return 0;
}

static int u_set_default_spec(upd_t *u, json_t *up)
{
    json_int_t id;
    if (resolve_last(u, up, "spec-id", u->last_spec, "set-default-spec", &id)) return u->e->status;
    if (!ice_find_by_id(json_object_get(u->md, "partition-specs"), "spec-id", id))
        return ice_fail(u->e, 400, "Cannot set default partition spec to unknown spec: %" JSON_INTEGER_FORMAT, id);
    ice_set_int(u->md, "default-spec-id", id);
    return 0;
}

static int u_add_sort_order(upd_t *u, json_t *up)
{
    json_t *so = json_object_get(up, "sort-order"), *fields = json_object_get(so, "fields"), *x;
    size_t i;
    if (!json_is_object(so) || !json_is_array(fields))
        return ice_fail(u->e, 400, "add-sort-order: needs a \"sort-order\" with a \"fields\" array");
    if (ice_check_sort_fields(fields, current_schema(u), u->e)) return u->e->status;
    json_t *orders = arr(u->md, "sort-orders");
    json_int_t id = -1;
    json_array_foreach(orders, i, x)
        if (same_fields(json_object_get(x, "fields"), fields, sort_keys, 5)) { ice_get_int(x, "order-id", &id); break; }
    if (id < 0) {
        id = json_array_size(fields) ? ice_max_id(orders, "order-id", 0) + 1 : 0;
        json_array_append_new(orders, json_pack("{s:I,s:O}", "order-id", id, "fields", fields));
    }
    u->last_order = id;
    return 0;
}

static int u_set_default_sort_order(upd_t *u, json_t *up)
{
    json_int_t id;
    if (resolve_last(u, up, "sort-order-id", u->last_order, "set-default-sort-order", &id)) return u->e->status;
    if (!ice_find_by_id(json_object_get(u->md, "sort-orders"), "order-id", id))
        return ice_fail(u->e, 400, "Cannot set default sort order to unknown order: %" JSON_INTEGER_FORMAT, id);
    ice_set_int(u->md, "default-sort-order-id", id);
    return 0;
}

static int u_add_snapshot(upd_t *u, json_t *up)
{
    json_t *s = json_object_get(up, "snapshot"), *x;
    json_int_t id, ts, seq = 0, last = 0;
    if (!json_is_object(s)) return ice_fail(u->e, 400, "add-snapshot: needs a \"snapshot\" object");
    if (!ice_get_int(s, "snapshot-id", &id) || id < 0)
        return ice_fail(u->e, 400, "add-snapshot: needs a non-negative integer \"snapshot-id\"");
    if (!ice_get_int(s, "timestamp-ms", &ts))
        return ice_fail(u->e, 400, "add-snapshot: needs an integer \"timestamp-ms\"");
    if (!ice_get_str(s, "manifest-list") && !json_is_array(json_object_get(s, "manifests")))
        return ice_fail(u->e, 400, "add-snapshot: needs a \"manifest-list\"");
    if ((x = json_object_get(s, "summary")) && !json_is_object(x))
        return ice_fail(u->e, 400, "add-snapshot: \"summary\" must be an object");
    if ((x = json_object_get(s, "sequence-number")) && !ice_get_int(s, "sequence-number", &seq))
        return ice_fail(u->e, 400, "add-snapshot: \"sequence-number\" must be an integer");
    json_t *parent = json_object_get(s, "parent-snapshot-id");
    if (parent && !json_is_null(parent) && !json_is_integer(parent))
        return ice_fail(u->e, 400, "add-snapshot: \"parent-snapshot-id\" must be an integer");
    if ((x = json_object_get(s, "schema-id")) && !json_is_integer(x))
        return ice_fail(u->e, 400, "add-snapshot: \"schema-id\" must be an integer");
    json_t *snaps = arr(u->md, "snapshots");
    if (ice_find_by_id(snaps, "snapshot-id", id))
        return ice_fail(u->e, 400, "Snapshot already exists for id: %" JSON_INTEGER_FORMAT, id);
    ice_get_int(u->md, "last-sequence-number", &last);
    if (u->fv >= 2 && seq <= last && parent && !json_is_null(parent))
        return ice_fail(u->e, 409, "Cannot add snapshot with sequence number %" JSON_INTEGER_FORMAT
                        " older than last sequence number %" JSON_INTEGER_FORMAT, seq, last);
    if (u->fv >= 3) {
        json_int_t first, added, next = 0;
        if (!ice_get_int(s, "first-row-id", &first))
            return ice_fail(u->e, 400, "Cannot add a snapshot: first-row-id is null");
        if (!ice_get_int(s, "added-rows", &added) || added < 0)
            return ice_fail(u->e, 400, "Cannot add a snapshot: added-rows is null");
        ice_get_int(u->md, "next-row-id", &next);
        if (first < next)
            return ice_fail(u->e, 409, "Cannot add a snapshot, first-row-id is behind table next-row-id: %"
                            JSON_INTEGER_FORMAT " < %" JSON_INTEGER_FORMAT, first, next);
        if (added > INT64_MAX - next) return ice_fail(u->e, 400, "add-snapshot: added-rows too large");
        ice_set_int(u->md, "next-row-id", next + added);
    }
    json_array_append_new(snaps, json_deep_copy(s));
    if (u->fv >= 2 && seq > last) ice_set_int(u->md, "last-sequence-number", seq);
    /* remember it: a ref set to it logs its timestamp */
    ice_idmap_add(&u->added, id, ts);
    return 0;
}

static void clear_main(upd_t *u)
{
    ice_clear_current_snapshot(u->md);
}

static int u_set_snapshot_ref(upd_t *u, json_t *up)
{
    const char *name = ice_get_str(up, "ref-name"), *type = ice_get_str(up, "type");
    json_int_t id, v;
    if (!name || !*name) return ice_fail(u->e, 400, "set-snapshot-ref: needs a \"ref-name\"");
    if (!type || (strcasecmp(type, "branch") && strcasecmp(type, "tag")))
        return ice_fail(u->e, 400, "set-snapshot-ref: \"type\" must be \"branch\" or \"tag\"");
    bool branch = !strcasecmp(type, "branch");
    if (!ice_get_int(up, "snapshot-id", &id))
        return ice_fail(u->e, 400, "set-snapshot-ref: needs an integer \"snapshot-id\"");
    if (!strcmp(name, "main") && !branch) return ice_fail(u->e, 400, "main must be a branch, not a tag");
    json_t *ref = json_pack("{s:I,s:s}", "snapshot-id", id, "type", branch ? "branch" : "tag");
    static const char *const opt[] = { "min-snapshots-to-keep", "max-snapshot-age-ms", "max-ref-age-ms" };
    for (int k = 0; k < 3; k++) {
        json_t *x = json_object_get(up, opt[k]);
        if (!x || json_is_null(x)) continue;
        if (!json_is_integer(x) || (v = json_integer_value(x)) <= 0) {
            json_decref(ref);
            return ice_fail(u->e, 400, "set-snapshot-ref: \"%s\" must be a positive integer", opt[k]);
        }
        if (!branch && k < 2) {
            json_decref(ref);
            return ice_fail(u->e, 400, "Tags do not support setting %s", opt[k]);
        }
        ice_set_int(ref, opt[k], v);
    }
    json_t *refs = obj(u->md, "refs");
    json_t *old = json_object_get(refs, name);
    if (old && json_equal(old, ref)) { json_decref(ref); return 0; }
    if (!ice_find_by_id(json_object_get(u->md, "snapshots"), "snapshot-id", id)) {
        json_decref(ref);
        return ice_fail(u->e, 400, "Cannot set %.200s to unknown snapshot: %" JSON_INTEGER_FORMAT, name, id);
    }
    json_int_t ts;
    bool added = ice_idmap_get(&u->added, id, &ts);
    if (added) u->last_updated = ts;
    if (!strcmp(name, "main")) {
        if (!added) ts = u->last_updated ? u->last_updated : ice_now_ms();
        ice_set_int(u->md, "current-snapshot-id", id);
        json_array_append_new(arr(u->md, "snapshot-log"),
                              json_pack("{s:I,s:I}", "timestamp-ms", ts, "snapshot-id", id));
    }
    json_object_set_new(refs, name, ref);
    return 0;
}

static int u_remove_snapshot_ref(upd_t *u, json_t *up)
{
    const char *name = ice_get_str(up, "ref-name");
    if (!name) return ice_fail(u->e, 400, "remove-snapshot-ref: needs a \"ref-name\"");
    json_t *refs = json_object_get(u->md, "refs");
    if (json_is_object(refs) && json_object_get(refs, name)) json_object_del(refs, name);
    if (!strcmp(name, "main")) clear_main(u);
    return 0;
}

static int u_remove_snapshots(upd_t *u, json_t *up)
{
    json_t *ids = json_object_get(up, "snapshot-ids"), *x;
    size_t i;
    if (!json_is_array(ids)) return ice_fail(u->e, 400, "remove-snapshots: needs a \"snapshot-ids\" array");
    json_array_foreach(ids, i, x)
        if (!json_is_integer(x)) return ice_fail(u->e, 400, "remove-snapshots: ids must be integers");
    json_t *snaps = arr(u->md, "snapshots"), *refs = json_object_get(u->md, "refs");
    json_array_foreach(ids, i, x) {
        json_int_t id = json_integer_value(x);
        if (!remove_by_id(snaps, "snapshot-id", id)) continue;
        remove_by_id(json_object_get(u->md, "statistics"), "snapshot-id", id);
        remove_by_id(json_object_get(u->md, "partition-statistics"), "snapshot-id", id);
        if (json_is_object(refs)) {
            const char *k;
            json_t *r, *tmp;
            json_int_t rid;
            json_object_foreach_safe(refs, tmp, k, r)
                if (ice_get_int(r, "snapshot-id", &rid) && rid == id) {
                    if (!strcmp(k, "main")) clear_main(u);
                    json_object_del(refs, k);
                }
        }
        if (fl_iceberg_current_snapshot_id(u->md) == id) clear_main(u);
    }
    return 0;
}

static int u_set_location(upd_t *u, json_t *up)
{
    const char *l = ice_get_str(up, "location");
    if (!l || !*l) return ice_fail(u->e, 400, "set-location: needs a non-empty \"location\"");
    json_object_set_new(u->md, "location", json_string(l));
    return 0;
}

static int u_set_properties(upd_t *u, json_t *up)
{
    json_t *m = json_object_get(up, "updates");
    if (!m) m = json_object_get(up, "updated");
    if (ice_check_string_map(m, "set-properties: updates", u->e)) return u->e->status;
    json_object_update(obj(u->md, "properties"), m);
    return 0;
}

static int u_remove_properties(upd_t *u, json_t *up)
{
    json_t *l = json_object_get(up, "removals"), *x;
    size_t i;
    if (!l) l = json_object_get(up, "removed");
    if (!json_is_array(l)) return ice_fail(u->e, 400, "remove-properties: needs a \"removals\" array");
    json_array_foreach(l, i, x)
        if (!json_is_string(x)) return ice_fail(u->e, 400, "remove-properties: removals must be strings");
    json_t *p = obj(u->md, "properties");
    json_array_foreach(l, i, x) json_object_del(p, json_string_value(x));
    return 0;
}

/* set-statistics / set-partition-statistics: replace the entry for the same snapshot. */
static int set_stats(upd_t *u, json_t *up, const char *field, const char *list)
{
    json_t *st = json_object_get(up, field);
    json_int_t id;
    if (!json_is_object(st) || !ice_get_int(st, "snapshot-id", &id) || !ice_get_str(st, "statistics-path"))
        return ice_fail(u->e, 400, "\"%s\" needs \"snapshot-id\" and \"statistics-path\"", field);
    json_t *a = arr(u->md, list);
    remove_by_id(a, "snapshot-id", id);
    json_array_append_new(a, json_deep_copy(st));
    return 0;
}

static int remove_stats(upd_t *u, json_t *up, const char *list)
{
    json_int_t id;
    if (!ice_get_int(up, "snapshot-id", &id))
        return ice_fail(u->e, 400, "removing statistics needs an integer \"snapshot-id\"");
    remove_by_id(json_object_get(u->md, list), "snapshot-id", id);
    return 0;
}

static int u_set_statistics(upd_t *u, json_t *up) { return set_stats(u, up, "statistics", "statistics"); }
static int u_remove_statistics(upd_t *u, json_t *up) { return remove_stats(u, up, "statistics"); }
static int u_set_part_stats(upd_t *u, json_t *up)
{
    return set_stats(u, up, "partition-statistics", "partition-statistics");
}
static int u_remove_part_stats(upd_t *u, json_t *up) { return remove_stats(u, up, "partition-statistics"); }

/* remove-partition-specs / remove-schemas: never the one in use. */
static int remove_ids(upd_t *u, json_t *up, const char *argk, const char *list, const char *idk,
                      const char *curk, const char *what)
{
    json_t *ids = json_object_get(up, argk), *x;
    json_int_t cur = -1;
    size_t i;
    if (!json_is_array(ids)) return ice_fail(u->e, 400, "%s: needs a \"%s\" array", what, argk);
    ice_get_int(u->md, curk, &cur);
    json_array_foreach(ids, i, x) {
        if (!json_is_integer(x)) return ice_fail(u->e, 400, "%s: ids must be integers", what);
        if (json_integer_value(x) == cur)
            return ice_fail(u->e, 400, "%s: cannot remove the one in use (%" JSON_INTEGER_FORMAT ")", what, cur);
    }
    json_array_foreach(ids, i, x) remove_by_id(json_object_get(u->md, list), idk, json_integer_value(x));
    return 0;
}

static int u_remove_specs(upd_t *u, json_t *up)
{
    return remove_ids(u, up, "spec-ids", "partition-specs", "spec-id", "default-spec-id", "remove-partition-specs");
}

static int u_remove_schemas(upd_t *u, json_t *up)
{
    ice_schema_set_reset(&u->schemas);
    return remove_ids(u, up, "schema-ids", "schemas", "schema-id", "current-schema-id", "remove-schemas");
}

static int u_add_encryption_key(upd_t *u, json_t *up)
{
    json_t *k = json_object_get(up, "encryption-key");
    const char *id = ice_get_str(k, "key-id");
    if (!id || !ice_get_str(k, "encrypted-key-metadata"))
        return ice_fail(u->e, 400, "add-encryption-key: needs \"key-id\" and \"encrypted-key-metadata\"");
    json_t *a = arr(u->md, "encryption-keys");
    for (size_t i = json_array_size(a); i-- > 0;) {
        const char *o = ice_get_str(json_array_get(a, i), "key-id");
        if (o && !strcmp(o, id)) json_array_remove(a, i);
    }
    json_array_append_new(a, json_deep_copy(k));
    return 0;
}

static int u_remove_encryption_key(upd_t *u, json_t *up)
{
    const char *id = ice_get_str(up, "key-id");
    if (!id) return ice_fail(u->e, 400, "remove-encryption-key: needs a \"key-id\"");
    json_t *a = json_object_get(u->md, "encryption-keys");
    for (size_t i = json_array_size(a); i-- > 0;) {
        const char *o = ice_get_str(json_array_get(a, i), "key-id");
        if (o && !strcmp(o, id)) json_array_remove(a, i);
    }
    return 0;
}

static int u_enable_row_lineage(upd_t *u, json_t *up)
{
    if (u->fv < 3) return ice_fail(u->e, 400, "Cannot enable row lineage for format version %" JSON_INTEGER_FORMAT
                                   " (needs v3)", u->fv);
    if (!json_object_get(u->md, "next-row-id")) ice_set_int(u->md, "next-row-id", 0);
    return 0;
}

static const struct {
    const char *action;
    int (*fn)(upd_t *, json_t *);
} actions[] = {
    { "assign-uuid", u_assign_uuid },
    { "upgrade-format-version", u_upgrade_format_version },
    { "add-schema", u_add_schema },
    { "set-current-schema", u_set_current_schema },
    { "add-spec", u_add_spec },
    { "set-default-spec", u_set_default_spec },
    { "add-sort-order", u_add_sort_order },
    { "set-default-sort-order", u_set_default_sort_order },
    { "add-snapshot", u_add_snapshot },
    { "set-snapshot-ref", u_set_snapshot_ref },
    { "remove-snapshots", u_remove_snapshots },
    { "remove-snapshot-ref", u_remove_snapshot_ref },
    { "set-location", u_set_location },
    { "set-properties", u_set_properties },
    { "remove-properties", u_remove_properties },
    { "set-statistics", u_set_statistics },
    { "remove-statistics", u_remove_statistics },
    { "set-partition-statistics", u_set_part_stats },
    { "remove-partition-statistics", u_remove_part_stats },
    { "remove-partition-specs", u_remove_specs },
    { "remove-schemas", u_remove_schemas },
    { "add-encryption-key", u_add_encryption_key },
    { "remove-encryption-key", u_remove_encryption_key },
    { "enable-row-lineage", u_enable_row_lineage },
};

/* Old v1 files may carry only "schema" / "partition-spec": give them the v2 lists. */
static void normalize(upd_t *u)
{
    json_t *md = u->md, *x;
    if (!json_is_array(json_object_get(md, "schemas")) && json_is_object(x = json_object_get(md, "schema"))) {
        json_t *s = json_deep_copy(x);
        if (!json_object_get(s, "schema-id")) ice_set_int(s, "schema-id", 0);
        json_int_t id = 0;
        ice_get_int(s, "schema-id", &id);
        ice_set_int(md, "current-schema-id", id);
        json_object_set_new(md, "schemas", json_pack("[o]", s));
    }
    if (!json_is_array(json_object_get(md, "partition-specs")) &&
        json_is_array(x = json_object_get(md, "partition-spec"))) {
        ice_set_int(md, "default-spec-id", 0);
        json_object_set_new(md, "partition-specs", json_pack("[{s:i,s:O}]", "spec-id", 0, "fields", x));
    }
    if (!json_object_get(md, "last-partition-id")) {
        json_int_t lp = 999;
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(md, "partition-specs"), i, s) {
            json_int_t m = ice_max_id(json_object_get(s, "fields"), "field-id", 999);
            if (m > lp) lp = m;
        }
        ice_set_int(md, "last-partition-id", lp);
    }
    if (!json_is_array(json_object_get(md, "sort-orders"))) {
        json_object_set_new(md, "sort-orders", json_pack("[{s:i,s:[]}]", "order-id", 0, "fields"));
        ice_set_int(md, "default-sort-order-id", 0);
    }
    if (json_is_null(json_object_get(md, "current-snapshot-id"))) ice_clear_current_snapshot(md);
    obj(md, "properties");
    arr(md, "snapshots");
    obj(md, "refs");
    arr(md, "snapshot-log");
    arr(md, "metadata-log");
}

/* After removals: the snapshot log keeps only what follows the last entry whose snapshot is gone;
 * main and current-snapshot-id agree; v1 keeps its legacy fields in step. */
static int cmp_int(const void *a, const void *b)
{
    json_int_t x = *(const json_int_t *)a, y = *(const json_int_t *)b;
    return x < y ? -1 : x > y;
}

static void finish(upd_t *u, json_int_t base_updated, const char *prev_location)
{
    json_t *md = u->md, *x, *snaps = json_object_get(md, "snapshots");
    json_t *log = arr(md, "snapshot-log");
    size_t i, keep_from = 0, nids = 0;
    json_int_t id;
    /* snapshot-log entries whose snapshot is gone are trimmed from the front; the ids
     * are looked up in a sorted array (a linear search per entry is quadratic) */
    json_int_t *ids = json_array_size(log) ? malloc((json_array_size(snaps) + 1) * sizeof *ids) : NULL;
    if (ids)
        json_array_foreach(snaps, i, x)
            if (ice_get_int(x, "snapshot-id", &id)) ids[nids++] = id;
    if (ids) qsort(ids, nids, sizeof *ids, cmp_int);
    json_array_foreach(log, i, x)
        if (!ice_get_int(x, "snapshot-id", &id) ||
            (ids ? !bsearch(&id, ids, nids, sizeof *ids, cmp_int) : !ice_find_by_id(snaps, "snapshot-id", id)))
            keep_from = i + 1;
    free(ids);
    for (i = 0; i < keep_from; i++) json_array_remove(log, 0);

    json_t *main = json_object_get(json_object_get(md, "refs"), "main");
    if (main && ice_get_int(main, "snapshot-id", &id)) ice_set_int(md, "current-snapshot-id", id);

    if (u->fv == 1) {
        json_t *s = current_schema(u);
        json_int_t sid = 0;
        if (s) json_object_set_new(md, "schema", json_deep_copy(s));
        ice_get_int(md, "default-spec-id", &sid);
        json_t *spec = ice_find_by_id(json_object_get(md, "partition-specs"), "spec-id", sid);
        if (spec) json_object_set_new(md, "partition-spec", json_deep_copy(json_object_get(spec, "fields")));
    }

    int64_t now = u->last_updated ? u->last_updated : ice_now_ms();
    if (now < base_updated) now = base_updated;
    ice_set_int(md, "last-updated-ms", now);

    if (prev_location) {
        json_t *ml = arr(md, "metadata-log");
        json_array_append_new(ml, json_pack("{s:I,s:s}", "timestamp-ms", base_updated,
                                            "metadata-file", prev_location));
        long max = 100;
        const char *p = ice_get_str(json_object_get(md, "properties"), "write.metadata.previous-versions-max");
        if (p) {
            char *end;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (!errno && end != p && !*end) max = v < 1 ? 1 : v;
        }
        while (json_array_size(ml) > (size_t)max) json_array_remove(ml, 0);
    }
}

json_t *fl_iceberg_apply_updates(json_t *base, json_t *updates, const char *prev_location,
                                 int *status, char *err, size_t errlen)
{
    ice_err_t e = { err, errlen, 0 };
    upd_t u = { .e = &e, .last_schema = -1, .last_spec = -1, .last_order = -1 };
    json_int_t base_updated;
    size_t i;
    json_t *up;
    if (err && errlen) err[0] = 0;
    if (fl_iceberg_validate_metadata(base, err, errlen)) {
        /* the stored table is broken: not the client's fault */
        e.status = 500;
        goto out;
    }
    if (updates && !json_is_null(updates) && !json_is_array(updates)) {
        ice_fail(&e, 400, "\"updates\" must be an array");
        goto out;
    }
    u.md = json_deep_copy(base);
    ice_get_int(u.md, "format-version", &u.fv);
    if (!ice_get_int(u.md, "last-updated-ms", &base_updated)) base_updated = ice_now_ms();
    normalize(&u);
    json_array_foreach(updates, i, up) {
        const char *a = ice_get_str(up, "action");
        size_t k;
        if (!a) { ice_fail(&e, 400, "update %zu: needs an \"action\"", i); goto out; }
        for (k = 0; k < sizeof actions / sizeof actions[0]; k++)
            if (!strcmp(a, actions[k].action)) break;
        if (k == sizeof actions / sizeof actions[0]) {
            if (!strcmp(a, "add-view-version") || !strcmp(a, "set-current-view-version"))
                ice_fail(&e, 400, "update %s applies to views, not tables", a);
            else
                ice_fail(&e, 400, "unknown update action \"%.64s\"", a);
            goto out;
        }
        if (actions[k].fn(&u, up)) goto out;
    }
    finish(&u, base_updated, prev_location);
out:
    ice_idmap_free(&u.added);
    ice_schema_set_reset(&u.schemas);
    if (e.status) {
        json_decref(u.md);
        u.md = NULL;
    }
    if (status) *status = e.status;
    return u.md;
}
