/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/relay_floor_common.h - argument parsing, listening, accepting and
 * connecting for the floor relays (bench/relay_floor.c, relay_floor_uring.c),
 * so the two differ only in how they move bytes. Header-only: each relay is
 * one translation unit.
 */
#ifndef RELAY_FLOOR_COMMON_H
#define RELAY_FLOOR_COMMON_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct floor_backend {
    struct sockaddr_storage addr;
    socklen_t len;
} floor_backend;

static inline void floor_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* fails on unix: fine */
}

static inline void floor_die(const char *what)
{
    perror(what);
    exit(1);
}

static inline void floor_parse_backend(const char *spec, floor_backend *be)
{
    memset(be, 0, sizeof(*be));
    if (spec[0] == '/') {
        struct sockaddr_un *un = (struct sockaddr_un *)&be->addr;
        un->sun_family = AF_UNIX;
        snprintf(un->sun_path, sizeof(un->sun_path), "%s", spec);
        be->len = sizeof(*un);
        return;
    }
    char host[256];
    snprintf(host, sizeof(host), "%s", spec);
    char *colon = strrchr(host, ':');
    if (!colon) {
        fprintf(stderr, "backend must be HOST:PORT or /unix/path\n");
        exit(2);
    }
    *colon = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0) {
        fprintf(stderr, "cannot resolve %s\n", spec);
        exit(2);
    }
    memcpy(&be->addr, res->ai_addr, res->ai_addrlen);
    be->len = res->ai_addrlen;
    freeaddrinfo(res);
}

/* Parses LISTEN_PORT BACKEND and returns the listening socket (127.0.0.1). */
static inline int floor_setup(int argc, char **argv, floor_backend *be)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s LISTEN_PORT HOST:PORT|/unix/path\n", argv[0]);
        exit(2);
    }
    signal(SIGPIPE, SIG_IGN);
    floor_parse_backend(argv[2], be);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)atoi(argv[1])),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
        floor_die("bind");
    if (listen(lfd, 512) != 0)
        floor_die("listen");
    return lfd;
}

static inline int floor_accept(int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0)
        floor_nodelay(fd);
    return fd;
}

/* A blocking connect (set-up cost is not what is measured), then non-blocking. */
static inline int floor_connect(const floor_backend *be)
{
    int fd = socket(be->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (const struct sockaddr *)&be->addr, be->len) != 0) {
        close(fd);
        return -1;
    }
    floor_nodelay(fd);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

#endif
