/* Table file IO over S3 (httpc + SigV4 "s3") and the local file system. Each public call
 * parses the location once and dispatches to s3_* or local_*; the S3 side builds the object
 * URL (path-style or virtual-host) and maps statuses through fl_httpc_status_err. Multipart
 * uploads stream parts from the caller's fd with pread, so memory stays small. */
#include "iceberg/io.h"
#include "base/mem.h"
#include "base/time.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include "net/xml.h"
#include <unistd.h>

#define MIB (1024ull * 1024)
#define S3_MIN_PART (5 * MIB)
#define S3_MAX_PARTS 10000

struct fl_io {
    fl_httpc_t *http;
    char *endpoint;            /* NULL = AWS regional endpoint */
    char *region;
    bool path_style;
    char *akid, *secret, *token;
    fl_httpc_sigv4_t sig;
    uint64_t threshold, part_size;
    size_t footer_cache;
};

void fl_io_opts_default(fl_io_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->path_style = -1;
}

static const char *prop(json_t *props, const char *k)
{
    json_t *v = props ? json_object_get(props, k) : NULL;
    return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

static char *pick(const char *override, const char *map, const char *fallback)
{
    const char *v = override && *override ? override : map ? map : fallback;
    return v && *v ? fl_strdup(v) : NULL;
}

fl_err_t fl_io_new(json_t *props, const fl_io_opts_t *o, fl_io_t **out)
{
    fl_io_opts_t d;
    if (!o) fl_io_opts_default(&d), o = &d;
    fl_io_t *io = fl_calloc(1, sizeof *io);
    /* no overall deadline by default (a 64 MiB part may be slow): the stall limit applies */
    fl_httpc_cfg_t hc = { .connect_timeout_ms = o->connect_timeout_ms,
                          .timeout_ms = o->timeout_ms ? o->timeout_ms : -1, .max_retries = o->max_retries };
    io->http = fl_httpc_new(&hc);
    io->endpoint = pick(o->s3_endpoint, prop(props, "s3.endpoint"), NULL);
    if (io->endpoint)
        for (size_t l = strlen(io->endpoint); l && io->endpoint[l - 1] == '/'; l--) io->endpoint[l - 1] = 0;
    const char *reg = prop(props, "client.region");
    if (!reg) reg = prop(props, "s3.region");
    io->region = pick(NULL, reg, o->region && *o->region ? o->region : "us-east-1");
    const char *ps = prop(props, "s3.path-style-access"), *fv = prop(props, "s3.force-virtual-addressing");
    if (o->path_style >= 0) io->path_style = o->path_style;
    else if (ps) io->path_style = !strcasecmp(ps, "true");
    else if (fv) io->path_style = strcasecmp(fv, "true") != 0;
    else io->path_style = io->endpoint != NULL;
    /* credentials come as a set: the map's, else the fallback's */
    const char *ak = prop(props, "s3.access-key-id"), *sk = prop(props, "s3.secret-access-key");
    if (ak && sk) {
        io->akid = fl_strdup(ak);
        io->secret = fl_strdup(sk);
        io->token = pick(NULL, prop(props, "s3.session-token"), NULL);
    } else if (o->access_key_id && *o->access_key_id && o->secret_access_key && *o->secret_access_key) {
        io->akid = fl_strdup(o->access_key_id);
        io->secret = fl_strdup(o->secret_access_key);
        io->token = pick(NULL, NULL, o->session_token);
    }
    io->sig = (fl_httpc_sigv4_t){ io->akid, io->secret, io->token, io->region, "s3" };
    io->threshold = o->multipart_threshold ? o->multipart_threshold : 64 * MIB;
    io->part_size = o->part_size ? o->part_size : 64 * MIB;
    if (io->part_size < S3_MIN_PART) io->part_size = S3_MIN_PART;
    io->footer_cache = o->footer_cache ? o->footer_cache : (size_t)MIB;
    *out = io;
    return FL_OK;
}

static void free_secret(char *s)
{
    if (s) memset(s, 0, strlen(s));
    free(s);
}

void fl_io_free(fl_io_t *io)
{
    if (!io) return;
    fl_httpc_free(io->http);
    free(io->endpoint);
    free(io->region);
    free(io->akid);
    free_secret(io->secret);
    free_secret(io->token);
    free(io);
}

/* ---- locations ---- */

const char *fl_io_s3_rest(const char *location)
{
    static const char *const schemes[] = { "s3://", "s3a://", "s3n://", "oss://" };
    for (size_t i = 0; location && i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i]);
        if (!strncmp(location, schemes[i], n)) return location + n;
    }
    return NULL;
}

fl_err_t fl_io_parse_location(const char *location, fl_s3_loc_t *s3, fl_buf_t *path)
{
    if (!location || !*location) return FL_ERR_INVALID;
    const char *rest = fl_io_s3_rest(location);
    if (rest) {
        size_t bl = strcspn(rest, "/");
        const char *key = rest[bl] == '/' ? rest + bl + 1 : "";
        if (!bl || bl >= sizeof s3->bucket || !*key || strlen(key) >= sizeof s3->key) return FL_ERR_INVALID;
        snprintf(s3->bucket, sizeof s3->bucket, "%.*s", (int)bl, rest);
        snprintf(s3->key, sizeof s3->key, "%s", key);
        return FL_OK;
    }
    const char *p = location;
    if (!strncmp(p, "file://", 7)) {
        p += 7;
        if (*p != '/') { /* file://host/path: only an empty host or localhost */
            if (strncmp(p, "localhost/", 10)) return FL_ERR_INVALID;
            p += 9;
        }
    } else if (!strncmp(p, "file:/", 6)) {
        p += 5;
    } else if (strstr(p, "://")) {
        return FL_ERR_INVALID;
    }
    if (!*p) return FL_ERR_INVALID;
    if (path) fl_buf_adds(path, p);
    return FL_ERR_NOT_FOUND;
}

fl_err_t fl_io_s3_url(const char *endpoint, const char *region, bool path_style, const fl_s3_loc_t *loc,
                      fl_buf_t *out)
{
    char def[160];
    if (!endpoint) {
        snprintf(def, sizeof def, "https://s3.%s.amazonaws.com", region ? region : "us-east-1");
        endpoint = def;
    }
    const char *hs = strstr(endpoint, "://");
    if (!hs) return FL_ERR_INVALID;
    hs += 3;
    size_t hl = strcspn(hs, "/");
    const char *base_path = hs + hl; /* endpoint may carry a path */
    fl_err_t e;
    if (path_style) {
        e = fl_buf_printf(out, "%.*s%s/", (int)(hs - endpoint + hl), endpoint, base_path);
        if (!e) e = fl_uri_encode(fl_slice_cstr(loc->bucket), false, out);
    } else {
        e = fl_buf_printf(out, "%.*s%s.%.*s%s", (int)(hs - endpoint), endpoint, loc->bucket, (int)hl, hs,
                          base_path);
    }
    if (!e) e = fl_buf_addc(out, '/');
    if (!e) e = fl_uri_encode(fl_slice_cstr(loc->key), true, out);
    return e;
}

/* ---- S3 ---- */

typedef struct s3call {
    const char *method;
    const char *query;
    const fl_http_header_t *headers;
    size_t nheaders;
    const void *body;
    size_t body_len;
    bool has_body;
    int fd;
    uint64_t fd_off, fd_len;
    fl_buf_t *resp;
    void *dst;
    size_t dst_cap;
    bool idempotent;
} s3call_t;

static fl_err_t s3_do(fl_io_t *io, const fl_s3_loc_t *loc, const s3call_t *c, fl_httpc_resp_t *rs,
                      fl_remote_error_t *err)
{
    fl_buf_t url;
    fl_buf_init(&url, 0);
    memset(rs, 0, sizeof *rs);
    fl_err_t e = fl_io_s3_url(io->endpoint, io->region, io->path_style, loc, &url);
    if (e) {
        fl_buf_free(&url);
        return fl_remote_error_set(err, FL_ERR_INVALID, "bad S3 endpoint '%s'", io->endpoint);
    }
    fl_httpc_req_t r = {
        .method = c->method, .url = url.ptr, .query = c->query, .headers = c->headers,
        .nheaders = c->nheaders, .body = c->body, .body_len = c->body_len, .has_body = c->has_body,
        .body_fd = c->has_body ? -1 : c->fd, .body_off = c->fd_off, .body_fd_len = c->fd_len,
        .sigv4 = io->akid ? &io->sig : NULL, .idempotent = c->idempotent, .resp = c->resp,
        .dst = c->dst, .dst_cap = c->dst_cap,
    };
    e = fl_httpc_do(io->http, &r, rs, err);
    if (!e && (rs->status < 200 || rs->status >= 300)) {
        e = fl_httpc_status_err((int)rs->status, err->type);
        if (!strcmp(c->method, "HEAD")) { /* no body: say what failed */
            if (rs->status == 404 && !err->type[0]) snprintf(err->type, sizeof err->type, "NoSuchKey");
            snprintf(err->message, sizeof err->message, "s3://%.200s/%.280s: %s", loc->bucket, loc->key,
                     rs->status == 404 ? "not found" : rs->status == 403 ? "access denied" : "HEAD failed");
        }
    }
    fl_buf_free(&url);
    return e;
}

static fl_err_t s3_put_mem(fl_io_t *io, const fl_s3_loc_t *loc, const void *p, size_t n,
                           fl_remote_error_t *err)
{
    fl_httpc_resp_t rs;
    s3call_t c = { .method = "PUT", .body = p, .body_len = n, .has_body = true, .fd = -1, .idempotent = true };
    return s3_do(io, loc, &c, &rs, err);
}

static fl_err_t s3_multipart(fl_io_t *io, const fl_s3_loc_t *loc, int fd, uint64_t size,
                             fl_remote_error_t *err)
{
    fl_err_t e;
    fl_buf_t resp, q, body;
    fl_httpc_resp_t rs;
    char upload_id[512] = "";
    fl_buf_init(&resp, 1 << 20);
    fl_buf_init(&q, 0);
    fl_buf_init(&body, 0);
    uint64_t part = io->part_size;
    while ((size + part - 1) / part > S3_MAX_PARTS) part *= 2;
    uint64_t nparts = (size + part - 1) / part;

    s3call_t init = { .method = "POST", .query = "uploads=", .has_body = true, .fd = -1, .resp = &resp };
    if ((e = s3_do(io, loc, &init, &rs, err))) goto out;
    const char *s = strstr(resp.ptr ? resp.ptr : "", "<UploadId>"), *t = s ? strstr(s, "</UploadId>") : NULL;
    if (!s || !t || t - s - 10 <= 0 || (size_t)(t - s - 10) >= sizeof upload_id) {
        e = fl_remote_error_set(err, FL_ERR_PROTO, "CreateMultipartUpload answer without an UploadId");
        goto out;
    }
    snprintf(upload_id, sizeof upload_id, "%.*s", (int)(t - s - 10), s + 10);

    fl_buf_adds(&body, "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    for (uint64_t i = 0; i < nparts; i++) {
        uint64_t off = i * part, len = size - off < part ? size - off : part;
        fl_buf_reset(&q);
        fl_buf_printf(&q, "partNumber=%llu&uploadId=", (unsigned long long)(i + 1));
        fl_uri_encode(fl_slice_cstr(upload_id), false, &q);
        s3call_t pc = { .method = "PUT", .query = q.ptr, .fd = fd, .fd_off = off, .fd_len = len,
                        .idempotent = true };
        if ((e = s3_do(io, loc, &pc, &rs, err))) goto abort;
        if (!rs.etag[0]) {
            e = fl_remote_error_set(err, FL_ERR_PROTO, "UploadPart %llu answered without an ETag",
                                    (unsigned long long)(i + 1));
            goto abort;
        }
        fl_buf_printf(&body, "<Part><PartNumber>%llu</PartNumber><ETag>%s</ETag></Part>",
                      (unsigned long long)(i + 1), rs.etag);
    }
    fl_buf_adds(&body, "</CompleteMultipartUpload>");
    fl_buf_reset(&q);
    fl_buf_adds(&q, "uploadId=");
    fl_uri_encode(fl_slice_cstr(upload_id), false, &q);
    fl_buf_reset(&resp);
    fl_http_header_t ct = { "content-type", 12, "application/xml", 15 };
    s3call_t done = { .method = "POST", .query = q.ptr, .headers = &ct, .nheaders = 1, .body = body.ptr,
                      .body_len = body.len, .has_body = true, .fd = -1, .resp = &resp };
    if ((e = s3_do(io, loc, &done, &rs, err))) goto abort;
    if (resp.ptr && strstr(resp.ptr, "<Error>")) { /* S3 may fail a Complete inside a 200 */
        fl_remote_error_parse(500, resp.ptr, resp.len, NULL, err);
        e = FL_ERR_IO;
        goto abort;
    }
    e = FL_OK;
    goto out;
abort: {
        fl_remote_error_t e2;
        fl_buf_reset(&q);
        fl_buf_adds(&q, "uploadId=");
        fl_uri_encode(fl_slice_cstr(upload_id), false, &q);
        s3call_t ab = { .method = "DELETE", .query = q.ptr, .fd = -1, .idempotent = true };
        s3_do(io, loc, &ab, &rs, &e2);
    }
out:
    fl_buf_free(&resp);
    fl_buf_free(&q);
    fl_buf_free(&body);
    return e;
}

static fl_err_t s3_read_at(fl_io_t *io, const fl_s3_loc_t *loc, uint64_t off, void *p, size_t n,
                           fl_remote_error_t *err)
{
    char range[64];
    snprintf(range, sizeof range, "bytes=%llu-%llu", (unsigned long long)off,
             (unsigned long long)(off + n - 1));
    fl_http_header_t h = { "range", 5, range, strlen(range) };
    fl_httpc_resp_t rs;
    s3call_t c = { .method = "GET", .headers = &h, .nheaders = 1, .fd = -1, .dst = p, .dst_cap = n,
                   .idempotent = true };
    fl_err_t e = s3_do(io, loc, &c, &rs, err);
    if (e == FL_ERR_TOO_LARGE && off == 0)  /* a server that ignored Range: 200 with more */
        return fl_remote_error_set(err, FL_ERR_PROTO, "s3://%s/%s: server ignored the Range header",
                                   loc->bucket, loc->key);
    if (rs.status == 416)
        return fl_remote_error_set(err, FL_ERR_INVALID, "s3://%s/%s: range %s is past the end",
                                   loc->bucket, loc->key, range + 6);
    if (e) return e;
    if (rs.dst_len != n || (rs.status != 206 && off != 0))
        return fl_remote_error_set(err, FL_ERR_INVALID, "s3://%s/%s: short read (%zu of %zu bytes at %llu)",
                                   loc->bucket, loc->key, rs.dst_len, n, (unsigned long long)off);
    return FL_OK;
}

/* ---- local files ---- */

static fl_err_t errno_err(fl_remote_error_t *err, const char *what, const char *path)
{
    int en = errno;
    fl_err_t e = en == ENOENT || en == ENOTDIR ? FL_ERR_NOT_FOUND : en == EACCES || en == EPERM ? FL_ERR_AUTH : FL_ERR_IO;
    return fl_remote_error_set(err, e, "%s %s: %s", what, path, strerror(en));
}

static int mkdirs(char *path) /* for the parent of path; path is modified and restored */
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int r = mkdir(path, 0755);
        *p = '/';
        if (r && errno != EEXIST) return -1;
    }
    return 0;
}

/* Writes to path via a temp file: from p/n, or from fd when p is NULL. */
static fl_err_t local_put(const char *path, const void *p, size_t n, int fd, uint64_t size,
                          fl_remote_error_t *err)
{
    fl_err_t e = FL_OK;
    char *tmp = NULL, *dir = fl_strdup(path);
    int out = -1;
    char *buf = NULL;
    if (mkdirs(dir)) {
        e = errno_err(err, "mkdir for", path);
        goto out;
    }
    size_t tl = strlen(path) + 16;
    tmp = fl_malloc(tl);
    snprintf(tmp, tl, "%s.tmp.XXXXXX", path);
    if ((out = mkstemp(tmp)) < 0) {
        e = errno_err(err, "create", tmp);
        free(tmp);
        tmp = NULL;
        goto out;
    }
    const char *src = p;
    uint64_t left = p ? n : size, pos = 0;
    if (!p) buf = fl_malloc(1 << 20);
    while (left) {
        size_t chunk = left < (1 << 20) ? (size_t)left : (1 << 20);
        if (!p) {
            ssize_t r = pread(fd, buf, chunk, (off_t)pos);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                if (!r) errno = EIO;
                e = errno_err(err, "read the source for", path);
                goto out;
            }
            chunk = (size_t)r;
            src = buf;
        }
        ssize_t w = write(out, p ? src + pos : src, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            e = errno_err(err, "write", tmp);
            goto out;
        }
        pos += (uint64_t)w;
        left -= (uint64_t)w;
    }
    if (fsync(out) || close(out)) {
        out = -1;
        e = errno_err(err, "fsync", tmp);
        goto out;
    }
    out = -1;
    if (rename(tmp, path)) {
        e = errno_err(err, "rename to", path);
        goto out;
    }
    char *slash = strrchr(dir, '/');
    if (slash) { /* make the new name durable too */
        *slash = 0;
        int dfd = open(slash == dir ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    free(tmp);
    tmp = NULL;
out:
    if (out >= 0) close(out);
    if (tmp) unlink(tmp);
    free(tmp);
    free(dir);
    free(buf);
    return e;
}

/* ---- dispatch ---- */

/* FL_OK: S3 (s3 filled); FL_ERR_NOT_FOUND: local (path filled); else the error. */
static fl_err_t where(const char *location, fl_s3_loc_t *s3, fl_buf_t *path, fl_remote_error_t *err)
{
    fl_err_t e = fl_io_parse_location(location, s3, path);
    if (e == FL_ERR_INVALID)
        return fl_remote_error_set(err, e, "unsupported location '%s' (s3://, s3a://, s3n://, oss://, file:// or a path)",
                                   location ? location : "");
    return e;
}

fl_err_t fl_io_put(fl_io_t *io, const char *location, const void *p, size_t n, fl_remote_error_t *err)
{
    fl_s3_loc_t s3;
    fl_buf_t path;
    fl_buf_init(&path, 0);
    memset(err, 0, sizeof *err);
    fl_err_t e = where(location, &s3, &path, err);
    if (e == FL_OK) e = s3_put_mem(io, &s3, p, n, err);
    else if (e == FL_ERR_NOT_FOUND) e = local_put(path.ptr, p ? p : "", n, -1, 0, err);
    fl_buf_free(&path);
    return e;
}

fl_err_t fl_io_put_fd(fl_io_t *io, const char *location, int fd, uint64_t size, fl_remote_error_t *err)
{
    fl_s3_loc_t s3;
    fl_buf_t path;
    fl_buf_init(&path, 0);
    memset(err, 0, sizeof *err);
    fl_err_t e = where(location, &s3, &path, err);
    if (e == FL_OK) {
        if (size > io->threshold) {
            e = s3_multipart(io, &s3, fd, size, err);
        } else {
            fl_httpc_resp_t rs;
            s3call_t c = { .method = "PUT", .fd = fd, .fd_len = size, .idempotent = true };
            e = s3_do(io, &s3, &c, &rs, err);
        }
    } else if (e == FL_ERR_NOT_FOUND) {
        e = local_put(path.ptr, NULL, 0, fd, size, err);
    }
    fl_buf_free(&path);
    return e;
}

fl_err_t fl_io_get(fl_io_t *io, const char *location, fl_buf_t *out, fl_remote_error_t *err)
{
    fl_s3_loc_t s3;
    fl_buf_t path;
    fl_buf_init(&path, 0);
    memset(err, 0, sizeof *err);
    fl_err_t e = where(location, &s3, &path, err);
    if (e == FL_OK) {
        fl_httpc_resp_t rs;
        s3call_t c = { .method = "GET", .fd = -1, .resp = out, .idempotent = true };
        e = s3_do(io, &s3, &c, &rs, err);
    } else if (e == FL_ERR_NOT_FOUND) {
        int fd = open(path.ptr, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st)) {
            e = errno_err(err, "open", path.ptr);
        } else if (out->cap && (uint64_t)st.st_size > out->cap - out->len) {
            e = fl_remote_error_set(err, FL_ERR_TOO_LARGE, "%s: %lld bytes, over the %zu-byte limit",
                                    path.ptr, (long long)st.st_size, out->cap);
        } else if ((e = fl_buf_reserve(out, (size_t)st.st_size))) {
            fl_remote_error_set(err, e, "%s: out of memory", path.ptr);
        } else {
            for (;;) {
                if ((e = fl_buf_reserve(out, 1 << 16))) {
                    fl_remote_error_set(err, e, "%s: grew past the limit", path.ptr);
                    break;
                }
                ssize_t r = read(fd, out->ptr + out->len, out->alloc - out->len - 1);
                if (r < 0 && errno == EINTR) continue;
                if (r < 0) {
                    e = errno_err(err, "read", path.ptr);
                    break;
                }
                if (!r) break;
                out->len += (size_t)r;
                out->ptr[out->len] = 0;
            }
        }
        if (fd >= 0) close(fd);
    }
    fl_buf_free(&path);
    return e;
}

static fl_err_t local_read_at(int fd, const char *path, uint64_t off, void *p, size_t n,
                              fl_remote_error_t *err)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)p + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return errno_err(err, "read", path);
        if (!r)
            return fl_remote_error_set(err, FL_ERR_INVALID, "%s: short read (%zu of %zu bytes at %llu)",
                                       path, got, n, (unsigned long long)off);
        got += (size_t)r;
    }
    return FL_OK;
}

fl_err_t fl_io_read_at(fl_io_t *io, const char *location, uint64_t off, void *p, size_t n,
                       fl_remote_error_t *err)
{
    fl_s3_loc_t s3;
    fl_buf_t path;
    fl_buf_init(&path, 0);
    memset(err, 0, sizeof *err);
    fl_err_t e = where(location, &s3, &path, err);
    if (e == FL_OK) {
        e = n ? s3_read_at(io, &s3, off, p, n, err) : FL_OK;
    } else if (e == FL_ERR_NOT_FOUND) {
        int fd = open(path.ptr, O_RDONLY | O_CLOEXEC);
        e = fd < 0 ? errno_err(err, "open", path.ptr) : local_read_at(fd, path.ptr, off, p, n, err);
        if (fd >= 0) close(fd);
    }
    fl_buf_free(&path);
    return e;
}

fl_err_t fl_io_head(fl_io_t *io, const char *location, fl_io_stat_t *st, fl_remote_error_t *err)
{
    fl_s3_loc_t s3;
    fl_buf_t path;
    fl_buf_init(&path, 0);
    memset(err, 0, sizeof *err);
    memset(st, 0, sizeof *st);
    st->mtime_ms = -1;
    fl_err_t e = where(location, &s3, &path, err);
    if (e == FL_OK) {
        fl_httpc_resp_t rs;
        s3call_t c = { .method = "HEAD", .fd = -1, .idempotent = true };
        if (!(e = s3_do(io, &s3, &c, &rs, err))) {
            if (rs.content_length < 0) {
                e = fl_remote_error_set(err, FL_ERR_PROTO, "HEAD %s: no Content-Length", location);
            } else {
                st->size = (uint64_t)rs.content_length;
                snprintf(st->etag, sizeof st->etag, "%s", rs.etag);
                int64_t t = rs.last_modified[0] ? fl_time_parse_http(rs.last_modified, strlen(rs.last_modified)) : -1;
                st->mtime_ms = t >= 0 ? t * 1000 : -1;
            }
        }
    } else if (e == FL_ERR_NOT_FOUND) {
        struct stat sb;
        if (stat(path.ptr, &sb)) {
            e = errno_err(err, "stat", path.ptr);
        } else {
            st->size = (uint64_t)sb.st_size;
            st->mtime_ms = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
            e = FL_OK;
        }
    }
    fl_buf_free(&path);
    return e;
}

fl_err_t fl_io_delete(fl_io_t *io, const char *location, fl_remote_error_t *err)
{
    fl_s3_loc_t s3;
    fl_buf_t path;
    fl_buf_init(&path, 0);
    memset(err, 0, sizeof *err);
    fl_err_t e = where(location, &s3, &path, err);
    if (e == FL_OK) {
        fl_httpc_resp_t rs;
        s3call_t c = { .method = "DELETE", .fd = -1, .idempotent = true };
        e = s3_do(io, &s3, &c, &rs, err);
        if (e == FL_ERR_NOT_FOUND && strcmp(err->type, "NoSuchBucket")) e = FL_OK;
    } else if (e == FL_ERR_NOT_FOUND) {
        e = unlink(path.ptr) && errno != ENOENT ? errno_err(err, "unlink", path.ptr) : FL_OK;
    }
    fl_buf_free(&path);
    return e;
}

fl_err_t fl_io_copy(fl_io_t *io, const char *src, const char *dst, fl_remote_error_t *err)
{
    fl_s3_loc_t s3src, s3dst;
    fl_buf_t psrc, pdst, hv, resp;
    fl_buf_init(&psrc, 0);
    fl_buf_init(&pdst, 0);
    fl_buf_init(&hv, 0);
    fl_buf_init(&resp, FL_S3_MAX_XML_BODY);
    memset(err, 0, sizeof *err);
    int fd = -1;
    fl_err_t e1 = where(src, &s3src, &psrc, err), e2 = e1 == FL_OK || e1 == FL_ERR_NOT_FOUND ? where(dst, &s3dst, &pdst, err) : e1;
    fl_err_t e;
    if ((e1 != FL_OK && e1 != FL_ERR_NOT_FOUND) || (e2 != FL_OK && e2 != FL_ERR_NOT_FOUND)) {
        e = e1 != FL_OK && e1 != FL_ERR_NOT_FOUND ? e1 : e2;
    } else if (e1 != e2) {
        e = fl_remote_error_set(err, FL_ERR_INVALID, "cannot copy %s to %s: not the same storage", src, dst);
    } else if (e1 == FL_OK) {
        fl_buf_addc(&hv, '/');
        fl_uri_encode(fl_slice_cstr(s3src.bucket), false, &hv);
        fl_buf_addc(&hv, '/');
        fl_uri_encode(fl_slice_cstr(s3src.key), true, &hv);
        fl_http_header_t h = { "x-amz-copy-source", 17, hv.ptr, hv.len };
        fl_httpc_resp_t rs;
        s3call_t c = { .method = "PUT", .headers = &h, .nheaders = 1, .has_body = true, .fd = -1, .resp = &resp,
                       .idempotent = true };
        e = s3_do(io, &s3dst, &c, &rs, err);
        if (!e && resp.ptr && strstr(resp.ptr, "<Error>")) { /* S3 may fail a copy inside a 200 */
            fl_remote_error_parse(500, resp.ptr, resp.len, NULL, err);
            e = FL_ERR_IO;
        }
    } else {
        struct stat sb;
        if ((fd = open(psrc.ptr, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &sb))
            e = errno_err(err, "open", psrc.ptr);
        else
            e = local_put(pdst.ptr, NULL, 0, fd, (uint64_t)sb.st_size, err);
    }
    if (fd >= 0) close(fd);
    fl_buf_free(&psrc);
    fl_buf_free(&pdst);
    fl_buf_free(&hv);
    fl_buf_free(&resp);
    return e;
}

/* ---- listing ---- */

/* "2024-05-01T12:34:56.789Z" -> ms since the epoch, -1 if malformed. */
static int64_t parse_iso_ms(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int ms = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                     &tm.tm_min, &tm.tm_sec) != 6)
        return -1;
    const char *dot = strchr(s, '.');
    if (dot) ms = atoi(dot + 1) % 1000;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    return t < 0 ? -1 : (int64_t)t * 1000 + ms;
}

static fl_err_t s3_list(fl_io_t *io, const char *prefix, const fl_s3_loc_t *loc, fl_io_list_fn fn, void *arg,
                        fl_remote_error_t *err)
{
    fl_s3_loc_t bucket = *loc;
    bucket.key[0] = 0;
    const char *sep = strstr(prefix, "://");
    size_t head = (size_t)(sep - prefix) + 3 + strlen(loc->bucket) + 1; /* "s3://bucket/" */
    fl_buf_t resp, q, name;
    fl_buf_init(&resp, FL_S3_MAX_XML_BODY * 4);
    fl_buf_init(&q, 0);
    fl_buf_init(&name, 0);
    char token[1024] = "";
    fl_err_t e = FL_OK;
    do {
        fl_buf_reset(&resp);
        fl_buf_reset(&q);
        if (token[0]) {
            fl_buf_adds(&q, "continuation-token=");
            fl_uri_encode(fl_slice_cstr(token), false, &q);
            fl_buf_addc(&q, '&');
        }
        fl_buf_adds(&q, "list-type=2&prefix=");
        fl_uri_encode(fl_slice_cstr(loc->key), false, &q);
        fl_httpc_resp_t rs;
        s3call_t c = { .method = "GET", .query = q.ptr, .fd = -1, .resp = &resp, .idempotent = true };
        if ((e = s3_do(io, &bucket, &c, &rs, err))) break;
        fl_xml_node_t *root = fl_xml_parse(resp.ptr ? resp.ptr : "", resp.len);
        if (!root) {
            e = fl_remote_error_set(err, FL_ERR_PROTO, "ListObjectsV2 s3://%.200s: unreadable answer", loc->bucket);
            break;
        }
        for (fl_xml_node_t *n = root->child; n && !e; n = n->next) {
            if (strcmp(n->name, "Contents")) continue;
            const char *key = fl_xml_child_text(n, "Key"), *size = fl_xml_child_text(n, "Size");
            if (!key) continue;
            fl_io_stat_t st;
            memset(&st, 0, sizeof st);
            st.size = size ? strtoull(size, NULL, 10) : 0;
            st.mtime_ms = parse_iso_ms(fl_xml_child_text(n, "LastModified"));
            const char *etag = fl_xml_child_text(n, "ETag");
            if (etag) snprintf(st.etag, sizeof st.etag, "%s", etag);
            fl_buf_reset(&name);
            fl_buf_add(&name, prefix, head);
            fl_buf_adds(&name, key);
            e = fn(arg, name.ptr, &st);
        }
        const char *trunc = fl_xml_child_text(root, "IsTruncated");
        const char *next = fl_xml_child_text(root, "NextContinuationToken");
        bool more = trunc && !strcmp(trunc, "true") && next && *next && strlen(next) < sizeof token;
        if (more) snprintf(token, sizeof token, "%s", next);
        else token[0] = 0;
        fl_xml_free(root);
    } while (!e && token[0]);
    fl_buf_free(&resp);
    fl_buf_free(&q);
    fl_buf_free(&name);
    return e;
}

/* Walks dir (a path ending without '/'); names under it that start with want (the part of
 * the prefix after dir) are reported. depth caps the recursion. */
static fl_err_t local_list(const char *scheme, fl_buf_t *dir, const char *want, int depth, fl_io_list_fn fn,
                           void *arg, fl_remote_error_t *err)
{
    DIR *d = opendir(dir->len ? dir->ptr : "/");
    if (!d) return errno == ENOENT || errno == ENOTDIR ? FL_OK : errno_err(err, "opendir", dir->ptr);
    fl_err_t e = FL_OK;
    size_t len = dir->len, wl = strlen(want);
    struct dirent *de;
    while (!e && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        size_t nl = strlen(de->d_name);
        /* a name matches if it starts with want's first component (or want is exhausted) */
        const char *slash = strchr(want, '/');
        size_t first = slash ? (size_t)(slash - want) : wl;
        if (slash ? (nl != first || memcmp(de->d_name, want, first)) : strncmp(de->d_name, want, first))
            continue;
        dir->len = len;
        fl_buf_addc(dir, '/');
        fl_buf_add(dir, de->d_name, nl);
        struct stat sb;
        if (lstat(dir->ptr, &sb)) continue;
        if (S_ISDIR(sb.st_mode)) {
            if (depth > 0) e = local_list(scheme, dir, slash ? slash + 1 : "", depth - 1, fn, arg, err);
        } else if (S_ISREG(sb.st_mode) && !slash) {
            fl_io_stat_t st = { .size = (uint64_t)sb.st_size,
                                .mtime_ms = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000 };
            fl_buf_t loc;
            fl_buf_init(&loc, 0);
            fl_buf_adds(&loc, scheme);
            fl_buf_adds(&loc, dir->ptr);
            e = fn(arg, loc.ptr, &st);
            fl_buf_free(&loc);
        }
    }
    dir->len = len;
    if (dir->ptr) dir->ptr[len] = 0;
    closedir(d);
    return e;
}

fl_err_t fl_io_list(fl_io_t *io, const char *prefix, fl_io_list_fn fn, void *arg, fl_remote_error_t *err)
{
    fl_s3_loc_t s3;
    fl_buf_t path;
    fl_buf_init(&path, 0);
    memset(err, 0, sizeof *err);
    fl_err_t e = where(prefix, &s3, &path, err);
    const char *rest = fl_io_s3_rest(prefix);
    size_t bl = rest ? strcspn(rest, "/") : 0;
    if (e == FL_ERR_INVALID && rest && bl && bl < sizeof s3.bucket && !strcmp(rest + bl, "/")) {
        /* a whole bucket ("s3://bucket/"; S3 Tables puts a table at the root of its bucket) */
        memset(err, 0, sizeof *err);
        snprintf(s3.bucket, sizeof s3.bucket, "%.*s", (int)bl, rest);
        s3.key[0] = 0;
        e = FL_OK;
    }
    if (e == FL_OK) {
        e = s3_list(io, prefix, &s3, fn, arg, err);
    } else if (e == FL_ERR_NOT_FOUND) {
        /* split the path at its last '/': the directory to open and the name prefix */
        const char *scheme = !strncmp(prefix, "file://", 7) ? "file://" : "";
        char *slash = strrchr(path.ptr, '/');
        fl_buf_t dir;
        fl_buf_init(&dir, 0);
        const char *want = path.ptr;
        if (slash) {
            fl_buf_add(&dir, path.ptr, (size_t)(slash - path.ptr));
            want = slash + 1;
        } else {
            fl_buf_addc(&dir, '.');
        }
        if (!dir.ptr) fl_buf_adds(&dir, "");
        e = local_list(scheme, &dir, want, 64, fn, arg, err);
        fl_buf_free(&dir);
    }
    fl_buf_free(&path);
    return e;
}

/* ---- Parquet source ---- */

struct fl_io_source {
    fl_io_t *io;
    char *location;
    bool s3;
    fl_s3_loc_t loc;
    int fd;                    /* local */
    char *path;
    uint64_t size;
    char *tail;                /* last tail_len bytes, once loaded */
    uint64_t tail_off;
    size_t tail_len;
    uint64_t requests;
    fl_remote_error_t err;
};

static fl_err_t source_read_at(void *ctx, uint64_t off, void *p, size_t n)
{
    fl_io_source_t *s = ctx;
    if (off > s->size || n > s->size - off)
        return fl_remote_error_set(&s->err, FL_ERR_INVALID, "%s: read of %zu bytes at %llu past the end (%llu)",
                                   s->location, n, (unsigned long long)off, (unsigned long long)s->size);
    if (!n) return FL_OK;
    if (!s->s3) return local_read_at(s->fd, s->path, off, p, n, &s->err);
    if (off >= s->tail_off) {
        if (!s->tail) {
            char *t = malloc(s->tail_len ? s->tail_len : 1);
            if (!t) return fl_remote_error_set(&s->err, FL_ERR_NOMEM, "footer cache: out of memory");
            s->requests++;
            fl_err_t e = s3_read_at(s->io, &s->loc, s->tail_off, t, s->tail_len, &s->err);
            if (e) {
                free(t);
                return e;
            }
            s->tail = t;
        }
        memcpy(p, s->tail + (off - s->tail_off), n);
        return FL_OK;
    }
    s->requests++;
    return s3_read_at(s->io, &s->loc, off, p, n, &s->err);
}

fl_err_t fl_io_source_open(fl_io_t *io, const char *location, fl_io_source_t **out, fl_pq_source_t *src,
                           fl_remote_error_t *err)
{
    fl_buf_t path;
    fl_buf_init(&path, 0);
    memset(err, 0, sizeof *err);
    *out = NULL;
    fl_io_source_t *s = fl_calloc(1, sizeof *s);
    s->io = io;
    s->fd = -1;
    s->location = fl_strdup(location ? location : "");
    fl_err_t e = where(location, &s->loc, &path, err);
    if (e == FL_OK) {
        fl_io_stat_t st;
        s->s3 = true;
        if ((e = fl_io_head(io, location, &st, err))) goto out;
        s->size = st.size;
        s->tail_len = s->size < io->footer_cache ? (size_t)s->size : io->footer_cache;
        s->tail_off = s->size - s->tail_len;
    } else if (e == FL_ERR_NOT_FOUND) {
        struct stat sb;
        s->path = fl_buf_steal(&path);
        if ((s->fd = open(s->path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(s->fd, &sb)) {
            e = errno_err(err, "open", s->path);
            goto out;
        }
        s->size = (uint64_t)sb.st_size;
        e = FL_OK;
    }
out:
    fl_buf_free(&path);
    if (e) {
        fl_io_source_free(s);
        return e;
    }
    *out = s;
    *src = (fl_pq_source_t){ .read_at = source_read_at, .ctx = s, .size = s->size };
    return FL_OK;
}

const fl_remote_error_t *fl_io_source_error(const fl_io_source_t *s) { return &s->err; }
uint64_t fl_io_source_requests(const fl_io_source_t *s) { return s->requests; }

void fl_io_source_free(fl_io_source_t *s)
{
    if (!s) return;
    if (s->fd >= 0) close(s->fd);
    free(s->path);
    free(s->location);
    free(s->tail);
    free(s);
}
