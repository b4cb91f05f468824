/* floe admin: accounts (tenants) and their first keys, working on a data
 * server's catalog store directly (the server may be running: SQLite is in
 * WAL mode; a PostgreSQL store, --catalog-db, serialises like the nodes'
 * writes). Secrets are printed once, here, and stored sealed under the
 * nodes' IAM master key (--iam-master-key-file, as serve's).
 *
 *   floe admin create-account [--account ID] [--data-dir DIR]
 *   floe admin list-accounts [--data-dir DIR]
 *   floe admin create-user-key --account ID --user NAME [--data-dir DIR]
 *
 * The server's own account (serve --account, default 000000000000) keeps
 * the root key of DATA_DIR/root-key; every other account's root key is a row
 * of the store. */
#include "catalog/iam.h"
#include "cli/cli.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "base/uuid.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: floe admin create-account [--account ID] [--data-dir DIR]\n"
               "       floe admin list-accounts [--data-dir DIR]\n"
               "       floe admin create-user-key --account ID --user NAME [--data-dir DIR]\n"
               "  --data-dir   the server's data directory (FLOE_DATA_DIR, default ./floe-data)\n"
               "  --account    a 12-digit account id (create-account: random when absent)\n"
               "  --server-account  the server's own account (serve --account; default 000000000000)\n"
               "  --catalog-db the nodes' catalog store, as serve's (FLOE_CATALOG_DB; default DATA-DIR/catalog.db)\n"
               "  --iam-master-key-file  as serve's (FLOE_IAM_MASTER_KEY_FILE; default DATA-DIR/iam-master-key)\n");
}

static int create_user_key(fl_iam_t *iam, fl_catalog_t *cat, const char *account, const char *user)
{
    if (!account || !user || !*user || strlen(user) > 64) {
        usage(stderr);
        return 2;
    }
    if (!fl_iam_account_exists(iam, account)) {
        fprintf(stderr, "floe admin: no account %s (create-account first)\n", account);
        return 1;
    }
    fl_iam_principal_t p = { 0 };
    fl_strlcpy(p.account, account, sizeof p.account);
    fl_strlcpy(p.kind, "user", sizeof p.kind);
    fl_strlcpy(p.name, user, sizeof p.name);
    snprintf(p.arn, sizeof p.arn, "arn:aws:iam::%s:user/%s", account, user);
    memcpy(p.id, "AIDA", 4);
    fl_random_hex(p.id + 4, 17);
    for (char *c = p.id + 4; *c; c++) *c = (char)(*c >= 'a' ? *c - 32 : *c);
    fl_err_t e = fl_catalog_principal_create(cat, &p);
    if (e && e != FL_ERR_EXISTS) {
        fprintf(stderr, "floe admin: cannot create user %s: %s\n", user, fl_err_str(e));
        return 1;
    }
    fl_iam_key_t k;
    char secret[128];
    if ((e = fl_iam_new_key(iam, account, "user", user, &k, secret)) || (e = fl_catalog_key_create(cat, &k))) {
        fprintf(stderr, "floe admin: cannot create a key: %s\n", fl_err_str(e));
        return 1;
    }
    printf("account            %s\nuser               %s\narn                arn:aws:iam::%s:user/%s\n"
           "access_key_id      %s\nsecret_access_key  %s\n", account, user, account, user, k.akid, secret);
    memset(secret, 0, sizeof secret);
    return 0;
}

int fl_cmd_admin(int argc, char **argv)
{
    const char *dir = getenv("FLOE_DATA_DIR"), *account = NULL, *user = NULL, *server = getenv("FLOE_ACCOUNT");
    const char *catdb = getenv("FLOE_CATALOG_DB"), *keyfile = getenv("FLOE_IAM_MASTER_KEY_FILE");
    if (!dir) dir = "./floe-data";
    if (!server) server = "000000000000";
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    for (int i = 2; i < argc; i++) {
        const char **slot = !strcmp(argv[i], "--data-dir") ? &dir : !strcmp(argv[i], "--account") ? &account
                            : !strcmp(argv[i], "--user") ? &user : !strcmp(argv[i], "--server-account") ? &server
                            : !strcmp(argv[i], "--catalog-db") ? &catdb
                            : !strcmp(argv[i], "--iam-master-key-file") ? &keyfile : NULL;
        if (!slot || i + 1 >= argc) {
            usage(stderr);
            return 2;
        }
        *slot = argv[++i];
    }
    fl_log_level = FL_LOG_WARN;
    char path[4200], keypath[4200];
    if (catdb && *catdb) snprintf(path, sizeof path, "%s", catdb);
    else snprintf(path, sizeof path, "%s/catalog.db", dir);
    if (keyfile && *keyfile) snprintf(keypath, sizeof keypath, "%s", keyfile);
    else snprintf(keypath, sizeof keypath, "%s/iam-master-key", dir);
    fl_catalog_t *cat = fl_catalog_open(path);
    if (!cat) return 1;
    static const fl_keys_t none = { "", "" };
    fl_iam_t *iam = fl_iam_open(cat, keypath, &none, server);
    int rc = 1;
    if (!iam) goto out;
    /* a bracket like a server's write request: the nodes on a shared store are told */
    uint64_t mark = fl_iam_write_begin(iam);
    if (!strcmp(cmd, "create-account")) {
        char id[16], secret[128];
        fl_iam_key_t k;
        fl_err_t e = fl_iam_account_create(iam, account, id, &k, secret);
        if (e == FL_ERR_EXISTS) fprintf(stderr, "floe admin: account %s exists\n", account);
        else if (e == FL_ERR_INVALID) fprintf(stderr, "floe admin: an account id is 12 digits, not the server's own\n");
        else if (e) fprintf(stderr, "floe admin: cannot create the account: %s\n", fl_err_str(e));
        else {
            printf("account            %s\narn                arn:aws:iam::%s:root\naccess_key_id      %s\n"
                   "secret_access_key  %s\n", id, id, k.akid, secret);
            rc = 0;
        }
        memset(secret, 0, sizeof secret);
    } else if (!strcmp(cmd, "list-accounts")) {
        fl_iam_principal_t *v;
        size_t n;
        if (fl_iam_account_list(iam, &v, &n) == FL_OK) {
            printf("%-14s %-22s %s\n", "ACCOUNT", "ROOT ACCESS KEY", "CREATED");
            printf("%-14s %-22s %s\n", server, "(DATA_DIR/root-key)", "-");
            for (size_t i = 0; i < n; i++) {
                fl_iam_key_t *keys;
                size_t nk = 0;
                char d[32];
                fl_time_iso8601(v[i].created_ms, d, sizeof d);
                fl_catalog_key_list(cat, v[i].name, "root", "", &keys, &nk);
                printf("%-14s %-22s %s\n", v[i].name, nk ? keys[0].akid : "-", d);
                fl_iam_keys_free(keys, nk);
            }
            fl_iam_principals_free(v, n);
            rc = 0;
        }
    } else if (!strcmp(cmd, "create-user-key")) {
        rc = create_user_key(iam, cat, account, user);
    } else {
        usage(stderr);
        rc = 2;
    }
    fl_iam_write_end(iam, mark);
out:
    fl_iam_close(iam);
    fl_catalog_close(cat);
    return rc;
}
