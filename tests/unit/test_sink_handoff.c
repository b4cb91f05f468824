/* floe sink taking a table over from the Kafka Connect Iceberg sink (src/sink/handoff.c):
 * control-topic events the Java sink 1.10.1 produced in tests/compat/sink_handoff.py (kept
 * as the fuzz seeds of tests/fuzz/corpus/handoff), decoded for their data files. */
#include "test.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sink/handoff.h"

#define SEEDS FL_SOURCE_DIR "/tests/fuzz/corpus/handoff"

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = malloc(1 << 20);
    *n = fread(b, 1, 1 << 20, f);
    fclose(f);
    return b;
}

static void free_files(fl_data_file_t *files, size_t n)
{
    for (size_t i = 0; i < n; i++) fl_data_file_free(&files[i]);
    free(files);
}

FL_TEST(sink_handoff_java_events)
{
    DIR *d = opendir(SEEDS);
    REQUIRE(d);
    struct dirent *de;
    int events = 0, written = 0, files_seen = 0;
    char err[512];
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", SEEDS, de->d_name);
        size_t n = 0;
        char *b = slurp(path, &n);
        REQUIRE(b);
        events++;
        fl_data_file_t *files = NULL;
        size_t nf = 0;
        bool matched = false;
        CHECK_EQ(fl_sink_handoff_event(fl_slice(b, n), "connect-handoff", "handoff.events", &matched, &files, &nf, err,
                                       sizeof err), FL_OK);
        if (matched) {
            written++;
            for (size_t i = 0; i < nf; i++) {
                CHECK(strstr(files[i].file_path, "/data/") && strstr(files[i].file_path, ".parquet"));
                CHECK_STR(files[i].file_format, "PARQUET");
                CHECK(files[i].record_count > 0 && files[i].file_size_in_bytes > 0);
                CHECK_EQ(files[i].n_partition, 0);
                files_seen++;
            }
            /* the same event for another group or another table: not ours */
            fl_data_file_t *other = NULL;
            size_t no = 0;
            bool m2 = true;
            CHECK_EQ(fl_sink_handoff_event(fl_slice(b, n), "connect-other", "handoff.events", &m2, &other, &no, err,
                                           sizeof err), FL_OK);
            CHECK(!m2 && !no);
            m2 = true;
            CHECK_EQ(fl_sink_handoff_event(fl_slice(b, n), "connect-handoff", "handoff.event", &m2, &other, &no, err,
                                           sizeof err), FL_OK);
            CHECK(!m2 && !no);
            free(other);
            /* cut anywhere: an error, never a file */
            for (size_t cut = 0; cut < n; cut += 7) {
                fl_data_file_t *part = NULL;
                size_t np = 0;
                bool m3 = false;
                CHECK(fl_sink_handoff_event(fl_slice(b, cut), "connect-handoff", "handoff.events", &m3, &part, &np, err,
                                            sizeof err) != FL_OK);
                free_files(part, np);
            }
        } else {
            CHECK_EQ(nf, 0);
        }
        free_files(files, nf);
        /* not an event at all */
        b[0] = 'x';
        bool m4 = false;
        fl_data_file_t *none = NULL;
        size_t nn = 0;
        CHECK_EQ(fl_sink_handoff_event(fl_slice(b, n), "connect-handoff", "handoff.events", &m4, &none, &nn, err,
                                       sizeof err), FL_ERR_INVALID);
        free(b);
    }
    closedir(d);
    CHECK(events >= 3);
    CHECK(written >= 1);
    CHECK(files_seen >= 1);
}

FL_TEST(sink_handoff_files_under_the_table)
{
    const char *loc = "s3://wh--table-s3/t";
    CHECK(fl_sink_handoff_under("s3://wh--table-s3/t/data/00000-0-a.parquet", loc));
    CHECK(fl_sink_handoff_under("s3://wh--table-s3/t/data/x.parquet", "s3://wh--table-s3/t/"));
    CHECK(fl_sink_handoff_under("s3://wh--table-s3/t/data/.hidden..parquet", loc));
    CHECK(!fl_sink_handoff_under("s3://wh--table-s3/t2/data/x.parquet", loc));      /* a sibling sharing the prefix */
    CHECK(!fl_sink_handoff_under("s3://wh--table-s3/t", loc));
    CHECK(!fl_sink_handoff_under("s3://other/t/data/x.parquet", loc));
    CHECK(!fl_sink_handoff_under("s3://wh--table-s3/t/../u/data/x.parquet", loc)); /* climbing out */
    CHECK(!fl_sink_handoff_under("s3://wh--table-s3/t/data/..", loc));
    CHECK(!fl_sink_handoff_under("s3://wh--table-s3/t/./data/x.parquet", loc));
    CHECK(!fl_sink_handoff_under("s3://wh--table-s3/t/data/x.parquet", ""));
}
