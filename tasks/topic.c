/*
** tasks/topic.c - topic retrieval: name the first of many conversation topics.
**
** LongChat's coarse-grained test (Li, Shao, Xie et al., "How Long Can
** Open-Source LLMs Truly Promise on Context Length?", lmsys blog, 2023-06-29;
** DachengLi1/LongChat longeval/utils.py): a record of k conversations, each
** opened by "USER: I would like to discuss the topic of {topic}.", then the
** question which topic came first (header, question and ending verbatim). An
** instance is exactly `length` byte tokens: [BOS] (longchat: header)
** conversations, spaces, question, ending, " {topic}". Conversations are
** synthesised from 40 topic names and topic-free sentences drawn by Philox on
** the cell's key; replies are added round-robin until the length is full.
** Scored by normalized containment; one depth per cell (depth 0, where the
** first topic sits). Format, sizes and deviations: docs/tasks.md#topic.
*/
#include <stdio.h>
#include <string.h>

#include "tasks/retrieval.h"
#include "harness/core/rng.h"
#include "tasks/task.h"

enum { TPL_LONGCHAT, TPL_SHORT };

struct topic_params {
    int template;       /* TPL_LONGCHAT or TPL_SHORT */
    long topics;        /* conversations; 0 = as many as fit */
    long replies;       /* ASSISTANT replies per conversation before filling, with topics: 0 */
    long samples;       /* trials */
    struct lx_preset_params preset;   /* protocol and data (tasks/retrieval.h) */
};

static const struct lx_param topic_rows[] = {
    LX_P_ENUM(struct topic_params, template, "longchat", "longchat|short", 0,
              "longchat: LongChat's header, closing turns and question; short: none of them, a one-sentence question"),
    LX_P_INT(struct topic_params, topics, "0", 0, 40, 0,
             "conversations: 0 = as many as fit with `replies` replies each, else exactly that many"),
    LX_P_INT(struct topic_params, replies, "2", 0, 100, 0,
             "ASSISTANT replies per conversation with topics: 0, before the rest of the length is filled"),
    LX_P_INT(struct topic_params, samples, "50", 1, 1e6, LX_PF_TEST_ONLY, "trials"),
    LX_RETRIEVAL_PRESET_ROWS(struct topic_params, "lenx|longchat|longchat_base"),
};

/* Rows no preset reads (its presets read their peers' test-case files; tasks/retrieval.h). */
static const struct lx_param_rule topic_refusals[] = {
    {"template", "protocol=lenx"}, {"topics", "protocol=lenx"}, {"replies", "protocol=lenx"},
    {"samples", "protocol=lenx"}, {NULL, NULL},
};

/* `replies` sizes conversations only when their count is free. */
static const struct lx_param_rule topic_rules[] = {{"replies", "topics=0"}, {NULL, NULL}};

static const char HEADER[] =
    "Below is a record of our previous conversation on %ld different topics. You are the ASSISTANT, and I am the "
    "USER. At the beginning of each topic, the USER will say 'I would like to discuss the topic of <TOPIC>'. "
    "Memorize each <TOPIC>. At the end of the record, I will ask you to retrieve the first topic. Now the record "
    "start. ";
static const char OPENING[] = "USER: I would like to discuss the topic of %s.";
static const char CLOSING[] =
    " \n USER: Great, this is the end of our discussion on %s, let's talk about the next topic.";
static const char SEP[] = " \n ";
static const char ASSISTANT[] = " \n ASSISTANT: ";
static const char USER[] = " \n USER: ";
static const char *const QUESTION[] = {
    [TPL_LONGCHAT] = " Now the record ends. What is the first topic we discussed? Only give me the topic name. "
                     "Do not summarize yourself.",
    [TPL_SHORT] = " What is the first topic we discussed?",
};
static const char ENDING[] = "\n ASSISTANT: The first topic is";
static const char *const TPL_NAME[] = {[TPL_LONGCHAT] = "longchat", [TPL_SHORT] = "short"};

/* No topic's normal form (retrieval.h, lx_answer_contains) contains another's. */
static const char *const TOPICS[] = {
    "the history of jazz", "growing tomatoes at home", "training for a marathon", "the life of honeybees",
    "learning to play chess", "baking sourdough bread", "the rings of saturn", "saving money on groceries",
    "the rules of cricket", "keeping a garden pond", "the fall of rome", "writing a short story",
    "caring for an old dog", "the water cycle", "building a treehouse", "the art of origami",
    "planning a road trip", "how volcanoes form", "learning a second language", "the wildlife of australia",
    "brewing green tea", "repairing a bicycle", "the invention of printing", "taking better photographs",
    "the migration of birds", "starting a book club", "the science of sleep", "painting with watercolors",
    "the great barrier reef", "keeping chickens", "the music of mozart", "camping in the mountains",
    "the pyramids of egypt", "making pottery", "the solar system", "knitting a warm scarf",
    "the life of octopuses", "running a small bakery", "the deep ocean", "ancient greek theatre",
};
/* Filler turns: the ASSISTANT's replies and the USER's asks. */
static const char *const REPLY[] = {
    "That is a wide subject, and there is a lot to say about it.",
    "Many people find it interesting for quite different reasons.",
    "It helps to start with the basics and build from there.",
    "There are a few common mistakes that beginners tend to make.",
    "The details matter, but the main idea is simple enough.",
    "Most of what we know about it comes from careful practice.",
    "It has changed a great deal over the last hundred years.",
    "A good book or a patient teacher can help a lot here.",
    "Some parts are easy to learn, and others take many years.",
    "People often disagree about it, and that is part of the fun.",
    "It is best understood by trying it out for yourself.", "Experts tend to focus on a small number of key ideas.",
    "There is more to it than most people would guess.", "Time and patience are the two things it needs most.",
    "It connects to many other fields in surprising ways.", "The story behind it is long and full of odd turns.",
};
static const char *const ASK[] = {
    "Can you tell me more about that?", "What is the most important thing to know?",
    "How would a beginner get started?", "Why do people find it so interesting?",
    "What do most people get wrong about it?", "Is it hard to learn?", "How has it changed over time?",
    "What would you recommend I read?", "That is interesting. What else?", "Could you give me an example?",
    "How long does it take to get good at it?", "What surprised you most about it?",
};
#define N_TOPICS ((int)(sizeof TOPICS / sizeof *TOPICS))
#define N_REPLY ((int)(sizeof REPLY / sizeof *REPLY))
#define N_ASK ((int)(sizeof ASK / sizeof *ASK))
#define TEXT_CAP 512    /* bytes of the longest header, turn or closing + NUL */

/* One instance's shape: which topics, how many replies each, the pad. */
struct plan {
    int topic[N_TOPICS];        /* (N_TOPICS,) topics in drawn order; the first k are the conversations */
    long k;                     /* conversations */
    long replies[N_TOPICS];     /* (k,) replies of each */
    long pad;                   /* spaces before the question */
};

#define slen(s) ((long)strlen(s))

/* Bytes besides BOS and the conversations: header, separators, question,
** ending and answer, for k conversations and a first topic of n_first bytes. */
static long fixed_bytes(const struct topic_params *p, long k, long n_first)
{
    long header = p->template == TPL_LONGCHAT ? slen(HEADER) - 3 + snprintf(NULL, 0, "%ld", k) : 0;
    return header + slen(SEP) * (k - 1) + slen(QUESTION[p->template]) + slen(ENDING) + 1 + n_first;
}

/* Bytes of a conversation's opening and closing turns. */
static long frame_bytes(const struct topic_params *p, long n_topic)
{
    return slen(OPENING) - 2 + n_topic + (p->template == TPL_LONGCHAT ? slen(CLOSING) - 2 + n_topic : 0);
}

/* The longest of n strings. */
static long longest(const char *const *s, int n)
{
    long m = 0;
    for (int i = 0; i < n; i++)
        m = slen(s[i]) > m ? slen(s[i]) : m;
    return m;
}

/* Bytes of reply m of a conversation, with its ask unless it is the first:
** the sentences are drawn from the conversation's stream (ask, then reply). */
static long reply_draw(struct lx_rng *r, long m, const char **ask, const char **reply)
{
    *ask = m > 0 ? ASK[(int)(lx_rng_uniform(r) * N_ASK)] : NULL;
    *reply = REPLY[(int)(lx_rng_uniform(r) * N_REPLY)];
    return (*ask ? slen(USER) + slen(*ask) : 0) + slen(ASSISTANT) + slen(*reply);
}

static long reply_max(long m)
{
    return (m > 0 ? slen(USER) + longest(ASK, N_ASK) : 0) + slen(ASSISTANT) + longest(REPLY, N_REPLY);
}

/* Conversation conv's own stream of asks and replies: a salted key per
** conversation, so its sentences do not depend on how many others there are. */
static void turn_stream(struct lx_rng *r, uint64_t key, long sample, int conv)
{
    uint64_t hi = (uint64_t)((unsigned long)sample >> 32);
    lx_rng_init(r, key ^ 0x7475726e73000000ULL ^ ((uint64_t)(conv + 1) << 40) ^ hi, (uint32_t)sample, LX_RNG_DATA);
}

/* The shortest length that fits every draw: the longest topic, asks and replies. */
static long min_length(const struct topic_params *p)
{
    long k = p->topics ? p->topics : 1, t = longest(TOPICS, N_TOPICS), conv = frame_bytes(p, t);
    for (long m = 0; m < (p->topics ? 0 : p->replies); m++)
        conv += reply_max(m);
    return 1 + fixed_bytes(p, k, t) + k * conv;
}

static int topic_check(const void *params, long length, struct lx_error *err)
{
    if (lx_retrieval_check_length("topic", length, err) < 0)
        return LX_EINVAL;
    const struct topic_params *p = params;
    long min = min_length(p);
    if (length < min)
        return lx_err(err, LX_EINVAL,
                      "topic: length %ld is too short for template '%s' with %ld conversation%s of %ld "
                      "replies (minimum %ld)\n  hint: use a length of at least %ld%s",
                      length, TPL_NAME[p->template], p->topics ? p->topics : 1, p->topics > 1 ? "s" : "",
                      p->topics ? 0 : p->replies, min, min,
                      p->topics > 1 ? ", or fewer topics" : !p->topics && p->replies > 0 ? ", or fewer replies" :
                      p->template == TPL_LONGCHAT ? ", or template: short" : "");
    return LX_OK;
}

/* Draw the topics (a Fisher-Yates shuffle), choose k and fill the length with
** replies round-robin; what is left is the pad. */
static void plan_instance(const struct topic_params *p, uint64_t key, long sample, long length, struct plan *pl)
{
    struct lx_rng r, rs[N_TOPICS];
    lx_rng_init(&r, key ^ (uint64_t)((unsigned long)sample >> 32), (uint32_t)sample, LX_RNG_DATA);
    lx_draw_distinct(&r, N_TOPICS, N_TOPICS, pl->topic);
    long base = p->topics ? 0 : p->replies, size[N_TOPICS], n_first = slen(TOPICS[pl->topic[0]]), used = 0;
    const char *ask, *reply;
    for (int i = 0; i < N_TOPICS; i++) {
        turn_stream(&rs[i], key, sample, i);
        size[i] = frame_bytes(p, slen(TOPICS[pl->topic[i]]));
        for (long m = 0; m < base; m++)
            size[i] += reply_draw(&rs[i], m, &ask, &reply);
    }
    pl->k = p->topics;
    for (long k = 1, sum = 0; !p->topics && k <= N_TOPICS; k++) {
        sum += size[k - 1];
        if (1 + fixed_bytes(p, k, n_first) + sum <= length)
            pl->k = k;
    }
    LX_ASSERT(pl->k >= 1);
    used = 1 + fixed_bytes(p, pl->k, n_first);
    for (long i = 0; i < pl->k; i++) {
        used += size[i];
        pl->replies[i] = base;
    }
    for (long i = 0;; i = (i + 1) % pl->k) {
        long len = reply_draw(&rs[i], pl->replies[i], &ask, &reply);
        if (used + len > length)
            break;
        used += len;
        pl->replies[i]++;
    }
    pl->pad = length - used;
}

/* Conversation i: its opening, replies and (longchat) closing turn. */
static long put_conversation(const struct topic_params *p, const struct lx_retrieval_at *at, const struct plan *pl,
                             long i, int *tok, long pos)
{
    char text[TEXT_CAP];
    const char *t = TOPICS[pl->topic[i]];
    struct lx_rng r;
    turn_stream(&r, at->key, at->sample, (int)i);
    if (i > 0)
        pos = lx_put_text(tok, pos, SEP);
    pos = lx_put_bytes(tok, pos, text, snprintf(text, sizeof text, OPENING, t));
    for (long m = 0; m < pl->replies[i]; m++) {
        const char *ask, *reply;
        reply_draw(&r, m, &ask, &reply);
        pos = ask ? lx_put_text(tok, lx_put_text(tok, pos, USER), ask) : pos;
        pos = lx_put_text(tok, lx_put_text(tok, pos, ASSISTANT), reply);
    }
    if (p->template == TPL_LONGCHAT)
        pos = lx_put_bytes(tok, pos, text, snprintf(text, sizeof text, CLOSING, t));
    return pos;
}

static int topic_make(const void *params, const struct lx_retrieval_at *at, struct lx_instance *out,
                      struct lx_error *err)
{
    const struct topic_params *p = params;
    struct plan pl;
    plan_instance(p, at->key, at->sample, at->length, &pl);
    char text[TEXT_CAP];
    int *tok = out->tok;
    long pos = 0;
    tok[pos++] = LX_TOK_BOS;
    if (p->template == TPL_LONGCHAT)
        pos = lx_put_bytes(tok, pos, text, snprintf(text, sizeof text, HEADER, pl.k));
    for (long i = 0; i < pl.k; i++)
        pos = put_conversation(p, at, &pl, i, tok, pos);
    for (long i = 0; i < pl.pad; i++)
        tok[pos++] = ' ';
    pos = lx_put_text(tok, pos, QUESTION[p->template]);
    pos = lx_put_text(tok, pos, ENDING);
    out->answer_off = pos;
    tok[pos++] = ' ';
    LX_ASSERT(slen(TOPICS[pl.topic[0]]) < LX_MAX_ANSWER);
    snprintf(out->gold, sizeof out->gold, "%s", TOPICS[pl.topic[0]]);
    pos = lx_put_text(tok, pos, out->gold);
    LX_ASSERT(pos == at->length);
    return LX_OK;
}

/* One depth (the question asks for the first topic); containment; training windows alike. */
static const struct lx_retrieval topic_r = {
    .name = "topic",
    .preset_at = offsetof(struct topic_params, preset), .protocols = (const char *const[]){"lenx", "longchat", "longchat_base"},
    .samples_at = offsetof(struct topic_params, samples),
    .depths_at = LX_RETRIEVAL_ONE_DEPTH,
    .check = topic_check,
    .make = topic_make,
    .scorer = lx_answer_contains,
};
LX_RETRIEVAL_HOOKS(topic, topic_r)

const struct lx_task lx_task_topic = {
    .name = "topic",
    .summary = "topic retrieval: the first of many conversation topics, exact length "
               "(LongChat, Li et al. 2023, lmsys blog)",
    .schema = LX_SCHEMA_REFUSING(topic_rows, struct topic_params, topic_rules, topic_refusals),
    .headline = "acc,answer_logprob",
    LX_RETRIEVAL_OPS(topic),
};
