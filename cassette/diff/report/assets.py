"""The inline CSS and JavaScript of the HTML report (no network, no CDN)."""

from __future__ import annotations

__all__ = ["CSS", "CSS_EXTRA", "JS"]

CSS = """
:root { --a: #1d4ed8; --b: #c2410c; --bad: #b91c1c; --good: #15803d; --warn: #a16207;
  --line: #e5e7eb; --muted: #6b7280; --hl: #fef3c7; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: #111827; margin: 0; background: #f9fafb; }
main { max-width: 1400px; margin: 0 auto; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 10px; }
code, pre { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.runs { color: var(--muted); margin: 0 0 12px; }
.tag { display: inline-block; font-weight: 700; color: #fff; border-radius: 4px;
  padding: 0 6px; margin-right: 4px; }
.tag.a { background: var(--a); } .tag.b { background: var(--b); }
.verdict { font-weight: 600; padding: 8px 12px; border-radius: 6px; display: inline-block; }
.verdict.ok { background: #dcfce7; color: var(--good); }
.verdict.bad { background: #fee2e2; color: var(--bad); }
table { border-collapse: collapse; background: #fff; }
th, td { border: 1px solid var(--line); padding: 5px 10px; text-align: left;
  vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.summary th[scope=row] { font-weight: 500; color: #374151; }
.counts { display: flex; flex-wrap: wrap; gap: 8px; list-style: none; padding: 0; }
.counts li { background: #fff; border: 1px solid var(--line); border-radius: 6px;
  padding: 4px 10px; }
.counts b { font-size: 16px; }
table.episodes th[data-sort] { cursor: pointer; user-select: none; white-space: nowrap; }
table.episodes th[data-sort]::after { content: " \\2195"; color: #9ca3af; }
table.episodes th[aria-sort=ascending]::after { content: " \\2191"; color: #111827; }
table.episodes th[aria-sort=descending]::after { content: " \\2193"; color: #111827; }
tr.regressed td.delta { color: var(--bad); font-weight: 700; }
tr.improved td.delta { color: var(--good); font-weight: 700; }
.badge { font-size: 12px; border-radius: 10px; padding: 1px 8px; font-weight: 600; }
.badge.identical { background: #e5e7eb; color: #374151; }
.badge.diverged { background: #fee2e2; color: var(--bad); }
.badge.only_a, .badge.only_b { background: #fef9c3; color: var(--warn); }
details.episode { background: #fff; border: 1px solid var(--line); border-radius: 8px;
  margin: 12px 0; }
details.episode > summary { cursor: pointer; padding: 10px 14px; font-weight: 600; }
.episode-body { padding: 0 14px 14px; }
.note { background: var(--hl); border-left: 4px solid var(--bad); padding: 8px 12px;
  margin: 0 0 10px; border-radius: 4px; }
.note .vals { display: grid; grid-template-columns: auto 1fr; gap: 2px 8px; margin-top: 4px; }
.seqs { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; margin-bottom: 10px; }
.seq { display: flex; flex-wrap: wrap; gap: 4px; align-items: center; }
.chip { border: 1px solid var(--line); border-radius: 4px; padding: 0 6px; background: #f3f4f6; }
.grid { display: grid; grid-template-columns: 1fr 1fr; gap: 0 12px; }
.col-head { font-weight: 700; padding: 4px 0; border-bottom: 2px solid var(--line); }
.col-head.a { color: var(--a); } .col-head.b { color: var(--b); }
.step-row { display: contents; }
.single { max-width: calc(50% - 6px); }
.missing-run { color: var(--warn); font-weight: 600; margin: 0 0 6px; }
.step { border: 1px solid var(--line); border-radius: 6px; padding: 6px 8px; margin: 6px 0;
  min-width: 0; background: #fff; }
.step.missing { border-style: dashed; color: var(--muted); background: #f9fafb; }
.step-row.after .step { opacity: .8; }
.step-row.divergence .step { background: var(--hl); border: 2px solid var(--bad); }
.step-head { font-size: 12px; color: var(--muted); margin-bottom: 4px; }
.step-row.divergence .step-head { color: var(--bad); font-weight: 700; }
.part-diverged { outline: 2px dashed var(--bad); outline-offset: 2px; border-radius: 4px; }
.msg { margin: 4px 0; }
.role { display: inline-block; min-width: 68px; font-size: 11px; font-weight: 700;
  text-transform: uppercase; color: var(--muted); }
.msg.out .role { color: #111827; }
.content { white-space: pre-wrap; overflow-wrap: anywhere; }
.tool-call { border: 1px solid #c7d2fe; background: #eef2ff; border-radius: 6px;
  margin: 4px 0; padding: 4px 8px; }
.tool-name { font-weight: 700; font-family: ui-monospace, Menlo, Consolas, monospace; }
.tool-args { margin: 2px 0 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.ignored { color: var(--muted); font-size: 12.5px; }
"""

JS = """
(function () {
  var table = document.getElementById("episodes");
  if (!table) { return; }
  var body = table.tBodies[0];
  var heads = Array.prototype.slice.call(table.querySelectorAll("th[data-sort]"));
  function value(row, key, numeric) {
    var raw = row.dataset[key];
    if (raw === undefined || raw === "") { return null; }
    return numeric ? parseFloat(raw) : raw;
  }
  function sortBy(key, dir) {
    var th = heads.filter(function (h) { return h.dataset.sort === key; })[0];
    if (!th) { return; }
    var numeric = th.dataset.type === "num";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var a = value(r1, key, numeric), b = value(r2, key, numeric);
      if (a === null || b === null) { return a === b ? 0 : (a === null ? 1 : -1); }
      var c = numeric ? a - b : String(a).localeCompare(String(b), undefined, {numeric: true});
      return dir === "desc" ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === "desc" ? "descending" : "ascending");
    table.dataset.sorted = key + ":" + dir;
  }
  heads.forEach(function (th) {
    th.addEventListener("click", function () {
      sortBy(th.dataset.sort, th.getAttribute("aria-sort") === "ascending" ? "desc" : "asc");
    });
  });
  var params = new URLSearchParams(window.location.search);
  if (params.get("sort")) { sortBy(params.get("sort"), params.get("dir") || "asc"); }
})();
"""

CSS_EXTRA = """
table.stats th[scope=row] { font-weight: 500; color: #374151; white-space: nowrap; }
tr.verdict-row td { font-weight: 700; }
ul.causes { padding-left: 18px; } ul.causes code { color: var(--muted); }
tr.exceeds td.word { font-weight: 700; color: var(--bad); }
tr.within td.word { color: var(--muted); }
table.aligned { width: 100%; margin-bottom: 10px; table-layout: fixed; }
table.aligned td { font: 12.5px/1.4 ui-monospace, Menlo, Consolas, monospace;
  overflow-wrap: anywhere; }
table.aligned .mark { width: 2.5em; text-align: center; font-weight: 700; }
table.aligned tr.op-changed td { background: #fef3c7; }
table.aligned tr.op-deleted td.a { background: #dbeafe; }
table.aligned tr.op-inserted td.b { background: #ffedd5; }
table.aligned tr.op-same td { color: var(--muted); }
table.aligned tr.fold td { color: var(--muted); font-style: italic; }
"""
