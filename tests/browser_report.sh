#!/usr/bin/env bash
# tests/browser_report.sh - `lenx report` checked in a real browser (make test-report).
#
# Renders a report in headless Chromium (Debian's chromium; scripts/deps.sh
# browser installs it with python3-pil) and fails unless
#   1. the screenshot is not blank: enough non-white pixels, and coloured ones
#      (the plotted lines and heat maps, not only black text and axes);
#   2. the DOM Chromium parsed holds, in every line panel, one SVG series
#      (gnuplot's <g id="…gnuplot_plot_N">) per method stored for that
#      panel's task, counted in the store with sqlite3 — and at least one
#      panel of each kind the store has data for.
#
# Usage: tests/browser_report.sh [--db FILE] [--sweep S] [--metric M,...] [--png OUT.png] [--size W,H]
# Without --db it runs tests/report_sweep.yaml (a tiny model, every kind of
# panel) into a temporary store. --png keeps the screenshot (palette PNG, for
# docs/); otherwise it goes to the temporary folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lenx=${LENX_BIN:-$root/lenx}
py=/usr/bin/python3
db="" sweep="" metric="" png="" size=1400,2600
while [ $# -gt 0 ]; do
    case $1 in
        --db) db=$2; shift 2 ;;
        --sweep) sweep=$2; shift 2 ;;
        --metric) metric=$2; shift 2 ;;
        --png) png=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        *) echo "browser_report: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
for tool in chromium sqlite3 "$py"; do
    command -v "$tool" >/dev/null || { echo "browser_report: $tool is missing; hint: bash scripts/deps.sh browser" >&2; exit 3; }
done
tmp=$(mktemp -d /tmp/lenx-browser-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$db" ]; then
    db=$tmp/r.db
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "$lenx" run "$root/tests/report_sweep.yaml" --db "$db" --quiet --no-table
fi
t0=$(date +%s.%N)
"$lenx" report --db "$db" ${sweep:+--sweep "$sweep"} ${metric:+--metric "$metric"} -o "$tmp/report.html"
t1=$(date +%s.%N)

# Chromium refuses to run as root inside its sandbox; the page is our own file.
flags=(--headless --disable-gpu --hide-scrollbars --no-first-run --disable-extensions)
[ "$(id -u)" -eq 0 ] && flags+=(--no-sandbox)
chromium "${flags[@]}" --window-size="$size" --screenshot="$tmp/shot.png" "file://$tmp/report.html" \
    >"$tmp/chromium.log" 2>&1 || { cat "$tmp/chromium.log" >&2; exit 1; }
chromium "${flags[@]}" --dump-dom "file://$tmp/report.html" >"$tmp/dom.html" 2>>"$tmp/chromium.log"
t2=$(date +%s.%N)

# Methods per task prefix ("ppl", "needle"), as the store has them.
sqlite3 -separator ' ' "$db" "SELECT substr(task, 1, instr(task || '(', '(') - 1), count(DISTINCT method)
    FROM runs WHERE status = 'ok' ${sweep:+AND sweep = '$sweep'} GROUP BY 1" >"$tmp/methods.txt"

"$py" - "$tmp/shot.png" "$tmp/dom.html" "$tmp/methods.txt" "${png:-}" <<'EOF'
import re, sys
from html.parser import HTMLParser
from PIL import Image

shot, dom, methods_file, keep = sys.argv[1:5]
img = Image.open(shot).convert("RGB")
w, h = img.size
px = img.getdata()
nonwhite = sum(1 for r, g, b in px if r + g + b < 720)
coloured = sum(1 for r, g, b in px if max(r, g, b) - min(r, g, b) > 60)
print(f"screenshot {w}x{h}: {nonwhite / (w * h):.1%} non-white, {coloured} coloured pixels")
fails = []
if nonwhite < 0.02 * w * h:
    fails.append("the screenshot is (nearly) blank")
if coloured < 500:
    fails.append("no plotted colour in the screenshot")

methods = {}
for line in open(methods_file):
    task, n = line.split()
    methods[task] = int(n)

class Figures(HTMLParser):
    """Each <figure>: its data-* attributes and the gnuplot plot groups inside."""
    def __init__(self):
        super().__init__()
        self.figs, self.cur = [], None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure":
            self.cur = {"kind": a.get("data-kind"), "task": a.get("data-task", ""), "metric": a.get("data-metric"),
                        "groups": 0, "svg": 0}
        elif self.cur is not None and tag == "svg":
            self.cur["svg"] += 1
        elif self.cur is not None and tag == "g" and re.fullmatch(r"p\d+-gnuplot_plot_\d+", a.get("id", "")):
            self.cur["groups"] += 1
    def handle_endtag(self, tag):
        if tag == "figure" and self.cur is not None:
            self.figs.append(self.cur)
            self.cur = None

p = Figures()
p.feed(open(dom, encoding="utf-8").read())
kinds = {}
for f in p.figs:
    task = f["task"].split("(")[0]
    kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    if f["svg"] != 1:
        fails.append(f"{f['kind']} panel {task} {f['metric']}: {f['svg']} SVG elements in the DOM")
    if f["kind"] in ("metric", "curve") and f["groups"] != methods.get(task):
        fails.append(f"{f['kind']} panel {task} {f['metric']}: {f['groups']} series, {methods.get(task)} methods stored")
print("panels in the DOM:", ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none")
if not p.figs:
    fails.append("no panel in the DOM")
if keep:
    img.quantize(colors=64).save(keep, optimize=True)
for f in fails:
    print("FAIL:", f, file=sys.stderr)
sys.exit(1 if fails else 0)
EOF
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "browser_report: ok (report %.1f s, Chromium %.1f s)\n", b - a, c - b }'
