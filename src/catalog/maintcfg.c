/* Maintenance configuration tables and readers (maintcfg.h). */
#include "catalog/maintcfg.h"
#include <stdlib.h>
#include <string.h>

const fl_maintcfg_type_t fl_maintcfg_types[] = {
    { FL_MAINT_COMPACTION, false },
    { FL_MAINT_SNAPSHOTS, false },
    { FL_MAINT_UNREFERENCED, true },
};
const size_t fl_maintcfg_n_types = sizeof fl_maintcfg_types / sizeof fl_maintcfg_types[0];

static const char *const compaction_strategies[] = { "auto", "binpack", "sort", "z-order", NULL };

/* S3 Tables' documented ranges and defaults. */
const fl_maintcfg_setting_t fl_maintcfg_settings[] = {
    { FL_MAINT_COMPACTION, "targetFileSizeMB", 64, 512, 512, NULL, NULL },
    { FL_MAINT_COMPACTION, "strategy", 0, 0, 0, compaction_strategies, "auto" },
    { FL_MAINT_SNAPSHOTS, "minSnapshotsToKeep", 1, INT32_MAX, 1, NULL, NULL },
    { FL_MAINT_SNAPSHOTS, "maxSnapshotAgeHours", 1, INT32_MAX, 120, NULL, NULL },
    { FL_MAINT_UNREFERENCED, "unreferencedDays", 1, INT32_MAX, 3, NULL, NULL },
    { FL_MAINT_UNREFERENCED, "nonCurrentDays", 1, INT32_MAX, 10, NULL, NULL },
};
const size_t fl_maintcfg_n_settings = sizeof fl_maintcfg_settings / sizeof fl_maintcfg_settings[0];

const char *const fl_maintcfg_statuses[] = { "enabled", "disabled", NULL };

const fl_maintcfg_type_t *fl_maintcfg_type(const char *name, bool bucket_level)
{
    for (size_t i = 0; i < fl_maintcfg_n_types; i++)
        if (!strcmp(fl_maintcfg_types[i].name, name) && fl_maintcfg_types[i].bucket_level == bucket_level)
            return &fl_maintcfg_types[i];
    return NULL;
}

const fl_maintcfg_setting_t *fl_maintcfg_setting(const char *type, const char *field)
{
    for (size_t i = 0; i < fl_maintcfg_n_settings; i++)
        if (!strcmp(fl_maintcfg_settings[i].type, type) && !strcmp(fl_maintcfg_settings[i].field, field))
            return &fl_maintcfg_settings[i];
    return NULL;
}

json_t *fl_maintcfg_default(const char *type)
{
    json_t *s = json_object();
    for (size_t i = 0; i < fl_maintcfg_n_settings; i++) {
        const fl_maintcfg_setting_t *m = &fl_maintcfg_settings[i];
        if (strcmp(m->type, type)) continue;
        if (m->choices) json_object_set_new(s, m->field, json_string(m->def_choice));
        else json_object_set_new(s, m->field, json_integer(m->def));
    }
    return json_pack("{s:s, s:{s:o}}", "status", "enabled", "settings", type, s);
}

json_t *fl_maintcfg_get(fl_catalog_t *cat, const char *arn, const char *type)
{
    char kind[96], *text = NULL;
    snprintf(kind, sizeof kind, "maintenance:%s", type);
    json_t *j = NULL;
    if (fl_catalog_doc_get(cat, arn, kind, &text) == FL_OK && text) j = json_loads(text, 0, NULL);
    free(text);
    if (json_is_object(j)) return j;
    json_decref(j);
    return fl_maintcfg_default(type);
}

bool fl_maintcfg_enabled(json_t *value)
{
    const char *s = json_string_value(json_object_get(value, "status"));
    return !s || strcmp(s, "disabled") != 0;
}

static json_t *field_of(json_t *value, const char *type, const char *field)
{
    return json_object_get(json_object_get(json_object_get(value, "settings"), type), field);
}

int64_t fl_maintcfg_int(json_t *value, const char *type, const char *field)
{
    const fl_maintcfg_setting_t *m = fl_maintcfg_setting(type, field);
    json_t *v = field_of(value, type, field);
    if (m && json_is_integer(v) && json_integer_value(v) >= m->lo && json_integer_value(v) <= m->hi)
        return json_integer_value(v);
    return m ? m->def : 0;
}

const char *fl_maintcfg_str(json_t *value, const char *type, const char *field)
{
    const fl_maintcfg_setting_t *m = fl_maintcfg_setting(type, field);
    json_t *v = field_of(value, type, field);
    return json_is_string(v) ? json_string_value(v) : m ? m->def_choice : NULL;
}
