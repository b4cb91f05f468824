#include "test.h"
#include "base/buf.h"
#include "net/httpc.h"
#include "iceberg/io.h"
#include "iceberg/rest_client.h"
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

FL_TEST(rest_ident_parse)
{
    fl_rest_ident_t id;
    REQUIRE(fl_rest_ident_parse("a.b.t", true, &id) == FL_OK);
    CHECK_EQ(id.nns, 2);
    CHECK_STR(id.ns[0], "a");
    CHECK_STR(id.ns[1], "b");
    CHECK_STR(id.name, "t");
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_rest_ident_format(&id, &b);
    CHECK_STR(b.ptr, "a.b.t");
    fl_rest_ident_free(&id);
    REQUIRE(fl_rest_ident_parse("a.b", false, &id) == FL_OK);
    CHECK_EQ(id.nns, 2);
    CHECK(id.name == NULL);
    fl_rest_ident_free(&id);
    CHECK_EQ(fl_rest_ident_parse("t", true, &id), FL_ERR_INVALID);
    CHECK_EQ(fl_rest_ident_parse("", false, &id), FL_ERR_INVALID);
    CHECK_EQ(fl_rest_ident_parse("a..t", true, &id), FL_ERR_INVALID);
    CHECK_EQ(fl_rest_ident_parse("a.", true, &id), FL_ERR_INVALID);
    CHECK_EQ(fl_rest_ident_parse(".a", false, &id), FL_ERR_INVALID);
    fl_buf_free(&b);
}

FL_TEST(rest_namespace_encoding)
{
    const char *lv[] = { "accounting", "tax 2025", "a/b%c" };
    fl_rest_ident_t id;
    fl_rest_ident_make(lv, 3, NULL, &id);
    fl_buf_t b;
    fl_buf_init(&b, 0);
    CHECK_EQ(fl_rest_ns_encode(&id, NULL, &b), FL_OK);
    CHECK_STR(b.ptr, "accounting%1Ftax%202025%1Fa%2Fb%25c");
    fl_buf_reset(&b);
    CHECK_EQ(fl_rest_ns_encode(&id, "%2E", &b), FL_OK);
    CHECK_STR(b.ptr, "accounting%2Etax%202025%2Ea%2Fb%25c");
    fl_rest_ident_free(&id);
    fl_rest_ident_make(lv, 0, "t", &id);
    fl_buf_reset(&b);
    CHECK_EQ(fl_rest_ns_encode(&id, NULL, &b), FL_ERR_INVALID);
    fl_rest_ident_free(&id);
    const char *bad[] = { "" };
    fl_rest_ident_make(bad, 1, NULL, &id);
    CHECK_EQ(fl_rest_ns_encode(&id, NULL, &b), FL_ERR_INVALID);
    fl_rest_ident_free(&id);
    fl_buf_free(&b);
}

FL_TEST(rest_config_merge)
{
    json_t *d = json_loads("{\"prefix\":\"p0\",\"a\":\"1\",\"n\":5}", 0, NULL);
    json_t *c = json_loads("{\"a\":\"2\",\"b\":\"2\",\"prefix\":\"mine\"}", 0, NULL);
    json_t *o = json_loads("{\"prefix\":\"arn%3Ax%2Fb\"}", 0, NULL);
    json_t *m = fl_rest_config_merge(d, c, o);
    CHECK_STR(json_string_value(json_object_get(m, "prefix")), "arn%3Ax%2Fb");
    CHECK_STR(json_string_value(json_object_get(m, "a")), "2");
    CHECK_STR(json_string_value(json_object_get(m, "b")), "2");
    CHECK(json_object_get(m, "n") == NULL); /* only strings */
    json_decref(m);
    m = fl_rest_config_merge(NULL, NULL, NULL);
    CHECK_EQ(json_object_size(m), 0);
    json_decref(m);

    /* table IO config: catalog <- config <- longest matching storage credential */
    json_t *res = json_loads("{\"config\":{\"s3.endpoint\":\"http://t\",\"client.region\":\"r2\"},"
                             "\"storage-credentials\":["
                             "{\"prefix\":\"s3://b/\",\"config\":{\"s3.access-key-id\":\"short\"}},"
                             "{\"prefix\":\"s3://b/tbl\",\"config\":{\"s3.access-key-id\":\"long\"}},"
                             "{\"prefix\":\"s3://other/\",\"config\":{\"s3.access-key-id\":\"no\"}}]}", 0, NULL);
    json_t *cat = json_loads("{\"s3.endpoint\":\"http://cat\",\"s3.path-style-access\":\"true\"}", 0, NULL);
    m = fl_rest_table_io_config(cat, res, "s3://b/tbl/x");
    CHECK_STR(json_string_value(json_object_get(m, "s3.endpoint")), "http://t");
    CHECK_STR(json_string_value(json_object_get(m, "s3.path-style-access")), "true");
    CHECK_STR(json_string_value(json_object_get(m, "client.region")), "r2");
    CHECK_STR(json_string_value(json_object_get(m, "s3.access-key-id")), "long");
    json_decref(m);
    m = fl_rest_table_io_config(cat, res, "s3://c/x");
    CHECK(json_object_get(m, "s3.access-key-id") == NULL);
    json_decref(m);
    json_decref(res);
    json_decref(cat);
    json_decref(d);
    json_decref(c);
    json_decref(o);
}

FL_TEST(remote_error_parse)
{
    fl_remote_error_t e;
    const char *rest = "{\"error\":{\"message\":\"Table does not exist: ns.t\",\"type\":\"NoSuchTableException\",\"code\":404}}";
    fl_remote_error_parse(404, rest, strlen(rest), NULL, &e);
    CHECK_EQ(e.status, 404);
    CHECK_STR(e.type, "NoSuchTableException");
    CHECK_STR(e.message, "Table does not exist: ns.t");
    const char *s3t = "{\"message\":\"The table bucket does not exist\"}";
    fl_remote_error_parse(404, s3t, strlen(s3t), "NotFoundException:http://internal.amazon.com/", &e);
    CHECK_STR(e.type, "NotFoundException");
    CHECK_STR(e.message, "The table bucket does not exist");
    const char *xml = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>";
    fl_remote_error_parse(404, xml, strlen(xml), NULL, &e);
    CHECK_STR(e.type, "NoSuchKey");
    CHECK_STR(e.message, "The specified key does not exist.");
    const char *xml2 = "<Error><Code>AccessDenied</Code></Error>";
    fl_remote_error_parse(403, xml2, strlen(xml2), NULL, &e);
    CHECK_STR(e.type, "AccessDenied");
    CHECK_STR(e.message, "AccessDenied");
    fl_remote_error_parse(502, "Bad gateway\r\n<html>", 19, NULL, &e);
    CHECK_STR(e.message, "Bad gateway");
    CHECK_STR(e.type, "");
    fl_remote_error_parse(500, NULL, 0, NULL, &e);
    CHECK_STR(e.message, "HTTP 500");
    fl_remote_error_parse(400, "{\"error\":{\"code\":400}}", 22, NULL, &e); /* no message */
    CHECK_STR(e.message, "{\"error\":{\"code\":400}}");
    fl_remote_error_parse(400, "\x01\x02", 2, NULL, &e);
    CHECK_STR(e.message, "??");
}

FL_TEST(httpc_status_err)
{
    CHECK_EQ(fl_httpc_status_err(200, NULL), FL_OK);
    CHECK_EQ(fl_httpc_status_err(204, NULL), FL_OK);
    CHECK_EQ(fl_httpc_status_err(400, "ValidationException"), FL_ERR_INVALID);
    CHECK_EQ(fl_httpc_status_err(403, NULL), FL_ERR_AUTH);
    CHECK_EQ(fl_httpc_status_err(401, NULL), FL_ERR_AUTH);
    CHECK_EQ(fl_httpc_status_err(404, "NoSuchNamespaceException"), FL_ERR_NOT_FOUND);
    CHECK_EQ(fl_httpc_status_err(409, "CommitFailedException"), FL_ERR_CONFLICT);
    CHECK_EQ(fl_httpc_status_err(409, "AlreadyExistsException"), FL_ERR_EXISTS);
    CHECK_EQ(fl_httpc_status_err(409, "NamespaceNotEmptyException"), FL_ERR_NOT_EMPTY);
    CHECK_EQ(fl_httpc_status_err(400, "NamespaceNotEmptyException"), FL_ERR_NOT_EMPTY);
    CHECK_EQ(fl_httpc_status_err(412, NULL), FL_ERR_PRECONDITION);
    CHECK_EQ(fl_httpc_status_err(500, "CommitStateUnknownException"), FL_ERR_IO);
    CHECK_EQ(fl_httpc_status_err(504, NULL), FL_ERR_TIMEOUT);
}

FL_TEST(httpc_connection_refused)
{
    fl_httpc_cfg_t cfg = { .max_retries = -1, .connect_timeout_ms = 2000 };
    fl_httpc_t *h = fl_httpc_new(&cfg);
    fl_httpc_req_t r = { .method = "GET", .url = "http://127.0.0.1:1/x", .body_fd = -1, .idempotent = true };
    fl_httpc_resp_t rs;
    fl_remote_error_t e;
    CHECK_EQ(fl_httpc_do(h, &r, &rs, &e), FL_ERR_IO);
    CHECK_EQ(e.status, 0);
    CHECK(!e.maybe_sent);
    CHECK(strstr(e.message, "127.0.0.1:1") != NULL);
    fl_httpc_free(h);
}

FL_TEST(rest_client_bad_options)
{
    fl_rest_client_t *c = (fl_rest_client_t *)1;
    fl_rest_error_t e;
    fl_rest_opts_t o = { .uri = "ftp://x" };
    CHECK_EQ(fl_rest_client_new(&o, &c, &e), FL_ERR_INVALID);
    CHECK(c == NULL);
    o = (fl_rest_opts_t){ .uri = "http://127.0.0.1:1/iceberg", .auth = FL_REST_AUTH_SIGV4, .access_key_id = "AK" };
    CHECK_EQ(fl_rest_client_new(&o, &c, &e), FL_ERR_AUTH);
    CHECK(strstr(e.message, "secret") != NULL);
    o = (fl_rest_opts_t){ .uri = "http://127.0.0.1:1/iceberg", .auth = FL_REST_AUTH_BEARER };
    CHECK_EQ(fl_rest_client_new(&o, &c, &e), FL_ERR_AUTH);
    o = (fl_rest_opts_t){ .uri = "http://127.0.0.1:1/iceberg", .max_retries = -1 };
    CHECK_EQ(fl_rest_client_new(&o, &c, &e), FL_ERR_IO);
    CHECK(c == NULL);
}

FL_TEST(io_parse_location)
{
    fl_s3_loc_t l;
    fl_buf_t p;
    fl_buf_init(&p, 0);
    CHECK_EQ(fl_io_parse_location("s3://bkt/a/b c.parquet", &l, &p), FL_OK);
    CHECK_STR(l.bucket, "bkt");
    CHECK_STR(l.key, "a/b c.parquet");
    CHECK_EQ(fl_io_parse_location("s3a://b2/k", &l, &p), FL_OK);
    CHECK_STR(l.bucket, "b2");
    CHECK_EQ(fl_io_parse_location("s3n://b3/k/", &l, &p), FL_OK);
    CHECK_STR(l.key, "k/");
    /* oss:// (OSS Tables' locations) names the same objects */
    CHECK_EQ(fl_io_parse_location("oss://b4--table-s3/data/x.parquet", &l, &p), FL_OK);
    CHECK_STR(l.bucket, "b4--table-s3");
    CHECK_STR(l.key, "data/x.parquet");
    CHECK_STR(fl_io_s3_rest("oss://b/k"), "b/k");
    CHECK_STR(fl_io_s3_rest("s3a://b/k"), "b/k");
    CHECK(fl_io_s3_rest("gs://b/k") == NULL);
    CHECK(fl_io_s3_rest("os://b/k") == NULL);
    CHECK_EQ(fl_io_parse_location("s3://bkt", &l, &p), FL_ERR_INVALID);
    CHECK_EQ(fl_io_parse_location("s3://bkt/", &l, &p), FL_ERR_INVALID);
    CHECK_EQ(fl_io_parse_location("s3:///k", &l, &p), FL_ERR_INVALID);
    CHECK_EQ(fl_io_parse_location("gs://b/k", &l, &p), FL_ERR_INVALID);
    CHECK_EQ(fl_io_parse_location("", &l, &p), FL_ERR_INVALID);
    CHECK_EQ(fl_io_parse_location("file:///tmp/wh/t", &l, &p), FL_ERR_NOT_FOUND);
    CHECK_STR(p.ptr, "/tmp/wh/t");
    fl_buf_reset(&p);
    CHECK_EQ(fl_io_parse_location("file:/tmp/x", &l, &p), FL_ERR_NOT_FOUND);
    CHECK_STR(p.ptr, "/tmp/x");
    fl_buf_reset(&p);
    CHECK_EQ(fl_io_parse_location("file://localhost/tmp/y", &l, &p), FL_ERR_NOT_FOUND);
    CHECK_STR(p.ptr, "/tmp/y");
    fl_buf_reset(&p);
    CHECK_EQ(fl_io_parse_location("file://otherhost/tmp/y", &l, &p), FL_ERR_INVALID);
    CHECK_EQ(fl_io_parse_location("rel/dir/f", &l, &p), FL_ERR_NOT_FOUND);
    CHECK_STR(p.ptr, "rel/dir/f");
    fl_buf_free(&p);
}

FL_TEST(io_s3_url)
{
    fl_s3_loc_t l = { "bkt", "data/a b+c/x.parquet" };
    fl_buf_t u;
    fl_buf_init(&u, 0);
    CHECK_EQ(fl_io_s3_url("http://127.0.0.1:9000", NULL, true, &l, &u), FL_OK);
    CHECK_STR(u.ptr, "http://127.0.0.1:9000/bkt/data/a%20b%2Bc/x.parquet");
    fl_buf_reset(&u);
    CHECK_EQ(fl_io_s3_url("http://minio.local:9000", NULL, false, &l, &u), FL_OK);
    CHECK_STR(u.ptr, "http://bkt.minio.local:9000/data/a%20b%2Bc/x.parquet");
    fl_buf_reset(&u);
    CHECK_EQ(fl_io_s3_url(NULL, "eu-west-1", false, &l, &u), FL_OK);
    CHECK_STR(u.ptr, "https://bkt.s3.eu-west-1.amazonaws.com/data/a%20b%2Bc/x.parquet");
    fl_buf_reset(&u);
    CHECK_EQ(fl_io_s3_url("https://gw.example/s3", NULL, true, &l, &u), FL_OK);
    CHECK_STR(u.ptr, "https://gw.example/s3/bkt/data/a%20b%2Bc/x.parquet");
    fl_buf_reset(&u);
    CHECK_EQ(fl_io_s3_url("no-scheme", NULL, true, &l, &u), FL_ERR_INVALID);
    fl_buf_free(&u);
}

FL_TEST(io_local_files)
{
    char loc[512], url[600];
    snprintf(loc, sizeof loc, "%s/wh/ns/t/data/f.bin", fl_test_tmpdir());
    snprintf(url, sizeof url, "file://%s", loc);
    fl_io_t *io;
    REQUIRE(fl_io_new(NULL, NULL, &io) == FL_OK);
    fl_remote_error_t e;
    CHECK_EQ(fl_io_put(io, url, "0123456789", 10, &e), FL_OK);
    fl_io_stat_t st;
    CHECK_EQ(fl_io_head(io, loc, &st, &e), FL_OK);
    CHECK_EQ(st.size, 10);
    char p[8] = { 0 };
    CHECK_EQ(fl_io_read_at(io, url, 3, p, 4, &e), FL_OK);
    CHECK_MEM(p, "3456", 4);
    CHECK_EQ(fl_io_read_at(io, url, 8, p, 4, &e), FL_ERR_INVALID);
    fl_buf_t b;
    fl_buf_init(&b, 5);
    CHECK_EQ(fl_io_get(io, loc, &b, &e), FL_ERR_TOO_LARGE);
    fl_buf_free(&b);
    fl_buf_init(&b, 0);
    CHECK_EQ(fl_io_get(io, loc, &b, &e), FL_OK);
    CHECK_EQ(b.len, 10);
    CHECK_STR(b.ptr, "0123456789");
    fl_buf_free(&b);

    fl_io_source_t *s;
    fl_pq_source_t src;
    REQUIRE(fl_io_source_open(io, url, &s, &src, &e) == FL_OK);
    CHECK_EQ(src.size, 10);
    CHECK_EQ(src.read_at(src.ctx, 6, p, 4), FL_OK);
    CHECK_MEM(p, "6789", 4);
    CHECK_EQ(src.read_at(src.ctx, 7, p, 4), FL_ERR_INVALID);
    fl_io_source_free(s);

    /* put from an fd (pread: offset 0 whatever the position) */
    char src_path[600];
    snprintf(src_path, sizeof src_path, "%s.src", loc);
    FILE *f = fopen(src_path, "w");
    fputs("streamed", f);
    fclose(f);
    int fd = open(src_path, O_RDONLY);
    CHECK_EQ(lseek(fd, 3, SEEK_SET), 3);
    CHECK_EQ(fl_io_put_fd(io, loc, fd, 8, &e), FL_OK);
    close(fd);
    CHECK_EQ(fl_io_read_at(io, loc, 0, p, 8, &e), FL_OK);
    CHECK_MEM(p, "streamed", 8);

    CHECK_EQ(fl_io_delete(io, url, &e), FL_OK);
    CHECK_EQ(fl_io_head(io, loc, &st, &e), FL_ERR_NOT_FOUND);
    CHECK(strstr(e.message, "f.bin") != NULL);
    CHECK_EQ(fl_io_delete(io, url, &e), FL_OK);
    CHECK_EQ(fl_io_put(io, "gs://b/k", "x", 1, &e), FL_ERR_INVALID);
    CHECK(strstr(e.message, "unsupported location") != NULL);
    fl_io_free(io);
}

FL_TEST(io_config_resolution)
{
    /* no network: an unreachable endpoint from the map, overridden by the options */
    json_t *props = json_loads("{\"s3.endpoint\":\"http://127.0.0.1:1\",\"s3.path-style-access\":\"true\"}", 0, NULL);
    fl_io_opts_t o;
    fl_io_opts_default(&o);
    o.max_retries = -1;
    fl_io_t *io;
    fl_remote_error_t e;
    fl_io_stat_t st;
    REQUIRE(fl_io_new(props, &o, &io) == FL_OK);
    CHECK_EQ(fl_io_head(io, "s3://b/k", &st, &e), FL_ERR_IO);
    CHECK(strstr(e.message, "http://127.0.0.1:1/b/k") != NULL);
    fl_io_free(io);
    o.s3_endpoint = "http://127.0.0.1:2/";
    REQUIRE(fl_io_new(props, &o, &io) == FL_OK);
    CHECK_EQ(fl_io_head(io, "s3://b/k", &st, &e), FL_ERR_IO);
    CHECK(strstr(e.message, "http://127.0.0.1:2/b/k") != NULL);
    fl_io_free(io);
    json_decref(props);
}
