/* Unit-test runner: runs every registered test (or those whose name contains
 * argv[1]) and prints "N passed, N failed". */
#include "test.h"
#include <stdlib.h>
#include <unistd.h>

#define MAX_TESTS 2048
static struct { const char *name, *file; fl_test_fn fn; } tests[MAX_TESTS];
static int ntests;
static char tmproot[256];
static int ntmp;

void fl_test_register(const char *name, const char *file, fl_test_fn fn)
{
    if (ntests < MAX_TESTS) tests[ntests++] = (typeof(tests[0])){ name, file, fn };
}

const char *fl_test_tmpdir(void)
{
    static char path[320];
    if (!tmproot[0]) {
        snprintf(tmproot, sizeof tmproot, "/tmp/floe-unit-XXXXXX");
        if (!mkdtemp(tmproot)) { perror("mkdtemp"); exit(2); }
    }
    snprintf(path, sizeof path, "%s/%d", tmproot, ntmp++);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    if (system(cmd) != 0) exit(2);
    return path;
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < ntests; i++) {
        if (argc > 1 && !strstr(tests[i].name, argv[1])) continue;
        int f = 0;
        tests[i].fn(&f);
        if (f) {
            failed++;
            printf("FAIL %s (%s)\n", tests[i].name, tests[i].file);
        } else {
            passed++;
            if (getenv("FL_TEST_VERBOSE")) printf("ok   %s\n", tests[i].name);
        }
    }
    if (tmproot[0] && !getenv("FL_TEST_KEEP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmproot);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmproot);
    }
    printf("unit: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
