/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_paginate_keyset.c - keyset pagination without a server: listings
 * (what makes two pages the same listing), the seek text for ASC, DESC,
 * mixed and composite orders, the fallbacks (miss, refusal, shapes keyset
 * does not take), SQL literals from hostile text values, and the watch
 * turning hand-made column definitions and rows into a bookmark.
 */
#include "test_rules.h"

#include "myrewrite/paginate/bookmarks.h"
#include "myrewrite/paginate/keyset.h"
#include "myrewrite/proto/tracker.h"

static const char RULES[] = "[paginate items]\n"
                            "table = items\n"
                            "key = id\n"
                            "threshold = 100\n"
                            "strategy = keyset\n"
                            "[paginate pairs]\n"
                            "table = pairs\n"
                            "key = a, b\n"
                            "threshold = 100\n"
                            "strategy = auto\n";

static const mr_stmt_ctx CTX = {.schema = "shop", .bookmarks = &mr_bookmarks_store};
static mr_ruleset *rs;
static mr_rules_scratch *scratch;
static mr_match_result res;

static int setup(void **state)
{
    (void)state;
    rs = load_ok(RULES);
    scratch = mr_rules_scratch_new();
    res = result_new();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    result_free(&res);
    mr_rules_scratch_free(scratch);
    mr_ruleset_free(rs);
    return 0;
}

static int reset(void **state)
{
    (void)state;
    mr_bookmarks_clear();
    return 0;
}

/* Applies the rules; returns the text that would be sent (static buffer). */
static const char *run(const char *sql, const mr_stmt_ctx *ctx)
{
    static char out[2048];
    apply_ctx(rs, sql, ctx ? ctx : &CTX, scratch, &res);
    char *t = sent_text(&res, sql);
    snprintf(out, sizeof out, "%s", t);
    free(t);
    return out;
}

/* A bookmark for the listing of `sql` at `pos` with NUL-separated values. */
static void bookmark(const char *sql, uint64_t pos, const char *values, size_t len)
{
    run(sql, NULL);
    assert_true(res.keyset.watch);
    const mr_keyset_listing *ls = &res.keyset.listing;
    mr_bookmarks_put(ls->hash, ls->table_hash, mr_bookmarks_gen(ls->table_hash), pos, values, len,
                     60000, 1000, mr_bookmarks_now_ms());
}

static void listings(void **state)
{
    (void)state;
    run("SELECT * FROM items WHERE grp = 3 ORDER BY id LIMIT 20", NULL);
    assert_true(res.keyset.watch);
    uint64_t h = res.keyset.listing.hash;
    assert_int_equal(res.keyset.listing.offset, 0);
    assert_int_equal(res.keyset.listing.ncols, 1);
    assert_string_equal(res.keyset.listing.cols[0].name, "id");
    assert_string_equal(res.keyset.listing.table, "items");
    run("SELECT * FROM items WHERE grp = 3 ORDER BY id LIMIT 40, 20", NULL);
    assert_int_equal(res.keyset.listing.hash, h);
    assert_int_equal(res.keyset.listing.offset, 40);
    run("SELECT * /* page 3 */ FROM items WHERE grp = 3 ORDER BY id LIMIT 20 OFFSET 60", NULL);
    assert_int_equal(res.keyset.listing.hash, h);
    assert_int_equal(res.keyset.listing.offset, 60);
    run("SELECT * FROM items WHERE grp = 4 ORDER BY id LIMIT 40, 20", NULL);
    assert_true(res.keyset.listing.hash != h);
    static const mr_stmt_ctx other = {.schema = "other", .bookmarks = &mr_bookmarks_store};
    run("SELECT * FROM items WHERE grp = 3 ORDER BY id LIMIT 40, 20", &other);
    assert_true(res.keyset.listing.hash != h);
    /* another account: another listing (its names and rows may differ) */
    static const mr_stmt_ctx alice = {
        .user = "alice", .schema = "shop", .bookmarks = &mr_bookmarks_store};
    static const mr_stmt_ctx bob = {
        .user = "bob", .schema = "shop", .bookmarks = &mr_bookmarks_store};
    run("SELECT * FROM items WHERE grp = 3 ORDER BY id LIMIT 40, 20", &alice);
    uint64_t ha = res.keyset.listing.hash;
    assert_true(ha != h);
    run("SELECT * FROM items WHERE grp = 3 ORDER BY id LIMIT 60, 20", &alice);
    assert_true(res.keyset.listing.hash == ha);
    run("SELECT * FROM items WHERE grp = 3 ORDER BY id LIMIT 40, 20", &bob);
    assert_true(res.keyset.listing.hash != ha && res.keyset.listing.hash != h);
    /* no store (a session that may have temporary tables): no listing, no watch */
    static const mr_stmt_ctx none = {.schema = "shop"};
    run("SELECT * FROM items WHERE grp = 3 ORDER BY id LIMIT 40, 20", &none);
    assert_false(res.keyset.watch);
    /* several statements: no watch (their results cannot be told apart) */
    run("SELECT * FROM items ORDER BY id LIMIT 20; SELECT 1", NULL);
    assert_false(res.keyset.watch);
    /* not a keyset listing */
    run("SELECT * FROM items ORDER BY id + 1 LIMIT 20", NULL);
    assert_false(res.keyset.watch);
    run("SELECT * FROM items ORDER BY id", NULL);
    assert_false(res.keyset.watch);
    static const mr_stmt_ctx prep = {
        .schema = "shop", .prepared = true, .bookmarks = &mr_bookmarks_store};
    run("SELECT * FROM items ORDER BY id LIMIT 20", &prep);
    assert_false(res.keyset.watch);
}

static void shallow_pages(void **state)
{
    (void)state;
    const char *sql = "SELECT * FROM items ORDER BY id LIMIT 40, 20";
    assert_string_equal(run(sql, NULL), sql);
    assert_int_equal(res.keyset.outcome, MR_KEYSET_NONE);
    /* the key makes the order total on shallow pages too */
    assert_string_equal(run("SELECT * FROM items i ORDER BY score DESC LIMIT 20", NULL),
                        "SELECT * FROM items i ORDER BY score DESC, i.`id` DESC LIMIT 20");
}

static void misses(void **state)
{
    (void)state;
    const char *sql = "SELECT * FROM items ORDER BY id LIMIT 400, 20";
    assert_string_equal(run(sql, NULL), sql); /* keyset: untouched */
    assert_int_equal(res.keyset.outcome, MR_KEYSET_MISS);
    assert_true(res.keyset.watch);
    /* a bookmark with another number of values (another key) is never used */
    bookmark(sql, 400,
             "7\0"
             "8",
             3);
    assert_string_equal(run(sql, NULL), sql);
    assert_int_equal(res.keyset.outcome, MR_KEYSET_MISS);
    mr_bookmarks_clear();
    /* a bookmark too far back is a miss too */
    bookmark(sql, 300, "7", 1);
    assert_string_equal(run(sql, NULL), sql);
    assert_int_equal(res.keyset.outcome, MR_KEYSET_MISS);
    /* auto: the deferred join */
    const char *p = run("SELECT * FROM pairs ORDER BY a, b LIMIT 400, 20", NULL);
    assert_int_equal(res.keyset.outcome, MR_KEYSET_MISS);
    assert_non_null(strstr(p, "myrewrite_dj"));
}

static void seeks(void **state)
{
    (void)state;
    const char *sql = "SELECT * FROM items WHERE grp = 3 OR grp = 4 ORDER BY id LIMIT 400, 20";
    bookmark(sql, 380, "1234", 4);
    assert_string_equal(run(sql, NULL), "SELECT * FROM items WHERE (grp = 3 OR grp = 4) AND "
                                        "((id > 1234)) ORDER BY id LIMIT 20, 20");
    assert_int_equal(res.keyset.outcome, MR_KEYSET_HIT);

    sql = "SELECT i.name FROM shop.items AS i ORDER BY i.score DESC LIMIT 20 OFFSET 400";
    bookmark(sql, 400,
             "17\0"
             "99",
             5);
    assert_string_equal(run(sql, NULL),
                        "SELECT i.name FROM shop.items AS i WHERE i.score <= 17 AND ((i.score < 17)"
                        " OR (i.score = 17 AND i.`id` < 99)) ORDER BY i.score DESC, i.`id` DESC"
                        " LIMIT 0, 20");

    sql = "SELECT * FROM pairs ORDER BY v, a DESC, b LIMIT 400, 20 -- tail";
    bookmark(sql, 399,
             "5\0"
             "6\0"
             "7",
             5);
    assert_string_equal(run(sql, NULL),
                        "SELECT * FROM pairs WHERE v >= 5 AND ((v > 5) OR (v = 5 AND a < 6) OR "
                        "(v = 5 AND a = 6 AND b > 7)) ORDER BY v, a DESC, b LIMIT 1, 20 -- tail");
    assert_int_equal(res.keyset.outcome, MR_KEYSET_HIT);
}

static void refused_and_written(void **state)
{
    (void)state;
    const char *sql = "SELECT * FROM items ORDER BY id LIMIT 400, 20";
    bookmark(sql, 400, "1", 1);
    const mr_keyset_listing ls = res.keyset.listing;
    mr_bookmarks_note_write(ls.table_hash);
    assert_string_equal(run(sql, NULL), sql);
    assert_int_equal(res.keyset.outcome, MR_KEYSET_MISS);
    bookmark(sql, 400, "1", 1);
    mr_bookmarks_refuse(ls.hash, ls.table_hash, mr_bookmarks_gen(ls.table_hash), 60000,
                        mr_bookmarks_now_ms());
    const char *p = run(sql, NULL); /* refused: the deferred join, even for keyset */
    assert_non_null(strstr(p, "myrewrite_dj"));
    assert_int_equal(res.keyset.outcome, MR_KEYSET_NONE);
    assert_false(res.keyset.watch);
}

static const char *lit(uint8_t type, uint16_t cs, const char *v, size_t n)
{
    static char out[256];
    mr_buf b;
    mr_buf_init(&b);
    bool ok = mr_keyset_literal(&b, type, cs, (const uint8_t *)v, n);
    snprintf(out, sizeof out, "%s", ok ? "" : "!");
    if (ok)
        snprintf(out, sizeof out, "%.*s", (int)b.len, (const char *)b.data);
    mr_buf_free(&b);
    return out;
}

static void literals(void **state)
{
    (void)state;
    assert_string_equal(lit(3, 63, "-42", 3), "-42");
    assert_string_equal(lit(8, 63, "18446744073709551615", 20), "18446744073709551615");
    assert_string_equal(lit(3, 63, "1 OR 1", 6), "!");
    assert_string_equal(lit(3, 63, "", 0), "!");
    assert_string_equal(lit(246, 63, "-12.50", 6), "-12.50");
    assert_string_equal(lit(246, 63, "12.", 3), "!");
    assert_string_equal(lit(12, 63, "2024-02-29 10:00:00.5", 21), "'2024-02-29 10:00:00.5'");
    assert_string_equal(lit(10, 63, "2024'-01", 8), "!");
    assert_string_equal(lit(253, 45, "it's", 4), "_utf8mb4 X'69742773'");
    assert_string_equal(lit(253, 45, "\\'\0", 3), "_utf8mb4 X'5C2700'");
    assert_string_equal(lit(253, 224, "\xc3\xa9\xf0\x9f\x98\x80", 6), "_utf8mb4 X'C3A9F09F9880'");
    assert_string_equal(lit(253, 45, "", 0), "''");
    assert_string_equal(lit(252, 63, "\xff\x00'", 3), "X'FF0027'");
    assert_string_equal(lit(252, 63, "", 0), "X''");
    assert_string_equal(lit(4, 63, "1.5", 3), "!");

    assert_null(mr_keyset_column_problem(3, 1 | 2, 63));
    assert_null(mr_keyset_column_problem(253, 1, 46));
    assert_null(mr_keyset_column_problem(252, 1 | 128, 63));
    assert_non_null(mr_keyset_column_problem(3, 0, 63));         /* nullable */
    assert_non_null(mr_keyset_column_problem(254, 1 | 256, 45)); /* ENUM */
    assert_non_null(mr_keyset_column_problem(5, 1, 63));         /* DOUBLE */
    assert_non_null(mr_keyset_column_problem(7, 1, 63));         /* TIMESTAMP */
    assert_non_null(mr_keyset_column_problem(253, 1, 8));        /* latin1 result */
    assert_non_null(mr_keyset_column_problem(16, 1, 63));        /* BIT */
}

static bool writes_table(const mr_keyset_writes *wr, const char *name)
{
    uint64_t h = mr_keyset_table_hash(name, strlen(name));
    for (unsigned i = 0; i < wr->n; i++)
        if (wr->slot[i] == h)
            return true;
    return false;
}

static mr_keyset_writes scan(const char *sql)
{
    mr_keyset_writes wr;
    memset(&wr, 0, sizeof wr);
    mr_keyset_writes_scan(sql, strlen(sql), 0, &wr);
    return wr;
}

static void writes(void **state)
{
    (void)state;
    mr_keyset_writes wr = scan("SELECT * FROM items WHERE id IN (SELECT id FROM pairs)");
    assert_int_equal(wr.n, 0);
    assert_false(wr.all);
    wr = scan("/* c */ UPDATE `Items` SET n = n + 1 WHERE id = 'pairs'");
    assert_true(writes_table(&wr, "items"));  /* case-insensitive, backticks removed */
    assert_false(writes_table(&wr, "pairs")); /* a string, not a name */
    assert_false(wr.all);
    wr = scan("SELECT 1; delete from shop.pairs where a = 1; SELECT * FROM other");
    assert_true(writes_table(&wr, "pairs"));
    assert_false(writes_table(&wr, "other"));
    wr = scan("INSERT INTO a SELECT * FROM b");
    assert_true(writes_table(&wr, "a") && writes_table(&wr, "b"));
    assert_true(scan("LOAD DATA INFILE 'f' INTO TABLE t").n > 0);
    assert_true(writes_table((const mr_keyset_writes[]){scan("TRUNCATE TABLE t")}, "t"));
    assert_true(writes_table((const mr_keyset_writes[]){scan("RENAME TABLE t TO u")}, "t"));
    assert_true(scan("CALL refill()").all);
    assert_true(scan("EXECUTE stmt").all);
    assert_true(scan("DO write_things()").all);
    assert_true(scan("/*!40000 ALTER TABLE t DISABLE KEYS */").all);
    assert_false(scan("SELECT /*!40001 SQL_NO_CACHE */ * FROM t").all);
    /* more tables than slots: all */
    char big[1024] = "UPDATE t SET ";
    for (int i = 0; i < 40; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "%sc%d = 1", i ? ", " : "", i);
    assert_true(scan(big).all);
}

/* Texts that may create a temporary table. */
static void temp_tables(void **state)
{
    (void)state;
    static const char *yes[] = {
        "CREATE TEMPORARY TABLE items (id INT)",
        "create  temporary table if not exists items SELECT 1",
        "SELECT 1; CREATE /* c */ TEMPORARY TABLE t (a INT)",
        "CREATE /*!32302 TEMPORARY */ TABLE t (a INT)",
        "CALL make_temp()",
        "EXECUTE IMMEDIATE 'CREATE TEMPORARY TABLE t (a INT)'",
        "EXECUTE s",
        "SELECT 1; call p()",
    };
    static const char *no[] = {
        "SELECT * FROM items ORDER BY id LIMIT 20",
        "SELECT 'temporary', `call`, execute_at FROM items",
        "UPDATE items SET n = 'temporary' WHERE id = 1",
        "CREATE TABLE t (a INT)",
        "SELECT * FROM callers",
    };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        assert_true(mr_keyset_temp_scan(yes[i], strlen(yes[i]), 0));
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        assert_false(mr_keyset_temp_scan(no[i], strlen(no[i]), 0));
}

/* ---- the watch ------------------------------------------------------------------ */

static void put_str(mr_buf *b, const char *s) { mr_buf_put_lenenc_str(b, s, strlen(s)); }

static void coldef(mr_keyset_watch *w, const char *org_table, const char *org_name, uint8_t type,
                   uint16_t flags, uint16_t cs)
{
    mr_buf b;
    mr_buf_init(&b);
    put_str(&b, "def");
    put_str(&b, "shop");
    put_str(&b, "alias");
    put_str(&b, org_table);
    put_str(&b, "shown");
    put_str(&b, org_name);
    mr_buf_put_u8(&b, 0x0c);
    mr_buf_put_u16(&b, cs);
    mr_buf_put_u32(&b, 11);
    mr_buf_put_u8(&b, type);
    mr_buf_put_u16(&b, flags);
    mr_buf_put_u8(&b, 0);
    mr_buf_put_u16(&b, 0);
    mr_keyset_watch_packet(w, MR_TS_COLUMNS, b.data, b.len);
    mr_buf_free(&b);
}

/* A definition under MARIADB_CLIENT_EXTENDED_METADATA: a type-info string
 * (here empty or a format name) between org_name and the fixed fields. */
static void coldef_ext(mr_keyset_watch *w, const char *org_name, uint8_t type, uint16_t flags,
                       uint16_t cs, const char *info)
{
    mr_buf b;
    mr_buf_init(&b);
    put_str(&b, "def");
    put_str(&b, "shop");
    put_str(&b, "pairs");
    put_str(&b, "pairs");
    put_str(&b, org_name);
    put_str(&b, org_name);
    mr_buf_put_lenenc_str(&b, info, strlen(info));
    mr_buf_put_u8(&b, 0x0c);
    mr_buf_put_u16(&b, cs);
    mr_buf_put_u32(&b, 11);
    mr_buf_put_u8(&b, type);
    mr_buf_put_u16(&b, flags);
    mr_buf_put_u8(&b, 0);
    mr_buf_put_u16(&b, 0);
    mr_keyset_watch_packet(w, MR_TS_COLUMNS, b.data, b.len);
    mr_buf_free(&b);
}

static void row(mr_keyset_watch *w, const char *a, const char *b_, size_t bn)
{
    mr_buf b;
    mr_buf_init(&b);
    put_str(&b, a);
    mr_buf_put_lenenc_str(&b, b_, bn);
    mr_keyset_watch_packet(w, MR_TS_ROWS, b.data, b.len);
    mr_buf_free(&b);
}

static void eof(mr_keyset_watch *w)
{
    static const uint8_t e[] = {0xfe, 0, 0, 2, 0};
    mr_keyset_watch_packet(w, MR_TS_ROWS, e, sizeof e);
}

/* The keyset note the rules give for sql (a keyset listing). */
static mr_keyset_note note_of(const char *sql)
{
    run(sql, NULL);
    assert_true(res.keyset.watch);
    return res.keyset;
}

static mr_bookmark_find found(const mr_keyset_note *n, uint64_t off, uint64_t *pos, char *v,
                              size_t *len)
{
    return mr_bookmarks_find(n->listing.hash, n->listing.table_hash, off, mr_bookmarks_now_ms(),
                             pos, v, 256, len);
}

/* Definitions with MariaDB's type-info string: read past it when the
 * session says the extension is on, a bookmark results; read as plain
 * definitions they do not parse and the watch gives up (no bookmark). */
static void watch_extended_metadata(void **state)
{
    (void)state;
    for (int ext = 1; ext >= 0; ext--) {
        mr_bookmarks_clear();
        mr_keyset_watch w;
        memset(&w, 0, sizeof w);
        mr_keyset_note n = note_of("SELECT * FROM pairs ORDER BY name, a DESC LIMIT 40, 20");
        mr_keyset_watch_begin(&w, &n, &mr_bookmarks_store);
        w.ext_metadata = ext;
        coldef_ext(&w, "a", 3, 1 | 2, 63, "");
        coldef_ext(&w, "name", 253, 1, 45, "\x01\x04json");
        coldef_ext(&w, "b", 8, 1 | 2, 63, "");
        mr_buf r;
        mr_buf_init(&r);
        put_str(&r, "7");
        put_str(&r, "ok");
        put_str(&r, "-9");
        mr_keyset_watch_packet(&w, MR_TS_ROWS, r.data, r.len);
        mr_buf_free(&r);
        eof(&w);
        mr_keyset_watch_end(&w, true, mr_bookmarks_now_ms());
        uint64_t pos = 0;
        size_t len = 0;
        char v[256];
        assert_int_equal(found(&n, 100, &pos, v, &len), ext ? MR_BOOKMARK_FOUND : MR_BOOKMARK_NONE);
        mr_keyset_watch_free(&w);
    }
    mr_bookmarks_clear();
}

/* Rows with no column definitions before them (MySQL 8's
 * resultset_metadata = NONE under CLIENT_OPTIONAL_RESULTSET_METADATA):
 * nothing says which value is which, so no bookmark is kept and the
 * listing is not refused either (the next page may carry definitions). */
static void watch_rows_without_definitions(void **state)
{
    (void)state;
    mr_bookmarks_clear();
    mr_keyset_watch w;
    memset(&w, 0, sizeof w);
    mr_keyset_note n = note_of("SELECT * FROM pairs ORDER BY name, a DESC LIMIT 40, 20");
    mr_keyset_watch_begin(&w, &n, &mr_bookmarks_store);
    row(&w, "7", "ok", 2);
    eof(&w);
    mr_keyset_watch_end(&w, true, mr_bookmarks_now_ms());
    uint64_t pos = 0;
    size_t len = 0;
    char v[256];
    assert_int_equal(found(&n, 100, &pos, v, &len), MR_BOOKMARK_NONE);
    mr_keyset_watch_free(&w);
    mr_bookmarks_clear();
}

static void watch(void **state)
{
    (void)state;
    mr_keyset_watch w;
    memset(&w, 0, sizeof w);
    mr_keyset_note n = note_of("SELECT a, name FROM pairs ORDER BY name, a LIMIT 40, 20");
    assert_int_equal(n.listing.ncols, 3); /* name, a, then b appended */
    /* b is not selected: refused */
    mr_keyset_watch_begin(&w, &n, &mr_bookmarks_store);
    coldef(&w, "pairs", "a", 3, 1 | 2, 63);
    coldef(&w, "pairs", "name", 253, 1, 45);
    row(&w, "1", "x", 1);
    eof(&w);
    mr_keyset_watch_end(&w, true, mr_bookmarks_now_ms());
    uint64_t pos = 0;
    size_t len = 0;
    char v[256];
    assert_int_equal(found(&n, 100, &pos, v, &len), MR_BOOKMARK_REFUSED);

    mr_bookmarks_clear();
    n = note_of("SELECT * FROM pairs ORDER BY name, a DESC LIMIT 40, 20");
    mr_keyset_watch_begin(&w, &n, &mr_bookmarks_store);
    coldef(&w, "pairs", "a", 3, 1 | 2, 63);
    coldef(&w, "pairs", "name", 253, 1, 45);
    coldef(&w, "pairs", "b", 8, 1 | 2, 63);
    coldef(&w, "other", "name", 253, 0, 45); /* another table's column is not looked at */
    assert_true(mr_keyset_watch_wants(&w, MR_TS_ROWS));
    mr_buf r;
    mr_buf_init(&r);
    put_str(&r, "7");
    mr_buf_put_lenenc_str(&r, "o'k\0", 4);
    put_str(&r, "-9");
    mr_buf_put_u8(&r, 0xfb);
    row(&w, "1", "first", 5);                              /* not the last: forgotten */
    mr_keyset_watch_packet(&w, MR_TS_ROWS, r.data, r.len); /* the last row */
    mr_buf_free(&r);
    eof(&w);
    mr_keyset_watch_end(&w, true, mr_bookmarks_now_ms());
    assert_int_equal(found(&n, 100, &pos, v, &len), MR_BOOKMARK_FOUND);
    assert_int_equal(pos, 42);
    const char want[] = "_utf8mb4 X'6F276B00'\0"
                        "7\0"
                        "-9";
    assert_int_equal(len, sizeof want - 1);
    assert_memory_equal(v, want, len);

    /* a nullable column refuses; an error or a NULL in the row records nothing */
    mr_bookmarks_clear();
    mr_keyset_watch_begin(&w, &n, &mr_bookmarks_store);
    coldef(&w, "pairs", "a", 3, 1 | 2, 63);
    coldef(&w, "pairs", "name", 253, 0, 45);
    coldef(&w, "pairs", "b", 8, 1 | 2, 63);
    eof(&w);
    mr_keyset_watch_end(&w, false, mr_bookmarks_now_ms());
    assert_int_equal(found(&n, 100, &pos, v, &len), MR_BOOKMARK_NONE);
    mr_keyset_watch_begin(&w, &n, &mr_bookmarks_store);
    coldef(&w, "pairs", "a", 3, 1 | 2, 63);
    coldef(&w, "pairs", "name", 253, 0, 45);
    coldef(&w, "pairs", "b", 8, 1 | 2, 63);
    eof(&w);
    mr_keyset_watch_end(&w, true, mr_bookmarks_now_ms());
    assert_int_equal(found(&n, 100, &pos, v, &len), MR_BOOKMARK_REFUSED);

    mr_bookmarks_clear();
    mr_keyset_watch_begin(&w, &n, &mr_bookmarks_store);
    coldef(&w, "pairs", "a", 3, 1 | 2, 63);
    coldef(&w, "pairs", "name", 253, 1, 45);
    coldef(&w, "pairs", "b", 8, 1 | 2, 63);
    mr_keyset_watch_packet(&w, MR_TS_ROWS,
                           (const uint8_t *)"\x01"
                                            "1\xfb\x01"
                                            "2",
                           5);
    eof(&w);
    mr_keyset_watch_end(&w, true, mr_bookmarks_now_ms());
    assert_int_equal(found(&n, 100, &pos, v, &len), MR_BOOKMARK_NONE);

    /* an empty row packet (no row of a result with columns is) gives up
     * quietly, also when a good last row follows */
    mr_keyset_watch w2;
    memset(&w2, 0, sizeof w2);
    mr_keyset_watch_begin(&w2, &n, &mr_bookmarks_store);
    coldef(&w2, "pairs", "a", 3, 1 | 2, 63);
    coldef(&w2, "pairs", "name", 253, 1, 45);
    coldef(&w2, "pairs", "b", 8, 1 | 2, 63);
    mr_keyset_watch_packet(&w2, MR_TS_ROWS, (const uint8_t *)"", 0);
    mr_keyset_watch_packet(&w2, MR_TS_ROWS,
                           (const uint8_t *)"\x01"
                                            "1\x01x\x01"
                                            "2",
                           6);
    eof(&w2);
    mr_keyset_watch_end(&w2, true, mr_bookmarks_now_ms());
    assert_int_equal(found(&n, 100, &pos, v, &len), MR_BOOKMARK_NONE);
    mr_keyset_watch_free(&w2);

    /* a packet too large to read gives up quietly */
    mr_keyset_watch_begin(&w, &n, &mr_bookmarks_store);
    coldef(&w, "pairs", "a", 3, 1 | 2, 63);
    mr_keyset_watch_packet(&w, MR_TS_COLUMNS, NULL, 0);
    assert_false(mr_keyset_watch_wants(&w, MR_TS_ROWS));
    mr_keyset_watch_end(&w, true, mr_bookmarks_now_ms());
    assert_int_equal(found(&n, 100, &pos, v, &len), MR_BOOKMARK_NONE);
    mr_keyset_watch_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(listings, reset),
        cmocka_unit_test_setup(shallow_pages, reset),
        cmocka_unit_test_setup(misses, reset),
        cmocka_unit_test_setup(seeks, reset),
        cmocka_unit_test_setup(refused_and_written, reset),
        cmocka_unit_test_setup(literals, reset),
        cmocka_unit_test_setup(writes, reset),
        cmocka_unit_test_setup(temp_tables, reset),
        cmocka_unit_test_setup(watch, reset),
        cmocka_unit_test_setup(watch_extended_metadata, reset),
        cmocka_unit_test_setup(watch_rows_without_definitions, reset),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
