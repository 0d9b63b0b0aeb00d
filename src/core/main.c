/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core/main.c - command line, start-up and shutdown of the myrewrite process.
 *
 * Main thread: parses options and the config file, resolves the backend,
 * starts the log thread and the workers, then runs the accept loop until
 * SIGTERM/SIGINT, when it drains the workers within shutdown_timeout.
 */
#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "myrewrite/admin/admin.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/base/config.h"
#include "myrewrite/base/log.h"
#include "myrewrite/core/listener.h"
#include "myrewrite/core/rule_kinds.h"
#include "myrewrite/http/http.h"
#include "myrewrite/net/backend_addr.h"
#include "myrewrite/net/tls.h"
#include "myrewrite/net/tls_reload.h"
#include "myrewrite/schema/cache.h"
#include "myrewrite/session/reload.h"
#include "myrewrite/session/session.h"
#include "myrewrite/session/worker.h"

static const char usage[] =
    "Usage: myrewrite [options]\n"
    "A MySQL/MariaDB protocol proxy that relays statements unchanged unless a rule rewrites them.\n"
    "\n"
    "  -c, --config FILE       read settings from an INI file ([myrewrite] section)\n"
    "  -l, --listen HOST:PORT  TCP address for clients (default 127.0.0.1:6033)\n"
    "  -s, --socket PATH       also accept clients on this unix socket\n"
    "  -b, --backend ADDR      mysqld to relay to: HOST:PORT or /path/to/mysqld.sock\n"
    "                          (default 127.0.0.1:3306)\n"
    "  -r, --rules DIR         directory of *.rules files (default rules)\n"
    "  -w, --workers N         worker threads, 0 = one per core (default 0)\n"
    "      --log-level LEVEL   debug, info, warn or error (default info)\n"
    "      --set KEY=VALUE     set any config key (see --config-reference)\n"
    "      --check             validate the configuration and rules, print file:line\n"
    "                          errors, exit non-zero on any\n"
    "      --explain SQL       dry run: show the digest, the rules tried and the rewritten\n"
    "                          statement, without a backend (uses --rules)\n"
    "      --print-config      print the effective configuration and exit\n"
    "      --config-reference  print every config key with its default and meaning\n"
    "  -h, --help              this text\n"
    "  -V, --version           print the version\n"
    "\n"
    "Command-line options override the config file. Signals: SIGTERM/SIGINT stop accepting,\n"
    "let running statements finish (up to shutdown_timeout) and exit; SIGHUP reloads the\n"
    "rules (a set with errors is refused and the old one stays).\n";

typedef struct options {
    const char *config_path;
    const char *explain; /* SQL for the dry run */
    bool check, print_config;
} options;

enum { OPT_LOG_LEVEL = 256, OPT_CHECK, OPT_PRINT, OPT_REFERENCE, OPT_SET, OPT_EXPLAIN };

static const struct option long_opts[] = {
    {"config", required_argument, NULL, 'c'},
    {"listen", required_argument, NULL, 'l'},
    {"socket", required_argument, NULL, 's'},
    {"backend", required_argument, NULL, 'b'},
    {"rules", required_argument, NULL, 'r'},
    {"workers", required_argument, NULL, 'w'},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"set", required_argument, NULL, OPT_SET},
    {"check", no_argument, NULL, OPT_CHECK},
    {"explain", required_argument, NULL, OPT_EXPLAIN},
    {"print-config", no_argument, NULL, OPT_PRINT},
    {"config-reference", no_argument, NULL, OPT_REFERENCE},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

static const char *key_for_option(int c)
{
    switch (c) {
    case 'l': return "listen";
    case 's': return "socket";
    case 'b': return "backend";
    case 'r': return "rules_dir";
    case 'w': return "workers";
    case OPT_LOG_LEVEL: return "log_level";
    default: return NULL;
    }
}

/* `--set key=value` */
static bool set_pair(mr_config *c, const char *arg, mr_diag *d)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        mr_diag_error(d, "--set", 0, "expected KEY=VALUE, got '%s'", arg);
        return false;
    }
    char key[64];
    snprintf(key, sizeof(key), "%.*s", (int)(eq - arg), arg);
    return mr_config_set(c, key, eq + 1, "--set", 0, d);
}

/* First pass finds --config (the file is read before the other flags apply). */
static int parse_args(int argc, char **argv, mr_config *c, options *o, mr_diag *d)
{
    int ch;
    for (int pass = 0; pass < 2; pass++) {
        optind = 1;
        while ((ch = getopt_long(argc, argv, "c:l:s:b:r:w:hV", long_opts, NULL)) != -1) {
            if (ch == '?')
                return 2;
            if (pass == 0) {
                if (ch == 'h') {
                    fputs(usage, stdout);
                    return 0;
                }
                if (ch == 'V') {
                    printf("myrewrite %s\n", MYREWRITE_VERSION);
                    return 0;
                }
                if (ch == OPT_REFERENCE) {
                    mr_config_reference(stdout);
                    return 0;
                }
                if (ch == 'c')
                    o->config_path = optarg;
                continue;
            }
            const char *key = key_for_option(ch);
            if (key)
                mr_config_set(c, key, optarg, "command line", 0, d);
            else if (ch == OPT_SET)
                set_pair(c, optarg, d);
            else if (ch == OPT_CHECK)
                o->check = true;
            else if (ch == OPT_PRINT)
                o->print_config = true;
            else if (ch == OPT_EXPLAIN)
                o->explain = optarg;
        }
        if (pass == 0 && o->config_path)
            mr_config_load(c, o->config_path, d);
        if (optind < argc) {
            mr_diag_error(d, "command line", 0, "unexpected argument '%s'", argv[optind]);
            return 2;
        }
    }
    return -1; /* go on */
}

/* The proxy's and the console's passwords are read from the config file:
 * when every user of the machine can read that file, they can read the
 * passwords. Fills msg and returns true then. */
static bool secrets_exposed(const char *path, const mr_config *c, char *msg, size_t n)
{
    struct stat st;
    if (!path || (!c->proxy_password[0] && !c->admin_password[0]) || stat(path, &st) != 0 ||
        !(st.st_mode & S_IROTH))
        return false;
    snprintf(msg, n,
             "%s sets a password and is readable by every user of this machine "
             "(mode %03o); chmod o-r it",
             path, (unsigned)(st.st_mode & 0777));
    return true;
}

/* TLS toward clients: the context is built here, on the main thread, so a
 * bad file is a start-up error and no worker ever reads one. */
static void validate_tls(mr_config *c, mr_proxy *p, mr_diag *d)
{
    char err[400];
    p->require_tls = c->require_tls;
    if (!c->tls_cert[0] || !c->tls_key[0]) {
        if (c->tls_cert[0] || c->tls_key[0])
            mr_diag_error(d, c->tls_cert[0] ? "tls_key" : "tls_cert", 0,
                          "tls_cert and tls_key go together: set both or neither");
        if (c->tls_ca[0])
            mr_diag_error(d, "tls_ca", 0, "needs tls_cert and tls_key");
        if (p->require_tls)
            mr_diag_error(d, "require_tls", 0, "yes needs tls_cert and tls_key");
        return;
    }
    p->client_tls = mr_tls_server_ctx(c, err, sizeof(err));
    p->client_tls_on = p->client_tls != NULL;
    if (!p->client_tls)
        mr_diag_error(d, "tls", 0, "%s", err);
}

/* TLS toward the backend: needed for backend_tls, and for clients that come
 * over TLS, which are never relayed in clear to a backend offering TLS. */
static void validate_backend_tls(mr_config *c, mr_proxy *p, mr_diag *d)
{
    char err[400];
    mr_addr a;
    p->backend_tls_mode = (int)mr_backend_tls_parse(c->backend_tls);
    if (p->backend_tls_mode >= MR_BTLS_VERIFY_CA && !c->backend_tls_ca[0]) {
        mr_diag_error(d, "backend_tls_ca", 0, "backend_tls = %s needs backend_tls_ca",
                      c->backend_tls);
        return;
    }
    if (!c->backend_tls_cert[0] != !c->backend_tls_key[0]) {
        mr_diag_error(d, c->backend_tls_cert[0] ? "backend_tls_key" : "backend_tls_cert", 0,
                      "backend_tls_cert and backend_tls_key go together: set both or neither");
        return;
    }
    if (p->backend_tls_mode == MR_BTLS_OFF && !p->client_tls)
        return;
    if (mr_addr_parse(c->backend, &a))
        snprintf(p->backend_tls_host, sizeof(p->backend_tls_host), "%s",
                 a.is_unix ? "localhost" : a.host);
    mr_backend_tls mode =
        p->backend_tls_mode ? (mr_backend_tls)p->backend_tls_mode : MR_BTLS_PREFER;
    p->backend_tls = mr_tls_backend_ctx(c, mode, err, sizeof(err));
    p->backend_tls_on = p->backend_tls != NULL;
    if (!p->backend_tls)
        mr_diag_error(d, "backend_tls", 0, "%s", err);
}

static bool validate(mr_config *c, mr_proxy *p, mr_diag *d)
{
    mr_addr a;
    char err[400];
    if (!mr_addr_parse(c->listen, &a) || a.is_unix)
        mr_diag_error(d, "listen", 0, "'%s' must be a TCP host:port (use socket = for unix)",
                      c->listen);
    if (c->relay_buffer < 16384)
        mr_diag_error(d, "relay_buffer", 0, "must be at least 16K");
    if (c->max_packet_size < 1024)
        mr_diag_error(d, "max_packet_size", 0, "must be at least 1K");
    if (!mr_backend_resolve(p, c->backend, err, sizeof(err)))
        mr_diag_error(d, "backend", 0, "%s", err);
    validate_tls(c, p, d);
    validate_backend_tls(c, p, d);
    mr_tls_loaded(c);
    return d->errors == 0;
}

/* `--explain`: the front end's verdict on one statement, no backend needed. */
static int explain(mr_ruleset *rules, const char *sql, mr_diag *d)
{
    if (!rules || d->errors) {
        fprintf(stderr, "myrewrite: the rules have errors (above); nothing explained\n");
        return 1;
    }
    mr_stmt_ctx ctx = {0};
    mr_features_explain_ports(&ctx);
    mr_rules_explain(rules, sql, strlen(sql), &ctx, stdout);
    return 0;
}

static void on_sighup(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    mr_info(0, "received SIGHUP: reloading rules, and TLS files that changed");
    mr_rules_reload(arg, NULL);
    char msg[600];
    mr_tls_reload(arg, true, msg, sizeof(msg)); /* logs what it did */
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    mr_info(0, "received %s: draining connections", sig == SIGINT ? "SIGINT" : "SIGTERM");
    event_base_loopexit(arg, NULL);
}

/* Joins every worker, forcing the stragglers once the deadline passes. */
static void stop_workers(mr_proxy *p)
{
    struct timespec deadline = mr_deadline_in(CLOCK_REALTIME, p->cfg->shutdown_timeout_ms);
    for (unsigned i = 0; i < p->nworkers; i++)
        mr_worker_signal(&p->workers[i], MR_WORKER_MSG_DRAIN);
    for (unsigned i = 0; i < p->nworkers; i++) {
        if (pthread_timedjoin_np(p->workers[i].thread, NULL, &deadline) == ETIMEDOUT) {
            mr_warn(0, "worker %u still busy after shutdown_timeout; closing its connections", i);
            mr_worker_signal(&p->workers[i], MR_WORKER_MSG_STOP);
        } else {
            p->workers[i].joined = true;
        }
    }
}

static bool start_workers(mr_proxy *p, mr_ruleset *rules)
{
    mr_shared_rules *shared = mr_rules_publish_initial(p, rules);
    p->workers = calloc(p->nworkers, sizeof(*p->workers));
    if (!shared || !p->workers)
        return false;
    for (unsigned i = 0; i < p->nworkers; i++) {
        if (!mr_worker_start(&p->workers[i], p, i, shared)) {
            mr_error(0, "cannot start worker %u", i);
            return false;
        }
    }
    return true;
}

/* Descriptors the proxy keeps for itself: the listeners and their reserves,
 * the workers' pipes and rings, the log, the console, HTTP and the own
 * connections. A generous round figure, for the estimate logged below. */
#define FD_OWN_USE 64

/* The soft RLIMIT_NOFILE raised to the hard one: a client takes two
 * descriptors (its socket and its server's), and the listeners refuse
 * clients once the limit is reached. The log says what that allows. */
static void raise_fd_limit(const mr_config *c)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        mr_warn(0, "cannot read the descriptor limit: %s", strerror(errno));
        return;
    }
    rlim_t was = rl.rlim_cur;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            mr_warn(0, "cannot raise the descriptor limit to %llu: %s",
                    (unsigned long long)rl.rlim_max, strerror(errno));
            rl.rlim_cur = was;
        }
    }
    unsigned long long lim = rl.rlim_cur, room = lim > FD_OWN_USE ? (lim - FD_OWN_USE) / 2 : 0;
    if (room < c->max_connections)
        mr_warn(0,
                "descriptor limit %llu (was %llu): room for about %llu clients, fewer than "
                "max_connections (%llu); clients past it are refused with ERR 1040",
                lim, (unsigned long long)was, room, (unsigned long long)c->max_connections);
    else
        mr_info(0,
                "descriptor limit %llu (was %llu): room for about %llu clients (max_connections "
                "%llu)",
                lim, (unsigned long long)was, room, (unsigned long long)c->max_connections);
}

/* Listening: serves until SIGTERM or SIGINT. */
static void serve(mr_config *c, mr_proxy *p, struct event_base *base)
{
    struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, base);
    struct event *sigint = evsignal_new(base, SIGINT, on_signal, base);
    struct event *sighup = evsignal_new(base, SIGHUP, on_sighup, p);
    event_add(sigterm, NULL);
    event_add(sigint, NULL);
    event_add(sighup, NULL);
    mr_info(0, "myrewrite %s listening on %s%s%s, backend %s, %u workers", MYREWRITE_VERSION,
            c->listen, c->socket[0] ? " and " : "", c->socket, p->backend_name, p->nworkers);
    mr_backend_watch_start(p, c->backend);
    event_base_dispatch(base);
    event_free(sigterm);
    event_free(sigint);
    event_free(sighup);
    /* Freeing the events gives the signals back their default action; a
     * second SIGTERM now (a supervisor or test repeating it while the
     * last frees run) would turn a clean stop into death by signal. */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
}

static int run(mr_config *c, mr_proxy *p, mr_ruleset *rules)
{
    raise_fd_limit(c);
    struct event_base *base = event_base_new();
    mr_schema_cache_on_load(mr_session_wake_parked, p);
    mr_schema_cache_start(c, p->backend_name);
    mr_schema_cache_preload(rules); /* the keys the rules need, before the first statement */
    mr_features_start(p);
    mr_features_prepare(p, rules); /* before the workers see the rules */
    mr_features_configure(p, rules);
    if (!base || !start_workers(p, rules))
        return 1;
    mr_features_before_listen(p); /* delayed: the staging tables exist before a statement */
    mr_listener *l = mr_listener_start(base, p);
    /* A listener, the console or HTTP that cannot start ends the run the
     * same way as SIGTERM, so nothing started is left behind. */
    bool up = l && mr_admin_start(p) && mr_http_start(p);
    if (up)
        serve(c, p, base);
    mr_http_stop();
    mr_listener_stop(l);
    mr_admin_stop();                     /* before the workers: the console reads their counters */
    mr_schema_cache_on_load(NULL, NULL); /* the workers' pipes close below */
    mr_features_drain(p);                /* group commit's last answers go to the workers */
    stop_workers(p);
    for (unsigned i = 0; i < p->nworkers; i++)
        mr_worker_join(&p->workers[i]);
    mr_backend_watch_stop(); /* after the workers, which wake it */
    mr_features_stop(p);     /* queue's releases, then delayed's final flushes */
    mr_schema_cache_stop();
    mr_shared_rules_release(p->rules);
    p->rules = NULL;
    event_base_free(base);
    free(p->workers);
    mr_info(0, "stopped");
    return up ? 0 : 1;
}

int main(int argc, char **argv)
{
    static mr_config cfg;
    static mr_proxy proxy;
    options o = {0};
    mr_diag d = {.out = stderr};

    mr_config_defaults(&cfg);
    int rc = parse_args(argc, argv, &cfg, &o, &d);
    if (rc >= 0) {
        if (rc == 2)
            fputs("Try 'myrewrite --help'.\n", stderr);
        mr_config_free(&cfg);
        return rc;
    }
    proxy.cfg = &cfg;
    proxy.rule_kinds = mr_rule_kinds_all;
    pthread_mutex_init(&proxy.rules_lock, NULL);
    pthread_mutex_init(&proxy.reload_lock, NULL);
    pthread_mutex_init(&proxy.backend_lock, NULL);
    pthread_mutex_init(&proxy.tls_lock, NULL);
    unsigned n = cfg.workers ? (unsigned)cfg.workers : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    proxy.nworkers = n ? n : 1;
    if (o.explain) { /* needs the rules only, not a reachable backend */
        mr_ruleset *rules = mr_rules_load_configured(&cfg, mr_rule_kinds_all, 1, &d);
        rc = explain(rules, o.explain, &d);
        mr_ruleset_free(rules);
        mr_config_free(&cfg);
        return rc;
    }
    validate(&cfg, &proxy, &d);
    mr_ruleset *rules = mr_rules_load_configured(&cfg, mr_rule_kinds_all, proxy.nworkers, &d);
    if (d.errors) {
        mr_ruleset_free(rules);
        fprintf(stderr, "myrewrite: %d configuration error%s\n", d.errors, d.errors > 1 ? "s" : "");
        mr_config_free(&cfg);
        return 1;
    }
    char exposed[1200]; /* a path that long is cut short, the warning stays */
    bool warn_exposed = secrets_exposed(o.config_path, &cfg, exposed, sizeof exposed);
    if (o.check || o.print_config) {
        if (warn_exposed)
            fprintf(stderr, "warning: %s\n", exposed);
        if (o.print_config)
            mr_config_dump(&cfg, stdout);
        else
            printf("configuration OK: %zu rules from %s\n", mr_ruleset_count(rules), cfg.rules_dir);
        mr_ruleset_free(rules);
        mr_config_free(&cfg);
        return 0;
    }
    mr_log_level level = MR_LOG_INFO;
    mr_log_level_parse(cfg.log_level, &level);
    mr_log_set_level(level);
    signal(SIGPIPE, SIG_IGN);
    mr_log_start();
    if (warn_exposed)
        mr_warn(0, "%s", exposed);
    rc = run(&cfg, &proxy, rules);
    mr_log_stop();
    mr_tls_ctx_free(proxy.client_tls);
    mr_tls_ctx_free(proxy.backend_tls);
    mr_config_free(&cfg);
    return rc;
}
