/* Root key pair: from configuration, from DATA_DIR/root-key, or generated.
 * A root-key file that group or others may access is refused (unless the
 * caller allows it, then a warning is logged). */
#include "auth/keys.h"
#include "base/log.h"
#include "base/mem.h"
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool valid_part(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n < 3 || n >= max) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] > '~') return false;
    return true;
}

static void random_str(char *out, size_t n, const char *alphabet)
{
    unsigned char r[128];
    size_t al = strlen(alphabet);
    if (RAND_bytes(r, (int)n) != 1) {
        fl_error("RAND_bytes failed");
        abort();
    }
    for (size_t i = 0; i < n; i++) out[i] = alphabet[r[i] % al];
    out[n] = 0;
}

fl_err_t fl_keys_root(const char *data_dir, const char *akid, const char *secret,
                      bool allow_insecure_file, fl_keys_t *k, bool *generated)
{
    char path[4096];
    *generated = false;
    memset(k, 0, sizeof *k);
    if (akid && *akid && secret && *secret) {
        if (!valid_part(akid, sizeof k->akid) || !valid_part(secret, sizeof k->secret)) {
            fl_error("root access key id or secret is malformed");
            return FL_ERR_INVALID;
        }
        fl_strlcpy(k->akid, akid, sizeof k->akid);
        fl_strlcpy(k->secret, secret, sizeof k->secret);
        return FL_OK;
    }
    snprintf(path, sizeof path, "%s/root-key", data_dir);
    FILE *f = fopen(path, "r");
    if (f) {
        struct stat st;
        if (fstat(fileno(f), &st) != 0) {
            fl_error("cannot stat %s: %s", path, strerror(errno));
            fclose(f);
            return FL_ERR_IO;
        }
        if (st.st_mode & (S_IRWXG | S_IRWXO)) {
            if (!allow_insecure_file) {
                fl_error("%s is accessible by group or others (mode %04o): run 'chmod 600 %s', "
                         "or start with --allow-insecure-key-file", path,
                         (unsigned)(st.st_mode & 07777), path);
                fclose(f);
                return FL_ERR_AUTH;
            }
            fl_warn("%s is accessible by group or others (mode %04o); used because of "
                    "--allow-insecure-key-file", path, (unsigned)(st.st_mode & 07777));
        }
        char line[512];
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\r\n")] = 0;
            if (strncmp(line, "access_key_id=", 14) == 0) fl_strlcpy(k->akid, line + 14, sizeof k->akid);
            if (strncmp(line, "secret_access_key=", 18) == 0) fl_strlcpy(k->secret, line + 18, sizeof k->secret);
        }
        fclose(f);
        OPENSSL_cleanse(line, sizeof line);
        if (!valid_part(k->akid, sizeof k->akid) || !valid_part(k->secret, sizeof k->secret)) {
            fl_error("%s is malformed", path);
            return FL_ERR_INVALID;
        }
        return FL_OK;
    }
    if (errno != ENOENT) {
        fl_error("cannot read %s: %s", path, strerror(errno));
        return FL_ERR_IO;
    }
    memcpy(k->akid, "FL", 2);
    random_str(k->akid + 2, 18, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
    random_str(k->secret, 40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        fl_error("cannot create %s: %s", tmp, strerror(errno));
        return FL_ERR_IO;
    }
    char body[400];
    int n = snprintf(body, sizeof body, "access_key_id=%s\nsecret_access_key=%s\n", k->akid, k->secret);
    bool ok = write(fd, body, (size_t)n) == n && fsync(fd) == 0;
    close(fd);
    OPENSSL_cleanse(body, sizeof body);
    if (!ok || rename(tmp, path) != 0) {
        fl_error("cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return FL_ERR_IO;
    }
    *generated = true;
    return FL_OK;
}

bool fl_keys_lookup(void *ud, const char *akid, char *secret_out)
{
    const fl_keys_t *k = ud;
    size_t n = strlen(akid);
    if (n != strlen(k->akid) || CRYPTO_memcmp(akid, k->akid, n) != 0) return false;
    memcpy(secret_out, k->secret, strlen(k->secret) + 1);
    return true;
}
