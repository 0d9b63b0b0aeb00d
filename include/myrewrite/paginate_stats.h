/*
 * paginate_stats.h - state of paginate rules that is not a per-worker
 * counter: how many keyset bookmarks the proxy holds right now.
 *
 * Any thread; the value is a snapshot (it may change right after).
 */
#ifndef MYREWRITE_PAGINATE_STATS_H
#define MYREWRITE_PAGINATE_STATS_H

#include <stddef.h>

/* Keyset bookmarks held now over every paginate rule (0 while the keyset
 * strategy keeps none). */
size_t mr_keyset_bookmarks(void);

#endif
