/*
 * backend.c - resolving the backend address once (see backend.h).
 * Main thread only.
 */
#include "myrewrite/backend.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

bool mr_backend_resolve(mr_proxy *p, const char *spec, char *err, size_t errlen)
{
    mr_addr a;
    if (!mr_addr_parse(spec, &a)) {
        snprintf(err, errlen, "backend '%s' is not host:port or a socket path", spec);
        return false;
    }
    if (a.is_unix) {
        struct sockaddr_un *sun = (struct sockaddr_un *)&p->backend_addr;
        memset(sun, 0, sizeof(*sun));
        sun->sun_family = AF_UNIX;
        strcpy(sun->sun_path, a.path);
        p->backend_addr_len = sizeof(*sun);
        snprintf(p->backend_name, sizeof(p->backend_name), "%s", a.path);
        return true;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res;
    int rc = getaddrinfo(a.host, a.port, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "backend '%s': %s", spec, gai_strerror(rc));
        return false;
    }
    memcpy(&p->backend_addr, res->ai_addr, res->ai_addrlen);
    p->backend_addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    snprintf(p->backend_name, sizeof(p->backend_name), "%s", spec);
    return true;
}
