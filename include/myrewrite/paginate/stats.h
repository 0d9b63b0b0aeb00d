/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/stats.h - gauges of deep pagination for SHOW PAGINATION and
 * /metrics (the per-worker counters are in base/counters.h). Any thread.
 */
#ifndef MYREWRITE_PAGINATE_STATS_H
#define MYREWRITE_PAGINATE_STATS_H

#include <stddef.h>

/* Keyset bookmarks held now, all listings together (paginate/bookmarks.c). */
size_t mr_keyset_bookmarks(void);

#endif
