/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/counts.h - a deep page a paginate rule acted on, counted for
 * SHOW PAGINATION and /metrics: sent as a deferred join, or refused beyond
 * max_offset.
 */
#ifndef MYREWRITE_PAGINATE_COUNTS_H
#define MYREWRITE_PAGINATE_COUNTS_H

#include <stdbool.h>

#include "myrewrite/base/counters.h"
#include "myrewrite/stats/rule_stats.h"

/* One page on the worker's counters and the rule's (e: NULL for none). */
void mr_paginate_count_page(mr_stats *w, mr_rule_stats *e, bool refused);
/* An execute refused beyond max_offset (mr_page_guard.refused). */
void mr_paginate_count_refused(mr_stats *w, mr_rule_stats *e);

#endif
