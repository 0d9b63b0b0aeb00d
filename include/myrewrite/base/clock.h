/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/clock.h - the few clock readings the proxy needs, in one place: monotonic
 * time for intervals and deadlines, wall-clock time for what operators read,
 * and absolute deadlines for pthread_cond_timedwait / pthread_timedjoin_np
 * (on the clock the condition variable was made with). Any thread.
 */
#ifndef MYREWRITE_CLOCK_H
#define MYREWRITE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mr_clock_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Monotonic nanoseconds and milliseconds: intervals, timeouts. */
static inline uint64_t mr_mono_ns(void) { return mr_clock_ns(CLOCK_MONOTONIC); }
static inline uint64_t mr_mono_ms(void) { return mr_mono_ns() / 1000000u; }

/* Milliseconds since the Unix epoch: times shown to operators. */
static inline uint64_t mr_unix_ms(void) { return mr_clock_ns(CLOCK_REALTIME) / 1000000u; }

/* The clock `clk` `ms` milliseconds from now, as a timespec deadline. */
static inline struct timespec mr_deadline_in(clockid_t clk, uint64_t ms)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

#endif
