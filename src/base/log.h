/* Logging to stderr, one line per call, with a level filter. Secrets are never
 * passed to these functions. Thread-safe. */
#ifndef FL_BASE_LOG_H
#define FL_BASE_LOG_H

enum { FL_LOG_DEBUG = 0, FL_LOG_INFO = 1, FL_LOG_WARN = 2, FL_LOG_ERROR = 3 };

extern int fl_log_level;
void fl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define fl_debug(...) do { if (fl_log_level <= FL_LOG_DEBUG) fl_log(FL_LOG_DEBUG, __VA_ARGS__); } while (0)
#define fl_info(...)  fl_log(FL_LOG_INFO, __VA_ARGS__)
#define fl_warn(...)  fl_log(FL_LOG_WARN, __VA_ARGS__)
#define fl_error(...) fl_log(FL_LOG_ERROR, __VA_ARGS__)

#endif
