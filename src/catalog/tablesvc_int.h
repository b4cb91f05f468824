/* The service object, shared by the files of src/catalog/ only. */
#ifndef FL_CATALOG_TABLESVC_INT_H
#define FL_CATALOG_TABLESVC_INT_H
#include "catalog/tablesvc.h"

struct fl_tablesvc {
    fl_tablesvc_cfg_t cfg;
};
#endif
