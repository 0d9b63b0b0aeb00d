/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/flush_locked.c - one flush chunk for a main table that is not
 * transactional (MyISAM, Aria, MEMORY): seed 000's sequence, on the
 * flusher's own connection.
 *
 *   LOCK TABLES staging WRITE
 *   INSERT INTO snapshot SELECT * FROM staging ORDER BY seq LIMIT flush_rows
 *   DELETE FROM staging WHERE seq <= (the snapshot's largest seq)
 *   UNLOCK TABLES
 *   UPDATE LOW_PRIORITY main ... per key, with the sum of its snapshot rows
 *   DELETE FROM snapshot
 *
 * The snapshot is a TEMPORARY table of the connection (`<staging>_mrsnap`,
 * LIKE the staging table), so staging inserts wait only for the copy and
 * the delete, never for the update of the main table, and the update waits
 * (LOW_PRIORITY) for readers of the main table rather than the other way
 * round. There is no transaction around the main table, so this is not
 * exactly-once: rows deleted from staging exist only in the snapshot until
 * the update has run, and are lost if the proxy, its connection or mysqld
 * dies in between (the loss window, rules/README.md). An apply that fails
 * before it has written anything keeps its snapshot and is retried on the
 * next round; one that fails part way drops the snapshot (a retry would
 * apply the written part twice) and says how many staged rows that lost.
 * Each key is its own UPDATE (dflush_apply): with no transaction, a
 * statement over many keys that fails at one has written some of the
 * others, and a retry would apply those twice; a single-row statement is
 * written whole or not at all. The keys the server refuses go to the
 * dead-letter table (delayed/reject.h).
 *
 * Every step's result is checked, and a round stops at the first that
 * fails. A snapshot whose rows are still staged (the DELETE from staging
 * failed) or applied already is never applied: when emptying it fails it
 * is marked stale and emptied first thing in the next round. A failed
 * UNLOCK TABLES is sent again before anything else, since staging inserts
 * wait for it. A reload first settles each old rule's snapshot with the old
 * rule's settings (dflush_locked_settle), so a rule reloaded away, or given
 * another staging table, leaves nothing in it.
 *
 * Flusher thread only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delayed/flush/flush_impl.h"
#include "myrewrite/base/log.h"
#include "myrewrite/net/bgconn.h"

static bool run_sql(MYSQL *db, const table *t, const char *what, const char *head, const char *name,
                    const char *tail)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, head);
    if (name)
        dflush_put_table(&b, t->def.schema, name);
    mr_buf_put_str(&b, tail);
    bool ok = dflush_exec(db, &b, t, what);
    mr_buf_free(&b);
    return ok;
}

/* The snapshot table: the staging table's columns, on this connection only. */
static bool make_snapshot(MYSQL *db, table *t)
{
    if (t->tmp_ready)
        return true;
    snprintf(t->tmp_name, sizeof t->tmp_name, "%.56s_mrsnap", t->def.staging_table);
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "CREATE TEMPORARY TABLE IF NOT EXISTS ");
    dflush_put_table(&b, t->def.schema, t->tmp_name);
    mr_buf_put_str(&b, " LIKE ");
    dflush_put_table(&b, t->def.schema, t->def.staging_table);
    t->tmp_ready = dflush_exec(db, &b, t, "creating the flush snapshot");
    mr_buf_free(&b);
    return t->tmp_ready;
}

/* Rows in the snapshot: left by an apply that failed before writing. */
static long snapshot_rows(MYSQL *db, const table *t)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "SELECT COUNT(*) FROM ");
    dflush_put_table(&b, t->def.schema, t->tmp_name);
    MYSQL_RES *res =
        dflush_exec(db, &b, t, "counting the flush snapshot") ? mysql_store_result(db) : NULL;
    mr_buf_free(&b);
    MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
    long n = row && row[0] ? atol(row[0]) : -1;
    mysql_free_result(res);
    return n;
}

/* Under LOCK TABLES staging WRITE: copy the oldest rows, delete them. */
static bool take_rows(MYSQL *db, const table *t)
{
    char tail[160];
    snprintf(tail, sizeof tail, " ORDER BY `seq` LIMIT %" PRIu64, t->def.flush_rows);
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "INSERT INTO ");
    dflush_put_table(&b, t->def.schema, t->tmp_name);
    mr_buf_put_str(&b, " SELECT * FROM ");
    dflush_put_table(&b, t->def.schema, t->def.staging_table);
    mr_buf_put_str(&b, tail);
    bool ok = dflush_exec(db, &b, t, "snapshotting staged rows");
    mr_buf_reset(&b);
    /* the snapshot holds the flush_rows smallest seqs, so every staged row
     * up to its largest seq is in it (inserts wait for the lock) */
    mr_buf_put_str(&b, "DELETE FROM ");
    dflush_put_table(&b, t->def.schema, t->def.staging_table);
    mr_buf_put_str(&b, " WHERE `seq` <= (SELECT COALESCE(MAX(`seq`), 0) FROM ");
    dflush_put_table(&b, t->def.schema, t->tmp_name);
    mr_buf_put_str(&b, ")");
    ok = ok && dflush_exec(db, &b, t, "deleting snapshotted staged rows");
    mr_buf_free(&b);
    return ok;
}

/* Empties the snapshot. When that fails on a live connection the
 * snapshot is stale: no round applies it before it has been emptied. */
static bool empty_snapshot(MYSQL *db, table *t)
{
    bool ok = run_sql(db, t, "emptying the flush snapshot", "DELETE FROM ", t->tmp_name, "");
    t->snap_stale = !ok && !mr_bg_conn_broken(db);
    if (t->snap_stale)
        mr_error(0,
                 "delayed %s: the flush snapshot %s.%s could not be emptied; it is never "
                 "applied, and the next round empties it before anything else",
                 t->rule, t->def.schema, t->tmp_name);
    return ok;
}

/* UNLOCK TABLES, once more at once if it fails (staging inserts wait for
 * it); still failing, it is owed and sent first in the next round. */
static bool unlock_tables(MYSQL *db, table *t)
{
    bool ok = false;
    for (int i = 0; i < 2 && !ok && !mr_bg_conn_broken(db); i++)
        ok = run_sql(db, t, "UNLOCK TABLES", "UNLOCK TABLES", NULL, "");
    t->unlock_owed = !ok && !mr_bg_conn_broken(db); /* a broken one released the locks */
    if (t->unlock_owed)
        mr_error(0,
                 "delayed %s: UNLOCK TABLES failed twice; staging inserts into %s.%s wait "
                 "until the next round unlocks",
                 t->rule, t->def.schema, t->def.staging_table);
    return ok;
}

/* Applies the snapshot and empties it; see the top of the file for failures. */
static long apply_snapshot(MYSQL *db, table *t)
{
    uint64_t written = 0;
    long rejected = 0;
    t->read_from = t->tmp_name;
    long n = dflush_apply(db, t, &written, &rejected);
    t->read_from = NULL;
    if (n < 0 && !written && !mr_bg_conn_broken(db)) {
        mr_warn(0,
                "delayed %s: applying a snapshot of staged rows failed before writing; "
                "it is retried on the next round",
                t->rule);
        return -1;
    }
    if (n < 0) {
        bool gone = mr_bg_conn_broken(db);
        long lost = gone ? -1 : snapshot_rows(db, t);
        char count[32] = "up to flush_rows";
        if (lost >= 0)
            snprintf(count, sizeof count, "%ld", lost);
        mr_error(0,
                 "delayed %s: the update of %s.%s (not transactional) failed %s; %s staged "
                 "rows taken for it are lost",
                 t->rule, t->def.schema, t->def.table, gone ? "with its connection" : "part way",
                 count);
        dflush_count_error(t, "the update from the flush snapshot", 0, "rows lost");
        if (gone) {
            t->tmp_ready = false; /* the server dropped the temporary table with it */
            return -1;
        }
    }
    /* applied (whole or part way): emptied, or stale, never applied again */
    if (!empty_snapshot(db, t) || n < 0)
        return -1;
    dflush_count_chunk(t, n - rejected);
    return n;
}

/* What the previous round left: an owed UNLOCK TABLES, a stale snapshot.
 * False when the round must stop here. */
static bool settle_previous(MYSQL *db, table *t)
{
    if (t->unlock_owed && !unlock_tables(db, t))
        return false;
    return !t->snap_stale || empty_snapshot(db, t);
}

long dflush_locked_chunk(MYSQL *db, table *t)
{
    if (!settle_previous(db, t) || !make_snapshot(db, t))
        return -1;
    long left = snapshot_rows(db, t);
    if (left < 0)
        return -1;
    if (left > 0) /* a retry: the staged rows were deleted already */
        return apply_snapshot(db, t);
    if (!run_sql(db, t, "LOCK TABLES", "LOCK TABLES ", t->def.staging_table, " WRITE"))
        return -1;
    bool took = take_rows(db, t);
    bool unlocked = unlock_tables(db, t);
    if (!took) {
        /* what the copy took is still staged: the snapshot must go, unapplied */
        if (!mr_bg_conn_broken(db))
            (void)empty_snapshot(db, t);
        return -1;
    }
    if (!unlocked && !mr_bg_conn_broken(db))
        return -1; /* the snapshot is kept (its rows left staging) for after the UNLOCK */
    return apply_snapshot(db, t); /* with the connection gone: logs what was lost */
}

bool dflush_locked_settle(MYSQL *db, table *t)
{
    if (!t->locked || !t->tmp_ready || mr_bg_conn_broken(db))
        return true;
    if (!settle_previous(db, t))
        return false;
    long left = snapshot_rows(db, t);
    if (left > 0 && apply_snapshot(db, t) < 0)
        return false;
    return left >= 0;
}
