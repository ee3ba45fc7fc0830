// cassette view: the page's whole script. It reads the data blocks the page embeds and
// builds the DOM with createElement and text nodes only: nothing from a cassette is ever
// parsed as HTML.
"use strict";
(() => {
  const PAGE = 500; // table rows drawn at a time
  const state = { sort: { key: "key", dir: 1 }, filter: {}, search: "", shown: PAGE, run: 0 };
  let data = null; // {runs, diff, group}
  const calls = new Map(); // "run:group" -> promise of that group's episodes' calls
  let texts = null; // per run, per episode: lowercase text of its messages and tool arguments

  // --- DOM -------------------------------------------------------------------------------
  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "class") node.className = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return node;
  }
  // replace node's children with kids, leaving out the empty ones
  const put = (node, ...kids) => node.replaceChildren(...kids.filter((k) => k !== null && k !== undefined && k !== false));
  const svg = (tag, attrs) => {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    return node;
  };

  // --- data ------------------------------------------------------------------------------
  function bytesOf(text) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text.trim());
    const s = atob(text.trim());
    const out = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
    return out;
  }
  async function block(id) {
    const node = document.getElementById(id);
    if (!node) return null;
    if (!node.dataset.gzip) return JSON.parse(node.textContent);
    const stream = new Blob([bytesOf(node.textContent)]).stream();
    return JSON.parse(await new Response(stream.pipeThrough(new DecompressionStream("gzip"))).text());
  }
  function episodeCalls(run, pos) {
    const group = Math.floor(pos / data.group);
    const id = `${run}:${group}`;
    if (!calls.has(id)) calls.set(id, block(`calls-${run}-${group}`));
    return calls.get(id).then((eps) => (eps ? eps[pos - group * data.group] : []));
  }

  // --- text helpers ----------------------------------------------------------------------
  const fmt = (n, digits = 0) =>
    n === undefined || n === null || n === "" ? "" : typeof n === "number" ? n.toLocaleString("en", { maximumFractionDigits: digits }) : String(n);
  const money = (n) => (typeof n === "number" ? "$" + n.toPrecision(3) : "");
  const pretty = (v) => (typeof v === "string" ? v : JSON.stringify(v, null, 2));
  function textOf(content) {
    if (content === null || content === undefined) return "";
    if (typeof content === "string") return content;
    if (Array.isArray(content)) {
      const part = (p) => (typeof p === "string" ? p : !p ? "" : p.type && p.type.includes("image") ? "[image]" : textOf(p.text ?? p.content ?? ""));
      return content.map(part).filter(Boolean).join("\n");
    }
    return JSON.stringify(content);
  }
  function toolCallsOf(message) {
    const out = [];
    for (const c of (message && message.tool_calls) || []) {
      const fn = c.function || c;
      out.push({ name: fn.name || "", args: fn.arguments ?? fn.input ?? "" });
    }
    if (message && Array.isArray(message.content)) {
      for (const p of message.content) if (p && p.type === "tool_use") out.push({ name: p.name, args: p.input });
    }
    return out;
  }
  function argsText(args) {
    if (typeof args !== "string") return pretty(args);
    try { return JSON.stringify(JSON.parse(args), null, 2); } catch { return args; }
  }
  function callText(call) {
    const parts = [];
    for (const m of call.new || []) parts.push(textOf(m.content), ...toolCallsOf(m).map((t) => argsText(t.args)));
    if (call.answer) parts.push(textOf(call.answer.content), ...toolCallsOf(call.answer).map((t) => t.name + " " + argsText(t.args)));
    if (call.req) parts.push(JSON.stringify(call.req));
    if (call.response) parts.push(JSON.stringify(call.response));
    return parts.join("\n");
  }

  // --- filters and order -----------------------------------------------------------------
  const keyText = (k) => (typeof k === "string" ? k : String(k));
  function diffOf(key) {
    if (!data.diff) return null;
    data.diffByKey ||= new Map(data.diff.episodes.map((e) => [keyText(e.env_index), e]));
    return data.diffByKey.get(keyText(key)) || null;
  }
  function matches(row, pos) {
    const f = state.filter;
    if (f.terminated && String(!!row.terminated) !== f.terminated) return false;
    if (f.error && String(row.errors > 0) !== f.error) return false;
    if (f.channel && !row.channels.includes(f.channel)) return false;
    if (f.model && !row.models.includes(f.model)) return false;
    if (f.rmin !== undefined && f.rmin !== "" && !(row.reward >= Number(f.rmin))) return false;
    if (f.rmax !== undefined && f.rmax !== "" && !(row.reward <= Number(f.rmax))) return false;
    if (f.status && (diffOf(row.key) || {}).status !== f.status) return false;
    if (state.search) {
      const q = state.search.toLowerCase();
      if (keyText(row.key).toLowerCase().includes(q)) return true;
      if (!texts || !texts[state.run] || !texts[state.run][pos].includes(q)) return false;
    }
    return true;
  }
  function value(row, key) {
    if (key === "status") return (diffOf(row.key) || {}).status || "";
    if (key === "delta") return (diffOf(row.key) || {}).delta ?? -Infinity;
    const v = row[key];
    return v === undefined || v === null ? -Infinity : v;
  }
  function ordered() {
    const rows = data.runs[state.run].episodes;
    const out = [];
    rows.forEach((row, pos) => { if (matches(row, pos)) out.push(pos); });
    const { key, dir } = state.sort;
    out.sort((a, b) => {
      const x = value(rows[a], key), y = value(rows[b], key);
      if (typeof x === "number" && typeof y === "number") return (x - y) * dir || a - b;
      return String(x).localeCompare(String(y), "en", { numeric: true }) * dir || a - b;
    });
    return out;
  }
  async function buildTexts() {
    if (texts) return;
    texts = [];
    for (let r = 0; r < data.runs.length; r++) {
      const eps = data.runs[r].episodes;
      texts[r] = [];
      for (let pos = 0; pos < eps.length; pos++) {
        const cs = await episodeCalls(r, pos);
        texts[r][pos] = (cs || []).map(callText).join("\n").toLowerCase();
      }
    }
  }

  // --- charts ----------------------------------------------------------------------------
  function histogram(title, values, label) {
    const box = el("figure", { class: "chart" }, el("figcaption", {}, title));
    const nums = values.filter((v) => typeof v === "number" && isFinite(v));
    if (!nums.length) return box.appendChild(el("p", { class: "muted" }, "none recorded")), box;
    const lo = Math.min(...nums), hi = Math.max(...nums);
    const bins = lo === hi ? 1 : Math.min(12, new Set(nums).size);
    const counts = new Array(bins).fill(0);
    for (const v of nums) counts[lo === hi ? 0 : Math.min(bins - 1, Math.floor(((v - lo) / (hi - lo)) * bins))]++;
    const top = Math.max(...counts), w = 240, h = 60, bw = w / bins;
    const chart = svg("svg", { viewBox: `0 0 ${w} ${h + 14}`, role: "img", "aria-label": title });
    counts.forEach((c, i) => {
      const bh = (c / top) * h;
      const bar = svg("rect", { x: i * bw + 1, y: h - bh, width: Math.max(1, bw - 2), height: bh, class: "bar" });
      const tip = svg("title", {});
      tip.textContent = `${c} episodes: ${label(lo + (i * (hi - lo)) / bins)}${bins > 1 ? "–" + label(lo + ((i + 1) * (hi - lo)) / bins) : ""}`;
      bar.append(tip);
      chart.append(bar);
    });
    for (const [x, v, anchor] of [[0, lo, "start"], [w, hi, "end"]]) {
      const t = svg("text", { x, y: h + 12, "text-anchor": anchor, class: "axis" });
      t.textContent = label(v);
      chart.append(t);
    }
    box.append(chart);
    return box;
  }

  // --- the run ---------------------------------------------------------------------------
  function stat(name, v) { return el("div", { class: "stat" }, el("span", { class: "muted" }, name), el("b", {}, v)); }
  function runHeader(run) {
    const rows = run.episodes;
    const sum = (k) => rows.reduce((a, r) => a + (typeof r[k] === "number" ? r[k] : 0), 0);
    const rewards = rows.map((r) => r.reward).filter((v) => typeof v === "number");
    const meta = run.meta || {};
    const costs = rows.filter((r) => typeof r.cost === "number");
    const head = el("section", { class: "run", id: "run" },
      el("h1", {}, run.name),
      el("div", { class: "stats" },
        stat("run id", meta.run_id || "—"), stat("episodes", fmt(rows.length)),
        stat("mean reward", rewards.length ? fmt(rewards.reduce((a, b) => a + b, 0) / rewards.length, 3) : "—"),
        stat("terminated", fmt(rows.filter((r) => r.terminated).length)),
        stat("steps", fmt(sum("steps"))), stat("tokens", fmt(sum("tokens"))),
        stat("cost", costs.length ? money(sum("cost")) : "—"),
        stat("errors", fmt(sum("errors"))), stat("created", run.created_at || "—")),
      el("div", { class: "charts" },
        histogram("reward", rewards, (v) => fmt(v, 2)),
        histogram("latency per episode (ms)", rows.map((r) => r.ms), (v) => fmt(v, 0))));
    const warnings = run.warnings || [];
    if (warnings.length) head.append(el("ul", { class: "warnings", id: "warnings" }, warnings.map((w) => el("li", {}, w))));
    const shown = Object.entries(meta).filter(([k]) => k !== "run_id");
    if (shown.length) head.append(el("details", { class: "meta" }, el("summary", {}, "meta"), el("pre", {}, pretty(Object.fromEntries(shown)))));
    return head;
  }
  function diffHeader() {
    const d = data.diff, s = d.stats || {};
    const c = d.counts || {};
    const tests = (s.tests || []).map((t) => `${t.name} p=${fmt(t.p_value, 3)}`).join(", ");
    return el("section", { class: "diff", id: "diff-stats" },
      el("h2", {}, `${d.a.label} → ${d.b.label}`),
      el("div", { class: "stats" },
        stat("paired", fmt(s.paired)), stat("improved", fmt(s.improved)), stat("regressed", fmt(s.regressed)),
        stat("unchanged", fmt(s.unchanged)), stat("mean A", fmt(s.mean_a, 3)), stat("mean B", fmt(s.mean_b, 3)),
        stat("Δ mean", fmt(s.mean_delta, 3)),
        stat(`${Math.round((s.ci_level || 0.95) * 100)}% CI`, s.ci_low === undefined ? "—" : `${fmt(s.ci_low, 3)} … ${fmt(s.ci_high, 3)}`),
        stat("tests", tests || "—"),
        stat("identical / diverged", `${fmt(c.identical ?? 0)} / ${fmt(c.diverged ?? 0)}`)));
  }

  // --- the table -------------------------------------------------------------------------
  const COLUMNS = [
    ["key", "episode"], ["reward", "reward"], ["terminated", "done"], ["steps", "steps"], ["tools", "tool calls"],
    ["tokens", "tokens"], ["cost", "cost"], ["ms", "latency ms"], ["errors", "errors"],
  ];
  function select(name, label, options) {
    const s = el("select", { id: `f-${name}`, "aria-label": label, onchange: (e) => { state.filter[name] = e.target.value; state.shown = PAGE; drawTable(); } },
      el("option", { value: "" }, `${label}: any`), options.map(([v, t]) => el("option", { value: v }, t)));
    s.value = state.filter[name] || "";
    return s;
  }
  function filters(run) {
    const channels = [...new Set(run.episodes.flatMap((r) => r.channels))].sort();
    const models = [...new Set(run.episodes.flatMap((r) => r.models))].sort();
    const number = (name, label) => el("input", { id: `f-${name}`, type: "number", step: "any", placeholder: label, "aria-label": label, value: state.filter[name] || "",
      oninput: (e) => { state.filter[name] = e.target.value; state.shown = PAGE; drawTable(); } });
    const search = el("input", { id: "search", type: "search", placeholder: "search messages and tool arguments  ( / )", value: state.search,
      oninput: async (e) => { state.search = e.target.value.trim(); state.shown = PAGE; if (state.search) { await buildTexts(); } drawTable(); } });
    return el("div", { class: "filters" }, search, number("rmin", "reward ≥"), number("rmax", "reward ≤"),
      select("terminated", "done", [["true", "yes"], ["false", "no"]]),
      select("error", "has error", [["true", "yes"], ["false", "no"]]),
      select("channel", "channel", channels.map((c) => [c, c])),
      select("model", "model", models.map((m) => [m, m])),
      data.diff && state.run === 0 ? select("status", "diff", [...new Set(data.diff.episodes.map((e) => e.status))].map((s) => [s, s])) : null);
  }
  function drawTable() {
    const run = data.runs[state.run];
    const order = ordered();
    state.order = order;
    const withDiff = data.diff && state.run === 0;
    const cols = withDiff ? [...COLUMNS, ["status", "diff"], ["delta", "Δ reward"]] : COLUMNS;
    const head = el("tr", {}, cols.map(([key, label]) => el("th", { scope: "col", "data-key": key, class: state.sort.key === key ? (state.sort.dir > 0 ? "asc" : "desc") : "",
      onclick: () => { state.sort = { key, dir: state.sort.key === key ? -state.sort.dir : 1 }; drawTable(); } }, label)));
    const body = el("tbody", {});
    for (const pos of order.slice(0, state.shown)) {
      const r = run.episodes[pos], d = diffOf(r.key);
      const cells = [
        el("a", { href: `#run=${state.run}&episode=${encodeURIComponent(keyText(r.key))}` }, keyText(r.key)),
        fmt(r.reward, 3), r.terminated === undefined ? "" : r.terminated ? "yes" : "no", fmt(r.steps), fmt(r.tools), fmt(r.tokens),
        money(r.cost), fmt(r.ms, 1), r.errors ? fmt(r.errors) : "",
      ];
      if (withDiff) cells.push(d ? d.status : "", d && typeof d.delta === "number" ? fmt(d.delta, 3) : "");
      body.append(el("tr", { "data-key": keyText(r.key), class: r.errors ? "has-error" : "" }, cells.map((c) => el("td", {}, c))));
    }
    const more = order.length > state.shown ? el("button", { id: "more", onclick: () => { state.shown += PAGE; drawTable(); } }, `show ${fmt(Math.min(PAGE, order.length - state.shown))} more`) : null;
    const table = document.getElementById("table");
    put(table, el("p", { class: "count", id: "count" }, `${fmt(order.length)} of ${fmt(run.episodes.length)} episodes`),
      el("div", { class: "scroll" }, el("table", { id: "episodes" }, el("thead", {}, head), body)), more);
    performance.mark("cassette-table");
  }
  function drawRun() {
    const run = data.runs[state.run];
    const tabs = data.runs.length > 1 ? el("nav", { class: "tabs" }, data.runs.map((r, i) =>
      el("button", { class: i === state.run ? "on" : "", onclick: () => { state.run = i; state.shown = PAGE; drawRun(); } }, r.name))) : null;
    put(document.getElementById("main"), tabs, data.diff ? diffHeader() : null, runHeader(run), filters(run), el("div", { id: "table" }));
    drawTable();
  }

  // --- one episode -----------------------------------------------------------------------
  function bubble(message, cls) {
    const role = (message && message.role) || "assistant";
    const text = textOf(message && message.content);
    const node = el("div", { class: `msg ${role} ${cls || ""}` }, el("div", { class: "role" }, role + (message.name ? ` · ${message.name}` : "")));
    if (text) node.append(el("div", { class: "text" }, text));
    for (const t of toolCallsOf(message)) node.append(el("div", { class: "tool-call" }, el("div", { class: "tool-name" }, `→ ${t.name}`), el("pre", {}, argsText(t.args))));
    if (role === "tool" || message.tool_call_id) node.classList.add("tool-result");
    return node;
  }
  // a request without a conversation (an MCP call, a model list): one line, the JSON folded
  function requestLine(req) {
    const params = req.params || {};
    const what = [req.method || req.endpoint || "request", params.name || params.uri || "",
      params.arguments ? JSON.stringify(params.arguments) : ""].filter(Boolean).join(" ");
    return el("details", { class: "req" }, el("summary", {}, what), el("pre", {}, pretty(req)));
  }
  // a response that is no chat message: a tool result's text, else the JSON (folded if long)
  function responseBox(response) {
    const result = response && response.result;
    const text = result && Array.isArray(result.content) ? textOf(result.content) : "";
    const raw = el("pre", {}, pretty(response));
    if (text) return el("div", { class: "msg tool" }, el("div", { class: "role" }, result.isError ? "tool error" : "tool result"),
      el("div", { class: "text" }, text), el("details", {}, el("summary", {}, "JSON"), raw));
    const line = JSON.stringify(response);
    return line.length <= 240 ? raw : el("details", { class: "response" }, el("summary", {}, line.slice(0, 120) + "…"), raw);
  }
  function callCard(call, diverged) {
    const cost = call.cost !== undefined ? ` · ${money(call.cost)}` : "";
    const tokens = call.tokens && call.tokens[2] ? ` · ${fmt(call.tokens[0])}+${fmt(call.tokens[1])} tokens` : "";
    const card = el("div", { class: `call ch-${call.ch}${diverged ? " diverged" : ""}`, "data-channel": call.ch, "data-step": call.step },
      el("div", { class: "where" }, `${call.ch} step ${call.step}`, typeof call.ms === "number" ? ` · ${fmt(call.ms, 1)} ms` : "", tokens, cost, call.cut ? " · cut short" : "",
        diverged ? el("b", { class: "flag" }, " first divergence") : null));
    if (call.ch === "fork") {
      const f = call.response || {};
      card.classList.add("fork-point");
      card.append(el("div", { class: "text" }, `forked from ${f.base || "the base"} at ${f.channel} step ${f.step}${f.why ? ` (${f.why})` : ""}`));
      return card;
    }
    if (call.settings) card.append(el("details", { class: "settings" }, el("summary", {}, `request: ${call.settings.model || ""} ${(call.settings.tools || []).length ? `· ${call.settings.tools.length} tools` : ""}`), el("pre", {}, pretty(call.settings))));
    if (call.req) card.append(requestLine(call.req));
    for (const m of call.new || []) card.append(bubble(m));
    if (call.answer) card.append(bubble(call.answer, "answer"));
    if (call.response) card.append(responseBox(call.response));
    if (call.chunks) card.append(el("details", { class: "chunks" }, el("summary", {}, `streamed: ${fmt(call.chunks.length)} chunks`), el("pre", {}, call.chunks.map((c) => JSON.stringify(c)).join("\n"))));
    if (call.error) card.append(el("div", { class: "error" }, `${call.error.type || "error"}: ${call.error.message || ""}`));
    return card;
  }
  function outcome(row) {
    if (!row || (row.reward === undefined && row.terminated === undefined)) return el("p", { class: "muted" }, "no outcome recorded");
    return el("div", { class: "outcome" }, `reward ${fmt(row.reward, 3)} · ${row.terminated ? "terminated" : "not terminated"}`,
      row.info ? el("pre", {}, pretty(row.info)) : null);
  }
  function rowsOf(allCalls) {
    // rows aligned by (channel, step), in the order they first appear in any run
    const order = [], at = new Map();
    allCalls.forEach((cs) => (cs || []).forEach((c) => {
      const k = `${c.ch}\u0000${c.step}`;
      if (!at.has(k)) { at.set(k, order.length); order.push({ ch: c.ch, step: c.step }); }
    }));
    return order.map((w) => allCalls.map((cs) => (cs || []).find((c) => c.ch === w.ch && c.step === w.step) || null).concat([w]));
  }
  async function drawEpisode(run, key) {
    const main = document.getElementById("main");
    const positions = data.runs.map((r) => r.episodes.findIndex((e) => keyText(e.key) === key));
    const pos = positions[run];
    if (pos < 0) { main.replaceChildren(el("p", { class: "error", id: "missing" }, `no episode ${key} in ${data.runs[run].name}`), el("a", { href: "#" }, "back to the run")); return; }
    const row = data.runs[run].episodes[pos];
    const order = state.order || ordered();
    const i = order.indexOf(pos);
    const nav = (d) => { const p = order[i + d]; return p === undefined ? null : `#run=${run}&episode=${encodeURIComponent(keyText(data.runs[run].episodes[p].key))}`; };
    const head = el("header", { class: "episode-head" },
      el("a", { href: "#", id: "back" }, "← episodes"), el("h2", { id: "episode-title" }, `episode ${key}`),
      el("span", { class: "nav" }, nav(-1) ? el("a", { href: nav(-1), id: "prev" }, "‹ previous") : null, " ", nav(1) ? el("a", { href: nav(1), id: "next" }, "next ›") : null),
      outcome(row));
    const d = diffOf(row.key);
    const div = d && d.divergence;
    const isDiv = (c) => !!(div && c && c.ch === div.channel && c.step === div.step);
    const shown = positions.map((p, r) => (p >= 0 ? r : -1)).filter((r) => r >= 0);
    const all = await Promise.all(shown.map((r) => episodeCalls(r, positions[r])));
    let body;
    if (shown.length < 2) {
      body = el("div", { class: "calls", id: "calls" }, all[0].map((c) => callCard(c, isDiv(c))));
    } else {
      const grid = el("div", { class: "side", id: "calls", style: `--runs:${shown.length}` }, shown.map((r) => el("div", { class: "col-head" }, data.runs[r].name)));
      for (const line of rowsOf(all)) {
        const where = line.pop();
        const mark = !!(div && where.ch === div.channel && where.step === div.step);
        for (const c of line) grid.append(c ? callCard(c, mark) : el("div", { class: "call absent" }, "—"));
      }
      body = grid;
      if (div) head.append(el("p", { class: "divergence", id: "divergence" }, `first divergence: ${div.channel} step ${div.step}, ${div.path}: ${pretty(div.a)} → ${pretty(div.b)}`));
    }
    main.replaceChildren(head, body);
    performance.mark("cassette-episode");
    const first = main.querySelector(".diverged");
    if (first) first.scrollIntoView({ block: "center" });
    else window.scrollTo(0, 0);
  }

  // --- routing, keys, theme --------------------------------------------------------------
  function route() {
    const params = new URLSearchParams(location.hash.slice(1));
    const key = params.get("episode");
    state.run = Math.min(Number(params.get("run") || state.run) || 0, data.runs.length - 1);
    if (key !== null) drawEpisode(state.run, key);
    else drawRun();
  }
  function onKey(e) {
    if (e.target.matches && e.target.matches("input, select, textarea")) { if (e.key === "Escape") e.target.blur(); return; }
    const go = (id) => { const a = document.getElementById(id); if (a) location.hash = a.getAttribute("href"); };
    if (e.key === "j" || e.key === "ArrowRight") go("next");
    else if (e.key === "k" || e.key === "ArrowLeft") go("prev");
    else if (e.key === "Escape" || e.key === "u") go("back");
    else if (e.key === "/") { const s = document.getElementById("search"); if (s) { e.preventDefault(); s.focus(); } }
    else if (e.key === "t") toggleTheme();
  }
  function toggleTheme() {
    const root = document.documentElement;
    const dark = root.dataset.theme ? root.dataset.theme !== "dark" : !matchMedia("(prefers-color-scheme: dark)").matches;
    root.dataset.theme = dark ? "dark" : "light";
    try { localStorage.setItem("cassette-view-theme", root.dataset.theme); } catch { /* a file page may have no storage */ }
  }

  async function start() {
    try { const t = localStorage.getItem("cassette-view-theme"); if (t) document.documentElement.dataset.theme = t; } catch { /* no storage */ }
    data = await block("index");
    const app = document.getElementById("app");
    app.replaceChildren(
      el("div", { class: "bar" }, el("a", { href: "#", class: "brand" }, "cassette view"), el("span", { class: "muted" }, ` ${data.version} · j/k next/previous · / search · t theme`),
        el("button", { id: "theme", onclick: toggleTheme, "aria-label": "switch theme" }, "◐")),
      el("main", { id: "main" }));
    window.addEventListener("hashchange", route);
    document.addEventListener("keydown", onKey);
    route();
    document.body.dataset.ready = "1";
  }
  start().catch((err) => {
    document.getElementById("app").replaceChildren(el("p", { class: "error" }, `the page could not read its data: ${err}`));
    document.body.dataset.ready = "error";
  });
})();
