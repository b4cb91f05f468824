/* Table maintenance configuration as S3 Tables defines it (tables as source):
 * the job types and the level each is configured at, each setting with its
 * range and default, and the effective value of a job on a table or bucket.
 *
 * Stored values ("maintenance:{type}" documents on the bucket or table ARN,
 * written by PutTable[Bucket]MaintenanceConfiguration in api/tables.c) are
 * always complete; a resource without one has the default (enabled, every
 * setting at its default). The S3 Tables control plane validates against these
 * tables and the maintenance scheduler (maint/) reads them. Pure data and
 * thread-safe readers. */
#ifndef FL_CATALOG_MAINTCFG_H
#define FL_CATALOG_MAINTCFG_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "meta/catalog.h"

#define FL_MAINT_COMPACTION "icebergCompaction"
#define FL_MAINT_SNAPSHOTS "icebergSnapshotManagement"
#define FL_MAINT_UNREFERENCED "icebergUnreferencedFileRemoval"

typedef struct fl_maintcfg_type {
    const char *name;
    bool bucket_level;                 /* PutTableBucketMaintenanceConfiguration vs PutTableMaintenanceConfiguration */
} fl_maintcfg_type_t;

typedef struct fl_maintcfg_setting {
    const char *type, *field;
    int64_t lo, hi, def;               /* integer settings */
    const char *const *choices;        /* string settings: allowed values, NULL = integer */
    const char *def_choice;
} fl_maintcfg_setting_t;

extern const fl_maintcfg_type_t fl_maintcfg_types[];
extern const size_t fl_maintcfg_n_types;
extern const fl_maintcfg_setting_t fl_maintcfg_settings[];
extern const size_t fl_maintcfg_n_settings;
extern const char *const fl_maintcfg_statuses[];      /* "enabled", "disabled", NULL */

/* The type of that name at that level, or NULL. */
const fl_maintcfg_type_t *fl_maintcfg_type(const char *name, bool bucket_level);
/* The setting (type, field), or NULL. */
const fl_maintcfg_setting_t *fl_maintcfg_setting(const char *type, const char *field);
/* {"status":"enabled","settings":{type:{defaults}}} (new reference). */
json_t *fl_maintcfg_default(const char *type);
/* The stored value of type on arn, or the default (new reference; never NULL). */
json_t *fl_maintcfg_get(fl_catalog_t *cat, const char *arn, const char *type);
/* status is not "disabled". */
bool fl_maintcfg_enabled(json_t *value);
/* A setting of a value (settings.{type}.{field}), else its default. */
int64_t fl_maintcfg_int(json_t *value, const char *type, const char *field);
const char *fl_maintcfg_str(json_t *value, const char *type, const char *field);
#endif
