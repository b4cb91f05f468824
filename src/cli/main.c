/* floe: one binary, several jobs. */
#include "cli/cli.h"
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    { "serve", fl_cmd_serve, "run the table-bucket service (S3 data plane, catalog)" },
    { "tables", fl_cmd_tables, "S3 Tables control-plane client (table buckets, namespaces, tables, ...)" },
    { "snapshots", fl_cmd_snapshots, "list an Iceberg table's snapshots through the REST catalog" },
    { "scan", fl_cmd_scan, "print an Iceberg table's rows (JSON lines or CSV)" },
    { "append", fl_cmd_append, "append JSON lines to an Iceberg table in one snapshot" },
    { "sink", fl_cmd_sink, "consume Kafka topics into Iceberg tables, exactly once (Iceberg sink config)" },
    { "maintenance", fl_cmd_maintenance, "run table maintenance jobs now (compaction, snapshot expiry)" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: floe <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n'floe <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "floe: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
