/* Subcommands of the floe binary. Each returns the process exit code. */
#ifndef FL_CLI_CLI_H
#define FL_CLI_CLI_H
int fl_cmd_serve(int argc, char **argv);
int fl_cmd_tables(int argc, char **argv);
int fl_cmd_snapshots(int argc, char **argv);
int fl_cmd_scan(int argc, char **argv);
int fl_cmd_append(int argc, char **argv);
int fl_cmd_maintenance(int argc, char **argv);
int fl_cmd_sink(int argc, char **argv);
#endif
