/* JSON values into column vectors: the reverse of fl_vec_json_append, for
 * `floe append` and tests. Accepted forms per type (Iceberg's JSON
 * single-value forms plus the obvious neighbours):
 *   boolean  true/false              int/long  integers (range-checked)
 *   float/double  numbers, "NaN", "Infinity", "-Infinity"
 *   decimal  "123.45" or a number; more fraction digits than the scale is an
 *            error, fewer are padded; more digits than the precision is an error
 *   date "2017-11-16" or days; time "22:31:08[.ffffff]" or micros;
 *   timestamp(tz)(_ns) "2017-11-16T22:31:08[.f...][Z|+00:00|+hh:mm]" or an
 *            integer in the column's unit
 *   string any JSON string; uuid canonical text; fixed/binary lowercase or
 *            uppercase hex
 *   struct object keyed by field name (missing keys = null); list array;
 *   map object (string keys) or [{"key":..,"value":..}]
 * Null (or a missing key) for a required field is an error. Pure; any thread. */
#ifndef FL_FORMAT_JSON_ROWS_H
#define FL_FORMAT_JSON_ROWS_H
#include <jansson.h>
#include <stddef.h>
#include "base/err.h"
#include "format/column.h"

/* Append one slot converted from j (NULL = JSON null) to v. On error nothing
 * useful can be assumed about v's last slot: the caller rolls the whole batch
 * back (fl_vec_clear) or drops the row by rebuilding. err names the field path. */
fl_err_t fl_vec_append_json(fl_vec_t *v, json_t *j, char *err, size_t errlen);

#endif
