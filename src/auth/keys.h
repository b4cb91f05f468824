/* Access keys. For now one root account: its key pair comes from the
 * environment (FLOE_ROOT_ACCESS_KEY_ID / FLOE_ROOT_SECRET_ACCESS_KEY) or the
 * configuration, else it is generated on first start and kept in
 * DATA_DIR/root-key with mode 0600. The secret is never logged. */
#ifndef FL_AUTH_KEYS_H
#define FL_AUTH_KEYS_H
#include <stdbool.h>
#include "base/err.h"

typedef struct fl_keys {
    char akid[128];
    char secret[128];
} fl_keys_t;

/* Fills *k from akid/secret when both are given, else from DATA_DIR/root-key,
 * else generates a pair and stores it (sets *generated). A root-key file with
 * any group/other permission bit fails with FL_ERR_AUTH (logged, naming the
 * file and the fix) unless allow_insecure_file, which only logs a warning.
 * Main thread, at start. */
fl_err_t fl_keys_root(const char *data_dir, const char *akid, const char *secret,
                      bool allow_insecure_file, fl_keys_t *k, bool *generated);
/* fl_secret_lookup_fn over a const fl_keys_t* (ud). Thread-safe. */
bool fl_keys_lookup(void *ud, const char *akid, char *secret_out);
#endif
