/* Replays fuzz corpora through a fuzz target without libFuzzer: every file
 * named on the command line (directories are walked one level) is fed to
 * LLVMFuzzerTestOneInput. A crash or sanitizer report fails the run. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return 1; }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) return 1;
    /* Give the target an exact-size heap copy so ASan catches overreads. */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) { perror(argv[i]); bad++; continue; }
        if (!S_ISDIR(st.st_mode)) { bad += run_file(argv[i]); files++; continue; }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            bad += run_file(p);
            files++;
        }
        if (d) closedir(d);
    }
    printf("replayed %d inputs\n", files);
    return bad ? 1 : 0;
}
