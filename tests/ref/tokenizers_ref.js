// tests/ref/tokenizers_ref.js - reference token ids from the Hugging Face
// tokenizers library (its node binding, @anush008/tokenizers 0.6.0) for three of the
// tokenizer.json files scripts/tokenizers.sh fetches: Llama-2-style
// SentencePiece BPE with byte fallback, Qwen3's byte-level BPE, and Gemma 3's
// SentencePiece-style BPE (no dummy prefix, a Split MergedWithPrevious).
//
//   bash scripts/tokenizers.sh --ref          # the files and the library, in build/tokenizers/
//   node tests/ref/tokenizers_ref.js          # rewrite tests/ref/tok_*.json
//   node tests/ref/tokenizers_ref.js --bench  # encode throughput, library vs lenx, one run
//
// Writes tests/ref/tok_tiny.json (a small byte-level tokenizer.json made here)
// and tests/ref/tok_tiny_edge.json (the library's ids for it), and per tokenizer
// NAME (llama2, qwen3, gemma3):
//   tests/ref/tok_NAME_edge.json    the edge cases: text, ids without the
//                                   post-processor's specials, ids with them, decode(ids)
//   tests/ref/tok_NAME_corpus.json  >= 1 MB of Austen and State of the Union text in
//                                   paragraph-aligned chunks: file, byte offset, bytes,
//                                   token count and the SHA-256 of the ids as int32
//                                   little-endian (without specials)
// The suite (tests/test_tokenizer.c) compares lenx's ids with these, without node.
// Run from the checkout; the corpus comes from data/corpus (make data).
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { spawnSync } = require('child_process');

const root = path.resolve(__dirname, '..', '..');
const tokdir = path.join(root, 'build', 'tokenizers');
const { Tokenizer } = require(path.join(tokdir, 'ref', 'node_modules', '@anush008', 'tokenizers'));
const NAMES = ['llama2', 'qwen3', 'gemma3'];
const tokPath = (name) => path.join(tokdir, name, 'models', 'tokenizer.json');

// Whole documents: two Austen novels and seven addresses across two centuries.
const DOCS = [
    'data/corpus/austen/test/persuasion.txt',
    'data/corpus/austen/train/northangerabbey.txt',
    ...['1790', '1863', '1941', '1962', '2000', '2019', '2021'].map((y) => {
        const f = fs.readdirSync(path.join(root, 'data/corpus/sotu')).find((n) => n.startsWith(y + '_'));
        return 'data/corpus/sotu/' + f;
    }),
];
const CHUNK = 32768;   // bytes a chunk reaches before it ends at the next newline

const EDGE = [
    '', ' ', '  ', '   hello', ' hello', 'hello', 'hello   ', 'Hello, world!', 'Once upon a time',
    'a  b   c    d', '\t', 'tab\tseparated\tvalues', '\n', '\n\n\n', 'line one\nline two\r\nline three',
    ' \n \n  ', 'trailing newline\n', '\r', '   \t  \n\t ',
    '0', '42', '1234567890', '3.14159', '1,000,000.00', 'x1y22z333', '2024-11-24T09:15:00Z', '٣٤٥ ١٢',
    "don't I'LL you're we've She'd", "'s 't 're", 'CamelCaseWord snake_case_word',
    'café naïve — 😀', 'Ελληνικά γράμματα', 'Русский текст', 'العربية', 'עברית', 'हिन्दी भाषा',
    '中文字符和标点。', '日本語のひらがなとカタカナ', '한국어 문장', 'ภาษาไทย',
    'e\u0301', 'Ame\u0301lie', 'a\u0308\u0304 o\u0323\u0302', 'Z\u0351\u0307a\u0352l\u0353g\u0354o',
    '\u00c5ngstr\u00f6m \u212bngstr\u00f6m', '\ufb01ne \ufb03',
    '👍', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇯🇵🇫🇷', '❤️', 'a😀b😀😀c',
    '\u00a0nbsp\u00a0', 'zero\u200bwidth', '\ufeffbom', 'line\u2028sep', 'a\u0000b', '\u0007bell',
    '<s>', '</s>', '<unk>', '<s>hello</s>', ' <s> spaced </s> ', 'x<s>y',
    '<|endoftext|>', '<|im_start|>user\nhi<|im_end|>', '<think>\nreason\n</think>', '<|im_start',
    '<tool_call>{"a": 1}</tool_call>', '<0x41>', '▁leading meta', '__init__', 'def f(x):\n    return x**2\n',
    'https://example.com/a?b=c&d=e#f', 'supercalifragilisticexpialidocious',
    'The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX!',
    '      ', '\t\t\t\tindented', '!!!???...', '(((nested)))', '$100 €200 £300 ¥400',
];

// Paragraph-aligned chunks of each document, as [file, offset, length, text].
function chunks() {
    const out = [];
    for (const rel of DOCS) {
        const buf = fs.readFileSync(path.join(root, rel));
        let off = 0;
        while (off < buf.length) {
            let end = Math.min(off + CHUNK, buf.length);
            const nl = buf.indexOf(10, end - 1);
            end = nl < 0 ? buf.length : nl + 1;
            out.push([rel, off, end - off, buf.subarray(off, end).toString('utf8')]);
            off = end;
        }
    }
    return out;
}

function idsHash(ids) {
    const b = Buffer.alloc(4 * ids.length);
    ids.forEach((id, i) => b.writeInt32LE(id, 4 * i));
    return crypto.createHash('sha256').update(b).digest('hex');
}

// A tiny byte-level tokenizer.json written here, for what the two real files do
// not use: GPT-2's ByteLevel regex with add_prefix_space, a Digits pre-tokenizer
// before it, ignore_merges, added tokens with lstrip / rstrip, and a template
// that appends EOS.
function tinyTokenizer() {
    const bs = [];
    for (let b = 0; b < 256; b++)
        if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) bs.push(b);
    const ch = {};
    bs.forEach((b) => { ch[b] = String.fromCodePoint(b); });
    let k = 0;
    for (let b = 0; b < 256; b++) if (!(b in ch)) ch[b] = String.fromCodePoint(256 + k++);
    const vocab = {};
    for (let b = 0; b < 256; b++) vocab[ch[b]] = b;
    const merges = [['Ġ', 't'], ['h', 'e'], ['Ġt', 'he'], ['i', 'n'], ['Ġ', 'a'], ['Ġa', 'n'], ['Ġan', 'd'],
        ['1', '2'], ['Ġ', 'Ġ'], ['l', 'l']];
    for (const [a, b] of merges) vocab[a + b] = Object.keys(vocab).length;
    vocab['Ġhello'] = Object.keys(vocab).length;   // reachable only whole (ignore_merges)
    const n = Object.keys(vocab).length;
    const added = (id, content, special, lstrip, rstrip) =>
        ({ id, content, single_word: false, lstrip, rstrip, normalized: false, special });
    return {
        version: '1.0', truncation: null, padding: null,
        added_tokens: [added(n, '<|end|>', true, true, false), added(n + 1, '[X]', false, false, true)],
        normalizer: null,
        pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: false },
            { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true }] },
        post_processor: { type: 'TemplateProcessing', single: [{ Sequence: { id: 'A', type_id: 0 } },
            { SpecialToken: { id: '<|end|>', type_id: 0 } }], pair: [],
            special_tokens: { '<|end|>': { id: '<|end|>', ids: [n], tokens: ['<|end|>'] } } },
        decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
        model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
            end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: true,
            vocab, merges },
    };
}

const TINY_EDGE = ['', 'the and hello', 'hello', 'Hello', 'x1234y 56', 'the<|end|>', 'a  <|end|>  b', '[X]   q',
    'in the   end\n\n', ' leading', 'tab\there', 'ünïcode 😀', 'shell hello hellos', '12 123 1212',
    // lstrip / rstrip take any Unicode White_Space: ideographic and no-break spaces
    'a\u3000<|end|>', '[X]\u3000b', 'a\u00a0<|end|>'];

async function writeRefs() {
    fs.writeFileSync(path.join(__dirname, 'tok_tiny.json'), JSON.stringify(tinyTokenizer()) + '\n');
    {
        const tok = Tokenizer.fromFile(path.join(__dirname, 'tok_tiny.json'));
        const edge = [];
        for (const text of TINY_EDGE) {
            const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
            const withSpecials = (await tok.encode(text)).getIds();
            edge.push({ text, ids, ids_with_specials: withSpecials, decoded: await tok.decode(ids, false) });
        }
        fs.writeFileSync(path.join(__dirname, 'tok_tiny_edge.json'),
            '[\n' + edge.map((e) => JSON.stringify(e)).join(',\n') + '\n]\n');
        console.log(`tiny: ${edge.length} edge cases`);
    }
    const cs = chunks();
    const total = cs.reduce((s, c) => s + c[2], 0);
    for (const name of NAMES) {
        const tok = Tokenizer.fromFile(tokPath(name));
        const edge = [];
        for (const text of EDGE) {
            const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
            const withSpecials = (await tok.encode(text)).getIds();
            edge.push({ text, ids, ids_with_specials: withSpecials, decoded: await tok.decode(ids, false) });
        }
        fs.writeFileSync(path.join(__dirname, `tok_${name}_edge.json`),
            '[\n' + edge.map((e) => JSON.stringify(e)).join(',\n') + '\n]\n');
        const rows = [];
        for (const [file, offset, bytes, text] of cs) {
            const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
            rows.push({ file, offset, bytes, n_ids: ids.length, sha256: idsHash(ids) });
        }
        fs.writeFileSync(path.join(__dirname, `tok_${name}_corpus.json`),
            '[\n' + rows.map((r) => JSON.stringify(r)).join(',\n') + '\n]\n');
        console.log(`${name}: ${edge.length} edge cases, ${rows.length} chunks, ${total} bytes, ` +
            `${rows.reduce((s, r) => s + r.n_ids, 0)} tokens`);
    }
}

// Encode the same text with the library and with `lenx tokenize --stats`
// (which times its own encode, excluding loading), one after the other.
async function bench() {
    const cs = chunks();
    const text = cs.map((c) => c[3]).join('');
    const file = path.join(root, 'build', 'tokenizers', 'bench.txt');
    fs.writeFileSync(file, text);
    const mb = Buffer.byteLength(text) / 1e6;
    for (const name of NAMES) {
        const tok = Tokenizer.fromFile(tokPath(name));
        await tok.encode('warm up', null, { addSpecialTokens: false });
        // Both encode the whole text in one call, without specials.
        const t0 = process.hrtime.bigint();
        const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
        const whole = Number(process.hrtime.bigint() - t0) / 1e9;
        // ... and chunk by chunk (34 calls of about 32 KB), its more usual use.
        const t1 = process.hrtime.bigint();
        for (const c of cs)
            await tok.encode(c[3], null, { addSpecialTokens: false });
        const chunked = Number(process.hrtime.bigint() - t1) / 1e9;
        const r = spawnSync(path.join(root, 'lenx'),
            ['tokenize', '--tokenizer', tokPath(name), '--text', file, '--no-specials', '--stats'],
            { stdio: ['ignore', 'ignore', 'pipe'] });
        const stats = r.stderr.toString();
        const m = /encode ([0-9.]+) s, ([0-9]+) tokens/.exec(stats);
        console.log(`${name}: ${mb.toFixed(2)} MB, reference ${ids.length} tokens in ${whole.toFixed(3)} s ` +
            `(${(mb / whole).toFixed(2)} MB/s), in chunks ${chunked.toFixed(3)} s ` +
            `(${(mb / chunked).toFixed(2)} MB/s); lenx ${m ? m[2] : '?'} tokens in ${m ? m[1] : '?'} s ` +
            `(${m ? (mb / Number(m[1])).toFixed(2) : '?'} MB/s)`);
    }
}

(process.argv[2] === '--bench' ? bench() : writeRefs()).catch((e) => {
    console.error(e);
    process.exit(1);
});
