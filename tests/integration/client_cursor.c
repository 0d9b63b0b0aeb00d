/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Server-side cursors: COM_STMT_EXECUTE with CURSOR_TYPE_READ_ONLY, then
 * COM_STMT_FETCH in batches of STMT_ATTR_PREFETCH_ROWS, including two
 * cursors and plain queries interleaved on one connection; and statements
 * that return result sets while a cursor of their own is open (a FOR loop
 * over a SELECT, a procedure, an sql_mode=ORACLE block): the server flags
 * those result sets CURSOR_EXISTS, yet sends their rows.
 */
#include "client_common.h"

#include <stdio.h>
#include <string.h>

#define CURSOR_ROWS 1000

static MYSQL_STMT *open_cursor(struct ctx *c, MYSQL *m, const char *sql, unsigned long prefetch)
{
    MYSQL_STMT *s = stmt_prepare(c, m, sql);
    unsigned long type = CURSOR_TYPE_READ_ONLY;
    if (!s)
        return NULL;
    if (mysql_stmt_attr_set(s, STMT_ATTR_CURSOR_TYPE, &type) ||
        mysql_stmt_attr_set(s, STMT_ATTR_PREFETCH_ROWS, &prefetch) || mysql_stmt_execute(s)) {
        fail_st(c, s, "cursor execute");
        mysql_stmt_close(s);
        return NULL;
    }
    if (!(m->server_status & SERVER_STATUS_CURSOR_EXISTS)) {
        fail(c, "execute did not report SERVER_STATUS_CURSOR_EXISTS (status 0x%x)",
             m->server_status);
        mysql_stmt_close(s);
        return NULL;
    }
    return s;
}

/* Fetches up to max rows (0: all) and checks ids run first, first+step, ... */
static int fetch_ids(struct ctx *c, struct stmt_rows *r, long long *next, int step,
                     unsigned long max, unsigned long *got)
{
    int st = 1;
    *got = 0;
    while ((max == 0 || *got < max) && (st = sr_fetch(c, r, &c->dg)) == 1) {
        if (r->v[0].v.ll != *next)
            return fail(c, "cursor returned id %lld, expected %lld", r->v[0].v.ll, *next);
        *next += step;
        (*got)++;
    }
    return st < 0 ? -1 : 0;
}

static int chk_cursor(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    MYSQL_STMT *s = m ? open_cursor(c, m, "SELECT id, v, d, n FROM mct_rows ORDER BY id", 7) : NULL;
    struct stmt_rows r = {0};
    long long next = 1;
    unsigned long got = 0;
    int rc = s ? sr_init(c, &r, s) : -1;
    if (rc == 0)
        dg_fields(&c->dg, r.f, r.n);
    rc = rc ? rc : fetch_ids(c, &r, &next, 1, 0, &got);
    if (rc == 0 && got != CURSOR_ROWS)
        rc = fail(c, "cursor delivered %lu rows, expected %d", got, CURSOR_ROWS);
    sr_free(&r);
    if (s)
        mysql_stmt_close(s);
    sb_printf(&c->dg, "rows=%lu;", got);
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    if (m)
        mysql_close(m);
    return rc;
}

/* Re-execution and COM_STMT_RESET close an open cursor half way through. */
static int chk_cursor_reexecute(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    MYSQL_STMT *s = m ? open_cursor(c, m, "SELECT id, v FROM mct_rows ORDER BY id", 7) : NULL;
    int rc = s ? dg_stmt_rows(c, s, 10) : -1;
    if (rc == 0 && mysql_stmt_execute(s))
        rc = fail_st(c, s, "re-execute with open cursor");
    rc = rc ? rc : dg_stmt_rows(c, s, 20);
    if (rc == 0 && mysql_stmt_reset(s))
        rc = fail_st(c, s, "reset with open cursor");
    if (rc == 0 && (mysql_stmt_execute(s) || mysql_stmt_store_result(s)))
        rc = fail_st(c, s, "execute + store_result over cursor");
    if (rc == 0 && mysql_stmt_num_rows(s) != CURSOR_ROWS)
        rc = fail(c, "store_result over cursor gave %llu rows", mysql_stmt_num_rows(s));
    rc = rc ? rc : dg_stmt_rows(c, s, 0);
    if (s)
        mysql_stmt_close(s);
    if (m)
        mysql_close(m);
    return rc;
}

struct walker {
    MYSQL_STMT *s;
    struct stmt_rows r;
    long long next;
    int step;
    unsigned long total;
    int done;
};

static int walker_step(struct ctx *c, struct walker *w, unsigned long n, const char *tag)
{
    unsigned long got = 0;
    sb_printf(&c->dg, "%s:", tag);
    if (fetch_ids(c, &w->r, &w->next, w->step, n, &got))
        return -1;
    w->total += got;
    w->done = got < n;
    return 0;
}

static int walk_interleaved(struct ctx *c, MYSQL *m, struct walker *a, struct walker *b)
{
    int rc = 0;
    for (int round = 0; rc == 0 && !(a->done && b->done); round++) {
        if (!a->done)
            rc = walker_step(c, a, 13, "A");
        if (rc == 0 && !b->done)
            rc = walker_step(c, b, 5, "B");
        /* A plain query between COM_STMT_FETCHes of open cursors. */
        if (rc == 0 && round % 10 == 0)
            rc = q_exec(c, m, "SELECT COUNT(*) FROM mct_rows");
    }
    if (rc == 0 && (a->total != CURSOR_ROWS || b->total != CURSOR_ROWS / 2))
        rc = fail(c, "interleaved cursors delivered %lu and %lu rows", a->total, b->total);
    return rc;
}

static int chk_two_cursors(struct ctx *c)
{
    struct walker a = {.next = 1, .step = 1};
    struct walker b = {.next = CURSOR_ROWS / 2, .step = -1};
    MYSQL *m = db_open(c, NULL);
    a.s = m ? open_cursor(c, m, "SELECT id, v FROM mct_rows ORDER BY id", 7) : NULL;
    b.s = a.s ? open_cursor(c, m,
                            "SELECT id, d, n FROM mct_rows WHERE id <= 500"
                            " ORDER BY id DESC",
                            3)
              : NULL;
    int rc = b.s ? sr_init(c, &a.r, a.s) : -1;
    rc = rc ? rc : sr_init(c, &b.r, b.s);
    rc = rc ? rc : walk_interleaved(c, m, &a, &b);
    sr_free(&a.r);
    sr_free(&b.r);
    if (b.s)
        mysql_stmt_close(b.s);
    if (a.s)
        mysql_stmt_close(a.s);
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    if (m)
        mysql_close(m);
    return rc;
}

/* Result sets from inside a statement with an open cursor of its own. */
static const char *const k_blocks[] = {
    "BEGIN NOT ATOMIC FOR r IN (SELECT id FROM mct_rows WHERE id <= 3 ORDER BY id) DO"
    " SELECT r.id, 'loop' AS w; END FOR; END",
    "CALL mct_open_cursor()",
    "DECLARE CURSOR c IS SELECT id FROM mct_rows WHERE id = 5; v INT; BEGIN OPEN c;"
    " FETCH c INTO v; SELECT v, 'oracle' AS w FROM DUAL; CLOSE c; END",
};
#define BLOCK_ROUNDS 40

static int run_block(struct ctx *c, MYSQL *m, const char *sql, unsigned long type)
{
    MYSQL_STMT *s = stmt_prepare(c, m, sql);
    int rc = s ? 0 : -1;
    if (rc == 0 && mysql_stmt_attr_set(s, STMT_ATTR_CURSOR_TYPE, &type))
        rc = fail_st(c, s, "set cursor type");
    for (int i = 0; rc == 0 && i < BLOCK_ROUNDS; i++) {
        if (mysql_stmt_execute(s))
            rc = fail_st(c, s, "execute compound statement");
        else if (i == 0 || i == BLOCK_ROUNDS - 1)
            rc = dg_stmt_results(c, m, s);
        else
            while (mysql_stmt_next_result(s) == 0)
                ;                                /* the middle rounds only have to end */
        rc = rc ? rc : q_exec(c, m, "SELECT 1"); /* nothing left over before it */
    }
    if (s)
        mysql_stmt_close(s);
    return rc;
}

/* Without a cursor asked for: with one, libmariadb takes the flag for an
 * opened cursor and fails direct as well ("Commands out of sync"). */
static int chk_blocks_with_open_cursor(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    int rc = m ? 0 : -1;
    for (size_t b = 0; rc == 0 && b < sizeof k_blocks / sizeof k_blocks[0]; b++) {
        if (b == 2)
            rc = q_exec(c, m, "SET sql_mode = ORACLE");
        rc = rc ? rc : run_block(c, m, k_blocks[b], CURSOR_TYPE_NO_CURSOR);
        rc = rc ? rc : q_exec(c, m, "SET sql_mode = DEFAULT");
    }
    if (m)
        mysql_close(m);
    return rc;
}

void run_cursor_checks(void)
{
    check_compare("ps_cursor_prefetch_7_1000_rows", chk_cursor);
    check_compare("ps_cursor_reexecute_and_reset", chk_cursor_reexecute);
    check_compare("ps_two_cursors_interleaved", chk_two_cursors);
    check_compare("ps_blocks_with_open_cursor", chk_blocks_with_open_cursor);
}
