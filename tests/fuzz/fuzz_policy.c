/* Fuzz target: the policy parser and evaluator. Input: byte 0 picks the
 * policy kind (identity, resource, trust) and the request context's variant;
 * the rest is the policy document. A document either parses or is refused with
 * a message; a parsed one is evaluated against a few requests and the decision
 * function. Never a crash or a leak; the answers are free. */
#include "auth/policy.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned flags = data[0];
    char err[256];
    fl_policy_t *p = fl_policy_parse((const char *)data + 1, size - 1, (fl_policy_kind_t)(flags % 3), err, sizeof err);
    if (!p) {
        if (!memchr(err, 0, sizeof err) || !err[0]) abort(); /* a refusal always says why */
        return 0;
    }
    static const char *const actions[] = { "s3tables:GetTable", "oss:PutTableData", "s3:GetObject",
                                           "sts:AssumeRole", "iam:CreateUser", "x" };
    static const char *const resources[] = { "arn:aws:s3tables:us-east-1:111122223333:bucket/b/table/t",
                                             "acs:osstables:cn-hangzhou:1:bucket/b", "*", "" };
    fl_policy_ctx_t c = {
        .principal_arn = (flags & 8) ? "arn:aws:iam::111122223333:user/u" : "arn:aws:iam::444455556666:role/r",
        .principal_account = (flags & 8) ? "111122223333" : "444455556666",
        .username = (flags & 16) ? "u" : NULL,
        .source_ip = (flags & 32) ? "2001:db8::1" : "10.0.0.1",
        .now_ms = (flags & 64) ? 0 : 1735689600000LL,
        .secure_transport = flags & 128,
        .ns = (flags & 4) ? "ns" : NULL,
        .table_name = (flags & 4) ? "t" : NULL,
    };
    for (size_t a = 0; a < sizeof actions / sizeof actions[0]; a++)
        for (size_t r = 0; r < sizeof resources / sizeof resources[0]; r++) {
            c.action = actions[a];
            c.resource = resources[r];
            const char *sid = NULL;
            fl_policy_effect_t e = fl_policy_eval(p, &c, &sid);
            if (e != FL_POLICY_NONE && !sid) abort();
            const fl_policy_t *one[] = { p };
            fl_authz_in_t in = { .ctx = &c, .resource_account = "111122223333",
                                 .identity = (flags % 3) == 0 ? one : NULL, .nidentity = (flags % 3) == 0,
                                 .resource = (flags % 3) ? one : NULL, .nresource = (flags % 3) != 0 };
            fl_authz_out_t o;
            fl_authz_decide(&in, &o);
            if (!o.reason || !o.sid || !o.where) abort();
        }
    fl_policy_free(p);
    return 0;
}
