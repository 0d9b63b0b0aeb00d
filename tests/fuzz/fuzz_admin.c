/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_admin.c - the admin console's parsers: its command language
 * (admin/cmd.c) and the login packet it reads from any client that
 * connects (admin/proto.c), with the password check behind it.
 *
 * Feeds: the input both as a command text and as a HandshakeResponse41
 * payload.
 * Checks beyond no crash: the command is a known one and its argument is
 * NUL-terminated; the same text upper-cased is the same command (commands
 * are case-insensitive; arguments are checked elsewhere); every pointer
 * the login parser returns lies inside the payload; a random answer never
 * verifies against a password.
 */
#include <ctype.h>
#include <string.h>

#include "fuzz.h"
#include "myrewrite/admin/cmd.h"
#include "myrewrite/admin/proto.h"

static void command(const char *s, size_t n)
{
    mr_buf arg, arg2;
    mr_buf_init(&arg);
    mr_buf_init(&arg2);
    mr_admin_cmd c = mr_admin_cmd_parse(s, n, &arg);
    FUZZ_CHECK(c <= MR_ADM_BAD_ARGUMENT && !arg.failed);
    FUZZ_CHECK(arg.len == 0 || arg.data[arg.len - 1] == 0);
    char *up = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        up[i] = (char)toupper((unsigned char)s[i]);
    mr_admin_cmd cu = mr_admin_cmd_parse(up, n, &arg2);
    FUZZ_CHECK(cu == c || c == MR_ADM_BAD_ARGUMENT || cu == MR_ADM_BAD_ARGUMENT);
    free(up);
    mr_buf_free(&arg);
    mr_buf_free(&arg2);
}

static void login(const uint8_t *p, size_t n)
{
    mr_admin_login l;
    if (mr_admin_login_parse(p, n, &l) != MR_OK)
        return;
    FUZZ_CHECK(l.ssl_request || fuzz_within(l.user, l.user_len, p, n));
    FUZZ_CHECK(!l.auth || fuzz_within(l.auth, l.auth_len, p, n));
    FUZZ_CHECK(!l.plugin || fuzz_within(l.plugin, l.plugin_len, p, n));
    static const uint8_t scramble[MR_ADMIN_SCRAMBLE_LEN] = "0123456789abcdefghij";
    if (l.auth)
        FUZZ_CHECK(!mr_admin_native_check("secret-admin-pw", scramble, l.auth, l.auth_len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    command((const char *)data, size);
    login(data, size);
    return 0;
}
