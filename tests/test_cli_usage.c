/*
** tests/test_cli_usage.c - the lenx binary used wrongly, as a new researcher
** does: stray arguments, options a mode does not read, short spellings, names
** mistyped. Each is refused with exit 2 and a message that names what was
** wrong, never run with the argument ignored. (tests/test_cli.c holds the
** sweeps, views and stores end to end.)
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/shell.h"

static void setup(void)
{
    shell_setup("cliu");
    (void)sql_long;
}

TestSuite(cli_usage, .init = setup, .fini = teardown, .timeout = 60);

#define S260 "$R/../shared/models/stories260K"

/* `lenx report -o` was matched by hand as the first two positionals: a missing value, -o beside --output
** and a stray argument after -o FILE were each reported as "unexpected argument '-o'". */
Test(cli_usage, report_reads_o_as_output)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L report --db none.db -o"), 2, "%s", out);
    cr_expect(strstr(out, "'--output' needs a value") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L report --db none.db -o a.html --output b.html"), 2, "%s", out);
    cr_expect(strstr(out, "'--output' is given twice ('a.html', then 'b.html')") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L report --db none.db -o a.html extra"), 2, "%s", out);
    cr_expect(strstr(out, "unexpected argument 'extra'") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L report --db none.db --sweep -o"), 2, "%s", out);  /* a value, not -o */
    cr_expect(strstr(out, "report needs an output file") != NULL, "%s", out);
    cr_expect(!exists("a.html") && !exists("b.html"));
}

/* A stray argument was reported as a missing option: `score --model M --text F extra` said
** "score needs --model and --text", `tokenize --tokenizer T extra` "tokenize needs --tokenizer PATH",
** `list methods extra` "list what? ''". */
Test(cli_usage, a_stray_argument_is_named)
{
    static const char *const cmds[] = {
        "score --model " S260 "/stories260K.bin --text t.txt extra",
        "tokenize --tokenizer " S260 "/tok512.bin --text t.txt extra",
        "serve --model " S260 "/stories260K.bin --port 0 extra",
        "list methods extra",
        "show sweep tiny extra --db none.db",
        "show model " S260 "/stories260K.bin extra",
    };
    write_file("t.txt", "Once upon a time");
    char out[8192];
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        cr_expect_eq(sh(out, sizeof out, "$L %s", cmds[i]), 2, "%s: %s", cmds[i], out);
        cr_expect(strstr(out, "lenx: error: unexpected argument 'extra'") != NULL, "%s: %s", cmds[i], out);
    }
}

Test(cli_usage, list_suggests_the_nearest_word)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L list method"), 2, "%s", out);
    cr_expect(strstr(out, "did you mean 'methods'?") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L list"), 2, "%s", out);
    cr_expect(strstr(out, "list what?") != NULL, "%s", out);
}

/* `show task passkey --sample 3` (no --length) printed the task's parameters with exit 0, the sample
** ignored; --instance beside --sample silently overrode it. */
Test(cli_usage, show_task_refuses_instance_options_it_would_not_read)
{
    char out[8192], one[8192];
    static const char *const opts[] = {"--sample 3", "--depth 0.1", "--seed 7"};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(sh(out, sizeof out, "$L show task passkey %s", opts[i]), 2, "%s: %s", opts[i], out);
        cr_expect(strstr(out, "is read only when an instance is rendered: give --length L") != NULL, "%s: %s",
                  opts[i], out);
    }
    cr_expect_eq(sh(out, sizeof out, "$L show task passkey --length 300 --sample 1 --instance 2"), 2, "%s", out);
    cr_expect(strstr(out, "--instance and --sample") != NULL, "%s", out);
    /* --instance K is --sample K: one instance, rendered alike */
    cr_expect_eq(sh(out, sizeof out, "$L show task passkey --length 300 --instance 2"), 0, "%s", out);
    cr_expect_eq(sh(one, sizeof one, "$L show task passkey --length 300 --sample 2"), 0, "%s", one);
    cr_expect_str_eq(out, one);
}

/* `tokenize --info --decode` printed the info, `--gguf F --text T` wrote the GGUF, the other option
** ignored each time; --stats and --no-specials (encoding) were ignored under --decode. */
Test(cli_usage, tokenize_refuses_options_its_mode_does_not_read)
{
    static const char *const cmds[][2] = {
        {"--info --decode", "--decode"},
        {"--info --text t.txt", "--text"},
        {"--gguf v.gguf --text t.txt", "--text"},
        {"--gguf v.gguf --info", "--info"},
        {"--decode --stats --text t.txt", "--stats"},
        {"--decode --no-specials --text t.txt", "--no-specials"},
    };
    write_file("t.txt", "[1, 403, 407, 261, 378]");
    char out[8192], want[128];
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        cr_expect_eq(sh(out, sizeof out, "$L tokenize --tokenizer " S260 "/tok512.bin %s", cmds[i][0]), 2, "%s: %s",
                     cmds[i][0], out);
        snprintf(want, sizeof want, "does not read %s", cmds[i][1]);
        cr_expect(strstr(out, want) != NULL, "%s: %s", cmds[i][0], out);
    }
    cr_expect(!exists("v.gguf"));
    cr_expect_eq(sh(out, sizeof out, "$L tokenize --tokenizer " S260 "/tok512.bin --decode --text t.txt"), 0, "%s",
                 out);
    cr_expect_str_eq(out, "Once upon a time");    /* docs/tokenizers.md's example */
}

/* --decode of an id past the vocabulary said "id 512 (at index 1) is outside tok512.bin's vocabulary of 512",
** naming neither the input nor a hint; a negative or fractional id had no hint either. */
Test(cli_usage, tokenize_decode_errors_name_the_input_and_hint)
{
    static const char *const bad[][2] = {
        {"[1, 512]", "ids.json: id 512 (at index 1) is outside "},
        {"[1, -1]", "ids.json: [1]: -1 is not a token id"},
        {"[1.5]", "ids.json: [0]: expected an integer, found 1.5"},
    };
    char out[4096];
    for (int i = 0; i < 3; i++) {
        write_file("ids.json", bad[i][0]);
        cr_expect_eq(sh(out, sizeof out, "$L tokenize --tokenizer " S260 "/tok512.bin --decode --text ids.json"), 2,
                     "%s: %s", bad[i][0], out);
        cr_expect(strstr(out, bad[i][1]) && strstr(out, "\n  hint: --decode reads one JSON list of token ids, "
                                                        "each in 0 .. 511"), "%s: %s", bad[i][0], out);
    }
}

/* A model name that is in no store row: the hint promised "a name from the sweep's models:" and listed none;
** one that names several models did not tell them apart. */
Test(cli_usage, an_unknown_model_name_lists_the_stored_ones, .timeout = 120)
{
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "$L run $R/configs/tiny.yaml --db s.db --quiet --no-table"), 0, "%s", out);
    write_file("t.txt", "It is a truth universally acknowledged.");
    cr_expect_eq(sh(out, sizeof out, "$L score --db s.db --model tiny_ml --text t.txt"), 2, "%s", out);
    cr_expect(strstr(out, "no model of that name or key") != NULL, "%s", out);
    cr_expect(strstr(out, "did you mean 'tiny_mlm'?") != NULL, "%s", out);
    /* configs/tiny.yaml's two names (four models: each once), in either order */
    cr_expect(strstr(out, "the store's models: tiny, tiny_mlm\n") ||
              strstr(out, "the store's models: tiny_mlm, tiny\n"), "%s", out);
    /* a name every method shares (tiny, trained with rope and with nope) listed "KEY (tiny)" twice, not
    ** saying which key was which model: each now names its stack, length and seed */
    cr_expect_eq(sh(out, sizeof out, "$L score --db s.db --model tiny --text t.txt"), 2, "%s", out);
    cr_expect(strstr(out, "'tiny' names 2 models in s.db:") != NULL, "%s", out);
    cr_expect(strstr(out, " (tiny: causal 1L d32 2h, trained with rope at length 32, seed 1)\n") != NULL, "%s", out);
    cr_expect(strstr(out, " (tiny: causal 1L d32 2h, trained with nope at length 32, seed 1)\n") != NULL, "%s", out);
}

/* A parse error said what was wrong and no more ("option '--db' needs a value"): each now has a hint, the
** option's line of --help. */
Test(cli_usage, option_parse_errors_carry_the_option_help)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L table --db"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: option '--db' needs a value\n  hint: --db V: result database") != NULL,
              "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L run x.yaml --quiet=1"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: option '--quiet' takes no value\n  hint: it is a switch, given alone: "
                          "--quiet (no progress on stderr)") != NULL, "%s", out);
}

/* lenx merge's stores are arguments and --into, yet a missing or directory one got the store's hint for
** --db ("or pass --db FILE", "--db names the store's file"), an option merge does not have. */
Test(cli_usage, merge_errors_name_its_own_arguments)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "mkdir dir"), 0, "%s", out);
    static const char *const cmds[] = {"merge none.db --into m.db", "merge dir --into m.db",
                                       "merge none.db --into dir"};
    static const char *const want[] = {"none.db: no such database", "dir: is a directory, not a store",
                                       "--into dir is a directory, not a store"};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(sh(out, sizeof out, "$L %s", cmds[i]), 3, "%s: %s", cmds[i], out);
        cr_expect(strstr(out, want[i]) != NULL, "%s: %s", cmds[i], out);
        cr_expect(strstr(out, "--db") == NULL, "%s: %s", cmds[i], out);
    }
    cr_expect(!exists("m.db"));
}

/* A mistyped subcommand of show got the general usage without the "did you mean" a mistyped command gets. */
Test(cli_usage, show_suggests_the_nearest_subcommand)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L show methd rope"), 2, "%s", out);
    cr_expect(strstr(out, "did you mean 'method'?") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show modle x.bin"), 2, "%s", out);
    cr_expect(strstr(out, "did you mean 'model'?") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show method"), 2, "%s", out);     /* the NAME is missing, not the word */
    cr_expect(strstr(out, "did you mean") == NULL, "%s", out);
}

/* grade's file errors had no hint ("cannot read F: No such file or directory"; a directory read as "read
** failed after line 0: Is a directory"), and a mistyped --task was called a task without that preset. */
Test(cli_usage, grade_errors_say_what_and_hint)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "mkdir dir"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L grade --scorer last_int --predictions none.jsonl"), 3, "%s", out);
    cr_expect(strstr(out, "cannot read none.jsonl: No such file or directory\n  hint: ") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L grade --scorer last_int --predictions dir"), 3, "%s", out);
    cr_expect(strstr(out, "cannot read dir: it is a directory\n  hint: ") != NULL, "%s", out);
    write_file("p.jsonl", "{\"gold\": 5, \"output\": \"5\"}\n");
    cr_expect_eq(sh(out, sizeof out, "$L grade --task passkye --protocol yarn --predictions p.jsonl"), 2, "%s", out);
    cr_expect(strstr(out, "unknown task 'passkye'") != NULL && strstr(out, "did you mean 'passkey'?") != NULL, "%s",
              out);
    cr_expect_eq(sh(out, sizeof out, "$L grade --task passkey --protocol yarn --predictions p.jsonl"), 0, "%s", out);
}

/* --data after the command (where every other option goes) was "unknown option '--data'" with the hint that
** --help lists the options, which do not include it: it is a global option, before the command. */
Test(cli_usage, data_after_the_command_points_before_it)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L run x.yaml --data ."), 2, "%s", out);
    cr_expect(strstr(out, "unknown option '--data'\n  hint: --data is a global option, given before the command: "
                          "lenx --data DIR COMMAND ...") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L table --data=."), 2, "%s", out);
    cr_expect(strstr(out, "given before the command") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task line --data f.json"), 2, "%s", out);  /* show's own --data */
    cr_expect(strstr(out, "unknown option") == NULL, "%s", out);
}

/* --method adds to the model's own stack: `score --method rope` on stories260K (trained with rope) said
** "method 'rope' appears twice in one stack" of a --method that names it once (docs/servers.md's lm-eval
** example did so). The error says the model's stack holds it, and what --method is for. */
Test(cli_usage, a_method_the_model_holds_is_named_as_the_models)
{
    char out[4096];
    write_file("t.txt", "Once upon a time");
    cr_expect_eq(sh(out, sizeof out, "$L score --model " S260 "/stories260K.bin --text t.txt --method "
                    "'[{rope: {layout: interleaved}}, {ntk: {scale: 4}}]'"), 2, "%s", out);
    cr_expect(strstr(out, "--method:1:2: method 'rope' is in the model's own stack already (rope(layout=interleaved))"
                     "\n  hint: --method adds evaluation-time methods to it: leave 'rope' out") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L score --model " S260 "/stories260K.bin --text t.txt --method '[ntk, ntk]'"),
                 2, "%s", out);
    cr_expect(strstr(out, "method 'ntk' appears twice in one stack") != NULL, "%s", out);  /* twice in --method */
    cr_expect_eq(sh(out, sizeof out, "$L score --model " S260 "/stories260K.bin --text t.txt --method "
                    "'{ntk: {scale: 4}}'"), 0, "%s", out);
}

/* An empty path (--db=, a variable that was not set) reached SQLite, which opens "" as a private temporary
** database: `run --db=` failed with ": switching to WAL mode: not an error", `table --db=` with ": no such
** database", `report -o ''` with "cannot write " and nothing after it. An empty path is refused by name. */
Test(cli_usage, an_empty_path_is_refused_by_name)
{
    static const char *const cmds[][2] = {
        {"run $R/configs/tiny.yaml --db=", "--db"}, {"table --db ''", "--db"}, {"report --db r.db -o ''", "--output"},
        {"merge a.db --into ''", "--into"}, {"score --model m.bin --text ''", "--text"},
        {"tokenize --tokenizer=", "--tokenizer"}, {"grade --scorer last_int --predictions ''", "--predictions"},
    };
    char out[4096], want[96];
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        cr_expect_eq(sh(out, sizeof out, "$L %s", cmds[i][0]), 2, "%s: %s", cmds[i][0], out);
        snprintf(want, sizeof want, "lenx: error: %s is empty: it names no file\n  hint: ", cmds[i][1]);
        cr_expect(strstr(out, want) != NULL, "%s: %s", cmds[i][0], out);
    }
    cr_expect_eq(sh(out, sizeof out, "ls"), 0);
    cr_expect_str_eq(out, "", "a refused command left files behind");
}

/* lenx merge took at most 64 stores ("too many arguments (at most 64)"), yet `lenx slurm --shards N` (N up to
** 100000) writes a merge.sbatch that passes all N shard stores and its models stores to it: the last job of a
** sweep in 64 shards or more failed. Any number of stores merges; show, whose k=v arguments fill fixed
** tables, still refuses past its limit, without overflowing them. */
Test(cli_usage, merge_takes_any_number_of_stores, .timeout = 120)
{
    char out[8192];
    write_file("g.yaml", "name: g\nmethods: [none]\ntasks:\n  - gaussian: {samples: 20}\nlengths: [10, 20]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db g.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "for i in $(seq 1 100); do cp g.db s$i.db; done"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L merge $(for i in $(seq 1 100); do printf 's%%d.db ' $i; done) --into all.db "
                    "> log 2>&1; rc=$?; tail -n 1 log; exit $rc"), 0, "%s", out);    /* a line per store, then this */
    cr_expect(strstr(out, "merged 100 stores into all.db: 2 cells added") != NULL, "%s", out);
    cr_expect_eq(sql_long("all.db", "select count(*) from runs"), 2);   /* two lengths, one method, one task */
    /* more stores than a command line holds come one a line from --from's file, or stdin with '-' */
    cr_expect_eq(sh(out, sizeof out, "printf 's1.db\\n\\ns2.db\\ns3.db' > list && $L merge s4.db --from list "
                    "--into l.db 2>&1 | tail -n 1 && seq 5 9 | sed 's/.*/s&.db/' | $L merge --from - --into l.db "
                    "2>&1 | tail -n 1"), 0, "%s", out);
    cr_expect(strstr(out, "merged 4 stores into l.db: 2 cells added, 0 replaced a failed row, 6 already there") &&
              strstr(out, "merged 5 stores into l.db: 0 cells added, 0 replaced a failed row, 10 already there"), "%s",
              out);     /* each store holds the same 2 cells */
    cr_expect_eq(sh(out, sizeof out, "$L merge --from /dev/null --into l.db"), 2, "%s", out);
    cr_expect(strstr(out, "merge needs at least one store to merge (--from names none)") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "printf 's1.db\\nnone.db\\n' | $L merge --from - --into l.db"), 3, "%s", out);
    cr_expect(strstr(out, "none.db: no such database") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show method rope $(for i in $(seq 1 80); do printf 'base=%%d ' $i; done)"), 2,
                 "%s", out);
    cr_expect(strstr(out, "too many arguments") != NULL, "%s", out);
}

/* `show method pi --on alibj` pointed at "lenx show method" for the list, which is an error without a NAME:
** `lenx list methods` lists them, and the nearest name is offered. */
Test(cli_usage, show_on_names_the_list_and_the_nearest)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L show method pi --on alibj"), 2, "%s", out);
    cr_expect(strstr(out, "--on alibj: no such method\n  hint: did you mean 'alibi'? `lenx list methods` lists them")
              != NULL, "%s", out);
}

/* A config file that is not there: lenx run exits 3 (a file error, as README's exit statuses say), lenx slurm
** exited 2 with "no such config" and no hint. Both are file errors now, named alike. */
Test(cli_usage, a_missing_config_is_a_file_error_for_run_and_slurm)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L run none.yaml --db x.db"), 3, "%s", out);
    cr_expect(strstr(out, "none.yaml: cannot open the file: No such file or directory\n  hint: ") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L slurm none.yaml --shards 2 --db x.db"), 3, "%s", out);
    cr_expect(strstr(out, "none.yaml: cannot open the file: No such file or directory\n  hint: ") != NULL, "%s", out);
    cr_expect(!exists("x.db"));
}

/* Two errors without the hint every error ends with: an empty --text for score, a --port-file serve cannot
** write (which also did not say why). */
Test(cli_usage, score_and_serve_file_errors_hint)
{
    char out[4096];
    write_file("empty.txt", "");
    cr_expect_eq(sh(out, sizeof out, "$L score --model " S260 "/stories260K.bin --text empty.txt"), 2, "%s", out);
    cr_expect(strstr(out, "--text empty.txt is empty\n  hint: ") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L serve --model " S260 "/stories260K.bin --port 0 --port-file no/dir/f"), 3,
                 "%s", out);
    cr_expect(strstr(out, "--port-file no/dir/f cannot be written: No such file or directory\n  hint: ") != NULL,
              "%s", out);
    /* a --tokenizer that is no tokenizer (empty, the model file by mistake) said what and where, no hint */
    write_file("t.txt", "Once upon a time");
    static const char *const not_tok[] = {"empty.txt", S260 "/stories260K.bin", "t.txt"};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(sh(out, sizeof out, "$L score --model " S260 "/stories260K.bin --tokenizer %s --text t.txt",
                        not_tok[i]), 2, "%s", out);
        cr_expect(strstr(out, "nor a llama2.c tokenizer.bin: ") && strstr(out, "\n  hint: a tokenizer is a "),
                  "%s: %s", not_tok[i], out);
    }
}

/* `score --text -` reads standard input, as tokenize and grade take '-' (it said "-: cannot open the file"):
** the same JSON as the text's file gives, and an empty input is refused naming standard input. */
Test(cli_usage, score_reads_standard_input_as_dash)
{
    static char a[1 << 16], b[1 << 16];
    write_file("t.txt", "Once upon a time, there was a little girl named Lily.");
    cr_assert_eq(sh(a, sizeof a, "$L score --model " S260 "/stories260K.bin --portable --text t.txt"), 0, "%s", a);
    cr_assert_eq(sh(b, sizeof b, "$L score --model " S260 "/stories260K.bin --portable --text - < t.txt"), 0, "%s", b);
    cr_expect_str_eq(b, a);
    cr_expect_not_null(strstr(a, "\"mean_nll\""), "%s", a);
    /* a llama2.c file has no model key: null, as `lenx show model` says (score said "") */
    cr_expect_not_null(strstr(a, "\"model_key\": null,"), "%s", a);
    cr_assert_eq(sh(b, sizeof b, "$L show model " S260 "/stories260K.bin"), 0, "%s", b);
    cr_expect_not_null(strstr(b, "\"model_key\": null,"), "%s", b);
    cr_expect_eq(sh(a, sizeof a, "$L score --model " S260 "/stories260K.bin --text - < /dev/null"), 2, "%s", a);
    cr_expect(strstr(a, "--text - (standard input) is empty\n  hint: ") != NULL, "%s", a);
}

/* A method named in quotes ("logn" is the string logn in YAML, as a quoted map key already was) was refused as
** "got a scalar"; a method twice in a stack, an empty k= and an odd head dimension had no hint. */
Test(cli_usage, method_entries_quoted_and_refused_with_hints, .timeout = 120)
{
    char a[8192], b[8192];
    cr_assert_eq(sh(a, sizeof a, "$L show method logn"), 0, "%s", a);
    cr_assert_eq(sh(b, sizeof b, "printf 'name: q\\nmethods: [\"logn\", [\"infoscale\"]]\\ntasks: [gaussian]\\n"
                    "lengths: [16]\\n' > q.yaml && $L run q.yaml --dry-run --db q.db"), 0, "%s", b);
    cr_expect(strstr(b, "logn") && strstr(b, "infoscale"), "%s", b);
    static const char *const cmd[][2] = {
        {"show method pi scale=", "argument 'scale=': empty value\n  hint: give the parameter a value, e.g. scale=2"},
        {"score --model " S260 "/stories260K.bin --text q.yaml --method '[ntk, ntk]'",
         "method 'ntk' appears twice in one stack\n  hint: a stack applies each method once"},
        {"show method rope --d-head 3", "got 3\n  hint: rotary turns pairs of channels"},
    };
    for (size_t i = 0; i < sizeof cmd / sizeof *cmd; i++) {
        cr_expect_eq(sh(a, sizeof a, "$L %s", cmd[i][0]), 2, "%s: %s", cmd[i][0], a);
        cr_expect(strstr(a, cmd[i][1]) != NULL, "%s: %s", cmd[i][0], a);
    }
}

/* Number options' errors ("--threads = 0 is out of bounds [1, 1024]", "--depth must be a number, got 'x'")
** were the only argument errors without a hint. */
Test(cli_usage, number_option_errors_carry_a_hint)
{
    static const char *const cmds[][2] = {
        {"run x.yaml --threads 0", "--threads = 0 is out of bounds [1, 1024]\n  hint: --threads takes a whole number "
                                   "from 1 to 1024"},
        {"run x.yaml --threads two", "--threads must be an integer, got 'two'\n  hint: --threads takes a whole "
                                     "number from 1 to 1024"},
        {"show task needle --length 200 --depth x", "--depth must be a number, got 'x'\n  hint: "},
        {"show task needle --length 200 --depth -1", "--depth must be a non-negative number, got '-1'\n  hint: "},
        {"report -o r.html --threshold 1e999", "--threshold = 1e999 is too large for a double\n  hint: "},
    };
    char out[4096];
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        cr_expect_eq(sh(out, sizeof out, "$L %s", cmds[i][0]), 2, "%s: %s", cmds[i][0], out);
        cr_expect(strstr(out, cmds[i][1]) != NULL, "%s: %s", cmds[i][0], out);
    }
}

/* `show task needle --instance 2` (or --text) without --length rendered at length 0 and said "length 0 is too
** short", a length the user never gave. The error says that --length is missing, for a protocol preset too. */
Test(cli_usage, show_task_instance_without_length_says_so)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --instance 2"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: no --length: needle: length 0 is too short") != NULL, "%s", out);
    /* a preset whose length is its prompt's tokens failed later, in its fit, and said "length 0" bare */
    cr_expect_eq(sh(out, sizeof out, "$L show task passkey --protocol yarn"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: no --length: yarn: length 0: ") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --protocol ruler --text"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: no --length: ruler niah_single_1: length 0 ") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --length 200 --instance 2"), 0, "%s", out);
}

/* An option whose value was left out took the next option as its value: `lenx run CONFIG --db --dry-run` ran
** the whole sweep (training its models) into a store named "--dry-run". A value that is another option of the
** command is refused; one meant to start with -- is given with '='. */
Test(cli_usage, an_option_is_not_taken_as_the_value_before_it, .timeout = 120)
{
    char out[4096];
    cr_expect_eq(sh(out, sizeof out, "$L run $R/configs/tiny.yaml --db --dry-run"), 2, "%s", out);
    cr_expect(strstr(out, "lenx: error: option '--db' needs a value, and '--dry-run' is another option\n"
                          "  hint: --db V: ") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "ls"), 0);
    cr_expect_str_eq(out, "", "a refused run left files behind");
    cr_expect_eq(sh(out, sizeof out, "$L generate --model x --prompt --ids"), 2, "%s", out);
    cr_expect(strstr(out, "'--prompt' needs a value, and '--ids' is another option") != NULL, "%s", out);
    /* a value that only looks like an option: given with '=', or not one of the command's */
    cr_expect_eq(sh(out, sizeof out, "$L generate --model " S260 "/stories260K.bin --prompt=--ids -n 1"), 0, "%s",
                 out);
    cr_expect_eq(sh(out, sizeof out, "$L generate --model " S260 "/stories260K.bin --prompt '--- Once' -n 1"), 0,
                 "%s", out);
}

/* rm --method or --task naming nothing stored matched nothing and exited 0 ("no stored cell matches"): a typo
** deleted nothing and said so as if the store had no such cell. It is refused as a --sweep naming nothing is,
** with the nearest stored value (read here with sqlite3); a task by its name, and a stored value that the
** other filters exclude, still only match nothing. */
Test(cli_usage, rm_a_method_or_task_stored_nowhere_is_refused, .timeout = 120)
{
    char out[4096], logn[256];
    write_file("g.yaml", "name: g\nseed: 1\nmethods: [none, {logn: {mode: qwen}}]\ntasks:\n"
               "  - gaussian: {samples: 20}\nlengths: [16]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    cr_assert_eq(sh(logn, sizeof logn, "sqlite3 r.db \"select method from runs where method like 'logn%%'\""), 0);
    logn[strcspn(logn, "\n")] = '\0';
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --method '%.*s' --yes", (int)strlen(logn) - 1, logn), 2, "%s",
                 out);
    cr_expect(strstr(out, "no stored cell has it") != NULL, "%s", out);
    char want[300];
    snprintf(want, sizeof want, "did you mean '%s'?", logn);
    cr_expect(strstr(out, want) != NULL, "%s wants %s", out, want);
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --task gausian --yes"), 2, "%s", out);
    cr_expect(strstr(out, "rm --task 'gausian': no stored cell has it") != NULL, "%s", out);
    cr_expect_eq(sql_long("r.db", "select count(*) from runs"), 2, "nothing deleted");
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --task gaussian --method '%s' --commit 0000 --yes", logn), 0,
                 "%s", out);
    cr_expect(strstr(out, "no stored cell matches") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --task gaussian --method '%s' --yes", logn), 0, "%s", out);
    cr_expect(strstr(out, "deleted 1 cells") != NULL, "%s", out);
}

/* The words before a command: `lenx help help` called help an unknown command, `lenx --datax list` called the
** option a command (no "did you mean --data"), and `lenx --version extra` / `lenx help run extra` ignored the
** extra word. */
Test(cli_usage, the_words_before_a_command)
{
    char out[8192];
    cr_expect_eq(sh(out, sizeof out, "$L help help"), 0, "%s", out);
    cr_expect(strstr(out, "global options:") != NULL, "the general usage: %s", out);
    cr_expect_eq(sh(out, sizeof out, "$L --datax list methods"), 2, "%s", out);
    cr_expect(strstr(out, "unknown option '--datax'") != NULL && strstr(out, "did you mean '--data'?") != NULL, "%s",
              out);
    cr_expect_eq(sh(out, sizeof out, "$L --version extra"), 2, "%s", out);
    cr_expect(strstr(out, "unexpected argument 'extra'") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L help run extra"), 2, "%s", out);
    cr_expect(strstr(out, "unexpected argument 'extra'") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L --version"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L help run"), 0, "%s", out);
}

/* Two seeds of one model name are two models that differ only in their seed: `list models` and a name's
** "names 2 models" listing showed them as the same line twice ("trained with rope at length 32"), with no way
** to tell which key was which seed. Each now shows the seed its key was trained with. */
Test(cli_usage, models_of_two_seeds_are_told_apart_by_seed, .timeout = 120)
{
    char out[8192], key[2][64], want[256];
    write_file("s.yaml", "name: s\nseeds: [1, 2]\nmodels:\n  m:\n"
               "    arch: {mode: causal, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64}\n"
               "    train: {length: 32, batch: 2, steps: 3, warmup: 1}\n"
               "methods: [rope]\ntasks: [{ppl: {windows: 1}}]\nlengths: [32]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run s.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    write_file("t.txt", "It is a truth universally acknowledged.");
    cr_expect_eq(sh(out, sizeof out, "$L score --db r.db --model m --text t.txt"), 2, "%s", out);
    cr_expect(strstr(out, "'m' names 2 models in r.db:") != NULL, "%s", out);
    for (int s = 0; s < 2; s++) {
        char q[128];
        snprintf(q, sizeof q, "select key from models where json_extract(config, '$.seed') = %d", s + 1);
        sql_text(key[s], sizeof key[s], "r.db", q);
        snprintf(want, sizeof want, "%s (m: causal 1L d32 2h, trained with rope at length 32, seed %d)\n", key[s],
                 s + 1);
        cr_expect(strstr(out, want) != NULL, "'%s' in\n%s", want, out);
    }
    cr_assert_eq(sh(out, sizeof out, "$L list models --db r.db"), 0, "%s", out);
    cr_expect(strstr(out, " seed ") != NULL, "a seed column:\n%s", out);
    for (int s = 0; s < 2; s++) {
        const char *line = strstr(out, key[s]);
        long len = 0, seed = -1;
        cr_assert(line != NULL, "%s in\n%s", key[s], out);
        cr_expect_eq(sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %ld %ld", &len, &seed), 2, "%s", line);
        cr_expect(len == 32 && seed == s + 1, "length %ld seed %ld in %s", len, seed, line);
    }
}

/* `lenx rm --method` says to give "the method as `lenx table` shows it", but refused every label the table
** shows for a model's cells ("rope+pi(scale=1;2) @m": the auto scale resolved per length, then the model) and
** suggested one of the merged stacks, so the other lengths' cells stayed. It now takes the table's label: the
** stacks it merges, on the model it names. */
Test(cli_usage, rm_takes_a_method_as_the_table_labels_it, .timeout = 120)
{
    char out[8192];
    write_file("p.yaml", "name: p\nseed: 1\nmodels:\n  m:\n"
               "    arch: {mode: causal, layers: 1, d_model: 32, heads: 2, d_head: 16, d_mlp: 64}\n"
               "    train: {length: 32, batch: 2, steps: 3, warmup: 1}\n"
               "methods: [rope, [rope, pi]]\ntasks: [{ppl: {windows: 1}}]\nlengths: [32, 64]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run p.yaml --db r.db --quiet"), 0, "%s", out);
    cr_assert(strstr(out, "| rope+pi(scale=1;2) @m |") != NULL, "the table's label:\n%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --method 'rope+pi(scale=1;2)'"), 0, "%s", out);
    cr_expect(strstr(out, "2 cells would be deleted") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --method 'rope+pi(scale=1;2) @x'"), 2, "%s", out);
    cr_expect(strstr(out, "no stored cell has it") != NULL, "a model no cell ran on:\n%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --method 'rope+pi(scale=1;3) @m' --yes"), 2, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L rm --db r.db --method 'rope+pi(scale=1;2) @m' --yes"), 0, "%s", out);
    cr_expect(strstr(out, "deleted 2 cells") != NULL, "%s", out);
    cr_expect_eq(sql_long("r.db", "select count(*) from runs where method like 'rope+pi%'"), 0);
    cr_expect_eq(sql_long("r.db", "select count(*) from runs where method = 'rope'"), 2);
}

/* `lenx compare A.db B.db`, two stores (two machines, two checkouts), was read as two CSV files and refused
** with "a.db:1: a NUL byte; a results CSV is text". A store side is now its rows (every sweep, or --sweep's),
** matched by cell and metric as a commit side's are. */
Test(cli_usage, compare_takes_two_stores, .timeout = 120)
{
    char out[8192];
    write_file("g.yaml", "name: g\nseed: 1\nmethods: [none, {logn: {mode: qwen}}]\ntasks:\n"
               "  - gaussian: {samples: 20}\nlengths: [16]\n");
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db a.db --quiet --no-table"), 0, "%s", out);
    long values = sql_long("a.db", "select count(*) from metrics");    /* _se rows too, as a CSV side's */
    cr_assert(values > 0);
    cr_assert_eq(sh(out, sizeof out, "cp a.db b.db"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare a.db b.db"), 0, "%s", out);
    char want[128];
    snprintf(want, sizeof want, "%ld values in 2 cells compared, 0 moved", values);
    cr_expect(strstr(out, want) != NULL, "'%s' in\n%s", want, out);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 b.db \"update metrics set value = value + 1 where rowid = "
                                     "(select min(rowid) from metrics where name not like '%%\\_se' escape '\\')\""), 0,
                 "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare a.db b.db --sweep g"), 1, "%s", out);
    cr_expect(strstr(out, ", 1 moved") != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L compare a.db b.db --sweep nosuch"), 2, "%s", out);
}

/* `lenx run --dry-run` listed every cell of the plan the same way whether the store already held it or not
** ("sweep g: 3 cells" after all 3 had run), so it could not say what a rerun would do. A cell stored ok in
** --db is now marked "stored", and a last line counts what a run would skip and run (--force: nothing skipped). */
Test(cli_usage, dry_run_says_which_cells_are_stored, .timeout = 120)
{
    char out[8192];
    write_file("g.yaml", "name: g\nseed: 1\nmethods: [none]\ntasks:\n  - gaussian: {samples: 20}\nlengths: [16]\n");
    cr_expect_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --dry-run"), 0, "%s", out);
    cr_expect(strstr(out, "stored") == NULL, "no store yet:\n%s", out);
    cr_expect(!exists("r.db"), "a dry run makes no store");
    cr_assert_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --quiet --no-table"), 0, "%s", out);
    write_file("g.yaml", "name: g\nseed: 1\nmethods: [none]\ntasks:\n  - gaussian: {samples: 20}\n"
               "lengths: [16, 32]\n");
    char key[64], want[160];
    sql_text(key, sizeof key, "r.db", "select key from runs");
    cr_expect_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --dry-run"), 0, "%s", out);
    snprintf(want, sizeof want, "  %s  gaussian(samples=20)  none  length=16 seed=1  stored\n", key);
    cr_expect(strstr(out, want) != NULL, "'%s' in\n%s", want, out);
    cr_expect(strstr(out, "length=32 seed=1\n") != NULL, "the new cell unmarked:\n%s", out);
    cr_expect(strstr(out, "1 of the 2 cells stored ok in r.db (a run skips them; --force reruns them), 1 to run\n")
              != NULL, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L run g.yaml --db r.db --dry-run --force"), 0, "%s", out);
    cr_expect(strstr(out, "stored") == NULL, "--force skips nothing:\n%s", out);
}
