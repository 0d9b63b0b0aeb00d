/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/keyset_note.h - what the keyset strategy of a paginate rule decided
 * for one statement (mr_match_result.keyset): the listing the page belongs
 * to and whether the session reads the page's last row for a bookmark
 * (paginate/keyset.h has the strategy itself).
 *
 * Pure data, any thread.
 */
#ifndef MYREWRITE_RULES_KEYSET_NOTE_H
#define MYREWRITE_RULES_KEYSET_NOTE_H

#include <stdbool.h>
#include <stdint.h>

struct mr_rule;

#define MR_KEYSET_MAX_COLS 8       /* ORDER BY columns plus appended key columns */
#define MR_KEYSET_NAME_MAX 64      /* MariaDB identifiers are at most 64 characters */
#define MR_KEYSET_VALUES_MAX 2048  /* a bookmark's literals, NUL-separated */
#define MR_KEYSET_PACKET_MAX 16384 /* larger column definitions or rows: no bookmark */

/* One column of the listing's order. */
typedef struct mr_keyset_col {
    char name[MR_KEYSET_NAME_MAX + 1]; /* the column (org_name in the result), unquoted */
    bool desc;
    uint32_t expr_first, expr_end; /* ORDER BY item tokens; SQL_NONE for an appended key */
} mr_keyset_col;

/* A listing, as the rules see it (pure data, copied into the session). */
typedef struct mr_keyset_listing {
    uint64_t hash;                      /* statement without LIMIT and comments, + schema, user */
    uint64_t table_hash;                /* mr_keyset_table_hash(table) */
    char table[MR_KEYSET_NAME_MAX + 1]; /* org_table the columns must come from */
    unsigned ncols;
    mr_keyset_col cols[MR_KEYSET_MAX_COLS];
    uint64_t offset; /* the page's LIMIT offset (0 when absent) */
} mr_keyset_listing;

/* What the keyset strategy did with one statement (mr_match_result.keyset). */
typedef enum mr_keyset_outcome {
    MR_KEYSET_NONE, /* not a keyset listing, or nothing decided */
    MR_KEYSET_HIT,  /* a seek was sent */
    MR_KEYSET_MISS, /* the page was deep enough but no bookmark was close enough */
} mr_keyset_outcome;

typedef struct mr_keyset_note {
    mr_keyset_outcome outcome;
    const struct mr_rule *rule; /* HIT or MISS: the paginate rule that decided it */
    bool watch;                 /* read the page's last row for a bookmark */
    uint64_t ttl_ms;            /* the rule's bookmark_ttl */
    uint64_t max_bookmarks;     /* the rule's max_bookmarks */
    uint64_t threshold;         /* the rule's threshold: a page above it is only ordered */
    bool keyset_only;           /* strategy = keyset: a miss is only ordered, no deferred join */
    mr_keyset_listing listing;
} mr_keyset_note;

#endif
