/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stmt_pool_tool.c - the pool's prepared-statement machinery (pool/stmt_map,
 * pool/stmt_cache, pool/stmt_exec, proto/stmt_rewrite) as one session sees
 * it over two server connections, driven line by line from stdin by
 * t_stmt_pool.py, which owns the connections to a real mariadbd: it sends
 * what this prints and hands back what the server answered. Payloads are
 * hex (command byte first); each command prints one line:
 *
 *   prepare NPARAMS NCOLUMNS TEXT-HEX      -> id C          (the client's id)
 *   prepare-failed                         -> ok            (the client's prepare got ERR)
 *   prepare-packet C                       -> send HEX      (COM_STMT_PREPARE)
 *   pending CONN C                         -> ok [evict E]... (an entry whose prepare is
 *                                                            in flight: MR_STMT_ID_LAST)
 *   prepare-ok CONN C PAYLOAD-HEX          -> sid S [evict E]...
 *   find CONN C                            -> hit S | miss
 *   long-data PAYLOAD-HEX                  -> kept | over
 *   exec CONN PAYLOAD-HEX                  -> send HEX | err TEXT
 *   bulk CONN PAYLOAD-HEX                  -> send HEX | err TEXT
 *   cmd CONN PAYLOAD-HEX                   -> send HEX | err TEXT  (RESET, CLOSE, FETCH, or
 *                                                            an execute with its id alone
 *                                                            replaced: the control that shows
 *                                                            the types matter)
 *
 * The client's statement ids in the payloads are the map's (MR_STMT_ID_LAST
 * too). The cache holds 2 statements per connection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/pool/stmt_cache.h"
#include "myrewrite/pool/stmt_exec.h"
#include "myrewrite/proto/stmt_execute.h"

static mr_stmt_map map;
static mr_stmt_cache cache[2];

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    while (s[0] && s[1] && n < cap) {
        unsigned v;
        if (sscanf(s, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
        s += 2;
    }
    return n;
}

static void print_send(const mr_buf *b)
{
    printf("send ");
    for (size_t i = 0; i < b->len; i++)
        printf("%02x", b->data[i]);
    printf("\n");
}

/* " evict E" for each statement that left connection k's cache, then the
 * end of the line. */
static void print_evicted(int k, const mr_stmt_cached *keep)
{
    uint32_t ev;
    while (mr_stmt_cache_trim(&cache[k], keep, &ev))
        printf(" evict %u", ev);
    printf("\n");
}

/* The entry of client statement id on connection k, or NULL (printed). */
static mr_stmt_cached *entry_of(int k, uint32_t id, mr_stmt **st)
{
    *st = mr_stmt_map_get(&map, id);
    mr_stmt_cached *e = *st ? mr_stmt_cache_find(&cache[k], *st) : NULL;
    if (!e)
        printf("err statement %u is not prepared on connection %d\n", id, k);
    return e;
}

static void on_prepare_ok(int k, uint32_t id, const uint8_t *p, size_t n)
{
    mr_prepare_ok ok;
    mr_stmt *st = mr_stmt_map_get(&map, id);
    if (!st || mr_prepare_ok_parse(p, n, &ok) != MR_OK) {
        printf("err not a prepare-OK of a known statement\n");
        return;
    }
    mr_stmt_cached *e = mr_stmt_cache_find(&cache[k], st);
    if (e && e->server_id == MR_STMT_ID_LAST) { /* the pipelined prepare's answer */
        e->server_id = ok.stmt_id;
        printf("sid %u\n", ok.stmt_id);
        return;
    }
    e = mr_stmt_cache_add(&cache[k], st, ok.stmt_id);
    if (!e) {
        printf("err out of memory\n");
        return;
    }
    printf("sid %u", ok.stmt_id);
    print_evicted(k, e);
}

static void on_exec(const char *what, int k, const uint8_t *p, size_t n)
{
    mr_stmt *st;
    mr_stmt_cached *e = n >= 5 ? entry_of(k, mr_stmt_id_get(p), &st) : NULL;
    if (!e)
        return;
    mr_buf out;
    mr_buf_init(&out);
    const char *bad = !strcmp(what, "exec")
                          ? mr_stmt_exec_for(&out, &map, st, e, p, n, mr_exec_form(false, p))
                      : !strcmp(what, "bulk") ? mr_stmt_bulk_for(&out, &map, st, e, p, n)
                                              : mr_stmt_cmd_rewrite(&out, p, n, e->server_id);
    if (bad)
        printf("err %s\n", bad);
    else
        print_send(&out);
    mr_buf_free(&out);
}

static void line(char *cmd)
{
    static uint8_t p[1 << 20];
    static char arg[2][1 << 21];
    int k = 0;
    unsigned a = 0, b = 0;
    if (sscanf(cmd, "prepare %u %u %2097151s", &a, &b, arg[0]) == 3) {
        size_t n = unhex(arg[0], p, sizeof p);
        mr_stmt *st =
            mr_stmt_map_add(&map, (const char *)p, n, "test", "", 0, (uint16_t)a, (uint16_t)b);
        printf(st ? "id %u\n" : "err out of memory\n", st ? st->id : 0);
    } else if (!strcmp(cmd, "prepare-failed\n")) {
        mr_stmt_map_prepare_failed(&map);
        printf("ok\n");
    } else if (sscanf(cmd, "prepare-packet %u", &a) == 1) {
        mr_stmt *st = mr_stmt_map_get(&map, a);
        mr_buf out;
        mr_buf_init(&out);
        if (st)
            mr_stmt_prepare_build(&out, st->text, st->text_len);
        print_send(&out);
        mr_buf_free(&out);
    } else if (sscanf(cmd, "pending %d %u", &k, &a) == 2) {
        mr_stmt *st = mr_stmt_map_get(&map, a);
        mr_stmt_cached *e = st ? mr_stmt_cache_add(&cache[k & 1], st, MR_STMT_ID_LAST) : NULL;
        printf(e ? "ok" : "err");
        print_evicted(k & 1, e);
    } else if (sscanf(cmd, "prepare-ok %d %u %2097151s", &k, &a, arg[0]) == 3) {
        on_prepare_ok(k & 1, a, p, unhex(arg[0], p, sizeof p));
    } else if (sscanf(cmd, "find %d %u", &k, &a) == 2) {
        mr_stmt *st = mr_stmt_map_get(&map, a);
        mr_stmt_cached *e = st ? mr_stmt_cache_find(&cache[k & 1], st) : NULL;
        if (e)
            printf("hit %u\n", e->server_id);
        else
            printf("miss\n");
    } else if (sscanf(cmd, "long-data %2097151s", arg[0]) == 1) {
        size_t n = unhex(arg[0], p, sizeof p);
        mr_stmt *st = n >= 7 ? mr_stmt_map_get(&map, mr_stmt_id_get(p)) : NULL;
        printf(st && mr_stmt_long_data_add(&map, st, p, n) ? "kept\n" : "over\n");
    } else if (sscanf(cmd, "%15s %d %2097151s", arg[1], &k, arg[0]) == 3) {
        on_exec(arg[1], k & 1, p, unhex(arg[0], p, sizeof p));
    } else {
        printf("err unknown command\n");
    }
    fflush(stdout);
}

int main(void)
{
    static char buf[1 << 22];
    mr_stmt_map_init(&map, 1 << 20);
    mr_stmt_cache_init(&cache[0], 2);
    mr_stmt_cache_init(&cache[1], 2);
    while (fgets(buf, sizeof buf, stdin))
        line(buf);
    mr_stmt_cache_clear(&cache[0]);
    mr_stmt_cache_clear(&cache[1]);
    mr_stmt_map_free(&map);
    return 0;
}
