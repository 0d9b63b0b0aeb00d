/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/log.c - queued logging (see base/log.h).
 * Any thread formats; the "log" thread owns stderr writes once started.
 * Every line's text goes through mr_log_escape before it is queued, so
 * nothing a line quotes (a table name, a statement, a user name, a
 * server's message) can end it early or start a forged one.
 */
#include "myrewrite/base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 4096
#define LINE_MAX_LEN 1024

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    char lines[SLOTS][LINE_MAX_LEN]; /* ring; guarded by lock */
    unsigned head, count;            /* guarded by lock */
    unsigned long dropped;           /* guarded by lock */
    bool running, stopping;          /* guarded by lock */
    pthread_t thread;
} q = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static _Atomic int min_level = MR_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

bool mr_log_level_parse(const char *s, mr_log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (mr_log_level)i;
            return true;
        }
    }
    return false;
}

void mr_log_set_level(mr_log_level level) { atomic_store(&min_level, (int)level); }

bool mr_log_enabled(mr_log_level level) { return (int)level >= atomic_load(&min_level); }

static void write_all(const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0)
            return; /* nowhere to report a failing stderr */
        s += w;
        n -= (size_t)w;
    }
}

static void *writer(void *arg)
{
    (void)arg;
    char line[LINE_MAX_LEN];
    pthread_mutex_lock(&q.lock);
    for (;;) {
        while (q.count == 0 && !q.stopping)
            pthread_cond_wait(&q.wake, &q.lock);
        if (q.count == 0)
            break;
        memcpy(line, q.lines[q.head], LINE_MAX_LEN);
        q.head = (q.head + 1) % SLOTS;
        /* Emptied: the next line goes to slot 0 again, so only as many
         * slots as the longest backlog ever become resident, not the whole
         * ring as lines pass through it (which read as RSS growth). */
        if (--q.count == 0)
            q.head = 0;
        pthread_mutex_unlock(&q.lock);
        write_all(line, strlen(line));
        pthread_mutex_lock(&q.lock);
    }
    pthread_mutex_unlock(&q.lock);
    return NULL;
}

void mr_log_start(void)
{
    pthread_mutex_lock(&q.lock);
    if (!q.running && pthread_create(&q.thread, NULL, writer, NULL) == 0)
        q.running = true;
    pthread_mutex_unlock(&q.lock);
}

void mr_log_stop(void)
{
    pthread_mutex_lock(&q.lock);
    bool was_running = q.running;
    q.stopping = true;
    pthread_cond_signal(&q.wake);
    pthread_mutex_unlock(&q.lock);
    if (was_running)
        pthread_join(q.thread, NULL);
    pthread_mutex_lock(&q.lock);
    q.running = false;
    q.stopping = false;
    pthread_mutex_unlock(&q.lock);
}

static size_t format_prefix(char *buf, size_t cap, mr_log_level level, uint64_t conn_id)
{
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    int n = snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (long)(tv.tv_usec / 1000), level_names[level]);
    if (conn_id && n > 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, "c%llu ", (unsigned long long)conn_id);
    return n > 0 && (size_t)n < cap ? (size_t)n : cap - 1;
}

static void enqueue(const char *line)
{
    pthread_mutex_lock(&q.lock);
    if (!q.running) {
        pthread_mutex_unlock(&q.lock);
        write_all(line, strlen(line));
        return;
    }
    if (q.count == SLOTS) {
        q.dropped++;
    } else {
        char *slot = q.lines[(q.head + q.count) % SLOTS];
        if (q.dropped)
            snprintf(slot, LINE_MAX_LEN, "(%lu log lines dropped) %s", q.dropped, line);
        else
            memcpy(slot, line, strlen(line) + 1);
        q.dropped = 0;
        q.count++;
        pthread_cond_signal(&q.wake);
    }
    pthread_mutex_unlock(&q.lock);
}

/* The length of the well-formed UTF-8 sequence at p (n bytes left) that
 * is not a C0 or C1 control character, or 0. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    if (c >= 0x20 && c < 0x7f)
        return 1;
    size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4
                                          : 0;
    if (!len || len > n)
        return 0;
    unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    if (p[1] < lo || p[1] > hi || (c == 0xc2 && p[1] <= 0x9f)) /* C2 80..9F: C1 controls */
        return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return len;
}

size_t mr_log_escape(char *out, size_t cap, const char *in, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0;
    if (!cap)
        return 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_len(p + i, n - i);
        if (len) { /* whole, or not at all: never half a character */
            if (o + len >= cap)
                break;
            memcpy(out + o, p + i, len);
            o += len;
            i += len;
            continue;
        }
        if (o + 4 >= cap)
            break;
        out[o++] = '\\';
        out[o++] = 'x';
        out[o++] = hex[p[i] >> 4];
        out[o++] = hex[p[i] & 15];
        i++;
    }
    out[o] = '\0';
    return o;
}

void mr_log(mr_log_level level, uint64_t conn_id, const char *fmt, ...)
{
    if (!mr_log_enabled(level))
        return;
    char line[LINE_MAX_LEN - 64]; /* room for the "lines dropped" note */
    char text[sizeof line];
    size_t n = format_prefix(line, sizeof(line), level, conn_id);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    size_t tn = m < 0 ? 0 : (size_t)m < sizeof text ? (size_t)m : sizeof text - 1;
    n += mr_log_escape(line + n, sizeof(line) - n - 1, text, tn);
    line[n++] = '\n';
    line[n] = '\0';
    enqueue(line);
}
