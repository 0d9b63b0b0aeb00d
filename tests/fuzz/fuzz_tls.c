/* SPDX-License-Identifier: Apache-2.0 */
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
 * self-signed P-256 certificate made in memory. OpenSSL draws from a
 * fixed generator started again at each input, so the server answers the
 * same bytes the same way: seeds recorded from a real client against it
 * (MR_FUZZ_TLS_RECORD, run by scripts/fuzz_corpus.py) finish the handshake
 * and carry a query and a close_notify, and the fuzzer starts from there
 * into the plaintext side (tls_read_some, the end behind data).
 * Checks beyond no crash or leak: the conn comes to an end once the peer
 * has shut its side (no hang); no plaintext before MR_CONN_TLS_READY; a
 * failed handshake fires MR_CONN_ERROR with a "TLS handshake failed: ..."
 * text, and the conn then still says handshaking, with no cipher.
 */
/* RAND_set_rand_method (deprecated in OpenSSL 3) puts the fixed generator
 * below in place of OpenSSL's. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/rand.h>
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

/* A fixed generator, started again at each input: the server then answers
 * the same ClientHello with the same bytes every time, so a recorded
 * client flight (record() below) completes the handshake when replayed
 * and the fuzzer reaches what follows it. Two streams: the recording
 * client's own draws must not shift the server's. For fuzzing only. */
static uint64_t rng_state[2];
static int rng_side; /* 0: the server (the conn); 1: the recording client */

static void rng_reset(void)
{
    rng_state[0] = 0x6d79726577726974u;
    rng_state[1] = 0x636c69656e740000u;
    rng_side = 0;
}

static int rng_bytes(unsigned char *buf, int num)
{
    uint64_t z = 0;
    for (int i = 0; i < num; i++) {
        if (i % 8 == 0) { /* splitmix64 */
            z = (rng_state[rng_side] += 0x9e3779b97f4a7c15u);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
            z ^= z >> 31;
        }
        buf[i] = (unsigned char)(z >> (8 * (i % 8)));
    }
    return 1;
}

static int rng_status(void) { return 1; }

static const RAND_METHOD fixed_rand = {
    .bytes = rng_bytes, .pseudorand = rng_bytes, .status = rng_status};

/* A self-signed P-256 certificate for CN=myrewrite-fuzz, and its key: the
 * same bytes in every process (fixed generator, fixed dates). */
static X509 *self_signed(EVP_PKEY **key)
{
    *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    FUZZ_CHECK(*key && x);
    X509_NAME *name = X509_get_subject_name(x);
    FUZZ_CHECK(X509_set_version(x, 2) && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) &&
               ASN1_TIME_set_string(X509_getm_notBefore(x), "20240101000000Z") &&
               ASN1_TIME_set_string(X509_getm_notAfter(x), "20991231000000Z") &&
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

static void start(mr_conn *c, seen *s, fuzz_peer *p, uint8_t opt, size_t k);

/* Writes <prefix><name>: options 0, k 0, all at once, then what an OpenSSL
 * client (at most max_version when not 0) sent through a whole handshake
 * with the conn, one query and its close_notify. The conn's server runs
 * as the replay will run it, so the recording holds a Finished the
 * replayed server accepts. */
static void record(const char *prefix, const char *name, long max_version)
{
    rng_reset();
    seen s = {0};
    fuzz_peer p;
    mr_conn *c = fuzz_conn_open(&p, &callbacks, &s);
    p.data = (const uint8_t *)""; /* the client's bytes come from the client */
    start(c, &s, &p, 0, 0);
    rng_side = 1; /* the client's context and SSL draw from the client's stream */
    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    FUZZ_CHECK(cctx && (!max_version || SSL_CTX_set_max_proto_version(cctx, max_version)));
    SSL *cl = SSL_new(cctx);
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    FUZZ_CHECK(cl && rb && wb);
    SSL_set_bio(cl, rb, wb);
    SSL_set_connect_state(cl);
    uint8_t out[1 << 16] = {0}, buf[16384];
    size_t len = FUZZ_CONN_HEAD;
    bool sent = false;
    for (int i = 0; i < 1000 && !(s.events & (MR_CONN_ERROR | MR_CONN_EOF)); i++) {
        rng_side = 1;
        if (!SSL_is_init_finished(cl)) {
            SSL_do_handshake(cl);
        } else if (!sent) {
            static const char query[] = "\x09\x00\x00\x00\x03SELECT 1";
            FUZZ_CHECK(SSL_write(cl, query, sizeof(query) - 1) > 0);
            SSL_shutdown(cl);
            sent = true;
        }
        int n;
        while ((n = BIO_read(wb, buf, sizeof(buf))) > 0) {
            FUZZ_CHECK(len + (size_t)n <= sizeof(out) && write(p.fd, buf, (size_t)n) == n);
            memcpy(out + len, buf, (size_t)n);
            len += (size_t)n;
        }
        rng_side = 0;
        fuzz_loop_once();
        ssize_t r;
        while ((r = read(p.fd, buf, sizeof(buf))) > 0)
            BIO_write(rb, buf, (int)r);
        if (sent && !p.shut) {
            FUZZ_CHECK(shutdown(p.fd, SHUT_WR) == 0);
            p.shut = true;
        }
    }
    FUZZ_CHECK(s.ready && (s.events & MR_CONN_EOF));
    char path[4096];
    snprintf(path, sizeof(path), "%s%s", prefix, name);
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f && fwrite(out, 1, len, f) == len && fclose(f) == 0);
    SSL_free(cl);
    SSL_CTX_free(cctx);
    fuzz_conn_close(&p, c);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    FUZZ_CHECK(RAND_set_rand_method(&fixed_rand));
    rng_reset();
    EVP_PKEY *key;
    X509 *cert = self_signed(&key);
    for (int i = 0; i < 4; i++)
        contexts[i] = server_ctx(cert, key, i & 1, i & 2);
    X509_free(cert); /* the contexts hold their own references */
    EVP_PKEY_free(key);
    const char *rec = getenv("MR_FUZZ_TLS_RECORD");
    if (rec) { /* scripts/fuzz_corpus.py's TLS seeds that complete the handshake */
        record(rec, "13", 0);
        record(rec, "12", TLS1_2_VERSION);
        exit(0);
    }
    return 0;
}

/* TLS starts, with the peer's first k bytes handed over as opt says. */
static void start(mr_conn *c, seen *s, fuzz_peer *p, uint8_t opt, size_t k)
{
    bool behind_request = opt & 4;
    if (behind_request) {
        mr_conn_read_enable(c, true);
        fuzz_send_plain_first(p, c, &s->plain_in, k);
    }
    s->tls = true;
    FUZZ_CHECK(mr_conn_start_tls(c, contexts[opt & 3], true, NULL));
    if (!behind_request) {
        FUZZ_CHECK(mr_conn_tls_pre_add(c, p->data, k));
        p->data += k;
        p->left -= k;
        mr_conn_read_enable(c, true);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FUZZ_CONN_HEAD)
        return 0;
    rng_reset();
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
    start(c, &s, &p, opt, k);
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
