/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_delayed_group.c - the multi-row INSERT of a group-commit batch
 * (delayed/group_sql.h), from staging INSERTs the statement side built out
 * of real UPDATE/DELETE DELAYED statements (delayed/staging_sql.h, with
 * their rows as data): joined per column list, in order, an INSERT without
 * a prefix or rows refused, too many column lists refused; the add rows of
 * one key merged, their deltas summed, and every row that is not a plain
 * add (or would overflow) kept as it was. A property test checks on random
 * batches that the merged INSERTs give every key the same sums as the
 * statements sent one by one.
 */
#include "test_rules.h"

#include "myrewrite/delayed/group_sql.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/sql/stmt.h"

static const char RULES[] = "[delayed counters]\n"
                            "table = test.counters\n"
                            "key = id\n"
                            "columns = hits, misses\n"
                            "[delayed pairs]\n"
                            "table = test.pairs\n"
                            "key = a, b\n"
                            "columns = n\n"
                            "[delayed pages]\n"
                            "table = test.pages\n"
                            "key = id\n"
                            "columns = hits\n"
                            "set_columns = title\n"
                            "[delayed daily]\n"
                            "table = test.daily\n"
                            "key = page_id\n"
                            "columns = views\n"
                            "bucket_column = day\n";

#define CNT "INSERT INTO `test`.`counters_delayed` "
#define MAX_TOK 256
#define MAX_STAGED 64

static mr_ruleset *rs;

/* A staging INSERT built from one statement, as a batch member holds it. */
typedef struct built {
    mr_buf text;
    mr_dstage_rows rows;
    mr_dstage st;
} built;

static built B[MAX_STAGED];
static mr_dstage T[MAX_STAGED];

static int setup(void **state)
{
    (void)state;
    rs = load_ok(RULES);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < MAX_STAGED; i++) {
        mr_buf_free(&B[i].text);
        mr_buf_free(&B[i].rows.rows);
        mr_buf_free(&B[i].rows.d);
    }
    mr_ruleset_free(rs);
    return 0;
}

static const mr_delayed_def *rule_for(const char *table)
{
    for (size_t i = 0; i < mr_ruleset_count(rs); i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        if (r->kind == MR_RULE_DELAYED && strcmp(r->delayed->table, table) == 0)
            return r->delayed;
    }
    fail_msg("no rule for %s", table);
    return NULL;
}

/* T[i] from the statement sql on table `table`'s rule. */
static void stage(size_t i, const char *table, const char *sql)
{
    static sql_token tok[MAX_TOK];
    static sql_stmt st;
    static mr_delayed_stmt d;
    size_t ntok;
    char err[512];
    assert_int_equal(sql_lex(sql, strlen(sql), 0, tok, MAX_TOK, &ntok), SQL_OK);
    sql_stmt_parse(sql, tok, ntok, &st);
    if (!mr_delayed_parse(sql, tok, &st, &d, err, sizeof err))
        fail_msg("%s: %s", sql, err);
    built *b = &B[i];
    mr_buf_reset(&b->text);
    if (!mr_delayed_build(sql, tok, st.end, &d, rule_for(table), false, &b->text, &b->rows, err,
                          sizeof err))
        fail_msg("%s: %s", sql, err);
    T[i] = mr_dstage_of((const char *)b->text.data, b->text.len, &b->rows);
}

static void assert_buf(const mr_buf *b, const char *want)
{
    if (b->len != strlen(want) || memcmp(b->data, want, b->len) != 0)
        fail_msg("got  %.*s\nwant %s", (int)b->len, (const char *)b->data, want);
}

static void bufs_init(mr_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mr_buf_init(&b[i]);
}

static void bufs_free(mr_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mr_buf_free(&b[i]);
}

/* The data the statement side hands over: prefix, rows, tails, deltas. */
static void stage_as_data(void **state)
{
    (void)state;
    stage(0, "counters",
          "UPDATE DELAYED counters SET hits = hits + 2, misses = misses - 3 WHERE "
          "id IN (7, 'a''b')");
    const mr_dstage *s = &T[0];
    assert_int_equal(s->prefix_len, strlen(CNT "(`hits`, `misses`, `id`, `op`) VALUES "));
    assert_int_equal(s->ndelta, 2);
    assert_int_equal(s->nrows, 2);
    assert_memory_equal(s->text + s->rows[1].off, "(2, -3, 'a''b', 0)", s->rows[1].len);
    assert_memory_equal(s->text + s->rows[1].tail, "'a''b', 0)", 10);
    assert_int_equal(s->d[2], 2);
    assert_int_equal(s->d[3], -3);
    stage(1, "counters", "DELETE DELAYED FROM counters WHERE id = 1");
    assert_int_equal(T[1].ndelta, 0);
    stage(2, "pages", "UPDATE DELAYED pages SET hits = hits + 1, title = 'x' WHERE id = 1");
    assert_int_equal(T[2].ndelta, 0);
    stage(3, "daily", "UPDATE DELAYED daily SET views = views + 1 WHERE page_id = 1");
    assert_int_equal(T[3].ndelta, 0); /* the bucket is the server's clock's */
    stage(5, "counters",
          "UPDATE DELAYED counters SET hits = hits + 1000000000000000000 WHERE id = 1");
    assert_int_equal(T[5].ndelta, 0); /* 19 digits */
}

static void one_prefix(void **state)
{
    (void)state;
    stage(0, "counters", "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1");
    stage(1, "counters", "UPDATE DELAYED counters SET hits = hits + 7 WHERE id IN (2, 3)");
    stage(2, "counters", "DELETE DELAYED FROM counters WHERE id = 'a''b'");
    mr_buf out[MR_DGROUP_MAX_STMTS];
    bufs_init(out, MR_DGROUP_MAX_STMTS);
    assert_int_equal(mr_dgroup_build(T, 2, out, MR_DGROUP_MAX_STMTS, NULL), 1);
    assert_buf(&out[0], CNT "(`hits`, `id`, `op`) VALUES (1, 1, 0), (7, 2, 0), (7, 3, 0)");
    assert_int_equal(mr_dgroup_build(T, 1, out, MR_DGROUP_MAX_STMTS, NULL), 1);
    assert_buf(&out[0], CNT "(`hits`, `id`, `op`) VALUES (1, 1, 0)"); /* reset first */
    assert_int_equal(mr_dgroup_build(T + 2, 1, out, MR_DGROUP_MAX_STMTS, NULL), 1);
    assert_buf(&out[0], CNT "(`id`, `op`) VALUES ('a''b', 1)");
    bufs_free(out, MR_DGROUP_MAX_STMTS);
}

static void prefixes_in_order(void **state)
{
    (void)state;
    stage(0, "counters", "UPDATE DELAYED counters SET misses = misses + 1 WHERE id = 5");
    stage(1, "counters", "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1");
    stage(2, "counters", "UPDATE DELAYED counters SET misses = misses + 2 WHERE id = 6");
    stage(3, "counters", "UPDATE DELAYED counters SET hits = hits + 2 WHERE id = 2");
    mr_buf out[MR_DGROUP_MAX_STMTS];
    bufs_init(out, MR_DGROUP_MAX_STMTS);
    assert_int_equal(mr_dgroup_build(T, 4, out, MR_DGROUP_MAX_STMTS, NULL), 2);
    assert_buf(&out[0], CNT "(`misses`, `id`, `op`) VALUES (1, 5, 0), (2, 6, 0)");
    assert_buf(&out[1], CNT "(`hits`, `id`, `op`) VALUES (1, 1, 0), (2, 2, 0)");
    assert_int_equal(mr_dgroup_build(T, 4, out, 1, NULL), 0); /* two column lists, room for one */
    bufs_free(out, MR_DGROUP_MAX_STMTS);
}

/* An INSERT without a prefix or without rows is not one to join. */
static void not_staging(void **state)
{
    (void)state;
    stage(0, "counters", "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1");
    stage(1, "counters", "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 2");
    mr_buf out[2];
    bufs_init(out, 2);
    mr_dstage keep = T[1];
    T[1].prefix_len = 0;
    assert_int_equal(mr_dgroup_build(T, 2, out, 2, NULL), 0);
    T[1] = keep;
    T[1].nrows = 0;
    assert_int_equal(mr_dgroup_build(T, 2, out, 2, NULL), 0);
    T[1] = keep;
    T[1].prefix_len = T[1].len;
    assert_int_equal(mr_dgroup_build(T, 2, out, 2, NULL), 0);
    T[1] = keep;
    assert_int_equal(mr_dgroup_build(T, 2, out, 2, NULL), 1);
    bufs_free(out, 2);
}

/* Add rows of one key become the key's first row with the sums; keys stay
 * in first-seen order; an IN list's rows merge like any others. */
static void merged_adds(void **state)
{
    (void)state;
    stage(0, "counters", "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 5");
    stage(1, "counters", "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 5");
    stage(2, "counters", "UPDATE DELAYED counters SET hits = hits - 3 WHERE id = 5");
    stage(3, "counters", "UPDATE DELAYED counters SET hits = hits + 2 WHERE id IN (7, 9)");
    stage(4, "counters", "UPDATE DELAYED counters SET hits = hits + 10 WHERE id = 5");
    stage(5, "counters", "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 7");
    mr_buf out[2];
    bufs_init(out, 2);
    size_t merged = 0;
    assert_int_equal(mr_dgroup_build(T, 6, out, 2, &merged), 1);
    assert_int_equal(merged, 4);
    assert_buf(&out[0], CNT "(`hits`, `id`, `op`) VALUES (9, 5, 0), (3, 7, 0), (2, 9, 0)");
    bufs_free(out, 2);
}

/* Two deltas, string keys and a two-column key: merged per whole key,
 * compared byte for byte ('a' and 'A' stay apart, and so do 'a''b' and
 * 'a\'b', written differently), escapes merged with their like. */
static void merged_keys(void **state)
{
    (void)state;
    stage(0, "pairs", "UPDATE DELAYED pairs SET n = n + 1 WHERE a = 'a' AND b = 1");
    stage(1, "pairs", "UPDATE DELAYED pairs SET n = n + 2 WHERE a = 'A' AND b = 1");
    stage(2, "pairs", "UPDATE DELAYED pairs SET n = n + 3 WHERE a = 'a' AND b = 2");
    stage(3, "pairs", "UPDATE DELAYED pairs SET n = n + 4 WHERE a = 'a' AND b = 1");
    stage(4, "pairs", "UPDATE DELAYED pairs SET n = n + 5 WHERE a = 'a''b' AND b = 1");
    stage(5, "pairs", "UPDATE DELAYED pairs SET n = n + 6 WHERE a = 'a\\'b' AND b = 1");
    stage(6, "pairs", "UPDATE DELAYED pairs SET n = n + 7 WHERE a = 'a\\'b' AND b = 1");
    mr_buf out[1];
    bufs_init(out, 1);
    size_t merged = 0;
    assert_int_equal(mr_dgroup_build(T, 7, out, 1, &merged), 1);
    assert_int_equal(merged, 2);
    assert_buf(&out[0], "INSERT INTO `test`.`pairs_delayed` (`n`, `a`, `b`, `op`) VALUES "
                        "(5, 'a', 1, 0), (2, 'A', 1, 0), (3, 'a', 2, 0), (5, 'a''b', 1, 0), "
                        "(13, 'a\\'b', 1, 0)");
    bufs_free(out, 1);
}

/* What is not a plain add row is copied as it was and merges with
 * nothing: a delete, a number of 19 digits; a sum
 * past the BIGINT range keeps the row apart. */
static void kept_apart(void **state)
{
    (void)state;
    const char *u = "UPDATE DELAYED counters SET hits = hits + ";
    char sql[MAX_STAGED][160];
    static const char *const tails[] = {
        "1 WHERE id = 5",
        "1000000000000000000 WHERE id = 5",
        "999999999999999999 WHERE id = 6",
        "999999999999999999 WHERE id = 6",
        "999999999999999999 WHERE id = 6",
        "999999999999999999 WHERE id = 6",
        "999999999999999999 WHERE id = 6",
        "999999999999999999 WHERE id = 6",
        "999999999999999999 WHERE id = 6",
        "999999999999999999 WHERE id = 6",
        "999999999999999999 WHERE id = 6",
        "999999999999999999 WHERE id = 6",
        "2 WHERE id = 5",
    };
    size_t n = sizeof tails / sizeof tails[0];
    for (size_t i = 0; i < n; i++) {
        snprintf(sql[i], sizeof sql[i], "%s%s", u, tails[i]);
        stage(i, "counters", sql[i]);
    }
    stage(n, "counters", "DELETE DELAYED FROM counters WHERE id = 5");
    mr_buf out[2];
    bufs_init(out, 2);
    size_t merged = 0;
    assert_int_equal(mr_dgroup_build(T, n + 1, out, 2, &merged), 2);
    assert_int_equal(merged, 9);
    assert_buf(&out[0], CNT "(`hits`, `id`, `op`) VALUES (3, 5, 0), "
                            "(1000000000000000000, 5, 0), (8999999999999999991, 6, 0), "
                            "(999999999999999999, 6, 0)");
    assert_buf(&out[1], CNT "(`id`, `op`) VALUES (5, 1)");
    bufs_free(out, 2);
}

/* ---- property: merged and one by one give the same sums ------------------------- */

static uint32_t rnd(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* A key's sums over the rows of the INSERTs read back. */
typedef struct keysum {
    char key[64];
    __int128 d[2];
    bool del;
} keysum;

static keysum *key_of(keysum *ks, size_t *n, const char *k, size_t len)
{
    for (size_t i = 0; i < *n; i++)
        if (strlen(ks[i].key) == len && memcmp(ks[i].key, k, len) == 0)
            return &ks[i];
    assert_true(*n < 64 && len < sizeof ks[0].key);
    keysum *x = &ks[(*n)++];
    memset(x, 0, sizeof *x);
    memcpy(x->key, k, len);
    return x;
}

/* Adds the rows of INSERT b (`(d1, [d2,] key, op)`) to ks: the test reads
 * the text back to check what the server would be sent. */
static void sum_insert(const mr_buf *b, keysum *ks, size_t *nk)
{
    static sql_token tok[4096];
    size_t ntok, i = 0;
    const char *s = (const char *)b->data;
    assert_int_equal(sql_lex(s, b->len, 0, tok, 4096, &ntok), SQL_OK);
    while (i < ntok && !sql_tok_is_word(&tok[i], s, "VALUES"))
        i++;
    /* b holds no NUL: search within its length */
    unsigned nd =
        (memmem(s, b->len, "`hits`", 6) != NULL) + (memmem(s, b->len, "`misses`", 8) != NULL);
    for (i++; i < ntok; i++) {
        if (tok[i].kind != SQL_TOK_LPAREN)
            continue;
        __int128 d[2] = {0, 0};
        for (unsigned j = 0; j < nd; j++) {
            bool minus = tok[++i].kind == SQL_TOK_OP;
            i += minus;
            d[j] = (__int128)strtoll(s + tok[i].off, NULL, 10) * (minus ? -1 : 1);
            i++; /* the comma */
        }
        size_t kfrom = tok[i + 1].off, kto = tok[i + 1].off + tok[i + 1].len;
        i += 2; /* the key, its comma */
        keysum *x = key_of(ks, nk, s + kfrom, kto - kfrom);
        bool del = s[tok[i + 1].off] == '1';
        i += 2;
        if (del) {
            x->del = true;
            x->d[0] = x->d[1] = 0;
        }
        x->d[0] += d[0];
        x->d[1] += d[1];
    }
}

static void same_sums(void **state)
{
    (void)state;
    static const char *const keys[] = {"1", "2", "'a'", "'a''b'", "'a\\'b'", "'\\\\'"};
    static const char *const deltas[] = {
        "1", "2", "7", "999999999999999999", "0", "1000000000000000000"};
    uint32_t seed = 42;
    mr_buf out[MR_DGROUP_MAX_STMTS], one[MR_DGROUP_MAX_STMTS];
    bufs_init(out, MR_DGROUP_MAX_STMTS);
    bufs_init(one, MR_DGROUP_MAX_STMTS);
    for (int iter = 0; iter < 300; iter++) {
        size_t n = 1 + rnd(&seed) % 40;
        for (size_t i = 0; i < n; i++) {
            char sql[200];
            uint32_t r = rnd(&seed);
            const char *k1 = keys[r % 6], *k2 = keys[(r >> 3) % 6];
            if (r % 3 == 0)
                snprintf(sql, sizeof sql,
                         "UPDATE DELAYED counters SET hits = hits + %s, misses = misses - %s "
                         "WHERE id IN (%s, %s)",
                         deltas[(r >> 6) % 5], deltas[(r >> 9) % 6], k1, k2);
            else
                snprintf(sql, sizeof sql,
                         "UPDATE DELAYED counters SET hits = hits %c %s WHERE id = %s",
                         (r >> 12) & 1 ? '-' : '+', deltas[(r >> 6) % 6], k1);
            stage(i, "counters", sql);
        }
        keysum merged[64], alone[64];
        size_t nm = 0, na = 0, gone = 0;
        size_t k = mr_dgroup_build(T, n, out, MR_DGROUP_MAX_STMTS, &gone);
        assert_true(k > 0);
        for (size_t j = 0; j < k; j++)
            sum_insert(&out[j], merged, &nm);
        for (size_t i = 0; i < n; i++) { /* each statement as sent without a batch */
            mr_buf_reset(&one[0]);
            mr_buf_put(&one[0], T[i].text, T[i].len);
            sum_insert(&one[0], alone, &na);
        }
        assert_int_equal(nm, na);
        for (size_t i = 0; i < na; i++) {
            keysum *x = key_of(merged, &nm, alone[i].key, strlen(alone[i].key));
            assert_true(x->d[0] == alone[i].d[0] && x->d[1] == alone[i].d[1]);
        }
    }
    bufs_free(out, MR_DGROUP_MAX_STMTS);
    bufs_free(one, MR_DGROUP_MAX_STMTS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stage_as_data),     cmocka_unit_test(one_prefix),
        cmocka_unit_test(prefixes_in_order), cmocka_unit_test(not_staging),
        cmocka_unit_test(merged_adds),       cmocka_unit_test(merged_keys),
        cmocka_unit_test(kept_apart),        cmocka_unit_test(same_sums),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
