/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/log.h - leveled log lines on stderr: time, level, connection id, text.
 *
 * Any thread may log. Lines are formatted by the caller and queued; a
 * background thread writes them, so a slow stderr never stalls a worker.
 * When the queue is full, lines are dropped and the drop is counted and
 * reported with the next line that gets through.
 */
#ifndef MYREWRITE_LOG_H
#define MYREWRITE_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum mr_log_level {
    MR_LOG_DEBUG,
    MR_LOG_INFO,
    MR_LOG_WARN,
    MR_LOG_ERROR,
} mr_log_level;

/* Parses "debug", "info", "warn", "error"; false when unknown. */
bool mr_log_level_parse(const char *s, mr_log_level *out);
void mr_log_set_level(mr_log_level min);
bool mr_log_enabled(mr_log_level level);

/* Starts the writer thread; before this, lines are written directly. */
void mr_log_start(void);
/* Writes what is queued and stops the writer thread. */
void mr_log_stop(void);

/* The one escaping rule for what the log prints, applied by mr_log to the
 * text of every line: a byte below 0x20, 0x7f, a C1 control character
 * (U+0080 to U+009F) and every byte that is not part of well-formed UTF-8
 * become `\xHH` (lower-case hex, per byte); all else is copied. Writes at
 * most cap - 1 bytes and a NUL into out (never half a character or half an
 * escape); returns the bytes written before the NUL. */
size_t mr_log_escape(char *out, size_t cap, const char *in, size_t n);

/* conn_id 0 means "not about a connection". Its text goes through
 * mr_log_escape, so a line quoting names, SQL or user names stays one line. */
void mr_log(mr_log_level level, uint64_t conn_id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define mr_debug(conn, ...)                                                                        \
    do {                                                                                           \
        if (mr_log_enabled(MR_LOG_DEBUG))                                                          \
            mr_log(MR_LOG_DEBUG, conn, __VA_ARGS__);                                               \
    } while (0)
#define mr_info(conn, ...) mr_log(MR_LOG_INFO, conn, __VA_ARGS__)
#define mr_warn(conn, ...) mr_log(MR_LOG_WARN, conn, __VA_ARGS__)
#define mr_error(conn, ...) mr_log(MR_LOG_ERROR, conn, __VA_ARGS__)

#endif
