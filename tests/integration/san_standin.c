/* SPDX-License-Identifier: Apache-2.0 */
/* san_standin: a stand-in for the proxy in the harness's own test
 * (t_harness.py). It takes the proxy's command line, listens on --listen
 * like the proxy, and on SIGTERM does what `--set standin=MODE` says:
 *
 *   clean   exits 0 (the control: the harness must not fail it)
 *   leak    loses a heap block and exits 0 (LeakSanitizer reports it)
 *   race    two threads write one counter unlocked, exits 0 (TSan reports it)
 *   status  exits with MR_SAN_STATUS (66) as a sanitizer does, no report
 *
 * Without --listen it does that at once, as a one-shot run (--check) would.
 * `san_standin --which` prints the sanitizer it was built with (address,
 * thread or none), so the test knows which of leak/race this build can see.
 * Everything else on the command line (--backend, --workers, --set k=v) is
 * accepted and ignored. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define STANDIN_SAN "address"
#elif defined(__SANITIZE_THREAD__)
#define STANDIN_SAN "thread"
#else
#define STANDIN_SAN "none"
#endif

static volatile sig_atomic_t stop;
static void *volatile lost; /* volatile: the compiler keeps the malloc */
static long counter;        /* written by two threads without a lock */

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static void *bump(void *arg)
{
    (void)arg;
    counter++;
    return NULL;
}

static int race(void)
{
    pthread_t th;
    if (pthread_create(&th, NULL, bump, NULL) != 0)
        return 1;
    counter++;
    pthread_join(th, NULL);
    return 0;
}

static int listen_on(const char *addr)
{
    char host[64];
    const char *colon = strrchr(addr, ':');
    struct sockaddr_in sa = {.sin_family = AF_INET};
    int one = 1, fd;
    if (!colon || (size_t)(colon - addr) >= sizeof host)
        return -1;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    sa.sin_port = htons((unsigned short)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return -1;
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 16) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Accepts and closes connections until SIGTERM. */
static void serve(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (!stop) {
        if (poll(&p, 1, 100) > 0) {
            int c = accept(fd, NULL, NULL);
            if (c >= 0)
                close(c);
        }
    }
}

int main(int argc, char **argv)
{
    const char *listen_addr = NULL, *mode = "clean";
    int fd;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--which") == 0) {
            puts(STANDIN_SAN);
            return 0;
        }
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen_addr = argv[++i];
        else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc &&
                 strncmp(argv[i + 1], "standin=", 8) == 0)
            mode = argv[++i] + 8;
    }
    if (listen_addr) {
        if ((fd = listen_on(listen_addr)) < 0) {
            fprintf(stderr, "san_standin: cannot listen on %s\n", listen_addr);
            return 2;
        }
        signal(SIGTERM, on_term);
        printf("san_standin: %s build, mode %s, listening on %s\n", STANDIN_SAN, mode, listen_addr);
        fflush(stdout);
        serve(fd);
        close(fd);
    }
    if (strcmp(mode, "leak") == 0) {
        lost = malloc(4242);
        memset(lost, 1, 4242);
        lost = NULL;
    } else if (strcmp(mode, "race") == 0) {
        return race();
    } else if (strcmp(mode, "status") == 0) {
        return 66;
    }
    return 0;
}
