/* Table-bucket and table ARNs: formatting in this server's scope, parsing
 * either partition form, and resolving only what this server owns. */
#include "auth/arn.h"
#include <stdio.h>
#include <string.h>

void fl_arn_bucket_of(const fl_arn_scope_t *s, const char *account, const char *name, char *out)
{
    if (snprintf(out, FL_ARN_MAX, s->aws ? "arn:aws:s3tables:%s:%s:bucket/%s" : "acs:osstables:%s:%s:bucket/%s",
                 s->region, account, name) >= FL_ARN_MAX)
        out[0] = 0;
}

void fl_arn_bucket(const fl_arn_scope_t *s, const char *name, char *out)
{
    fl_arn_bucket_of(s, s->account, name, out);
}

void fl_arn_table(const fl_arn_scope_t *s, const char *bucket, const char *id, char *out)
{
    char b[FL_ARN_MAX];
    fl_arn_bucket(s, bucket, b);
    if (!b[0] || snprintf(out, FL_ARN_MAX, "%s/table/%s", b, id) >= FL_ARN_MAX) out[0] = 0;
}

bool fl_arn_parse(const char *arn, char *bucket_out, char *table_id_out)
{
    static const char *const heads[] = { "acs:osstables:", "acs:osstable:", NULL };
    const char *p = NULL;
    for (int i = 0; heads[i] && !p; i++)
        if (!strncmp(arn, heads[i], strlen(heads[i]))) p = arn + strlen(heads[i]);
    if (!p && !strncmp(arn, "arn:aws", 7)) {
        const char *q = arn + 7;
        while (*q && *q != ':' && (*q == '-' || (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9'))) q++;
        if (!strncmp(q, ":s3tables:", 10)) p = q + 10;
    }
    if (!p) return false;
    /* region:account:bucket/NAME[/table/ID] */
    const char *c1 = strchr(p, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || !c2 || strncmp(c2 + 1, "bucket/", 7) != 0) return false;
    for (const char *q = c1 + 1; q < c2; q++)
        if (*q < '0' || *q > '9') return false;
    const char *name = c2 + 8;
    size_t n = strcspn(name, "/");
    if (n < 1 || n > 63) return false;
    memcpy(bucket_out, name, n);
    bucket_out[n] = 0;
    const char *rest = name + n;
    if (table_id_out) table_id_out[0] = 0;
    if (!*rest) return true;
    if (!table_id_out || strncmp(rest, "/table/", 7) != 0) return false;
    size_t tl = strlen(rest + 7);
    if (tl < 1 || tl > 39 || strchr(rest + 7, '/')) return false;
    memcpy(table_id_out, rest + 7, tl + 1);
    return true;
}

fl_arn_match_t fl_arn_resolve(const fl_arn_scope_t *s, const char *arn, char *bucket_out,
                              char *table_id_out)
{
    if (!arn || !fl_arn_parse(arn, bucket_out, table_id_out)) return FL_ARN_MALFORMED;
    /* fl_arn_parse checked the shape: {head}{region}:{account}:bucket/... */
    const char *p = strchr(arn, ':');
    p = p ? strchr(p + 1, ':') : NULL;   /* after the service */
    if (p && !strncmp(arn, "arn:", 4)) p = strchr(p + 1, ':'); /* arn:PARTITION:s3tables: */
    if (!p) return FL_ARN_MALFORMED;
    const char *region = p + 1, *c1 = strchr(region, ':');
    const char *account = c1 ? c1 + 1 : NULL, *c2 = account ? strchr(account, ':') : NULL;
    if (!c2) return FL_ARN_MALFORMED;
    if (!s->any_account &&
        (strlen(s->account) != (size_t)(c2 - account) || strncmp(account, s->account, (size_t)(c2 - account))))
        return FL_ARN_OTHER_ACCOUNT;
    if (strlen(s->region) != (size_t)(c1 - region) || strncmp(region, s->region, (size_t)(c1 - region)))
        return FL_ARN_OTHER_REGION;
    return FL_ARN_OURS;
}

bool fl_arn_in_account(const char *arn, const char *account)
{
    char b[64], id[40];
    if (!arn || !account || !fl_arn_parse(arn, b, id)) return false;
    /* {head}{region}:{account}:bucket/...: the account is the segment before "bucket/" */
    const char *bk = strstr(arn, ":bucket/");
    if (!bk) return false;
    const char *a = bk;
    while (a > arn && a[-1] != ':') a--;
    size_t n = (size_t)(bk - a);
    return n == strlen(account) && !strncmp(a, account, n);
}
