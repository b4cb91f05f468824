/* Outbound HTTP over libcurl: a mutex-guarded pool of easy handles (so connections are kept
 * alive and any thread may call), SigV4 or bearer auth, bodies from memory or streamed from a
 * file descriptor, 2xx bodies into a capped buffer or caller memory, error bodies into a
 * private 64 KiB buffer that fl_remote_error_parse turns into a message. */
#include "net/httpc.h"
#include "auth/sigv4.h"
#include "base/checksum.h"
#include "base/limits.h"
#include "base/mem.h"
#include "base/time.h"
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct fl_httpc {
    fl_httpc_cfg_t cfg;
    pthread_mutex_t mu;
    CURL **idle;
    int nidle;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* ---- errors ---- */

fl_err_t fl_remote_error_set(fl_remote_error_t *err, fl_err_t e, const char *fmt, ...)
{
    if (!err) return e;
    va_list ap;
    va_start(ap, fmt);
    err->status = 0;
    err->type[0] = 0;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return e;
}

/* Text between <tag> and </tag> in an XML body, into out. */
static bool xml_field(const char *body, size_t len, const char *tag, char *out, size_t outsz)
{
    char open[64], close[64];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *s = memmem(body, len, open, strlen(open));
    if (!s) return false;
    s += strlen(open);
    const char *e = memmem(s, len - (size_t)(s - body), close, strlen(close));
    if (!e) return false;
    snprintf(out, outsz, "%.*s", (int)(e - s), s);
    return true;
}

void fl_remote_error_parse(int status, const char *body, size_t len, const char *type_hint,
                           fl_remote_error_t *err)
{
    memset(err, 0, sizeof *err);
    err->status = status;
    if (type_hint && *type_hint) {
        /* x-amzn-ErrorType may carry ":http://..." after the name */
        snprintf(err->type, sizeof err->type, "%.*s", (int)strcspn(type_hint, ":"), type_hint);
    }
    json_t *doc = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    if (json_is_object(doc)) {
        json_t *e = json_object_get(doc, "error");
        json_t *src = json_is_object(e) ? e : doc;
        json_t *m = json_object_get(src, "message"), *t = json_object_get(src, "type");
        if (!json_is_string(m)) m = json_object_get(src, "Message");
        if (!json_is_string(t)) t = json_object_get(src, "__type");
        if (json_is_string(t))
            snprintf(err->type, sizeof err->type, "%s", json_string_value(t));
        if (json_is_string(m)) {
            snprintf(err->message, sizeof err->message, "%s", json_string_value(m));
            json_decref(doc);
            return;
        }
    }
    json_decref(doc);
    if (body && len && memmem(body, len, "<Error>", 7)) {
        char code[96] = "";
        if (xml_field(body, len, "Code", code, sizeof code)) snprintf(err->type, sizeof err->type, "%s", code);
        if (xml_field(body, len, "Message", err->message, sizeof err->message) || code[0]) {
            if (!err->message[0]) snprintf(err->message, sizeof err->message, "%s", code);
            return;
        }
    }
    if (body && len) {
        size_t n = 0;
        while (n < len && n < sizeof err->message - 1 && body[n] != '\n' && body[n] != '\r') n++;
        for (size_t i = 0; i < n; i++)
            err->message[i] = isprint((unsigned char)body[i]) ? body[i] : '?';
        err->message[n] = 0;
    }
    if (!err->message[0]) snprintf(err->message, sizeof err->message, "HTTP %d", status);
}

fl_err_t fl_httpc_status_err(int status, const char *type)
{
    if (status >= 200 && status < 300) return FL_OK;
    if (type && (status == 409 || status == 400)) {
        if (strstr(type, "AlreadyExists") || strstr(type, "AlreadyOwned")) return FL_ERR_EXISTS;
        if (strstr(type, "NotEmpty")) return FL_ERR_NOT_EMPTY;
    }
    switch (status) {
    case 400: case 405: case 406: case 422: return FL_ERR_INVALID;
    case 401: case 403: case 419: return FL_ERR_AUTH;
    case 404: return FL_ERR_NOT_FOUND;
    case 409: return FL_ERR_CONFLICT;
    case 412: return FL_ERR_PRECONDITION;
    case 408: case 504: return FL_ERR_TIMEOUT;
    default: return FL_ERR_IO;
    }
}

/* ---- pool ---- */

fl_httpc_t *fl_httpc_new(const fl_httpc_cfg_t *cfg)
{
    pthread_once(&curl_once, curl_init_once);
    fl_httpc_t *h = fl_calloc(1, sizeof *h);
    if (cfg) h->cfg = *cfg;
    if (!h->cfg.connect_timeout_ms) h->cfg.connect_timeout_ms = 10000;
    if (!h->cfg.timeout_ms) h->cfg.timeout_ms = 300000;
    if (!h->cfg.max_retries) h->cfg.max_retries = 3;
    if (h->cfg.pool_size <= 0) h->cfg.pool_size = 8;
    if (!h->cfg.stall_s) h->cfg.stall_s = 60;
    h->idle = fl_calloc((size_t)h->cfg.pool_size, sizeof *h->idle);
    pthread_mutex_init(&h->mu, NULL);
    return h;
}

void fl_httpc_free(fl_httpc_t *h)
{
    if (!h) return;
    for (int i = 0; i < h->nidle; i++) curl_easy_cleanup(h->idle[i]);
    free(h->idle);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

static CURL *take(fl_httpc_t *h)
{
    CURL *c = NULL;
    pthread_mutex_lock(&h->mu);
    if (h->nidle) c = h->idle[--h->nidle];
    pthread_mutex_unlock(&h->mu);
    if (c) curl_easy_reset(c);
    else c = curl_easy_init();
    return c;
}

static void give(fl_httpc_t *h, CURL *c)
{
    if (!c) return;
    pthread_mutex_lock(&h->mu);
    if (h->nidle < h->cfg.pool_size) h->idle[h->nidle++] = c, c = NULL;
    pthread_mutex_unlock(&h->mu);
    if (c) curl_easy_cleanup(c);
}

/* ---- one attempt ---- */

typedef struct xfer {
    CURL *curl;
    const fl_httpc_req_t *r;
    fl_httpc_resp_t *resp;
    fl_buf_t errbody;
    long status;           /* known at the first body byte */
    bool too_large;
    uint64_t fd_pos;
    int fd_errno;
    char errtype[96];
} xfer_t;

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    xfer_t *x = ud;
    size_t len = sz * n;
    if (!x->status) curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->status);
    if (x->status >= 300 || x->status < 200) {
        size_t room = FL_HTTPC_MAX_ERROR_BODY - x->errbody.len;
        fl_buf_add(&x->errbody, p, len < room ? len : room);
        return len;
    }
    if (x->r->resp) {
        if (fl_buf_add(x->r->resp, p, len)) {
            x->too_large = true;
            return 0;
        }
    } else if (x->r->dst) {
        if (len > x->r->dst_cap - x->resp->dst_len) {
            x->too_large = true;
            return 0;
        }
        memcpy((char *)x->r->dst + x->resp->dst_len, p, len);
        x->resp->dst_len += len;
    }
    return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    xfer_t *x = ud;
    size_t len = sz * n;
    const char *colon = memchr(p, ':', len);
    if (!colon) {
        if (len > 5 && !memcmp(p, "HTTP/", 5)) { /* a new response (after 100 or a retry) */
            x->resp->etag[0] = x->resp->last_modified[0] = x->errtype[0] = 0;
            if (x->r->resp_headers) fl_buf_reset(x->r->resp_headers);
        }
        return len;
    }
    size_t nl = (size_t)(colon - p);
    const char *v = colon + 1;
    size_t vl = len - nl - 1;
    while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' ')) vl--;
    if (x->r->resp_headers) {
        for (size_t i = 0; i < nl; i++) fl_buf_addc(x->r->resp_headers, (char)tolower((unsigned char)p[i]));
        fl_buf_printf(x->r->resp_headers, ": %.*s\n", (int)vl, v);
    }
    if (nl == 4 && !strncasecmp(p, "etag", 4))
        snprintf(x->resp->etag, sizeof x->resp->etag, "%.*s", (int)vl, v);
    else if (nl == 13 && !strncasecmp(p, "last-modified", 13))
        snprintf(x->resp->last_modified, sizeof x->resp->last_modified, "%.*s", (int)vl, v);
    else if (nl == 16 && !strncasecmp(p, "x-amzn-errortype", 16))
        snprintf(x->errtype, sizeof x->errtype, "%.*s", (int)vl, v);
    return len;
}

static size_t on_read_fd(char *p, size_t sz, size_t n, void *ud)
{
    xfer_t *x = ud;
    uint64_t left = x->r->body_fd_len - x->fd_pos;
    size_t want = sz * n < left ? sz * n : (size_t)left;
    if (!want) return 0;
    ssize_t got;
    do got = x->r->body_fd_pipe ? read(x->r->body_fd, p, want)
                                : pread(x->r->body_fd, p, want, (off_t)(x->r->body_off + x->fd_pos));
    while (got < 0 && errno == EINTR);
    if (got <= 0) {
        x->fd_errno = got < 0 ? errno : EIO;
        return CURL_READFUNC_ABORT;
    }
    x->fd_pos += (uint64_t)got;
    return (size_t)got;
}

/* "host[:port]" and the path of url. */
static void split_url(const char *url, char *host, size_t hostsz, const char **path)
{
    const char *s = strstr(url, "://");
    s = s ? s + 3 : url;
    size_t hl = strcspn(s, "/?");
    snprintf(host, hostsz, "%.*s", (int)hl, s);
    *path = s[hl] == '/' ? s + hl : "/";
}

static fl_err_t attempt(fl_httpc_t *h, CURL *c, const fl_httpc_req_t *r, fl_httpc_resp_t *resp,
                        fl_remote_error_t *err)
{
    fl_err_t e = FL_OK;
    xfer_t x = { .curl = c, .r = r, .resp = resp };
    fl_buf_t url, auth, line;
    struct curl_slist *hl = NULL;
    fl_http_header_t *sh = NULL;
    fl_buf_init(&url, 0);
    fl_buf_init(&auth, 0);
    fl_buf_init(&line, 0);
    fl_buf_init(&x.errbody, FL_HTTPC_MAX_ERROR_BODY);
    bool fd_body = r->body_fd >= 0 && !r->has_body;
    bool have_ct = false;

    fl_buf_adds(&url, r->url);
    if (r->query && *r->query) fl_buf_printf(&url, "?%s", r->query);
    for (size_t i = 0; i < r->nheaders; i++) {
        fl_buf_reset(&line);
        fl_buf_printf(&line, "%.*s: %.*s", (int)r->headers[i].name_len, r->headers[i].name,
                      (int)r->headers[i].value_len, r->headers[i].value);
        hl = curl_slist_append(hl, line.ptr);
        if (r->headers[i].name_len == 12 && !strncasecmp(r->headers[i].name, "content-type", 12)) have_ct = true;
    }
    if (r->sigv4) {
        char host[512], hash[65], amz_date[17];
        const char *path;
        split_url(r->url, host, sizeof host, &path);
        if (fd_body || r->unsigned_payload) snprintf(hash, sizeof hash, "UNSIGNED-PAYLOAD");
        else if (r->has_body && r->body_len) fl_sha256_hex(r->body, r->body_len, hash);
        else snprintf(hash, sizeof hash, "%s", EMPTY_SHA256);
        size_t n = 0;
        sh = fl_calloc(r->nheaders + 3, sizeof *sh);
        sh[n++] = (fl_http_header_t){ "host", 4, host, strlen(host) };
        sh[n++] = (fl_http_header_t){ "x-amz-content-sha256", 20, hash, strlen(hash) };
        const char *tok = r->sigv4->session_token;
        if (tok && *tok) sh[n++] = (fl_http_header_t){ "x-amz-security-token", 20, tok, strlen(tok) };
        for (size_t i = 0; i < r->nheaders; i++) sh[n++] = r->headers[i];
        fl_sigv4_sign_in_t si = {
            .method = r->method, .raw_path = path, .raw_query = r->query, .headers = sh,
            .nheaders = n, .payload_hash = hash, .akid = r->sigv4->akid, .secret = r->sigv4->secret,
            .region = r->sigv4->region, .service = r->sigv4->service, .now = fl_now_ms() / 1000,
        };
        if (fl_sigv4_sign(&si, &auth, amz_date) != FL_OK) {
            e = fl_remote_error_set(err, FL_ERR_INVALID, "could not sign the request (bad path or query)");
            goto out;
        }
        fl_buf_reset(&line);
        fl_buf_printf(&line, "Authorization: %s", auth.ptr);
        hl = curl_slist_append(hl, line.ptr);
        fl_buf_reset(&line);
        fl_buf_printf(&line, "x-amz-content-sha256: %s", hash);
        hl = curl_slist_append(hl, line.ptr);
        fl_buf_reset(&line);
        fl_buf_printf(&line, "x-amz-date: %s", amz_date);
        hl = curl_slist_append(hl, line.ptr);
        if (tok && *tok) {
            fl_buf_reset(&line);
            fl_buf_printf(&line, "x-amz-security-token: %s", tok);
            hl = curl_slist_append(hl, line.ptr);
        }
    } else if (r->bearer && *r->bearer) {
        fl_buf_reset(&line);
        fl_buf_printf(&line, "Authorization: Bearer %s", r->bearer);
        hl = curl_slist_append(hl, line.ptr);
    }
    hl = curl_slist_append(hl, "Expect:");
    if (!have_ct) hl = curl_slist_append(hl, "Content-Type:");

    curl_easy_setopt(c, CURLOPT_URL, url.ptr);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L); /* an S3 key "a/../b" is a key, not a path to squash */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->cfg.connect_timeout_ms);
    if (h->cfg.timeout_ms > 0) curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->cfg.timeout_ms);
    if (h->cfg.stall_s > 0) {
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, h->cfg.stall_s);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "floe");
    if (!strcmp(r->method, "HEAD")) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (fd_body) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read_fd);
        curl_easy_setopt(c, CURLOPT_READDATA, &x);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_fd_len);
        if (strcmp(r->method, "PUT")) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
    } else if (r->has_body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body_len ? r->body : "");
        if (strcmp(r->method, "POST")) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
    } else if (strcmp(r->method, "GET")) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
    }

    CURLcode cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
    curl_off_t cl = -1;
    curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    resp->content_length = cl;
    if (cc != CURLE_OK) {
        if (x.too_large) {
            e = fl_remote_error_set(err, FL_ERR_TOO_LARGE, "response body over the %zu-byte limit",
                                    r->resp ? r->resp->cap : r->dst_cap);
        } else if (x.fd_errno) {
            e = fl_remote_error_set(err, FL_ERR_IO, "reading the upload body: %s", strerror(x.fd_errno));
        } else {
            e = fl_remote_error_set(err, cc == CURLE_OPERATION_TIMEDOUT ? FL_ERR_TIMEOUT : FL_ERR_IO,
                                    "%s %s: %s", r->method, r->url, curl_easy_strerror(cc));
            err->maybe_sent = cc != CURLE_COULDNT_CONNECT && cc != CURLE_COULDNT_RESOLVE_HOST &&
                              cc != CURLE_COULDNT_RESOLVE_PROXY && cc != CURLE_URL_MALFORMAT &&
                              cc != CURLE_UNSUPPORTED_PROTOCOL;
        }
        resp->status = 0;
        goto out;
    }
    if (resp->status >= 300 || resp->status < 200)
        fl_remote_error_parse((int)resp->status, x.errbody.ptr, x.errbody.len, x.errtype, err);
out:
    curl_slist_free_all(hl);
    free(sh);
    fl_buf_free(&url);
    if (auth.ptr) memset(auth.ptr, 0, auth.len);
    fl_buf_free(&auth);
    if (line.ptr) memset(line.ptr, 0, line.len); /* may hold a token */
    fl_buf_free(&line);
    fl_buf_free(&x.errbody);
    return e;
}

fl_err_t fl_httpc_do(fl_httpc_t *h, const fl_httpc_req_t *r, fl_httpc_resp_t *resp,
                     fl_remote_error_t *err)
{
    int tries = r->idempotent && !r->body_fd_pipe && h->cfg.max_retries > 0 ? 1 + h->cfg.max_retries : 1;
    size_t resp_start = r->resp ? r->resp->len : 0;
    long delay = 100;
    fl_err_t e = FL_OK;
    memset(err, 0, sizeof *err);
    for (int i = 0; i < tries; i++) {
        if (i) {
            usleep((useconds_t)(delay + rand() % (delay / 2 + 1)) * 1000);
            delay = delay * 2 > 2000 ? 2000 : delay * 2;
        }
        memset(resp, 0, sizeof *resp);
        resp->content_length = -1;
        if (r->resp) {
            r->resp->len = resp_start;
            if (r->resp->ptr) r->resp->ptr[resp_start] = 0;
        }
        memset(err, 0, sizeof *err);
        CURL *c = take(h);
        if (!c) return fl_remote_error_set(err, FL_ERR_NOMEM, "curl_easy_init failed");
        e = attempt(h, c, r, resp, err);
        give(h, c);
        if (e == FL_ERR_TOO_LARGE || e == FL_ERR_INVALID) return e;
        if (e == FL_OK && resp->status != 429 && resp->status < 500) return FL_OK;
    }
    return e;
}
