// tests/node/openai_sdk.cjs - a real third-party client against `lenx serve`:
// the official OpenAI SDK for Node (npm `openai`, installed by scripts/node.sh)
// asks for a completion with echo and logprobs, and the prompt's log-probs must
// be the NLLs `lenx score` printed for the same tokens (within 1e-5); a text
// completion, unstreamed and streamed (the SDK's own event reader); then
// lm-evaluation-harness's request shapes (its tokenizer probes, token-id
// prompts as a list of lists with echo, max_tokens 1 and a seed) by fetch.
//   node openai_sdk.cjs PORT MODEL_ID SCORE_JSON SDK_DIR
// Exit status 0 when every check holds; each failure is printed.
const path = require('path');
const fs = require('fs');
const [port, model, scoreFile, sdkDir] = process.argv.slice(2);
const OpenAI = require(path.join(sdkDir, 'node_modules', 'openai')).OpenAI;
const base = `http://127.0.0.1:${port}`;
let failed = 0;
function check(ok, what) {
    if (!ok) { failed++; console.log(`FAIL: ${what}`); }
}

async function main() {
    const score = JSON.parse(fs.readFileSync(scoreFile, 'utf8'));
    const ids = [1, ...score.tokens];   // BOS, then the text: one window of `lenx score`
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0 });

    const models = await client.models.list();
    check(models.data.length === 1 && models.data[0].id === model, `models.list: ${JSON.stringify(models.data)}`);

    const r = await client.completions.create({ model, prompt: ids, max_tokens: 0, echo: true, logprobs: 1,
                                                temperature: 0 });
    const lp = r.choices[0].logprobs.token_logprobs;
    check(lp.length === ids.length, `echo gives ${lp.length} log-probs for ${ids.length} tokens`);
    check(lp[0] === null, 'the first token has no log-prob');
    let worst = 0;
    for (let i = 0; i < score.nll.length; i++)
        worst = Math.max(worst, Math.abs(lp[i + 1] + score.nll[i]));
    check(worst <= 1e-5, `log-probs differ from lenx score's NLLs by ${worst}`);
    check(r.choices[0].logprobs.tokens.length === ids.length && r.choices[0].logprobs.top_logprobs.length === ids.length,
          'tokens and top_logprobs per token');
    console.log(`sdk: ${ids.length} tokens, max |logprob + nll| = ${worst}`);

    // a text prompt, greedy, with a stop string
    const t = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 12, temperature: 0,
                                                stop: ['.'] });
    check(typeof t.choices[0].text === 'string' && t.choices[0].text.length > 0 && !t.choices[0].text.includes('.'),
          `text completion: ${JSON.stringify(t.choices[0])}`);
    check(t.usage.prompt_tokens === 5, `prompt_tokens ${t.usage.prompt_tokens}`);
    // the same request streamed: the SDK reads the events, their texts make the same text
    const st = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 12, temperature: 0,
                                                 stop: ['.'], stream: true, stream_options: { include_usage: true } });
    let text = '', finish = null, chunks = 0, usage = null;
    for await (const ch of st) {
        chunks++;
        if (ch.usage) usage = ch.usage;
        if (!ch.choices.length) continue;
        text += ch.choices[0].text;
        if (ch.choices[0].finish_reason) finish = ch.choices[0].finish_reason;
    }
    check(text === t.choices[0].text && finish === t.choices[0].finish_reason && chunks > 2,
          `streamed: ${JSON.stringify(text)} (${finish}, ${chunks} chunks), unstreamed ${JSON.stringify(t.choices[0])}`);
    check(usage && usage.completion_tokens === t.usage.completion_tokens, `streamed usage ${JSON.stringify(usage)}`);

    // lm-eval's local-completions: the tokenizer probes at the server's root ...
    const info = await (await fetch(`${base}/tokenizer_info`)).json();
    check('eos_token' in info, `tokenizer_info: ${JSON.stringify(info)}`);
    const tok = await (await fetch(`${base}/tokenize`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt: 'test', add_special_tokens: false }) })).json();
    check(Array.isArray(tok.tokens) && tok.tokens.length > 0, `tokenize: ${JSON.stringify(tok)}`);
    const eos = await (await fetch(`${base}/tokenize`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt: info.eos_token, add_special_tokens: false }) })).json();
    check(eos.tokens.length === 1 && eos.tokens[0] === 2, `eos_token reads as ${JSON.stringify(eos.tokens)}`);
    // ... and its loglikelihood request: context + continuation as ids in a list of lists
    const ctxlen = 20;
    const res = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ model, prompt: [ids], echo: true, logprobs: 1, max_tokens: 1, temperature: 0,
                               seed: 1234 }) });
    check(res.status === 200, `lm-eval request: HTTP ${res.status}`);
    const j = await res.json();
    const tl = j.choices[0].logprobs.token_logprobs;
    check(tl.length === ids.length + 1, `lm-eval echo: ${tl.length} log-probs for ${ids.length} + 1 tokens`);
    let sum = 0, want = 0;
    for (let i = ctxlen; i < tl.length - 1; i++) sum += tl[i];      // lm-eval: token_logprobs[ctxlen:-1]
    for (let i = ctxlen - 1; i < score.nll.length; i++) want -= score.nll[i];
    check(Math.abs(sum - want) <= 1e-4, `continuation log-likelihood ${sum}, lenx score says ${want}`);
    // is_greedy as lm-eval reads it: each token is the top of its top_logprobs
    const top = j.choices[0].logprobs.top_logprobs[ctxlen];
    check(top !== null && typeof top === 'object', 'top_logprobs entries are objects');
    console.log(failed ? `${failed} checks failed` : 'all checks hold');
    process.exit(failed ? 1 : 0);
}
main().catch(e => { console.log(`FAIL: ${e.stack || e}`); process.exit(1); });
