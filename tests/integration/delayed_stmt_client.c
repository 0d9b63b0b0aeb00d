/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed_stmt_client.c - prepared UPDATE DELAYED through libmariadb's own
 * statement API, for t_delayed_memory.py: what a real driver does with the
 * proxy's stand-in (parameter and field counts, affected rows), for
 * mysql_stmt_execute and for MariaDB's mariadb_stmt_execute_direct.
 *
 * Usage: delayed_stmt_client HOST PORT USER PASSWORD DB
 * Runs `UPDATE DELAYED m_counters SET hits = hits + ? WHERE id = ?` 100
 * times on ids 57..59 (values 1..100) and once directly (1000 on id 57),
 * checks every affected-rows count, and prints "params=P fields=F sum=S"
 * with S the sum of the values it sent; exit 0 when every call succeeded.
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SQL[] = "UPDATE DELAYED m_counters SET hits = hits + ? WHERE id = ?";

static int fail(const char *what, MYSQL_STMT *st)
{
    printf("%s: %s\n", what, mysql_stmt_error(st));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 6)
        return 2;
    MYSQL *db = mysql_init(NULL);
    if (!mysql_real_connect(db, argv[1], argv[3], argv[4], argv[5], (unsigned)atoi(argv[2]), NULL,
                            0)) {
        printf("connect: %s\n", mysql_error(db));
        return 1;
    }
    long long v = 0, id = 0, sum = 0;
    MYSQL_BIND b[2];
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_LONGLONG;
    b[0].buffer = &v;
    b[1].buffer_type = MYSQL_TYPE_LONGLONG;
    b[1].buffer = &id;
    MYSQL_STMT *st = mysql_stmt_init(db);
    if (mysql_stmt_prepare(st, SQL, sizeof SQL - 1))
        return fail("prepare", st);
    unsigned long params = mysql_stmt_param_count(st);
    unsigned fields = mysql_stmt_field_count(st);
    if (mysql_stmt_bind_param(st, b))
        return fail("bind", st);
    for (int i = 1; i <= 100; i++) {
        v = i;
        id = 57 + i % 3;
        sum += v;
        if (mysql_stmt_execute(st))
            return fail("execute", st);
        if (mysql_stmt_affected_rows(st) != 1)
            return fail("affected rows", st);
    }
    mysql_stmt_close(st);
    st = mysql_stmt_init(db);
    unsigned int n = 2;
    v = 1000;
    id = 57;
    sum += v;
    mysql_stmt_attr_set(st, STMT_ATTR_PREBIND_PARAMS, &n);
    if (mysql_stmt_bind_param(st, b) || mariadb_stmt_execute_direct(st, SQL, sizeof SQL - 1))
        return fail("execute direct", st);
    if (mysql_stmt_affected_rows(st) != 1)
        return fail("affected rows (direct)", st);
    mysql_stmt_close(st);
    mysql_close(db);
    printf("params=%lu fields=%u sum=%lld\n", params, fields, sum);
    return 0;
}
