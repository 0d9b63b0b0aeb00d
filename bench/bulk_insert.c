/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/bulk_insert.c - one bulk insert by array binding (MariaDB's
 * COM_STMT_BULK_EXECUTE): ROWS rows of (INT, VARCHAR) in a single
 * mysql_stmt_execute with STMT_ATTR_ARRAY_SIZE, timed from the execute to
 * its OK. Run by bench/bulk_insert.sh against mariadbd and the proxy.
 *
 *   bulk_insert HOST PORT USER PASSWORD DB ROWS ROUNDS
 *
 * Prints one line per round: "ms=<milliseconds> affected=<rows>". The table
 * (bulk_bench_<port>) is emptied before each round.
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int die(MYSQL *m, MYSQL_STMT *s, const char *what)
{
    fprintf(stderr, "bulk_insert: %s: %s\n", what, s ? mysql_stmt_error(s) : mysql_error(m));
    return 1;
}

/* One round: empty the table, then the whole array in one execute. */
static int round_once(MYSQL *m, MYSQL_STMT *s, const char *table)
{
    char sql[128];
    snprintf(sql, sizeof sql, "TRUNCATE TABLE %s", table);
    if (mysql_query(m, sql))
        return die(m, NULL, "truncate");
    double t0 = now_ms();
    if (mysql_stmt_execute(s))
        return die(m, s, "bulk execute");
    printf("ms=%.1f affected=%llu\n", now_ms() - t0, mysql_stmt_affected_rows(s));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fputs("usage: bulk_insert HOST PORT USER PASSWORD DB ROWS ROUNDS\n", stderr);
        return 2;
    }
    unsigned port = (unsigned)atoi(argv[2]), rows = (unsigned)atoi(argv[6]);
    int rounds = atoi(argv[7]);
    MYSQL *m = mysql_init(NULL);
    if (!mysql_real_connect(m, argv[1], argv[3], argv[4], argv[5], port, NULL, 0))
        return die(m, NULL, "connect");
    char table[64], sql[256];
    snprintf(table, sizeof table, "bulk_bench_%u", port);
    snprintf(sql, sizeof sql, "CREATE OR REPLACE TABLE %s (id INT PRIMARY KEY, v VARCHAR(32))",
             table);
    if (mysql_query(m, sql))
        return die(m, NULL, "create");
    int *ids = malloc(rows * sizeof *ids);
    char(*text)[24] = malloc(rows * sizeof *text);
    char **ptrs = malloc(rows * sizeof *ptrs);
    char *ind = malloc(rows);
    if (!ids || !text || !ptrs || !ind)
        return die(m, NULL, "out of memory");
    for (unsigned i = 0; i < rows; i++) {
        ids[i] = (int)i + 1;
        snprintf(text[i], sizeof text[i], "row-%u", i + 1);
        ptrs[i] = text[i];
        ind[i] = STMT_INDICATOR_NTS;
    }
    snprintf(sql, sizeof sql, "INSERT INTO %s VALUES (?, ?)", table);
    MYSQL_STMT *s = mysql_stmt_init(m);
    MYSQL_BIND b[2];
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_LONG;
    b[0].buffer = ids;
    b[1].buffer_type = MYSQL_TYPE_STRING;
    b[1].buffer = ptrs;
    b[1].u.indicator = ind;
    if (mysql_stmt_prepare(s, sql, (unsigned long)strlen(sql)) ||
        mysql_stmt_attr_set(s, STMT_ATTR_ARRAY_SIZE, &rows) || mysql_stmt_bind_param(s, b))
        return die(m, s, "prepare");
    for (int r = 0; r < rounds; r++)
        if (round_once(m, s, table))
            return 1;
    snprintf(sql, sizeof sql, "DROP TABLE %s", table);
    mysql_query(m, sql);
    mysql_stmt_close(s);
    mysql_close(m);
    return 0;
}
