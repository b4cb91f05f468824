/* auth/policy: parsing (what is rejected at Put time), statement matching,
 * condition operators and the AWS decision rules. */
#include "auth/policy.h"
#include "test.h"
#include <stdlib.h>

#define ACCT "111122223333"
#define OTHER "444455556666"
#define BUCKET_ARN "arn:aws:s3tables:us-east-1:" ACCT ":bucket/b1"
#define TABLE_ARN BUCKET_ARN "/table/0f0e-1"

static fl_policy_t *parse(const char *json, fl_policy_kind_t kind)
{
    char err[256] = "";
    fl_policy_t *p = fl_policy_parse(json, strlen(json), kind, err, sizeof err);
    if (!p) fprintf(stderr, "    (parse: %s)\n", err);
    return p;
}

static bool rejects(const char *json, fl_policy_kind_t kind, const char *want_in_msg)
{
    char err[256] = "";
    fl_policy_t *p = fl_policy_parse(json, strlen(json), kind, err, sizeof err);
    if (p) {
        fl_policy_free(p);
        return false;
    }
    return !want_in_msg || strstr(err, want_in_msg);
}

static fl_policy_ctx_t user_ctx(const char *action, const char *resource)
{
    return (fl_policy_ctx_t){ .action = action, .resource = resource,
                              .principal_arn = "arn:aws:iam::" ACCT ":user/alice",
                              .principal_account = ACCT, .username = "alice", .source_ip = "10.1.2.3",
                              .now_ms = 1735689600000LL /* 2025-01-01T00:00:00Z */, .ns = "hr",
                              .table_name = "payroll" };
}

static fl_policy_effect_t eval1(const char *json, fl_policy_kind_t kind, const fl_policy_ctx_t *c)
{
    fl_policy_t *p = parse(json, kind);
    if (!p) return (fl_policy_effect_t)-1;
    fl_policy_effect_t e = fl_policy_eval(p, c, NULL);
    fl_policy_free(p);
    return e;
}

FL_TEST(policy_glob)
{
    CHECK(fl_policy_glob("*", "", false));
    CHECK(fl_policy_glob("a*c", "abbbc", false));
    CHECK(fl_policy_glob("a?c", "abc", false));
    CHECK(!fl_policy_glob("a?c", "ac", false));
    CHECK(fl_policy_glob("s3tables:get*", "S3Tables:GetTable", true));
    CHECK(!fl_policy_glob("s3tables:get*", "S3Tables:GetTable", false));
    CHECK(fl_policy_glob("arn:*:bucket/*/table/*", "arn:aws:s3tables:r:1:bucket/b/table/x", false));
    CHECK(!fl_policy_glob("abc", "abcd", false));
    CHECK(fl_policy_glob("**a**", "xxa", false));
}

FL_TEST(policy_parse_accepts)
{
    const char *ok[] = {
        "{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"s3tables:*\",\"Resource\":\"*\"}}",
        "{\"Statement\":[{\"Sid\":\"A1\",\"Effect\":\"Deny\",\"NotAction\":[\"s3tables:Get*\",\"oss:ListTables\"],"
        "\"NotResource\":\"acs:osstables:*:*:bucket/x\"}]}",
        "{\"Version\":\"1\",\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":[\"*\"],"
        "\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":[\"10.0.0.0/8\",\"::1\"]},"
        "\"DateLessThan\":{\"aws:CurrentTime\":\"2030-01-01T00:00:00Z\"},"
        "\"NumericGreaterThanEquals\":{\"aws:EpochTime\":1},\"Bool\":{\"aws:SecureTransport\":false},"
        "\"ForAnyValue:StringLike\":{\"s3tables:namespace\":[\"h*\"]},"
        "\"StringEqualsIfExists\":{\"s3tables:tableName\":\"t\"},\"Null\":{\"aws:username\":\"false\"}}}]}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        fl_policy_t *p = parse(ok[i], FL_POLICY_IDENTITY);
        CHECK(p != NULL);
        fl_policy_free(p);
    }
    fl_policy_t *p = parse("{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":"
                           "{\"AWS\":[\"" OTHER "\",\"arn:aws:iam::" ACCT ":role/r\"],\"Service\":\"x.amazonaws.com\"},"
                           "\"Action\":\"s3tables:GetTable\",\"Resource\":\"" TABLE_ARN "\"},"
                           "{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3tables:GetTable\","
                           "\"Resource\":\"*\"}]}", FL_POLICY_RESOURCE);
    REQUIRE(p != NULL);
    CHECK_EQ(fl_policy_nstatements(p), 2);
    fl_policy_free(p);
    p = parse("{\"Version\":\"1\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":[\"" OTHER "\"],"
              "\"Action\":\"oss:GetTable\",\"Resource\":\"*\"}]}", FL_POLICY_RESOURCE);
    CHECK(p != NULL);
    fl_policy_free(p);
    p = parse("{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":"
              "{\"AWS\":\"arn:aws:iam::" ACCT ":root\"},\"Action\":\"sts:AssumeRole\"}]}", FL_POLICY_TRUST);
    CHECK(p != NULL);
    fl_policy_free(p);
}

FL_TEST(policy_parse_rejects)
{
    const fl_policy_kind_t I = FL_POLICY_IDENTITY, R = FL_POLICY_RESOURCE;
    CHECK(rejects("", I, "valid JSON"));
    CHECK(rejects("[]", I, "valid JSON"));
    CHECK(rejects("{\"Statement\":[]}", I, "Statement"));
    CHECK(rejects("{\"Version\":\"2099\",\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\"}}", I, "Version"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Maybe\",\"Action\":\"*\",\"Resource\":\"*\"}}", I, "Effect"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Resource\":\"*\"}}", I, "Action"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"NotAction\":\"*\",\"Resource\":\"*\"}}", I, "Action"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\"}}", I, "resources"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"GetTable\",\"Resource\":\"*\"}}", I, "vendor"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"bucket/x\"}}", I, "ARN"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\",\"Principal\":\"*\"}}", I, "principal"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\"}}", R, "Principal"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},\"Action\":\"*\",\"Resource\":\"*\"}}", R, "principal"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"Users\":\"1\"},\"Action\":\"*\",\"Resource\":\"*\"}}", R, "principal"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\",\"Extra\":1}}", I, "Unknown"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\"},\"Foo\":1}", I, "Unknown"));
    CHECK(rejects("{\"Statement\":[{\"Sid\":\"a\",\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\"},"
                  "{\"Sid\":\"a\",\"Effect\":\"Deny\",\"Action\":\"*\",\"Resource\":\"*\"}]}", I, "unique"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\",\"Condition\":"
                  "{\"StringSortOf\":{\"aws:username\":\"x\"}}}}", I, "operator"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\",\"Condition\":"
                  "{\"NullIfExists\":{\"aws:username\":\"true\"}}}}", I, "operator"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\",\"Condition\":"
                  "{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/33\"}}}}", I, "CIDR"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\",\"Condition\":"
                  "{\"DateLessThan\":{\"aws:CurrentTime\":\"tomorrow\"}}}}", I, "date"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\",\"Condition\":"
                  "{\"NumericLessThan\":{\"aws:EpochTime\":\"1e\"}}}}", I, "number"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\",\"Condition\":"
                  "{\"Bool\":{\"aws:SecureTransport\":\"yes\"}}}}", I, "true or false"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\",\"Condition\":"
                  "{\"StringEquals\":{\"username\":\"x\"}}}}", I, "vendor"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":[],\"Resource\":\"*\"}}", I, "empty"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":[1],\"Resource\":\"*\"}}", I, "strings"));
    CHECK(rejects("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\"},"
                  "\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\"}}", I, NULL));
    /* caps */
    char *big = malloc(40000);
    strcpy(big, "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\",\"Sid\":\"");
    memset(big + strlen(big), 'a', 30000);
    big[30000 + 72] = 0;
    strcat(big, "\"}}");
    CHECK(rejects(big, I, "larger"));
    free(big);
}

FL_TEST(policy_actions_and_resources)
{
    fl_policy_ctx_t c = user_ctx("s3tables:GetTable", TABLE_ARN);
    const char *pol = "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"oss:gettable\",\"Resource\":\"" BUCKET_ARN "/table/*\"}}";
    CHECK_EQ(eval1(pol, FL_POLICY_IDENTITY, &c), FL_POLICY_ALLOW);
    c.action = "s3tables:GetTableData";
    CHECK_EQ(eval1(pol, FL_POLICY_IDENTITY, &c), FL_POLICY_NONE);
    c.action = "s3tables:GetTable";
    c.resource = BUCKET_ARN;
    CHECK_EQ(eval1(pol, FL_POLICY_IDENTITY, &c), FL_POLICY_NONE);
    /* OSS-form ARNs in the policy and in the request compare as one */
    c.resource = "acs:osstables:us-east-1:" ACCT ":bucket/b1/table/0f0e-1";
    CHECK_EQ(eval1(pol, FL_POLICY_IDENTITY, &c), FL_POLICY_ALLOW);
    c.resource = TABLE_ARN;
    CHECK_EQ(eval1("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"s3tables:Get*\",\"Resource\":"
                   "\"acs:osstables:*:" ACCT ":bucket/b1/*\"}}", FL_POLICY_IDENTITY, &c), FL_POLICY_ALLOW);
    /* case: actions fold, resources do not */
    CHECK_EQ(eval1("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"S3TABLES:GETTABLE\",\"Resource\":"
                   "\"" BUCKET_ARN "/TABLE/*\"}}", FL_POLICY_IDENTITY, &c), FL_POLICY_NONE);
    /* NotAction / NotResource */
    CHECK_EQ(eval1("{\"Statement\":{\"Effect\":\"Deny\",\"NotAction\":\"s3tables:Get*\",\"Resource\":\"*\"}}",
                   FL_POLICY_IDENTITY, &c), FL_POLICY_NONE);
    c.action = "s3tables:DeleteTable";
    CHECK_EQ(eval1("{\"Statement\":{\"Effect\":\"Deny\",\"NotAction\":\"s3tables:Get*\",\"Resource\":\"*\"}}",
                   FL_POLICY_IDENTITY, &c), FL_POLICY_DENY);
    CHECK_EQ(eval1("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"NotResource\":\"" BUCKET_ARN "/table/*\"}}",
                   FL_POLICY_IDENTITY, &c), FL_POLICY_NONE);
    CHECK_EQ(eval1("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"NotResource\":\"" BUCKET_ARN "\"}}",
                   FL_POLICY_IDENTITY, &c), FL_POLICY_ALLOW);
    /* oss: also covers s3: */
    c.action = "s3:GetObject";
    CHECK_EQ(eval1("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"oss:GetObject\",\"Resource\":\"*\"}}",
                   FL_POLICY_IDENTITY, &c), FL_POLICY_ALLOW);
    CHECK_EQ(eval1("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"s3tables:GetObject\",\"Resource\":\"*\"}}",
                   FL_POLICY_IDENTITY, &c), FL_POLICY_NONE);
    /* deny beats allow inside one policy, whatever the order */
    c.action = "s3tables:GetTable";
    const char *sid = NULL;
    fl_policy_t *p = parse("{\"Statement\":[{\"Sid\":\"All\",\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\"},"
                           "{\"Sid\":\"NoGet\",\"Effect\":\"Deny\",\"Action\":\"s3tables:GetTable\",\"Resource\":\"*\"}]}",
                           FL_POLICY_IDENTITY);
    REQUIRE(p);
    CHECK_EQ(fl_policy_eval(p, &c, &sid), FL_POLICY_DENY);
    CHECK_STR(sid, "NoGet");
    fl_policy_free(p);
}

FL_TEST(policy_principals)
{
    fl_policy_ctx_t c = user_ctx("s3tables:GetTable", TABLE_ARN);
    const char *by_acct = "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"" ACCT "\"},"
                          "\"Action\":\"*\",\"Resource\":\"*\"}}";
    const char *by_root = "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"arn:aws:iam::" ACCT ":root\"},"
                          "\"Action\":\"*\",\"Resource\":\"*\"}}";
    const char *by_user = "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"arn:aws:iam::" ACCT ":user/alice\"]},"
                          "\"Action\":\"*\",\"Resource\":\"*\"}}";
    const char *not_user = "{\"Statement\":{\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":\"arn:aws:iam::" ACCT ":user/alice\"},"
                           "\"Action\":\"*\",\"Resource\":\"*\"}}";
    const char *svc = "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"Service\":\"x.amazonaws.com\"},"
                      "\"Action\":\"*\",\"Resource\":\"*\"}}";
    const char *oss = "{\"Version\":\"1\",\"Statement\":{\"Effect\":\"Allow\",\"Principal\":[\"" ACCT "\"],"
                      "\"Action\":\"*\",\"Resource\":\"*\"}}";
    CHECK_EQ(eval1(by_acct, FL_POLICY_RESOURCE, &c), FL_POLICY_ALLOW);
    CHECK_EQ(eval1(by_root, FL_POLICY_RESOURCE, &c), FL_POLICY_ALLOW);
    CHECK_EQ(eval1(by_user, FL_POLICY_RESOURCE, &c), FL_POLICY_ALLOW);
    CHECK_EQ(eval1(not_user, FL_POLICY_RESOURCE, &c), FL_POLICY_NONE);
    CHECK_EQ(eval1(svc, FL_POLICY_RESOURCE, &c), FL_POLICY_NONE);
    CHECK_EQ(eval1(oss, FL_POLICY_RESOURCE, &c), FL_POLICY_ALLOW);
    c.principal_arn = "arn:aws:iam::" ACCT ":user/bob";
    CHECK_EQ(eval1(by_user, FL_POLICY_RESOURCE, &c), FL_POLICY_NONE);
    CHECK_EQ(eval1(not_user, FL_POLICY_RESOURCE, &c), FL_POLICY_DENY);
    c.principal_account = OTHER;
    c.principal_arn = "arn:aws:iam::" OTHER ":user/alice";
    CHECK_EQ(eval1(by_acct, FL_POLICY_RESOURCE, &c), FL_POLICY_NONE);
    CHECK_EQ(eval1(by_root, FL_POLICY_RESOURCE, &c), FL_POLICY_NONE);
    CHECK_EQ(eval1("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"*\"},\"Action\":\"*\",\"Resource\":\"*\"}}",
                   FL_POLICY_RESOURCE, &c), FL_POLICY_ALLOW);
}

FL_TEST(policy_conditions)
{
    fl_policy_ctx_t c = user_ctx("s3tables:GetTableData", TABLE_ARN);
#define COND(x) "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\",\"Condition\":" x "}}"
#define YES(x) CHECK_EQ(eval1(COND(x), FL_POLICY_IDENTITY, &c), FL_POLICY_ALLOW)
#define NO(x) CHECK_EQ(eval1(COND(x), FL_POLICY_IDENTITY, &c), FL_POLICY_NONE)
    YES("{\"StringEquals\":{\"s3tables:namespace\":\"hr\"}}");
    YES("{\"StringEquals\":{\"S3Tables:Namespace\":[\"x\",\"hr\"]}}"); /* keys fold case */
    NO("{\"StringEquals\":{\"s3tables:namespace\":\"HR\"}}");
    YES("{\"StringEqualsIgnoreCase\":{\"s3tables:namespace\":\"HR\"}}");
    NO("{\"StringNotEquals\":{\"s3tables:namespace\":[\"x\",\"hr\"]}}");
    YES("{\"StringNotEquals\":{\"s3tables:namespace\":[\"x\",\"y\"]}}");
    YES("{\"StringLike\":{\"s3tables:tableName\":\"pay*\"}}");
    NO("{\"StringNotLike\":{\"s3tables:tableName\":\"p?yroll\"}}");
    YES("{\"StringEquals\":{\"s3tables:namespace\":\"hr\",\"s3tables:tableName\":\"payroll\"}}");
    NO("{\"StringEquals\":{\"s3tables:namespace\":\"hr\",\"s3tables:tableName\":\"other\"}}");
    /* absent keys */
    NO("{\"StringEquals\":{\"aws:SourceVpc\":\"v\"}}");
    YES("{\"StringEqualsIfExists\":{\"aws:SourceVpc\":\"v\"}}");
    YES("{\"StringNotEquals\":{\"aws:SourceVpc\":\"v\"}}");
    YES("{\"Null\":{\"aws:SourceVpc\":\"true\"}}");
    NO("{\"Null\":{\"aws:SourceIp\":\"true\"}}");
    YES("{\"Null\":{\"aws:SourceIp\":\"false\"}}");
    NO("{\"ForAnyValue:StringEquals\":{\"aws:SourceVpc\":\"v\"}}");
    YES("{\"ForAllValues:StringEquals\":{\"aws:SourceVpc\":\"v\"}}");
    YES("{\"ForAnyValue:StringLike\":{\"s3tables:namespace\":[\"h*\"]}}");
    NO("{\"ForAllValues:StringEquals\":{\"s3tables:namespace\":[\"x\"]}}");
    YES("{\"ForAnyValue:StringNotEquals\":{\"s3tables:namespace\":[\"x\"]}}");
    /* principals */
    YES("{\"StringEquals\":{\"aws:PrincipalAccount\":\"" ACCT "\"}}");
    YES("{\"ArnLike\":{\"aws:PrincipalArn\":\"arn:aws:iam::*:user/*\"}}");
    NO("{\"ArnLike\":{\"aws:PrincipalArn\":\"arn:aws:iam::*:role/*\"}}");
    YES("{\"ArnEquals\":{\"aws:PrincipalArn\":\"arn:aws:iam::" ACCT ":user/alice\"}}");
    NO("{\"ArnNotEquals\":{\"aws:PrincipalArn\":\"arn:aws:iam::" ACCT ":user/alice\"}}");
    NO("{\"ArnLike\":{\"aws:PrincipalArn\":\"arn:aws:iam:*:user/alice\"}}"); /* '*' stays in its segment */
    YES("{\"StringEquals\":{\"aws:username\":\"alice\"}}");
    /* IP */
    YES("{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}");
    YES("{\"IpAddress\":{\"aws:SourceIp\":[\"192.168.0.0/16\",\"10.1.2.3\"]}}");
    NO("{\"IpAddress\":{\"aws:SourceIp\":\"10.1.2.0/31\"}}");
    YES("{\"NotIpAddress\":{\"aws:SourceIp\":\"192.168.0.0/16\"}}");
    NO("{\"NotIpAddress\":{\"aws:SourceIp\":\"0.0.0.0/0\"}}");
    c.source_ip = "2001:db8::5";
    YES("{\"IpAddress\":{\"aws:SourceIp\":\"2001:db8::/32\"}}");
    NO("{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}");
    c.source_ip = "::ffff:10.9.9.9";
    YES("{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}");
    c.source_ip = "10.1.2.3";
    /* dates and numbers */
    YES("{\"DateLessThan\":{\"aws:CurrentTime\":\"2025-01-02\"}}");
    NO("{\"DateGreaterThan\":{\"aws:CurrentTime\":\"2025-01-01T00:00:01Z\"}}");
    YES("{\"DateGreaterThanEquals\":{\"aws:CurrentTime\":\"2025-01-01T01:00:00+02:00\"}}");
    YES("{\"DateEquals\":{\"aws:CurrentTime\":\"1735689600\"}}");
    YES("{\"DateLessThanEquals\":{\"aws:CurrentTime\":\"2025-01-01T00:00:00.000Z\"}}");
    NO("{\"DateNotEquals\":{\"aws:CurrentTime\":\"2025-01-01T00:00:00Z\"}}");
    YES("{\"NumericLessThan\":{\"aws:EpochTime\":1735689601}}");
    YES("{\"NumericEquals\":{\"aws:EpochTime\":\"1735689600\"}}");
    NO("{\"NumericNotEquals\":{\"aws:EpochTime\":1735689600}}");
    NO("{\"NumericGreaterThan\":{\"aws:EpochTime\":1735689600}}");
    YES("{\"NumericGreaterThanEquals\":{\"aws:EpochTime\":1735689600}}");
    NO("{\"NumericLessThan\":{\"s3tables:namespace\":5}}"); /* not a number: no match */
    /* Bool */
    YES("{\"Bool\":{\"aws:SecureTransport\":\"false\"}}");
    NO("{\"Bool\":{\"aws:SecureTransport\":true}}");
    c.secure_transport = true;
    YES("{\"Bool\":{\"aws:SecureTransport\":\"TRUE\"}}");
    /* operators AND together */
    NO("{\"Bool\":{\"aws:SecureTransport\":\"true\"},\"StringEquals\":{\"s3tables:namespace\":\"x\"}}");
#undef COND
#undef YES
#undef NO
}

/* The decision rules over identity, session and resource policies. */
FL_TEST(policy_decide)
{
    fl_policy_t *allow_get = parse("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"s3tables:GetTable\",\"Resource\":\"*\"}}", FL_POLICY_IDENTITY);
    fl_policy_t *allow_all = parse("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"s3tables:*\",\"Resource\":\"*\"}}", FL_POLICY_IDENTITY);
    fl_policy_t *deny_get = parse("{\"Statement\":{\"Sid\":\"D\",\"Effect\":\"Deny\",\"Action\":\"s3tables:GetTable\",\"Resource\":\"*\"}}", FL_POLICY_IDENTITY);
    fl_policy_t *res_other = parse("{\"Statement\":{\"Sid\":\"X\",\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"" OTHER "\"},"
                                   "\"Action\":\"s3tables:*\",\"Resource\":\"*\"}}", FL_POLICY_RESOURCE);
    fl_policy_t *res_mine = parse("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"" ACCT "\"},"
                                  "\"Action\":\"s3tables:GetTable\",\"Resource\":\"*\"}}", FL_POLICY_RESOURCE);
    fl_policy_t *res_deny = parse("{\"Statement\":{\"Sid\":\"RD\",\"Effect\":\"Deny\",\"Principal\":\"*\","
                                  "\"Action\":\"s3tables:GetTable\",\"Resource\":\"*\"}}", FL_POLICY_RESOURCE);
    REQUIRE(allow_get && allow_all && deny_get && res_other && res_mine && res_deny);
    fl_policy_ctx_t c = user_ctx("s3tables:GetTable", TABLE_ARN);
    fl_authz_out_t o;
    fl_authz_in_t in = { .ctx = &c, .resource_account = ACCT };

    fl_authz_decide(&in, &o); /* no policy at all */
    CHECK(!o.allowed);
    CHECK_STR(o.reason, "implicit deny");
    in.principal_is_root = true; /* the owner's root: always */
    in.resource = (const fl_policy_t *[]){ res_deny };
    in.nresource = 1;
    fl_authz_decide(&in, &o);
    CHECK(o.allowed);
    /* S3 bucket policies: their Deny binds the owner's root too */
    in.root_bound_by_resource_deny = true;
    fl_authz_decide(&in, &o);
    CHECK(!o.allowed);
    CHECK_STR(o.reason, "explicit deny");
    CHECK_STR(o.sid, "RD");
    in.resource = (const fl_policy_t *[]){ res_other }; /* an Allow for someone else: the root still may */
    fl_authz_decide(&in, &o);
    CHECK(o.allowed);
    CHECK_STR(o.reason, "account root");
    in.root_bound_by_resource_deny = false;
    in.nresource = 0;
    /* a root under a session policy (vended credentials): that policy alone */
    in.session = allow_get;
    fl_authz_decide(&in, &o);
    CHECK(o.allowed);
    fl_policy_ctx_t other = user_ctx("s3tables:PutTableData", TABLE_ARN);
    in.ctx = &other;
    fl_authz_decide(&in, &o);
    CHECK(!o.allowed);
    CHECK_STR(o.reason, "outside the session policy");
    in.ctx = &c;
    in.session = NULL;
    in.principal_is_root = false;

    in.identity = (const fl_policy_t *[]){ allow_get };
    in.nidentity = 1;
    fl_authz_decide(&in, &o);
    CHECK(o.allowed);
    CHECK_STR(o.where, "identity");
    in.identity = (const fl_policy_t *[]){ allow_all, deny_get };
    in.nidentity = 2;
    fl_authz_decide(&in, &o);
    CHECK(!o.allowed);
    CHECK_STR(o.reason, "explicit deny");
    CHECK_STR(o.sid, "D");
    /* same account: resource policy alone suffices */
    in.nidentity = 0;
    in.resource = (const fl_policy_t *[]){ NULL, res_mine };
    in.nresource = 2;
    fl_authz_decide(&in, &o);
    CHECK(o.allowed);
    CHECK_STR(o.where, "resource");
    /* resource deny beats identity allow */
    in.identity = (const fl_policy_t *[]){ allow_all };
    in.nidentity = 1;
    in.resource = (const fl_policy_t *[]){ res_deny };
    in.nresource = 1;
    fl_authz_decide(&in, &o);
    CHECK(!o.allowed);
    CHECK_STR(o.where, "resource");
    CHECK_STR(o.sid, "RD");
    /* session policy narrows the identity side */
    in.nresource = 0;
    in.session = deny_get;
    fl_authz_decide(&in, &o);
    CHECK(!o.allowed);
    in.session = allow_get;
    fl_authz_decide(&in, &o);
    CHECK(o.allowed);
    c.action = "s3tables:ListTables";
    fl_authz_decide(&in, &o);
    CHECK(!o.allowed);
    CHECK_STR(o.reason, "outside the session policy");
    in.session = NULL;
    c.action = "s3tables:GetTable";

    /* cross account: both sides needed */
    c.principal_account = OTHER;
    c.principal_arn = "arn:aws:iam::" OTHER ":user/eve";
    in.identity = (const fl_policy_t *[]){ allow_all };
    in.nidentity = 1;
    in.nresource = 0;
    fl_authz_decide(&in, &o);
    CHECK(!o.allowed);
    CHECK_STR(o.reason, "cross account: no resource allow");
    in.resource = (const fl_policy_t *[]){ res_other };
    in.nresource = 1;
    fl_authz_decide(&in, &o);
    CHECK(o.allowed);
    in.nidentity = 0;
    fl_authz_decide(&in, &o);
    CHECK(!o.allowed);
    CHECK_STR(o.reason, "cross account: no identity allow");
    /* another account's root has its own side, still needs the resource side */
    in.principal_is_root = true;
    fl_authz_decide(&in, &o);
    CHECK(o.allowed);
    in.nresource = 0;
    fl_authz_decide(&in, &o);
    CHECK(!o.allowed);
    /* never cross-account, whatever the policies say */
    in.resource = (const fl_policy_t *[]){ res_other };
    in.nresource = 1;
    in.identity = (const fl_policy_t *[]){ allow_all };
    in.nidentity = 1;
    c.action = "s3tables:GetTableBucketPolicy";
    fl_authz_decide(&in, &o);
    CHECK(!o.allowed);
    CHECK_STR(o.reason, "action not allowed across accounts");
    c.action = "oss:PutTableEncryption";
    fl_authz_decide(&in, &o);
    CHECK(!o.allowed);
    c.action = "s3tables:PutTableData";
    fl_authz_decide(&in, &o);
    CHECK(o.allowed);

    CHECK(fl_policy_action_same_account_only("s3tables:CreateTableBucket"));
    CHECK(fl_policy_action_same_account_only("oss:listtablebuckets"));
    CHECK(!fl_policy_action_same_account_only("s3tables:GetTableBucket"));
    CHECK(!fl_policy_action_same_account_only("s3:PutTablePolicy"));
    fl_policy_free(allow_get);
    fl_policy_free(allow_all);
    fl_policy_free(deny_get);
    fl_policy_free(res_other);
    fl_policy_free(res_mine);
    fl_policy_free(res_deny);
}
