/*
** tests/test_preset_rows.c - which task rows a protocol preset reads
** (tasks/retrieval.h): today's run keys are the ones the binary printed
** before presets; every row a preset does not read is refused when given
** with it, at its place in the sweep file, and refusing changes no key.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/config.h"
#include "harness/core/params.h"
#include "harness/sweep/registry.h"
#include "tasks/protocols.h"
#include "tasks/task.h"
#include "tests/shell.h"

static char out[1 << 16];

static void setup(void)
{
    shell_setup("preset-rows");
    (void)exists;
    (void)sql_long;
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
}

/* The params JSON (the run key's) of today's line and topic, as the binary
** before presets printed it (`lenx show task line` at commit 9d11bb6). */
Test(preset_rows, todays_run_keys_are_unchanged, .init = setup, .fini = teardown)
{
    cr_assert_eq(sh(out, sizeof out, "$L show task line"), 0, "%s", out);
    cr_expect(strstr(out, "\"params\": {\"template\":\"longchat\",\"digits\":5,\"lines\":0,\"scorer\":\"first\","
                          "\"samples\":20,\"depths\":5}\n") != NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L show task topic"), 0, "%s", out);
    cr_expect(strstr(out, "\"params\": {\"template\":\"longchat\",\"topics\":0,\"replies\":2,\"samples\":50}\n") != NULL,
              "%s", out);
    cr_assert_eq(sh(out, sizeof out, "$L show task line protocol=lenx"), 0, "%s", out);
    cr_expect(strstr(out, "protocol") == NULL, "lenx is the default and stays out of the key: %s", out);
}

/* A preset reads no task row but protocol, data and (a preset that makes as
** many cases as asked) samples: every other row given under it is refused,
** as the table of presets says, and refusing changes no run key. */
Test(preset_rows, rows_a_preset_does_not_read_are_refused)
{
    for (int i = 0; i < lx_n_protocols; i++) {
        const struct lx_protocol *p = &lx_protocols[i];
        const struct lx_task *t = lx_task_find(p->task);
        cr_assert_not_null(t, "%s", p->task);
        void *params = calloc(1, t->schema.size);
        lx_params_defaults(&t->schema, params);
        struct lx_doc doc;
        struct lx_error err = {{0}};
        cr_assert_eq(lx_doc_load_text(&doc, p->name, "protocol", &err), LX_OK, "%s", err.msg);
        cr_assert_eq(lx_params_set(&t->schema, params, "protocol", doc.root, "task", &err), LX_OK, "%s", err.msg);
        lx_doc_release(&doc);
        for (int r = 0; r < t->schema.n_rows; r++) {
            const char *row = t->schema.rows[r].name;
            if (strcmp(row, "protocol") == 0 || strcmp(row, "data") == 0)
                continue;
            int read = strcmp(row, "samples") == 0 && p->make && !p->samples;
            cr_expect_eq(lx_param_unmet(&t->schema, params, row) == NULL, read, "%s, protocol %s: '%s' %s",
                         p->task, p->name, row, read ? "is read, and refused" : "is not read, and not refused");
        }
        struct lx_schema plain = t->schema;
        plain.refusals = NULL;
        struct lx_buf a = {0}, b = {0};
        lx_params_json(&t->schema, params, &a);
        lx_params_json(&plain, params, &b);
        cr_expect_str_eq(lx_buf_str(&a), lx_buf_str(&b), "%s, protocol %s: the refusals changed the key",
                         p->task, p->name);
        lx_buf_free(&a), lx_buf_free(&b);
        free(params);
    }
}

/* A sweep that gives such a row says where and why; so does `show task`. */
Test(preset_rows, an_unread_row_is_an_error_at_its_place, .init = setup, .fini = teardown)
{
    write_file("s.yaml", "name: s\nmodels:\n  m: {checkpoint: M}\nmethods: [rope]\ntasks:\n"
                         "  - passkey: {protocol: landmark, digits: 7}\nlengths: [100]\n");
    cr_expect_eq(sh(out, sizeof out, "sed -i \"s|M}|$R/../shared/models/stories260K/stories260K.bin}|\" s.yaml && "
                    "$L run s.yaml --db r.db"), 2, "%s", out);
    cr_expect(strstr(out, "s.yaml:6:35: ") && strstr(out, "'digits' applies only with protocol=lenx"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --protocol kamradt samples=3"), 2, "%s", out);
    cr_expect(strstr(out, "'samples' applies only with protocol!=kamradt\n  hint: drop it, or set protocol to "
                     "another value than kamradt"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --protocol ruler samples=3 --length 600 > /dev/null"), 0,
                 "%s", out);
}
