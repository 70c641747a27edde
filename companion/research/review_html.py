"""The review as one self-contained HTML page: inline CSS and script, the rows as inline JSON,
nothing fetched. The script draws the flagged tokens (highest risk first) and the
redactions, each in its context with the words marked, lets the researcher pick each row's
decision, and saves review.csv with those decisions (a download made in the page)."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:1.5em;color:#222;max-width:80em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3em .4em;
vertical-align:top;text-align:left}th{background:#f3f3f3;position:sticky;top:0}
.ctx{font-family:ui-monospace,monospace;font-size:13px;white-space:pre-wrap;word-break:break-word}
mark.redaction{background:#ffd6d6;padding:0 .15em}mark.flag{background:#fff1a8;padding:0 .15em}
.tag{color:#a00;font-weight:600}.id{color:#888;font-size:11px}.risk{text-align:right}
.bar{position:sticky;top:0;background:#fff;padding:.5em 0;z-index:1}
"""

SCRIPT = r"""
const cols = JSON.parse(document.getElementById('columns').textContent);
const rows = JSON.parse(document.getElementById('rows').textContent).map(
  (r, n) => Object.assign(Object.fromEntries(cols.map((c, i) => [c, r[i]])), {n}));
const flags = rows.filter(r => r.kind === 'flag').sort((a, b) => b.risk - a.risk || a.n - b.n);
const redactions = rows.filter(r => r.kind === 'redaction');
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function draw(body, list, flag) {
  for (const r of list) {
    const tr = el('tr');
    tr.dataset.id = r.id; tr.dataset.risk = r.risk; tr.dataset.kind = r.kind; tr.dataset.n = r.n;
    const pick = el('select');
    for (const [v, label] of [['', flag ? '(leave)' : '(stays redacted)'], ['keep', 'keep'],
                              ['redact', 'redact']]) {
      const o = el('option', '', label); o.value = v; pick.append(o);
    }
    pick.value = r.decision || '';
    pick.onchange = () => { r.decision = pick.value; count(); };
    const ctx = el('td', 'ctx');
    const mark = el('mark', r.kind, r.original);
    mark.dataset.recognizers = r.recognizers;
    mark.title = flag ? 'flagged, risk ' + r.risk : 'redacted by ' + r.recognizers;
    ctx.append(r.before, mark);
    if (!flag) ctx.append(' ', el('span', 'tag', '→ ' + r.replacement));
    ctx.append(r.after);
    const where = el('td', '', r.table + ' ' + r.row + ' ' + r.column);
    where.append(el('div', 'id', r.id));
    const first = el('td'); first.append(pick);
    const cells = flag ? [el('td', 'risk', r.risk), ctx, el('td', '', r.entity), where]
                       : [ctx, el('td', '', r.entity), el('td', 'rule', r.recognizers), where];
    tr.append(first, ...cells);
    body.append(tr);
  }
}
function count() {
  const done = rows.filter(r => r.decision).length;
  document.getElementById('count').textContent = flags.length + ' flagged, ' +
    redactions.length + ' redactions, ' + done + ' decided';
}
function filter() {
  const q = document.getElementById('find').value.toLowerCase();
  const least = +document.getElementById('least').value || 0;
  for (const tr of document.querySelectorAll('tbody tr')) {
    const r = rows[+tr.dataset.n];
    tr.hidden = (q && !(r.original + ' ' + r.id).toLowerCase().includes(q)) ||
      (r.kind === 'flag' && r.risk < least);
  }
}
function cell(c, v) {
  const text = typeof v === 'string';
  v = String(v ?? '');
  if (text && v && !['id', 'decision'].includes(c) && /^[=+\-@\t\r']/.test(v)) v = "'" + v;
  return /[",\r\n]/.test(v) ? '"' + v.replace(/"/g, '""') + '"' : v;
}
function csvText() {
  const lines = [cols.join(',')].concat([...flags, ...redactions].map(
    r => cols.map(c => cell(c, r[c])).join(',')));
  return lines.join('\r\n') + '\r\n';
}
function save() {
  const a = el('a');
  a.href = URL.createObjectURL(new Blob([csvText()], {type: 'text/csv'}));
  a.download = 'review.csv';
  a.click();
}
draw(document.querySelector('#flags tbody'), flags, true);
draw(document.querySelector('#redactions tbody'), redactions, false);
document.getElementById('find').oninput = filter;
document.getElementById('least').oninput = filter;
document.getElementById('save').onclick = save;
count();
document.body.dataset.ready = 'yes';
"""

BODY = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>{title}</title><style>{style}</style></head>
<body><h1>{title}</h1>
<p>This page holds the original words: keep it off shared drives, delete it when done.
Flagged tokens are words that were <em>not</em> redacted but may identify someone,
highest risk first; choose <b>redact</b> for any that should be. Redactions are below;
choose <b>keep</b> to undo one. Then <b>Save review.csv</b> and re-export with
<code>companion export ... --apply-review review.csv</code>.</p>
<div class="bar"><span id="count"></span> &middot;
<label>find <input id="find" size="18"></label>
<label>flags with risk at least
<input id="least" type="number" min="0" value="0" style="width:4em"></label>
<button id="save">Save review.csv</button></div>
<h2>Flagged tokens</h2>
<table id="flags"><thead><tr><th>decision</th><th>risk</th><th>in context</th>
<th>entity if redacted</th><th>where / id</th></tr></thead><tbody></tbody></table>
<h2>Redactions</h2>
<table id="redactions"><thead><tr><th>decision</th><th>in context</th><th>entity</th>
<th>recognizers</th><th>where / id</th></tr></thead><tbody></tbody></table>
<script type="application/json" id="columns">{columns}</script>
<script type="application/json" id="rows">{rows}</script>
<script>{script}</script>
</body></html>
"""


def _json(value: Any) -> str:
    """JSON that cannot end its <script> element early."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(items: Sequence[Any], columns: Sequence[str], title: str) -> str:
    rows = [item.cells() for item in items]
    return BODY.format(title=html.escape(title), style=STYLE, script=SCRIPT,
                       columns=_json(list(columns)), rows=_json(rows))  # fmt: skip
