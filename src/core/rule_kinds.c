/*
 * core/rule_kinds.c - the table of rule kinds (core/rule_kinds.h). A new kind
 * is a folder with its entry (its keys, parse and apply: rules/kind.h) and
 * one line here.
 *
 * Pure, any thread: a const table.
 */
#include "myrewrite/core/rule_kinds.h"

#include "myrewrite/delayed/rule.h"
#include "myrewrite/paginate/rule.h"
#include "myrewrite/queue/rule.h"
#include "myrewrite/rules/kind.h"

mr_rule_kinds mr_rule_kinds_all[] = {
    &mr_rewrite_kind, &mr_regex_kind,    &mr_block_kind, &mr_queue_kind,
    &mr_delayed_kind, &mr_paginate_kind, NULL,
};
