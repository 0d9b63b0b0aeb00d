/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http/auth.c - who may read /metrics: the bearer token (http_token) and the
 * start-up rule that an address off loopback needs one (http_insecure).
 *
 * Pure functions of the settings and the request's header; HTTP thread and
 * main thread. The token compare takes the same time wherever the first
 * differing byte is, so response times do not reveal a prefix of it.
 */
#include "http_impl.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/base/log.h"

/* Equal in time that depends only on the lengths, not on where they differ. */
static bool same_secret(const char *got, size_t glen, const char *want, size_t wlen)
{
    volatile unsigned diff = glen != wlen;
    for (size_t i = 0; i < glen; i++)
        diff |= (unsigned)((unsigned char)got[i] ^ (unsigned char)want[i % wlen]);
    return diff == 0;
}

bool mr_http_token_ok(const char *token, const char *authorization)
{
    if (!token || !token[0])
        return true;
    static const char scheme[] = "Bearer ";
    if (!authorization || strncasecmp(authorization, scheme, sizeof scheme - 1) != 0)
        return false;
    const char *got = authorization + sizeof scheme - 1;
    while (*got == ' ')
        got++;
    size_t glen = strlen(got);
    while (glen && (got[glen - 1] == ' ' || got[glen - 1] == '\t'))
        glen--;
    return same_secret(got, glen, token, strlen(token));
}

/* 127.0.0.0/8, ::1 or the name localhost; anything else (0.0.0.0, ::, a
 * routable address, another name) may be reached from elsewhere. */
static bool loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (strcasecmp(host, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

bool mr_http_exposure_ok(const mr_config *cfg, const mr_addr *a)
{
    if (loopback(a->host) || (cfg->http_token && cfg->http_token[0]) || cfg->http_insecure)
        return true;
    mr_error(0,
             "http_listen = '%s' is not a loopback address and no http_token is set: anyone "
             "who reaches it could read /metrics. Set http_token (clients then send "
             "'Authorization: Bearer <token>'), listen on 127.0.0.1, or set http_insecure = yes "
             "to serve it without a token",
             cfg->http_listen);
    return false;
}
