/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/counters.c - names of the counted close reasons (see base/counters.h).
 * Pure, any thread.
 */
#include "myrewrite/base/counters.h"

static const char *const reason_names[MR_CLOSE_MAX] = {
    [MR_CLOSE_CLIENT_QUIT] = "client_quit",
    [MR_CLOSE_CLIENT_GONE] = "client_gone",
    [MR_CLOSE_BACKEND_DOWN] = "backend_down",
    [MR_CLOSE_BACKEND_LOST] = "backend_lost",
    [MR_CLOSE_AUTH_FAILED] = "auth_failed",
    [MR_CLOSE_MALFORMED] = "malformed_packet",
    [MR_CLOSE_TOO_LARGE] = "packet_too_large",
    [MR_CLOSE_UNSUPPORTED] = "unsupported_feature",
    [MR_CLOSE_TIMEOUT] = "timeout",
    [MR_CLOSE_SHUTDOWN] = "shutdown",
    [MR_CLOSE_TLS_REQUIRED] = "tls_required",
    [MR_CLOSE_TLS_FAILED] = "tls_failed",
    [MR_CLOSE_CLEARTEXT_REFUSED] = "cleartext_password_refused",
};

const char *mr_close_reason_name(mr_close_reason r)
{
    return (unsigned)r < MR_CLOSE_MAX ? reason_names[r] : "unknown";
}
