/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rules_load.c - loading rule files: defaults, every diagnostic with
 * its file:line, reporting all errors at once, directories and ordering.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "myrewrite/core/rule_kinds.h"
#include "myrewrite/delayed/rule.h"
#include "myrewrite/rules/kind.h"
#include "test_rules.h"

/* ---- successful loads ---- */

static void defaults_of_each_kind(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("# comment\n"
                             "[rewrite a]\n"
                             "pattern = SELECT * FROM t WHERE id = ?\n"
                             "replacement = SELECT id FROM t WHERE id = ?\n"
                             "\n"
                             "[regex b]\n"
                             "match = ^SELECT (.*) FROM u$\n"
                             "replace = SELECT $1 FROM u LIMIT 10\n"
                             "[block c]\n"
                             "statement = delete\n"
                             "where = missing\n"
                             "message = DELETE needs a WHERE\n");
    assert_int_equal(mr_ruleset_count(rs), 3);
    const mr_rule *a = mr_ruleset_rule(rs, 0);
    assert_string_equal(a->name, "a");
    assert_string_equal(a->file, "t.rules");
    assert_int_equal(a->line, 2);
    assert_int_equal(a->kind, MR_RULE_REWRITE);
    assert_true(a->enabled);
    assert_false(a->cont);
    assert_false(a->log_only);
    assert_int_equal(a->log, MR_RULE_LOG_OFF);
    assert_null(a->user);
    assert_null(a->schema);
    assert_string_equal(a->pattern, "SELECT * FROM t WHERE id = ?");
    assert_string_equal(a->replacement, "SELECT id FROM t WHERE id = ?");
    const mr_rule *b = mr_ruleset_rule(rs, 1);
    assert_int_equal(b->kind, MR_RULE_REGEX);
    assert_int_equal(b->line, 6);
    assert_string_equal(b->pattern, "^SELECT (.*) FROM u$");
    assert_string_equal(b->replacement, "SELECT $1 FROM u LIMIT 10");
    const mr_rule *c = mr_ruleset_rule(rs, 2);
    assert_int_equal(c->kind, MR_RULE_BLOCK);
    assert_string_equal(c->message, "DELETE needs a WHERE");
    assert_int_equal(c->err_code, 1148);
    assert_string_equal(c->sqlstate, "42000");
    assert_null(c->replacement);
    assert_null(mr_ruleset_rule(rs, 3));
    assert_int_equal(mr_ruleset_hits(rs, 0), 0);
    assert_int_equal(mr_ruleset_last_hit(rs, 0), 0);
    mr_ruleset_free(rs);
}

static void common_keys(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[block x]\n"
                             "pattern = DROP TABLE t\n"
                             "message = no\n"
                             "code = 1045\n"
                             "sqlstate = HY000\n"
                             "enabled = no\n"
                             "continue = yes\n"
                             "log_only = true\n"
                             "log = full\n"
                             "user = app\n"
                             "schema = shop\n");
    const mr_rule *r = mr_ruleset_rule(rs, 0);
    assert_false(r->enabled);
    assert_true(r->cont);
    assert_true(r->log_only);
    assert_int_equal(r->log, MR_RULE_LOG_FULL);
    assert_string_equal(r->user, "app");
    assert_string_equal(r->schema, "shop");
    assert_int_equal(r->err_code, 1045);
    assert_string_equal(r->sqlstate, "HY000");
    mr_ruleset_free(rs);
}

static void empty_text_gives_empty_set(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("# nothing here\n");
    assert_int_equal(mr_ruleset_count(rs), 0);
    mr_ruleset_free(rs);
    rs = mr_rules_empty(mr_rule_kinds_all, 4);
    assert_non_null(rs);
    assert_int_equal(mr_ruleset_count(rs), 0);
    assert_null(mr_ruleset_rule(rs, 0));
    mr_ruleset_free(rs);
    mr_ruleset_free(NULL);
}

static void null_diag_is_allowed(void **state)
{
    (void)state;
    assert_null(mr_rules_load_string("[nope x]\n", "t.rules", mr_rule_kinds_all, 1, NULL));
    mr_ruleset *rs = mr_rules_load_string("", "t.rules", mr_rule_kinds_all, 1, NULL);
    assert_non_null(rs);
    mr_ruleset_free(rs);
}

/* The loader knows the kinds of the table it is given, and no other: a
 * table of rewrite and delayed alone refuses [block ...] and lists only
 * those two, and the set it loads still takes DELAYED statements over. */
/* rules/kind_list.h makes both the tags and the table: entry i has tag i. */
static void tag_is_the_table_index(void **state)
{
    (void)state;
    size_t n = 0;
    for (; mr_rule_kinds_all[n]; n++)
        assert_int_equal(mr_rule_kinds_all[n]->type, n);
    assert_int_equal(n, MR_RULE_KIND_MAX);
}

static void kinds_come_from_the_table(void **state)
{
    (void)state;
    static mr_rule_kinds two[] = {&mr_rewrite_kind, &mr_delayed_kind, NULL};
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    mr_diag d = {.out = out};
    assert_null(mr_rules_load_string("[block b]\npattern = SELECT 1\nmessage = m\n", "t.rules", two,
                                     1, &d));
    fclose(out);
    assert_string_equal(text, "t.rules:1: unknown rule kind 'block' in [block b]; known kinds: "
                              "rewrite, delayed\n");
    free(text);
    mr_ruleset *rs = mr_rules_load_string("[delayed c]\ntable = test.c\ncolumns = n\nkey = id\n",
                                          "t.rules", two, 1, NULL);
    assert_non_null(rs);
    assert_ptr_equal(mr_ruleset_kinds(rs), two);
    assert_ptr_equal(mr_ruleset_rule(rs, 0)->entry, &mr_delayed_kind);
    mr_stmt_ctx ctx = {.schema = "test"};
    expect_sent(rs, &ctx, "UPDATE DELAYED c SET n = n + 1 WHERE id = 7", MR_ACT_REWRITE,
                "INSERT INTO `test`.`c_delayed` (`n`, `id`, `op`) VALUES (1, 7, 0)");
    mr_ruleset_free(rs);
    /* a table without delayed: the set has nothing that takes DELAYED over */
    static mr_rule_kinds one[] = {&mr_rewrite_kind, NULL};
    rs = mr_rules_empty(one, 1);
    expect_sent(rs, &ctx, "UPDATE DELAYED c SET n = n + 1 WHERE id = 7", MR_ACT_PASS,
                "UPDATE DELAYED c SET n = n + 1 WHERE id = 7");
    mr_ruleset_free(rs);
}

/* ---- section headers ---- */

static void unknown_kind(void **state)
{
    (void)state;
    expect_error("\n[rewrit x]\npattern = SELECT 1\n",
                 "t.rules:2: unknown rule kind 'rewrit' in [rewrit x]; known kinds: rewrite, "
                 "regex, block, queue, delayed, paginate\n");
}

static void missing_or_bad_name(void **state)
{
    (void)state;
    expect_error("[regex]\n",
                 "t.rules:1: [regex] needs one rule name after the kind, made of letters, "
                 "digits, _ - and . (like [regex no_star_orders])\n");
    expect_error("[block two words]\n",
                 "t.rules:1: [block two words] needs one rule name after the kind, made of "
                 "letters, digits, _ - and . (like [block no_star_orders])\n");
}

static void duplicate_name(void **state)
{
    (void)state;
    expect_error("[block x]\npattern = DROP TABLE t\nmessage = no\n"
                 "[rewrite x]\npattern = SELECT 1\nreplacement = SELECT 2\n",
                 "t.rules:4: rule name 'x' is already used by [block x] at t.rules:1; names must "
                 "be unique across all rule files\n");
}

/* ---- keys ---- */

static void unknown_key_lists_accepted_keys(void **state)
{
    (void)state;
    expect_error("[regex x]\nmatch = a\nreplace = b\nreplace_pattern = c\n",
                 "t.rules:4: unknown key 'replace_pattern' in [regex x]; regex rules take: match, "
                 "replace, caseless, global, require, enabled, continue, log_only, log, "
                 "log_sample, user, schema\n");
    expect_error("[rewrite x]\npattern = SELECT 1\nreplacement = SELECT 2\nmatch = a\n",
                 "t.rules:4: unknown key 'match' in [rewrite x]; rewrite rules take: pattern, "
                 "replacement, enabled, continue, log_only, log, log_sample, user, schema\n");
    expect_error("[block x]\npattern = SELECT 1\nmessage = m\nreplacement = a\n",
                 "t.rules:4: unknown key 'replacement' in [block x]; block rules take: pattern, "
                 "match, caseless, require, statement, where, message, code, sqlstate, dynamic, "
                 "enabled, continue, log_only, log, log_sample, user, schema\n");
}

static void key_given_twice(void **state)
{
    (void)state;
    expect_error("[rewrite x]\npattern = SELECT 1\nreplacement = SELECT 2\npattern = SELECT 3\n",
                 "t.rules:4: pattern given twice in [rewrite x] (first at line 2)\n");
}

static void bad_common_values(void **state)
{
    (void)state;
    const char *head = "[rewrite x]\npattern = SELECT 1\nreplacement = SELECT 2\n";
    char text[256];
    snprintf(text, sizeof text, "%senabled = maybe\n", head);
    expect_error(text, "t.rules:4: enabled = 'maybe' in [rewrite x]: expected yes or no\n");
    snprintf(text, sizeof text, "%scontinue = 2\n", head);
    expect_error(text, "t.rules:4: continue = '2' in [rewrite x]: expected yes or no\n");
    snprintf(text, sizeof text, "%slog_only = y\n", head);
    expect_error(text, "t.rules:4: log_only = 'y' in [rewrite x]: expected yes or no\n");
    snprintf(text, sizeof text, "%slog = verbose\n", head);
    expect_error(text, "t.rules:4: log = 'verbose' in [rewrite x]: expected off, digest or full\n");
    snprintf(text, sizeof text, "%slog = full\nlog_sample = 0\n", head);
    expect_error(text, "t.rules:5: log_sample = '0' in [rewrite x]: expected a whole number from 1 "
                       "(log every match) to 1000000000\n");
    snprintf(text, sizeof text, "%slog = full\nlog_sample = 1/10\n", head);
    expect_error(text, "t.rules:5: log_sample = '1/10' in [rewrite x]: expected a whole number "
                       "from 1 (log every match) to 1000000000\n");
    snprintf(text, sizeof text, "%slog_sample = 10\n", head);
    expect_error(text, "t.rules:4: log_sample in [rewrite x] needs log = digest or log = full (or "
                       "log_only = yes): the rule logs nothing to sample\n");
    snprintf(text, sizeof text, "%suser =\n", head);
    expect_error(text, "t.rules:4: user = '' in [rewrite x]: expected a name (leave the key out "
                       "to match any)\n");
    snprintf(text, sizeof text, "%sschema =\n", head);
    expect_error(text, "t.rules:4: schema = '' in [rewrite x]: expected a name (leave the key "
                       "out to match any)\n");
}

static void ini_syntax_errors(void **state)
{
    (void)state;
    expect_error("pattern = SELECT 1\n", "t.rules:1: key outside any [section]\n");
    expect_error("[rewrite x]\npattern = SELECT 1\nreplacement = SELECT 2\njunk\n",
                 "t.rules:4: expected 'key = value', '[section]' or a comment\n");
}

/* ---- rewrite ---- */

static void rewrite_missing_keys(void **state)
{
    (void)state;
    expect_error("[rewrite x]\npattern = SELECT 1\n",
                 "t.rules:1: [rewrite x] has no replacement; rewrite rules need pattern and "
                 "replacement\n");
    expect_error("[rewrite x]\nreplacement = SELECT 1\npattern =\n",
                 "t.rules:3: [rewrite x] has an empty pattern; rewrite rules need pattern and "
                 "replacement\n");
}

static void rewrite_pattern_errors(void **state)
{
    (void)state;
    expect_error("[rewrite x]\npattern = SELECT 'a\nreplacement = SELECT 1\n",
                 "t.rules:2: pattern in [rewrite x] does not lex: unterminated string at byte 8; "
                 "write one SQL statement\n");
    expect_error("[rewrite x]\npattern = SELECT 1; SELECT 2\nreplacement = SELECT 1\n",
                 "t.rules:2: pattern in [rewrite x] holds more than one statement; a rule takes "
                 "exactly one\n");
    expect_error("[rewrite x]\npattern = /* just a comment */\nreplacement = SELECT 1\n",
                 "t.rules:2: pattern in [rewrite x] is empty; write one SQL statement\n");
}

static void rewrite_replacement_errors(void **state)
{
    (void)state;
    expect_error("[rewrite x]\npattern = SELECT ?\nreplacement = SELECT `a\n",
                 "t.rules:3: replacement in [rewrite x] does not lex: unterminated quoted name at "
                 "byte 8; write one SQL statement\n");
    expect_error("[rewrite x]\npattern = SELECT ?\nreplacement = SELECT ?; SELECT 2\n",
                 "t.rules:3: replacement in [rewrite x] holds more than one statement; a rule "
                 "takes exactly one\n");
    expect_error("[rewrite x]\npattern = SELECT ?, ?\nreplacement = SELECT ?0\n",
                 "t.rules:3: replacement in [rewrite x] has a malformed slot at byte 8; write ? "
                 "(next literal) or ?1, ?2... (literal by position)\n");
    expect_error("[rewrite x]\npattern = SELECT ?, ?\nreplacement = SELECT ?1.5\n",
                 "t.rules:3: replacement in [rewrite x] has a malformed slot at byte 8; write ? "
                 "(next literal) or ?1, ?2... (literal by position)\n");
    expect_error("[rewrite x]\npattern = SELECT ?, ?\nreplacement = SELECT ?1a\n",
                 "t.rules:3: replacement in [rewrite x] has a malformed slot at byte 8; write ? "
                 "(next literal) or ?1, ?2... (literal by position)\n");
    expect_error("[rewrite x]\npattern = SELECT ?, ?\nreplacement = SELECT ?2, ?\n",
                 "t.rules:3: replacement in [rewrite x] mixes ? and ?N; use either ? for the "
                 "literals in order or ?1, ?2... throughout\n");
    expect_error("[rewrite x]\npattern = SELECT a FROM t WHERE b IN (?, ?)\n"
                 "replacement = SELECT a FROM t WHERE b IN (?1) AND c = ?2\n",
                 "t.rules:3: replacement in [rewrite x] uses literal ?2 but the pattern has 1; "
                 "each ?, signed number, IN (...) list and run of VALUES rows counts as one\n");
    expect_error("[rewrite x]\npattern = SELECT ?\nreplacement = SELECT ?, ?\n",
                 "t.rules:3: replacement in [rewrite x] uses literal ?2 but the pattern has 1; "
                 "each ?, signed number, IN (...) list and run of VALUES rows counts as one\n");
    expect_error("[rewrite x]\npattern = SELECT ?\nreplacement = SELECT /*!50000 ? */ 1\n",
                 "t.rules:3: replacement in [rewrite x] has ? inside an executable comment; "
                 "literal slots can only be used outside /*! ... */\n");
}

/* ---- regex ---- */

static void regex_errors(void **state)
{
    (void)state;
    expect_error("[regex x]\nmatch = SELECT (\nreplace = x\n",
                 "t.rules:2: match in [regex x] is not a valid regular expression: missing "
                 "closing parenthesis at offset 8\n");
    expect_error("[regex x]\nmatch = SELECT (a)(b)\nreplace = $3\n",
                 "t.rules:3: replace in [regex x] uses $3 but match has 2 capture groups\n");
    expect_error("[regex x]\nmatch = SELECT (a)\nreplace = ${2}\n",
                 "t.rules:3: replace in [regex x] uses $2 but match has 1 capture group\n");
    expect_error("[regex x]\nmatch = SELECT (a)\nreplace = cost $ 5\n",
                 "t.rules:3: replace in [regex x] has a malformed $ reference at byte 6; write "
                 "$1 or ${1} for a group, ${name} for a named group, $$ for a dollar sign\n");
    expect_error("[regex x]\nmatch = SELECT (?<col>a)\nreplace = ${cold}\n",
                 "t.rules:3: replace in [regex x] has an unknown group name at byte 1; write $1 "
                 "or ${1} for a group, ${name} for a named group, $$ for a dollar sign\n");
    expect_error("[regex x]\nmatch = SELECT\n",
                 "t.rules:1: [regex x] has no replace; regex rules need match and replace\n");
    expect_error("[regex x]\nmatch = a\nreplace = b\nrequire = two words\n",
                 "t.rules:4: require = 'two words' in [regex x]: expected none, or one word of "
                 "letters, digits and _ that every matching statement holds\n");
    expect_error("[regex x]\nmatch = a\nreplace = b\nglobal = sometimes\n",
                 "t.rules:4: global = 'sometimes' in [regex x]: expected yes or no\n");
}

static void regex_accepts_named_groups_and_dollars(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[regex x]\nmatch = SELECT (?<col>\\w+) FROM t\n"
                             "replace = SELECT ${col}, $col, $1, $$ FROM t\n");
    assert_int_equal(mr_ruleset_count(rs), 1);
    mr_ruleset_free(rs);
}

/* ---- block ---- */

static void block_errors(void **state)
{
    (void)state;
    expect_error("[block x]\nmessage = no\n",
                 "t.rules:1: [block x] says nothing to block; block rules take exactly one of "
                 "pattern (SQL with ?), match (regex) or statement + where\n");
    expect_error("[block x]\nmessage = no\npattern = SELECT 1\nmatch = x\n",
                 "t.rules:1: [block x] has more than one of pattern, match and statement; block "
                 "rules take exactly one of pattern (SQL with ?), match (regex) or statement + "
                 "where\n");
    expect_error("[block x]\npattern = SELECT 1\n",
                 "t.rules:1: [block x] has no message; block rules need the message the client "
                 "gets\n");
    expect_error("[block x]\nmessage = no\nstatement = delete\n",
                 "t.rules:3: [block x] has statement but no where; write where = missing\n");
    expect_error("[block x]\nmessage = no\npattern = SELECT 1\nwhere = missing\n",
                 "t.rules:4: where in [block x] only applies with statement = delete|update\n");
    expect_error("[block x]\nmessage = no\nstatement = insert\nwhere = missing\n",
                 "t.rules:3: statement = 'insert' in [block x]: expected delete, update, or both "
                 "separated by a comma\n");
    expect_error("[block x]\nmessage = no\nstatement = delete\nwhere = present\n",
                 "t.rules:4: where = 'present' in [block x]: expected missing (the only condition "
                 "so far)\n");
    expect_error("[block x]\nmessage = no\npattern = SELECT 1\ncaseless = no\n",
                 "t.rules:4: caseless in [block x] only applies with match\n");
    expect_error("[block x]\nmessage = no\npattern = SELECT 1\nrequire = t\n",
                 "t.rules:4: require in [block x] only applies with match\n");
    expect_error("[block x]\nmessage = no\npattern = SELECT 1\ncode = 70000\n",
                 "t.rules:4: code = '70000' in [block x]: expected an error number from 1 to "
                 "65535\n");
    expect_error("[block x]\nmessage = no\npattern = SELECT 1\nsqlstate = 4200\n",
                 "t.rules:4: sqlstate = '4200' in [block x]: expected 5 digits or capital "
                 "letters, like 42000 or HY000\n");
    expect_error("[block x]\nmessage = no\nmatch = (\n",
                 "t.rules:3: match in [block x] is not a valid regular expression: missing "
                 "closing parenthesis at offset 1\n");
    expect_error("[block x]\nmessage = no\npattern = DELETE FROM 't\n",
                 "t.rules:3: pattern in [block x] does not lex: unterminated string at byte 13; "
                 "write one SQL statement\n");
}

static void block_statement_lists(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[block x]\nmessage = no\nstatement = delete, UPDATE\n"
                             "where = missing\n");
    assert_int_equal(mr_ruleset_count(rs), 1);
    mr_ruleset_free(rs);
}

/* ---- all errors at once ---- */

static void every_error_is_reported(void **state)
{
    (void)state;
    loaded l = load("[rewrite a]\n"
                    "pattern = SELECT 'x\n"
                    "replacement = SELECT 1\n"
                    "bogus = 1\n"
                    "[regex b]\n"
                    "match = (\n"
                    "replace = x\n"
                    "[block c]\n"
                    "pattern = SELECT 1\n"
                    "[frob d]\n"
                    "whatever = 1\n"
                    "[rewrite e]\n"
                    "pattern = SELECT 1\n"
                    "replacement = SELECT 1\n"
                    "enabled = perhaps\n");
    assert_null(l.rs);
    assert_int_equal(l.errors, 6);
    /* keys are checked as they are read, values when the section ends;
     * the keys of an unknown kind's section are not checked */
    assert_string_equal(
        l.diag,
        "t.rules:4: unknown key 'bogus' in [rewrite a]; rewrite rules take: pattern, "
        "replacement, enabled, continue, log_only, log, log_sample, user, schema\n"
        "t.rules:2: pattern in [rewrite a] does not lex: unterminated string at byte 8; write "
        "one SQL statement\n"
        "t.rules:6: match in [regex b] is not a valid regular expression: missing closing "
        "parenthesis at offset 1\n"
        "t.rules:8: [block c] has no message; block rules need the message the client gets\n"
        "t.rules:10: unknown rule kind 'frob' in [frob d]; known kinds: rewrite, regex, block, "
        "queue, delayed, paginate\n"
        "t.rules:15: enabled = 'perhaps' in [rewrite e]: expected yes or no\n");
    loaded_free(&l);
}

/* ---- directories ---- */

typedef struct tmpdir {
    char path[256];
} tmpdir;

static void make_dir(tmpdir *t)
{
    const char *base = getenv("TMPDIR");
    snprintf(t->path, sizeof t->path, "%s/mr_rules_XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(t->path));
}

static void put_file(const tmpdir *t, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", t->path, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void remove_dir(const tmpdir *t)
{
    DIR *d = opendir(t->path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", t->path, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(t->path);
}

static mr_ruleset *load_dir(const tmpdir *t, char **diag, int *errors)
{
    size_t len;
    mr_diag d = {open_memstream(diag, &len), 0};
    mr_ruleset *rs = mr_rules_load_dir(t->path, mr_rule_kinds_all, 2, &d);
    fclose(d.out);
    *errors = d.errors;
    return rs;
}

static void dir_files_in_name_order(void **state)
{
    (void)state;
    tmpdir t;
    make_dir(&t);
    put_file(&t, "20-b.rules", "[block second]\npattern = DROP TABLE b\nmessage = no\n");
    put_file(&t, "10-a.rules", "[block first]\npattern = DROP TABLE a\nmessage = no\n");
    put_file(&t, "notes.txt", "[nonsense\n");
    put_file(&t, ".#10-a.rules", "[nonsense\n");
    char *diag = NULL;
    int errors;
    mr_ruleset *rs = load_dir(&t, &diag, &errors);
    assert_non_null(rs);
    assert_int_equal(errors, 0);
    assert_int_equal(mr_ruleset_count(rs), 2);
    assert_string_equal(mr_ruleset_rule(rs, 0)->name, "first");
    char want[512];
    snprintf(want, sizeof want, "%s/10-a.rules", t.path);
    assert_string_equal(mr_ruleset_rule(rs, 0)->file, want);
    assert_string_equal(mr_ruleset_rule(rs, 1)->name, "second");
    mr_ruleset_free(rs);
    free(diag);
    remove_dir(&t);
}

static void dir_errors_from_every_file(void **state)
{
    (void)state;
    tmpdir t;
    make_dir(&t);
    put_file(&t, "a.rules", "[block x]\npattern = DROP TABLE a\nmessage = no\n");
    put_file(&t, "b.rules", "\n[regex x]\nmatch = a\nreplace = b\n[block y]\nmessage = m\n");
    char *diag = NULL;
    int errors;
    mr_ruleset *rs = load_dir(&t, &diag, &errors);
    assert_null(rs);
    assert_int_equal(errors, 2);
    char want[1024];
    snprintf(want, sizeof want,
             "%s/b.rules:2: rule name 'x' is already used by [block x] at %s/a.rules:1; names "
             "must be unique across all rule files\n"
             "%s/b.rules:5: [block y] says nothing to block; block rules take exactly one of "
             "pattern (SQL with ?), match (regex) or statement + where\n",
             t.path, t.path, t.path);
    assert_string_equal(diag, want);
    free(diag);
    remove_dir(&t);
}

static void empty_and_missing_dirs(void **state)
{
    (void)state;
    tmpdir t;
    make_dir(&t);
    char *diag = NULL;
    int errors;
    mr_ruleset *rs = load_dir(&t, &diag, &errors);
    assert_non_null(rs);
    assert_int_equal(mr_ruleset_count(rs), 0);
    mr_ruleset_free(rs);
    free(diag);
    remove_dir(&t);
    diag = NULL;
    assert_null(load_dir(&t, &diag, &errors));
    assert_int_equal(errors, 1);
    char want[512];
    snprintf(want, sizeof want, "%s: cannot open the rules directory: No such file or directory\n",
             t.path);
    assert_string_equal(diag, want);
    free(diag);
}

static void shipped_examples_load(void **state)
{
    (void)state;
    char *diag = NULL;
    size_t len;
    mr_diag d = {open_memstream(&diag, &len), 0};
    /* the source tree's rules/, found from this file's path */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *cut = strstr(dir, "tests/unit/");
    assert_non_null(cut);
    strcpy(cut, "rules");
    mr_ruleset *rs = mr_rules_load_dir(dir, mr_rule_kinds_all, 1, &d);
    fclose(d.out);
    if (!rs)
        fail_msg("rules/ does not load:\n%s", diag);
    assert_true(mr_ruleset_count(rs) >= 3);
    for (size_t i = 0; i < mr_ruleset_count(rs); i++)
        assert_false(mr_ruleset_rule(rs, i)->enabled);
    mr_ruleset_free(rs);
    free(diag);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_of_each_kind),
        cmocka_unit_test(common_keys),
        cmocka_unit_test(empty_text_gives_empty_set),
        cmocka_unit_test(null_diag_is_allowed),
        cmocka_unit_test(unknown_kind),
        cmocka_unit_test(missing_or_bad_name),
        cmocka_unit_test(duplicate_name),
        cmocka_unit_test(unknown_key_lists_accepted_keys),
        cmocka_unit_test(key_given_twice),
        cmocka_unit_test(bad_common_values),
        cmocka_unit_test(ini_syntax_errors),
        cmocka_unit_test(rewrite_missing_keys),
        cmocka_unit_test(rewrite_pattern_errors),
        cmocka_unit_test(rewrite_replacement_errors),
        cmocka_unit_test(regex_errors),
        cmocka_unit_test(regex_accepts_named_groups_and_dollars),
        cmocka_unit_test(block_errors),
        cmocka_unit_test(block_statement_lists),
        cmocka_unit_test(every_error_is_reported),
        cmocka_unit_test(dir_files_in_name_order),
        cmocka_unit_test(dir_errors_from_every_file),
        cmocka_unit_test(empty_and_missing_dirs),
        cmocka_unit_test(shipped_examples_load),
        cmocka_unit_test(kinds_come_from_the_table),
        cmocka_unit_test(tag_is_the_table_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
