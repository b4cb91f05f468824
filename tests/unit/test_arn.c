#include "test.h"
#include "auth/arn.h"

static const fl_arn_scope_t oss = { .region = "cn-hangzhou", .account = "123456789012" };
static const fl_arn_scope_t aws = { .region = "us-east-1", .account = "000000000000", .aws = true };

FL_TEST(arn_formats_in_the_scopes_form)
{
    char out[FL_ARN_MAX];
    fl_arn_bucket(&oss, "lake", out);
    CHECK_STR(out, "acs:osstables:cn-hangzhou:123456789012:bucket/lake");
    fl_arn_bucket(&aws, "lake", out);
    CHECK_STR(out, "arn:aws:s3tables:us-east-1:000000000000:bucket/lake");
    fl_arn_table(&aws, "lake", "0f8fad5b-d9cb-469f-a165-70867728950e", out);
    CHECK_STR(out, "arn:aws:s3tables:us-east-1:000000000000:bucket/lake/table/0f8fad5b-d9cb-469f-a165-70867728950e");
    /* an ARN that would not fit is "", never cut */
    char big[600];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = 0;
    fl_arn_bucket(&aws, big, out);
    CHECK_STR(out, "");
    fl_arn_table(&aws, big, "id", out);
    CHECK_STR(out, "");
}

FL_TEST(arn_parses_both_forms)
{
    char b[64], id[40];
    CHECK(fl_arn_parse("acs:osstables:cn-hangzhou:1:bucket/lake", b, NULL));
    CHECK_STR(b, "lake");
    CHECK(fl_arn_parse("acs:osstable:cn-hangzhou:1:bucket/lake", b, NULL));
    CHECK(fl_arn_parse("arn:aws:s3tables:us-east-1:000000000000:bucket/lake", b, id));
    CHECK_STR(b, "lake");
    CHECK_STR(id, "");
    CHECK(fl_arn_parse("arn:aws-cn:s3tables:cn-north-1:000000000000:bucket/lake/table/abc", b, id));
    CHECK_STR(b, "lake");
    CHECK_STR(id, "abc");
    /* a table tail only where a table id is wanted */
    CHECK(!fl_arn_parse("arn:aws:s3tables:us-east-1:0:bucket/lake/table/abc", b, NULL));
    CHECK(!fl_arn_parse("arn:aws:s3:us-east-1:0:bucket/lake", b, NULL));
    CHECK(!fl_arn_parse("arn:aws:s3tables:us-east-1:12x:bucket/lake", b, NULL));
    CHECK(!fl_arn_parse("arn:aws:s3tables:us-east-1:0:bucket/", b, NULL));
    CHECK(!fl_arn_parse("arn:aws:s3tables:us-east-1:0:bucket/lake/other/x", b, id));
    CHECK(!fl_arn_parse("arn:aws:s3tables:us-east-1:0:bucket/lake/table/a/b", b, id));
    CHECK(!fl_arn_parse("arn:aws:s3tables:us-east-1:0:bucket/lake/table/", b, id));
    CHECK(!fl_arn_parse("", b, NULL));
}

FL_TEST(arn_resolves_only_this_scope)
{
    char b[64], id[40];
    CHECK_EQ(fl_arn_resolve(&aws, "arn:aws:s3tables:us-east-1:000000000000:bucket/lake", b, NULL), FL_ARN_OURS);
    CHECK_STR(b, "lake");
    /* either form resolves, whichever form the scope writes */
    CHECK_EQ(fl_arn_resolve(&aws, "acs:osstables:us-east-1:000000000000:bucket/lake/table/t1", b, id), FL_ARN_OURS);
    CHECK_STR(id, "t1");
    CHECK_EQ(fl_arn_resolve(&aws, "arn:aws:s3tables:us-east-1:111122223333:bucket/lake", b, NULL),
             FL_ARN_OTHER_ACCOUNT);
    CHECK_EQ(fl_arn_resolve(&aws, "arn:aws:s3tables:eu-west-1:000000000000:bucket/lake", b, NULL),
             FL_ARN_OTHER_REGION);
    /* the account is judged first; prefixes of ours are not ours */
    CHECK_EQ(fl_arn_resolve(&aws, "arn:aws:s3tables:eu-west-1:1:bucket/lake", b, NULL), FL_ARN_OTHER_ACCOUNT);
    CHECK_EQ(fl_arn_resolve(&aws, "arn:aws:s3tables:us-east:000000000000:bucket/lake", b, NULL), FL_ARN_OTHER_REGION);
    CHECK_EQ(fl_arn_resolve(&aws, "arn:aws:s3tables:us-east-1:00000000000:bucket/lake", b, NULL),
             FL_ARN_OTHER_ACCOUNT);
    CHECK_EQ(fl_arn_resolve(&aws, "not an arn", b, NULL), FL_ARN_MALFORMED);
    CHECK_EQ(fl_arn_resolve(&aws, NULL, b, NULL), FL_ARN_MALFORMED);
    CHECK_EQ(fl_arn_resolve(&oss, "acs:osstables:cn-hangzhou:123456789012:bucket/x", b, NULL), FL_ARN_OURS);
}

FL_TEST(arn_several_accounts)
{
    char b[64], id[40], out[FL_ARN_MAX];
    fl_arn_scope_t multi = aws;
    multi.any_account = true;
    /* any account resolves; the region still counts */
    CHECK_EQ(fl_arn_resolve(&multi, "arn:aws:s3tables:us-east-1:111122223333:bucket/lake", b, NULL), FL_ARN_OURS);
    CHECK_EQ(fl_arn_resolve(&multi, "arn:aws:s3tables:eu-west-1:111122223333:bucket/lake", b, NULL),
             FL_ARN_OTHER_REGION);
    /* the caller compares the ARN's account with the bucket's owner */
    CHECK(fl_arn_in_account("arn:aws:s3tables:us-east-1:111122223333:bucket/lake", "111122223333"));
    CHECK(fl_arn_in_account("acs:osstables:us-east-1:111122223333:bucket/lake/table/t1", "111122223333"));
    CHECK(!fl_arn_in_account("arn:aws:s3tables:us-east-1:111122223333:bucket/lake", "11112222333"));
    CHECK(!fl_arn_in_account("arn:aws:s3tables:us-east-1:111122223333:bucket/lake", "000000000000"));
    CHECK(!fl_arn_in_account("arn:aws:s3tables:us-east-1:1:bucket/lake:2:bucket/x", "2"));
    CHECK(!fl_arn_in_account("garbage", "1"));
    fl_arn_bucket_of(&aws, "111122223333", "lake", out);
    CHECK_STR(out, "arn:aws:s3tables:us-east-1:111122223333:bucket/lake");
    (void)id;
}
