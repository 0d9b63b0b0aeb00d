/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mr_pool_ps_client: many sessions' server-side prepared statements
 * through libmariadb's mysql_stmt_* API, interleaved so that with
 * pool = transaction each execute may land on a server connection that
 * never saw its prepare. Prints every answer (rows, affected rows,
 * errors) in a fixed order, so a run direct and one through the proxy
 * print the same lines (t_pool_ps.py compares them).
 *
 *   mr_pool_ps_client host port user password db table sessions rounds [hold]
 *
 * With `hold`, session 0 opens a cursor, reads one row, prints HOLD and
 * waits for a line on stdin (the test reads SHOW PINS then) while the
 * other sessions go on, then reads the rest.
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXS 64

typedef struct sess {
    MYSQL *db;
    MYSQL_STMT *calc, *ins, *scan;
    /* calc's parameters (bound once: later executes send no types) */
    long long n;
    char s[64];
    unsigned long s_len;
    double d;
    my_bool d_null;
    long long z;
    my_bool z_null;
    MYSQL_TIME day;
    /* ins's */
    int sess, k;
    char v[64];
    unsigned long v_len;
} sess;

static void stmt_err(const char *what, int i, MYSQL_STMT *st)
{
    printf("%s[%d] ERR %u %s\n", what, i, mysql_stmt_errno(st), mysql_stmt_error(st));
}

static MYSQL_STMT *prepare(MYSQL *db, const char *sql, int i)
{
    MYSQL_STMT *st = mysql_stmt_init(db);
    if (!st || mysql_stmt_prepare(st, sql, strlen(sql))) {
        printf("prepare[%d] ERR %u %s\n", i, st ? mysql_stmt_errno(st) : 0,
               st ? mysql_stmt_error(st) : "no memory");
        exit(2);
    }
    printf("prepare[%d] params %lu\n", i, mysql_stmt_param_count(st));
    return st;
}

/* Every row of st's result, each column as text. */
static void print_rows(const char *what, int i, MYSQL_STMT *st, int limit)
{
    unsigned ncol = mysql_stmt_field_count(st);
    MYSQL_BIND rb[8];
    char buf[8][128];
    unsigned long len[8];
    my_bool nul[8];
    memset(rb, 0, sizeof rb);
    for (unsigned c = 0; c < ncol && c < 8; c++) {
        rb[c].buffer_type = MYSQL_TYPE_STRING;
        rb[c].buffer = buf[c];
        rb[c].buffer_length = sizeof buf[c];
        rb[c].length = &len[c];
        rb[c].is_null = &nul[c];
    }
    if (mysql_stmt_bind_result(st, rb)) {
        stmt_err(what, i, st);
        return;
    }
    int rows = 0, r;
    while ((limit < 0 || rows < limit) && (r = mysql_stmt_fetch(st)) == 0) {
        printf("%s[%d] row", what, i);
        for (unsigned c = 0; c < ncol && c < 8; c++)
            printf(" %.*s", nul[c] ? 4 : (int)len[c], nul[c] ? "NULL" : buf[c]);
        printf("\n");
        rows++;
    }
    if (limit < 0 && r != MYSQL_NO_DATA)
        stmt_err(what, i, st);
}

/* Even sessions prepare the same texts (a pooled connection's statement
 * serves them all), odd ones texts of their own (prepared again on each
 * connection an execute lands on). */
static MYSQL_STMT *prepare_calc(MYSQL *db, int i)
{
    char sql[300];
    snprintf(sql, sizeof sql,
             "SELECT ? + 1 AS a, CONCAT(?, '-x') AS b, ? * 2 AS c, ? IS NULL AS d, "
             "DATE_ADD(?, INTERVAL 1 DAY) AS e, %d AS f",
             i % 2 ? i : 0);
    return prepare(db, sql, i);
}

static void bind_calc(sess *x, int i)
{
    MYSQL_BIND b[5];
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_LONGLONG;
    b[0].buffer = &x->n;
    b[1].buffer_type = MYSQL_TYPE_STRING;
    b[1].buffer = x->s;
    b[1].length = &x->s_len;
    b[2].buffer_type = MYSQL_TYPE_DOUBLE;
    b[2].buffer = &x->d;
    b[2].is_null = &x->d_null;
    b[3].buffer_type = MYSQL_TYPE_LONGLONG;
    b[3].buffer = &x->z;
    b[3].is_null = &x->z_null;
    b[4].buffer_type = MYSQL_TYPE_DATE;
    b[4].buffer = &x->day;
    if (mysql_stmt_bind_param(x->calc, b))
        stmt_err("bind", i, x->calc);
}

static void run_calc(sess *x, int i, int r)
{
    x->n = i * 100 + r;
    x->s_len = (unsigned long)snprintf(x->s, sizeof x->s, "s%d-r%d", i, r);
    x->d = i + r / 4.0;
    x->d_null = r % 3 == 2;
    x->z = r;
    x->z_null = r % 2;
    memset(&x->day, 0, sizeof x->day);
    x->day.year = 2026;
    x->day.month = 1 + (unsigned)(i % 12);
    x->day.day = 1 + (unsigned)r;
    x->day.time_type = MYSQL_TIMESTAMP_DATE;
    if (mysql_stmt_execute(x->calc)) {
        stmt_err("calc", i, x->calc);
        return;
    }
    print_rows("calc", i, x->calc, -1);
    mysql_stmt_free_result(x->calc);
}

static void run_ins(sess *x, int i, int r)
{
    MYSQL_BIND b[4];
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_LONG;
    b[0].buffer = &x->sess;
    b[1].buffer_type = MYSQL_TYPE_LONG;
    b[1].buffer = &x->k;
    b[2].buffer_type = MYSQL_TYPE_STRING;
    b[2].buffer = x->v;
    b[2].length = &x->v_len;
    b[3].buffer_type = MYSQL_TYPE_BLOB; /* its value comes as long data */
    if (r == 0 && mysql_stmt_bind_param(x->ins, b))
        stmt_err("bind", i, x->ins);
    x->sess = i;
    x->k = r;
    x->v_len = (unsigned long)snprintf(x->v, sizeof x->v, "v%d-%d", i, r);
    char piece[2000];
    int n = 0;
    for (int j = 0; j < 100; j++)
        n += snprintf(piece + n, sizeof piece - (size_t)n, "a%d.%d|", i, r);
    if (mysql_stmt_send_long_data(x->ins, 3, piece, (unsigned long)n) ||
        mysql_stmt_send_long_data(x->ins, 3, "-tail", 5)) {
        stmt_err("long", i, x->ins);
        return;
    }
    if (mysql_stmt_execute(x->ins)) {
        stmt_err("ins", i, x->ins);
        return;
    }
    printf("ins[%d] affected %llu\n", i, (unsigned long long)mysql_stmt_affected_rows(x->ins));
}

static void open_scan(sess *x, int i)
{
    unsigned long type = CURSOR_TYPE_READ_ONLY, prefetch = 1;
    MYSQL_BIND b[1];
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_LONG;
    b[0].buffer = &x->sess;
    x->sess = i;
    if (mysql_stmt_attr_set(x->scan, STMT_ATTR_CURSOR_TYPE, &type) ||
        mysql_stmt_attr_set(x->scan, STMT_ATTR_PREFETCH_ROWS, &prefetch) ||
        mysql_stmt_bind_param(x->scan, b) || mysql_stmt_execute(x->scan))
        stmt_err("scan", i, x->scan);
}

int main(int argc, char **argv)
{
    if (argc < 9) {
        fprintf(stderr, "usage: %s host port user password db table sessions rounds [hold]\n",
                argv[0]);
        return 2;
    }
    int nsess = atoi(argv[7]), rounds = atoi(argv[8]);
    int hold = argc > 9 && strcmp(argv[9], "hold") == 0;
    if (nsess < 1 || nsess > MAXS || rounds < 3)
        return 2;
    static sess ss[MAXS];
    char sql[300];
    for (int i = 0; i < nsess; i++) {
        sess *x = &ss[i];
        x->db = mysql_init(NULL);
        if (!mysql_real_connect(x->db, argv[1], argv[3], argv[4], argv[5], (unsigned)atoi(argv[2]),
                                NULL, 0)) {
            printf("connect[%d] ERR %u %s\n", i, mysql_errno(x->db), mysql_error(x->db));
            return 1;
        }
        x->calc = prepare_calc(x->db, i);
        snprintf(sql, sizeof sql, "INSERT INTO %s (sess, k, v, b) VALUES (?, ?, ?, ?) /* %d */",
                 argv[6], i % 2 ? i : 0);
        x->ins = prepare(x->db, sql, i);
        snprintf(sql, sizeof sql,
                 "SELECT k, v, LENGTH(b), MD5(b), %d FROM %s WHERE sess = ? ORDER BY k",
                 i % 2 ? i : 0, argv[6]);
        x->scan = prepare(x->db, sql, i);
        bind_calc(x, i);
    }
    for (int r = 0; r < rounds; r++) /* each session in turn: the pool lends any connection */
        for (int i = 0; i < nsess; i++) {
            run_calc(&ss[i], i, r);
            run_ins(&ss[i], i, r);
            if (r == 1 && mysql_stmt_reset(ss[i].calc))
                stmt_err("reset", i, ss[i].calc);
        }
    /* session 0's cursor stays open while the others work */
    open_scan(&ss[0], 0);
    print_rows("scan", 0, ss[0].scan, 1);
    if (hold) {
        printf("HOLD\n");
        fflush(stdout);
        char line[16];
        if (!fgets(line, sizeof line, stdin))
            return 1;
    }
    for (int i = 1; i < nsess; i++) {
        run_calc(&ss[i], i, rounds);
        open_scan(&ss[i], i);
        print_rows("scan", i, ss[i].scan, -1);
        mysql_stmt_free_result(ss[i].scan);
    }
    print_rows("scan", 0, ss[0].scan, -1);
    mysql_stmt_free_result(ss[0].scan);
    /* closed, prepared again (a new id), executed: the types bound anew */
    for (int i = 0; i < nsess; i++) {
        if (mysql_stmt_close(ss[i].calc))
            printf("close[%d] ERR\n", i);
        ss[i].calc = prepare_calc(ss[i].db, i);
        bind_calc(&ss[i], i);
    }
    for (int i = nsess - 1; i >= 0; i--)
        run_calc(&ss[i], i, rounds + 1);
    for (int i = 0; i < nsess; i++) {
        mysql_stmt_close(ss[i].calc);
        mysql_stmt_close(ss[i].ins);
        mysql_stmt_close(ss[i].scan);
        mysql_close(ss[i].db);
    }
    printf("END\n");
    return 0;
}
