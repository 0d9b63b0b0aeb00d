/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/server_version.h - what the version string of a server's greeting
 * says it supports.
 *
 * Pure, any thread.
 */
#ifndef MYREWRITE_PROTO_SERVER_VERSION_H
#define MYREWRITE_PROTO_SERVER_VERSION_H

#include <stdbool.h>
#include <stddef.h>

/* True when a server whose greeting carries this version string accepts
 * FOR UPDATE SKIP LOCKED: MariaDB 10.6 and later, MySQL 8.0.1 and later.
 * Unknown or unreadable versions give false. */
bool mr_server_has_skip_locked(const char *version, size_t len);

#endif
