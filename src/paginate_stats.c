/*
 * paginate_stats.c - the bookmark gauge (see paginate_stats.h). Only the
 * deferred join exists so far and it keeps no bookmarks, so the gauge
 * reads 0 until the keyset strategy stores some.
 * Pure, any thread.
 */
#include "myrewrite/paginate_stats.h"

size_t mr_keyset_bookmarks(void)
{
    return 0;
}
