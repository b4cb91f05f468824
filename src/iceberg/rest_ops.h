/* fl_table_ops_t (iceberg/append.h) over the REST client and table IO: how
 * `floe append`, `floe scan` and the sink reach a table in any REST catalog.
 * The ops borrow client, io and the identifier, which must outlive them. */
#ifndef FL_ICEBERG_REST_OPS_H
#define FL_ICEBERG_REST_OPS_H
#include "iceberg/append.h"
#include "iceberg/io.h"
#include "iceberg/rest_client.h"

typedef struct fl_rest_ops_ctx {
    fl_rest_client_t *client;
    const fl_rest_ident_t *ident;
    fl_io_t *io;
    fl_rest_table_t last;       /* the last loaded/committed table (metadata and config) */
} fl_rest_ops_ctx_t;

/* Fill ops with callbacks over ctx (zero ctx->last first). */
void fl_rest_table_ops(fl_rest_ops_ctx_t *ctx, fl_table_ops_t *ops);
/* Release ctx->last. */
void fl_rest_ops_ctx_free(fl_rest_ops_ctx_t *ctx);

#endif
