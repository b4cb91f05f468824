/* The OSS4 tables flavour's canonical resource (fl_oss4_tables_resource) on
 * requests built by hand. Signatures themselves are checked against the SDKs'
 * own signers at test time, not here: tests/integration/test_oss_signers.py
 * drives the verifier through build/sigcheck (tests/tools/sigcheck.c). */
#include "test.h"
#include "auth/sigv4.h"
#include "base/buf.h"


FL_TEST(oss4_tables_resource)
{
    static const char *arn = "acs%3Aosstables%3Aus-east-1%3A123456789012%3Abucket%2Ftb-one";
    char path[512], query[512];
    fl_buf_t b;
    /* no bucket addressed */
    fl_sigv4_req_t r = { "PUT", "/buckets", 8, NULL, 0, NULL, 0 };
    fl_buf_init(&b, 4096);
    CHECK_EQ(fl_oss4_tables_resource(&r, "us-east-1", &b), FL_OK);
    CHECK_STR(b.ptr, "/acs:osstables:us-east-1::bucket//buckets");
    fl_buf_free(&b);
    /* the ARN in the path, the rest of the path decoded */
    snprintf(path, sizeof path, "/tables/%s/ns/t1/rename", arn);
    r = (fl_sigv4_req_t){ "PUT", path, strlen(path), NULL, 0, NULL, 0 };
    fl_buf_init(&b, 4096);
    CHECK_EQ(fl_oss4_tables_resource(&r, "us-east-1", &b), FL_OK);
    CHECK_STR(b.ptr, "/acs:osstables:us-east-1:123456789012:bucket/tb-one/tables/"
                     "acs:osstables:us-east-1:123456789012:bucket/tb-one/ns/t1/rename");
    fl_buf_free(&b);
    /* /get-table: the bucket from tableBucketARN, or from a table ARN */
    snprintf(query, sizeof query, "tableBucketARN=%s&namespace=ns&name=t1", arn);
    r = (fl_sigv4_req_t){ "GET", "/get-table", 10, query, strlen(query), NULL, 0 };
    fl_buf_init(&b, 4096);
    CHECK_EQ(fl_oss4_tables_resource(&r, "us-east-1", &b), FL_OK);
    CHECK_STR(b.ptr, "/acs:osstables:us-east-1:123456789012:bucket/tb-one/get-table");
    fl_buf_free(&b);
    r = (fl_sigv4_req_t){ "GET", "/get-table", 10,
                          "tableArn=acs%3Aosstables%3Ar%3A1%3Abucket%2Fb%2Ftable%2Fid-1", 59, NULL, 0 };
    fl_buf_init(&b, 4096);
    CHECK_EQ(fl_oss4_tables_resource(&r, "r", &b), FL_OK);
    CHECK_STR(b.ptr, "/acs:osstables:r:1:bucket/b/get-table");
    fl_buf_free(&b);
    /* a bad escape */
    r = (fl_sigv4_req_t){ "GET", "/tables/%zz", 11, NULL, 0, NULL, 0 };
    fl_buf_init(&b, 4096);
    CHECK_EQ(fl_oss4_tables_resource(&r, "us-east-1", &b), FL_ERR_INVALID);
    fl_buf_free(&b);
}
