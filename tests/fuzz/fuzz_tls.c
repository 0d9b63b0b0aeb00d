/*
 * fuzz_tls.c - a hostile TLS client against the proxy's TLS server side
 * (net/conn_tls.c): its own BIO, which serves the bytes read before TLS
 * started and then the socket, and the non-blocking handshake in the loop.
 *
 * Input (fuzz_conn.h): byte 0 options, byte 1 k, byte 2 the piece size,
 * then what the client sends. Options: bit 0 the context asks for a client
 * certificate (tls_ca set), bit 1 it takes TLS 1.3 only (tls_min_version);
 * bit 2: the first k bytes come as the session sees them behind an
 * SSLRequest, read by the plain conn before mr_conn_start_tls moves them;
 * else as io_uring hands them over, by mr_conn_tls_pre_add after the start.
 * The contexts are made once, as net/tls.c makes the server's, with a
 * self-signed P-256 certificate made in memory.
 * Checks beyond no crash or leak: the conn comes to an end once the peer
 * has shut its side (no hang); no plaintext before MR_CONN_TLS_READY; a
 * failed handshake fires MR_CONN_ERROR with a "TLS handshake failed: ..."
 * text, and the conn then still says handshaking, with no cipher.
 */
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <string.h>

#include "fuzz_conn.h"
#include "net/conn_impl.h"

#define TURNS_AFTER 64 /* loop turns allowed once every byte is sent */

typedef struct seen {
    bool tls;        /* TLS has started */
    bool ready;      /* MR_CONN_TLS_READY came */
    size_t plain_in; /* bytes the plain conn read before TLS */
    int events;
} seen;

static void on_read(mr_conn *c, void *arg)
{
    seen *s = arg;
    if (!s->tls) {
        s->plain_in = mr_conn_input_length(c); /* left in the input: they become TLS's */
        return;
    }
    FUZZ_CHECK(s->ready); /* plaintext only after the handshake */
    FUZZ_CHECK(!mr_conn_tls_handshaking(c));
    struct evbuffer *in = mr_conn_input(c);
    evbuffer_drain(in, evbuffer_get_length(in));
}

static void on_event(mr_conn *c, int what, void *arg)
{
    seen *s = arg;
    s->events |= what;
    if (what & MR_CONN_TLS_READY) {
        s->ready = true;
        FUZZ_CHECK(!mr_conn_tls_handshaking(c) && mr_conn_tls_cipher(c));
    }
}

static const mr_conn_callbacks callbacks = {.read = on_read, .event = on_event};

/* A self-signed P-256 certificate for CN=myrewrite-fuzz, and its key. */
static X509 *self_signed(EVP_PKEY **key)
{
    *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    FUZZ_CHECK(*key && x);
    X509_NAME *name = X509_get_subject_name(x);
    FUZZ_CHECK(X509_set_version(x, 2) && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) &&
               X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
               X509_gmtime_adj(X509_getm_notAfter(x), 86400L * 365) &&
               X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                          (const unsigned char *)"myrewrite-fuzz", -1, -1, 0) &&
               X509_set_issuer_name(x, name) && X509_set_pubkey(x, *key) &&
               X509_sign(x, *key, EVP_sha256()));
    return x;
}

/* As mr_tls_server_ctx (net/tls.c) makes it: the same modes and options. */
static SSL_CTX *server_ctx(X509 *cert, EVP_PKEY *key, bool client_ca, bool tls13)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    FUZZ_CHECK(ctx);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"myrewrite", 9);
    FUZZ_CHECK(SSL_CTX_set_min_proto_version(ctx, tls13 ? TLS1_3_VERSION : TLS1_2_VERSION));
    FUZZ_CHECK(SSL_CTX_use_certificate(ctx, cert) == 1 && SSL_CTX_use_PrivateKey(ctx, key) == 1);
    if (client_ca) { /* load_client_ca, with our own certificate as the CA */
        FUZZ_CHECK(X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), cert) == 1);
        FUZZ_CHECK(SSL_CTX_add_client_CA(ctx, cert) == 1);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    return ctx;
}

static SSL_CTX *contexts[4]; /* [bits 0-1 of the options] */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    EVP_PKEY *key;
    X509 *cert = self_signed(&key);
    for (int i = 0; i < 4; i++)
        contexts[i] = server_ctx(cert, key, i & 1, i & 2);
    X509_free(cert); /* the contexts hold their own references */
    EVP_PKEY_free(key);
    return 0;
}

/* The first k bytes reach the plain conn, which leaves them in its input. */
static void plain_first(fuzz_peer *p, mr_conn *c, const seen *s, size_t k)
{
    mr_conn_read_enable(c, true);
    size_t rest = p->left - k;
    p->left = k;
    for (int i = 0; s->plain_in < k && i < 1000; i++) {
        fuzz_peer_send(p, k);
        fuzz_loop_once();
    }
    FUZZ_CHECK(s->plain_in == k && mr_conn_input_length(c) == k);
    p->left = rest;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FUZZ_CONN_HEAD)
        return 0;
    uint8_t opt = data[0];
    size_t k = data[1];
    seen s = {0};
    fuzz_peer p;
    mr_conn *c = fuzz_conn_open(&p, &callbacks, &s);
    p.data = data + FUZZ_CONN_HEAD;
    p.left = size - FUZZ_CONN_HEAD;
    p.piece = data[2];
    if (k > p.left)
        k = p.left;
    bool behind_request = opt & 4;
    if (behind_request)
        plain_first(&p, c, &s, k);
    s.tls = true;
    FUZZ_CHECK(mr_conn_start_tls(c, contexts[opt & 3], true, NULL));
    if (!behind_request) {
        FUZZ_CHECK(mr_conn_tls_pre_add(c, p.data, k));
        p.data += k;
        p.left -= k;
        mr_conn_read_enable(c, true);
    }
    size_t turns = TURNS_AFTER + (p.piece ? p.left / p.piece : 0);
    for (size_t i = 0; i < turns && !(s.events & (MR_CONN_ERROR | MR_CONN_EOF)); i++)
        fuzz_turn(&p);
    FUZZ_CHECK(s.events & (MR_CONN_ERROR | MR_CONN_EOF)); /* it ended */
    FUZZ_CHECK(s.ready || !(s.events & MR_CONN_EOF)); /* a handshake ends by TLS_READY or error */
    if (!s.ready) {
        const char *why = mr_conn_error_text(c);
        FUZZ_CHECK(strncmp(why, "TLS handshake failed: ", 22) == 0);
        FUZZ_CHECK(mr_conn_tls_handshaking(c) && !mr_conn_tls_cipher(c));
    }
    fuzz_conn_close(&p, c);
    return 0;
}
