/* A tiny unit-test harness. Each test file defines tests with FL_TEST(name);
 * they register themselves at start-up and tests/unit/main.c runs them all,
 * closing with the line "N passed, N failed". */
#ifndef FL_TEST_H
#define FL_TEST_H
#include <stdio.h>
#include <string.h>
#include <stdint.h>

typedef void (*fl_test_fn)(int *failed);
void fl_test_register(const char *name, const char *file, fl_test_fn fn);

#define FL_TEST(name)                                                              \
    static void test_##name(int *fl_failed_);                                      \
    __attribute__((constructor)) static void reg_##name(void)                      \
    { fl_test_register(#name, __FILE__, test_##name); }                            \
    static void test_##name(int *fl_failed_)

#define FL_FAIL(...) do { fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);       \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); *fl_failed_ = 1; } while (0)
#define CHECK(c) do { if (!(c)) FL_FAIL("CHECK(%s)", #c); } while (0)
#define REQUIRE(c) do { if (!(c)) { FL_FAIL("REQUIRE(%s)", #c); return; } } while (0)
#define CHECK_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b);     \
    if (a_ != b_) FL_FAIL("%s == %s: %lld != %lld", #a, #b, a_, b_); } while (0)
#define CHECK_STR(a, b) do { const char *a_ = (a), *b_ = (b);                      \
    if (!a_ || !b_ || strcmp(a_, b_)) FL_FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b, \
    a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } while (0)
#define CHECK_MEM(a, b, n) do { if (memcmp((a), (b), (n))) FL_FAIL("memcmp(%s, %s)", #a, #b); } while (0)

/* A fresh empty temporary directory for a test; removed by the harness at exit. */
const char *fl_test_tmpdir(void);
#endif
