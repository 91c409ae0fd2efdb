#!/usr/bin/env python3
"""tests/ref/scorers_ref.py - expected scores for tests/test_scorers.c.

Each named scorer of tasks/scorers.h is written here as its peer's own Python
does it (the peer's file named above each function; the rule re-typed from
reading it), and run on a table of tricky (output, gold) pairs. Writes
tests/ref/scorers_ref.jsonl, one line per (scorer, pair):
{"scorer": ..., "output": ..., "gold": ..., "score": ..., "null": 0|1}.
`null` is lenx's flag (the output holds nothing the rule can read), defined
in tasks/scorers.h; the peers have none.

Needs Debian's python3 and python3-regex (the `regex` module lost in the
middle's metrics use). Run from the checkout: /usr/bin/python3 tests/ref/scorers_ref.py
The suite reads the .jsonl only.
"""
import json
import re
import string
import sys

import regex


# ---- landmark-attention llama/run_test.py, test_model -------------------------
def first_int(output, gold):
    m = re.search(r"\d+", output)
    parsed = int(m.group()) if m else output[:20]
    return float(parsed == int(gold)), int(m is None)


# ---- LongChat longeval/utils.py, test_lines_one_sample -------------------------
def last_int(output, gold):
    nums = re.findall(r"\d+", output)
    parsed = int(nums[-1]) if nums else -1
    return float(parsed == int(gold)), int(not nums)


# ---- LongLoRA passkey_retrivial.py: generated ids == the answer's ids, those of
# tokenizer(answer).input_ids[:, 1:], which begin with SentencePiece's dummy
# prefix; on text (the budget being the answer's own length) the output, one
# leading space (that prefix, as the ids decode) aside, begins with the answer
def token_exact(output, gold):
    text = output[1:] if output.startswith(" ") else output
    return float(text.startswith(gold[0])), int(output == "")


def substring(output, gold):
    out = output.lower()
    return float(any(g.lower() in out for g in gold)), int(out.strip() == "")


# ---- RULER scripts/eval/evaluate.py postprocess_pred, synthetic/constants.py ----
def postprocess_pred(predict_str):
    predict_str = predict_str.strip()
    predict_str = re.sub(r"[\x00-\x1f]", "\n", predict_str).strip()
    return predict_str


def ruler_all(output, gold):
    pred = postprocess_pred(output)
    return sum(1.0 if r.lower() in pred.lower() else 0.0 for r in gold) / len(gold), int(pred.strip() == "")


def ruler_part(output, gold):
    pred = postprocess_pred(output)
    return max(1.0 if r.lower() in pred.lower() else 0.0 for r in gold), int(pred.strip() == "")


# ---- lost-in-the-middle src/lost_in_the_middle/metrics.py ----------------------
def normalize_answer(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = regex.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def best_subspan_em(prediction, ground_truths):
    p = normalize_answer(prediction)
    for g in ground_truths:
        if normalize_answer(g).lower() in p.lower():
            return 1.0
    return 0.0


# scripts/evaluate_qa_responses.py, get_metrics_for_example
def litm_subspan_em(output, gold):
    answer = output.split("\n")[0].strip()
    return best_subspan_em(answer, gold), int(normalize_answer(answer).strip() == "")


# LongChat topics are judged by a language model; lenx's stand-in: the first
# topic's SQuAD form in the whole output's
def topic_contains(output, gold):
    return best_subspan_em(output, gold[:1]), int(normalize_answer(output).strip() == "")


INT_SCORERS = {"first_int": first_int, "last_int": last_int}
TEXT_SCORERS = {"token_exact": token_exact, "substring": substring, "ruler_all": ruler_all,
                "ruler_part": ruler_part, "litm_subspan_em": litm_subspan_em, "topic_contains": topic_contains}

INT_CASES = [
    ("12345", 12345), ("\n12345", 12345), ("12345|5", 12345), ("12345|5", 5), ("is 48213", 48213),
    ("", 7), ("", -1), ("no digits here", -1), ("no digits here", 0), ("007", 7), ("0", 0), ("00", 0),
    ("-5", -5), ("-5", 5), ("3.14", 3), ("3.14", 14), ("1,234", 1234), ("1,234", 234), ("1,234", 1),
    ("\u0663\u0664\u0665", 345), ("\uff11\uff12\uff13", 123), ("4\u0663", 43), ("x\u00b23", 3),
    ("x\u00b23", 23), ("\u07c01", 1), ("\U0001d7d8\U0001d7d9", 1), ("\U0001d7ce\U0001d7e2", 4),
    ("\u2167", 8), ("abc\x00 99", 99), ("Line <17>: <REGISTER_CONTENT> is <42>", 42),
    ("Line <17>: <REGISTER_CONTENT> is <42>", 17),
    ("The pass key is 71432. Remember it. 71432 is the pass key.", 71432),
    ("12345678901234567890123", "12345678901234567890123"), ("99999999999999999999", "099999999999999999999"),
    ("1 2 3", 1), ("1 2 3", 3), ("\u0966\u0967\u0968 and 9", 12), ("\u0966\u0967\u0968 and 9", 9),
    ("one two three", 3), ("\t42\t", "42"), ("\u00bd", 1), ("A1B22C333", 333), ("A1B22C333", 1),
]

TEXT_CASES = [
    ("Paris", ["paris"]), ("\nParis", ["Paris"]), ("The answer is the Eiffel Tower.", ["Eiffel Tower"]),
    ("the", ["the"]), ("", [""]), ("", ["x"]), ("Wilhelm Conrad R\u00f6ntgen", ["wilhelm conrad r\u00f6ntgen"]),
    ("R\u00d6NTGEN", ["r\u00f6ntgen"]), ("\u0130stanbul", ["istanbul"]), ("\u0130stanbul", ["i\u0307stanbul"]),
    ("\u039f\u0394\u039f\u03a3", ["\u03bf\u03b4\u03bf\u03c2"]), ("\u039f\u0394\u039f\u03a3", ["\u03bf\u03b4\u03bf\u03c3"]),
    ("Stra\u00dfe", ["STRASSE"]), ("U.S.A.", ["USA"]), ("an apple a day", ["apple day"]), ("theater", ["the"]),
    ("Answer:\tBlue", ["blue"]), ("blue\nred", ["red"]), ("  \n  green", ["green"]), ("rock\u2013paper", ["rock paper"]),
    ("rock-paper", ["rockpaper"]), ("Caf\u00e9", ["cafe"]), ("Cafe\u0301", ["caf\u00e9"]), ("the\u0301 end", ["end"]),
    ("the\u0301 end", ["th\u00e9 end"]), ("x\u00a0y", ["x y"]), ("Mount Everest", ["K2", "Everest"]),
    ("k2 and everest", ["K2", "Everest"]), ("", ["a", "b"]), ("12345|5", ["12345"]), (" 12345", ["12345"]),
    ("\x01tab\x1fx", ["tab\nx"]), ("\x85Hello", ["hello"]), ("\u01c5emal", ["\u01c6emal"]), ("\ufb01sh", ["fish"]),
    ("\u216b", ["\u217b"]), ("\u03a3\u0391\u03a3", ["\u03c3\u03b1\u03c2"]), ("\u03a3\u0391\u03a3", ["\u03c3\u03b1\u03c3"]),
    ("\u03a3", ["\u03c3"]), ("A\u03a3.", ["a\u03c2."]), ("A\u03a3'B", ["a\u03c3'b"]), ("The the THE", [""]),
    ("a", ["A"]), ("\u3000\u5168\u89d2\u3000", ["\u5168\u89d2"]), ("The Beatles", ["Beatles, The"]),
    ("THE END", ["The End"]), ("foo\r\nbar", ["foo"]), ("\U0001d400\U0001d401", ["ab"]), ("A.N.", ["an"]),
    ("x_the_y", ["x y"]), ("\u00fcber", ["\u00dcBER"]), ("red, green and blue", ["blue", "green", "red", "cyan"]),
    ("  Teal.  ", ["teal"]), ("mauve", ["Mauve", ""]), ("a\x00b", ["a\x00b"]), ("\u2028Paris", ["paris"]),
    ("Paris\u2028Rome", ["rome"]), ("x\u00b2the y", ["x\u00b2 y"]), ("the\u200d end", ["end"]),
    ("the\u00b7x", ["\u00b7x"]),
]


def main():
    out = []
    for name, fn in INT_SCORERS.items():
        for output, gold in INT_CASES:
            score, null = fn(output, gold)
            out.append({"scorer": name, "output": output, "gold": gold, "score": score, "null": null})
    for name, fn in TEXT_SCORERS.items():
        for output, gold in TEXT_CASES:
            score, null = fn(output, gold)
            out.append({"scorer": name, "output": output, "gold": gold, "score": score, "null": null})
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/ref/scorers_ref.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for row in out:
            f.write(json.dumps(row, ensure_ascii=True) + "\n")


if __name__ == "__main__":
    main()
