"""The session explorer's stylesheet and script (`reports.explorer` inlines both into its page).

The script reads three JSON elements of the page: ``meta`` (run id, strategies, the session table's
columns, whether the run kept events, the event columns' defaults, and per session row which blob holds
its events), ``sessions`` (the session table, column by column) and ``details`` (per session, every
strategy's events and calls as base64 of deflate-compressed JSON; `reports.explorer._details`), and the
template of the decision trace's legend. It draws the session table a page of rows at a time (100, 500
or all of them), and of a page only the rows in view of its scroll box; writes every number with
``fmt``, by the unit the meta gives it (the rules of `reports.explorer.format_number`), while sorting
uses the true values; unpacks a session's blob only when it is opened (DecompressionStream); and
fetches nothing.
"""

from __future__ import annotations

from reports.markup import CSS

__all__ = ["SCRIPT", "STYLE"]

STYLE = CSS + r"""
body { padding: 16px 24px 48px; }
.subtitle { margin: 0 0 10px; }
.filters { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; margin: 8px 0;
           padding: 8px 10px; background: #f6f8fa; border: 1px solid #d0d7de; }
.filters label { font-size: 12px; color: #57606a; display: flex; gap: 6px; align-items: center; }
.filters select, .filters input { font: inherit; padding: 2px 4px; }
.pager { display: flex; flex-wrap: wrap; gap: 6px 12px; align-items: center; margin: 6px 0; font-size: 12px;
         color: #57606a; }
.pager select { font: inherit; padding: 1px 4px; }
.pager button { padding: 1px 8px; }
#count { color: #1a1a1a; font-weight: 600; }
#sessions-table th { cursor: pointer; user-select: none; white-space: nowrap; position: sticky; top: 0; }
#sessions-table th.sorted-asc::after { content: " \25B2"; font-size: 10px; }
#sessions-table th.sorted-desc::after { content: " \25BC"; font-size: 10px; }
#sessions-table tbody tr[data-i] { cursor: pointer; }
#sessions-table tbody tr[data-i]:hover td { background: #f3f8ff; }
#sessions-table tbody tr.selected td { background: #ddf4ff; }
#sessions-table td { white-space: nowrap; }
#sessions-table tr.spacer td { padding: 0; border: 0; }
#sessions-table td.text, #sessions-table th.text { text-align: left; }
.table-box { max-height: max(320px, calc(100vh - 190px)); overflow: auto; border: 1px solid #d0d7de; }
.table-box table { margin: 0; }
.outcome { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 12px; background: #eaeef2; }
.outcome.success { background: #dafbe1; color: #116329; }
.outcome.error, .outcome.overflow, .outcome.stuck, .outcome.wrong_answer { background: #ffebe9; color: #a40e26; }
button { font: inherit; padding: 2px 10px; cursor: pointer; }
section.panel { margin-top: 20px; border-top: 2px solid #d0d7de; }
.stepper { display: flex; gap: 10px; align-items: center; margin: 10px 0; flex-wrap: wrap; }
.stepper input[type=number] { width: 64px; font: inherit; }
.stepper input[type=range] { width: 320px; }
.bar { display: flex; height: 22px; border: 1px solid #8c959f; background: #fff; margin: 4px 0; max-width: 900px; }
.bar span { display: block; height: 100%; }
.bar.mini { height: 10px; max-width: 340px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px; color: #57606a; margin: 4px 0 10px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
.turn-grid { display: grid; grid-template-columns: minmax(300px, 1fr) minmax(300px, 1fr); gap: 4px 24px;
             max-width: 1200px; }
.turn-grid h3 { margin: 10px 0 4px; }
.empty { color: #57606a; font-style: italic; }
.lost { color: #a40e26; font-weight: 600; }
.badge { display: inline-block; font-size: 11px; padding: 0 5px; margin: 1px 2px; border-radius: 6px;
         background: #fff1e5; color: #953800; }
.badge.lost { background: #ffebe9; color: #a40e26; font-weight: 600; }
#overview { display: block; margin: 8px 0; border: 1px solid #d0d7de; background: #fff; cursor: pointer; }
#compare-table { width: 100%; table-layout: fixed; }
#compare-table td, #compare-table th { text-align: left; }
#compare-table th { position: sticky; top: 0; z-index: 1; }
#compare-table .turn { width: 64px; text-align: right; }
#compare-table tr.diverge td { background: #fff8c5; }
#compare-table tr.first td { background: #ffd8b5; border-top: 3px solid #bc4c00; border-bottom: 3px solid #bc4c00; }
#divergence { padding: 8px 12px; margin: 8px 0; border-left: 4px solid #bc4c00; background: #fff1e5; }
.note { max-width: 1100px; }
table.kv td { text-align: left; }
code { font-size: 12px; }
#turn-trace td.num { text-align: right; }
#turn-trace th[title] { cursor: help; text-decoration: underline dotted; }
.trace-legend { font-size: 12px; color: #57606a; max-width: 640px; margin: 4px 0 8px; }
.trace-legend p { margin: 0 0 2px; }
.trace-legend dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 10px; margin: 0; }
.trace-legend dt { font-family: monospace; font-weight: 600; color: #1a1a1a; }
.trace-legend dd { margin: 0; cursor: help; }
"""

SCRIPT = r"""
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const META = JSON.parse($("meta").textContent);
  const S = JSON.parse($("sessions").textContent);
  const DETAILS = JSON.parse($("details").textContent);  // base64 blobs, unpacked when opened
  const N = META.rows;
  // Rows per page of the session table (0: all of them); within a page only the rows in view are drawn.
  const PAGE_SIZES = [100, 500, 0];
  const OVERSCAN = 40;
  const KINDS = [
    ["system_tokens", "system", "#8c959f"], ["task_tokens", "task", "#0969da"],
    ["assistant_tokens", "assistant", "#8250df"], ["tool_tokens", "tool results", "#1a7f37"],
    ["error_tokens", "errors", "#cf222e"], ["summary_tokens", "summaries", "#bf8700"],
    ["stub_tokens", "stubs", "#1b7c83"], ["masked_tokens", "masked", "#afb8c1"],
    ["nudge_tokens", "nudges", "#e16f24"],
  ];
  const state = { outcome: "", strategy: "", scenario: "", text: "", sort: null, dir: 1, size: PAGE_SIZES[1],
                  page: 0, drawn: [0, 0], rowHeight: 0, view: [], open: -1, turn: 0, turns: null };
  const cache = new Map();
  const byKey = new Map();
  for (let i = 0; i < N; i++) byKey.set(key(i, S.strategy[i]), i);

  function key(i, strategy) { return S.scenario[i] + "\u0000" + S.session_index[i] + "\u0000" + strategy; }
  function esc(v) {
    return String(v).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;",
                                                  "'": "&#39;"})[c]);
  }
  // Numbers as the reports write them (META.formats, unit -> [scale, decimals, prefix, suffix]; the same
  // rules as reports.explorer.format_number): 12,346 tokens, $0.3739, 192.5 s, 81.23%.
  const FORMATTERS = {};
  for (const [unit, f] of Object.entries(META.formats)) {
    FORMATTERS[unit] = new Intl.NumberFormat("en-US", {minimumFractionDigits: f[1], maximumFractionDigits: f[1]});
  }
  function fmt(v, unit) {
    if (v === null || v === undefined || v === "") return "";
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (typeof v !== "number") return String(v);
    if (!Number.isFinite(v)) return "";
    const f = META.formats[unit] || META.formats.count;
    const x = v * f[0];
    const text = (FORMATTERS[unit] || FORMATTERS.count).format(Math.abs(x));
    return (x < 0 && /[1-9]/.test(text) ? "-" : "") + f[2] + text + f[3];
  }
  function num(v, unit) { return esc(fmt(v, unit || "count")); }
  window.ctxbenchExplorer = Object.freeze({ format: fmt });  // what the browser test checks formats with
  function distinct(col) { return Array.from(new Set(S[col] || [])).sort(); }
  function options(values, all) {
    return `<option value="">${esc(all)}</option>` +
      values.map((v) => `<option value="${esc(v)}">${esc(v)}</option>`).join("");
  }

  // The page ---------------------------------------------------------------------------------------
  function eventsNote() {
    if (META.events === "off") {
      return '<p class="note" id="events-note">This run was made with <code>events = false</code>: it kept ' +
        "no per-turn event log, so sessions open without turns. Run the config again with " +
        "<code>events = true</code> to step through turns.</p>";
    }
    if (META.events === "absent") {
      return '<p class="note" id="events-note">This run has no per-turn event log (made by a ctxbench ' +
        "without one): sessions open without turns.</p>";
    }
    return "";
  }

  function build() {
    const outcomes = distinct("outcome");
    const scenarios = distinct("scenario");
    const head = META.columns.map((c) =>
      `<th data-col="${esc(c.name)}"${c.kind === "text" ? ' class="text"' : ""} title="sort by ${esc(c.label)}">` +
      `${esc(c.label)}</th>`).join("");
    $("app").innerHTML =
      `<p class="subtitle">${sessionCount().toLocaleString("en-US")} sessions x ${META.strategies.length} ` +
      `strategies (${N.toLocaleString("en-US")} rows); click a row to step through its turns, then compare it ` +
      "with another strategy on the same session.</p>" +
      eventsNote() +
      '<div class="filters">' +
      `<label>outcome <select id="filter-outcome">${options(outcomes, "all outcomes")}</select></label>` +
      `<label>strategy <select id="filter-strategy">${options(META.strategies, "all strategies")}</select></label>` +
      `<label>scenario <select id="filter-scenario">${options(scenarios, "all scenarios")}</select></label>` +
      '<label>search <input id="filter-text" type="search" placeholder="words, e.g. k8s stuck"></label>' +
      "</div>" +
      '<div class="pager"><label>rows per page <select id="page-size">' +
      PAGE_SIZES.map((n) => `<option value="${n}"${n === state.size ? " selected" : ""}>` +
                             `${n ? n.toLocaleString("en-US") : "all"}</option>`).join("") + "</select></label>" +
      '<button id="page-prev" title="previous page">&#9664; previous</button>' +
      '<span id="count"></span><button id="page-next" title="next page">next &#9654;</button>' +
      '<span id="matching"></span></div>' +
      `<div class="table-box" id="sessions-box"><table id="sessions-table"><thead><tr>${head}</tr></thead>` +
      "<tbody></tbody></table></div>" +
      '<section class="panel" id="detail" hidden></section>' +
      '<section class="panel" id="compare" hidden></section>';
    for (const [id, field] of [["filter-outcome", "outcome"], ["filter-strategy", "strategy"],
                               ["filter-scenario", "scenario"]]) {
      $(id).addEventListener("change", (e) => { state[field] = e.target.value; refresh(); });
    }
    $("filter-text").addEventListener("input", (e) => { state.text = e.target.value.trim().toLowerCase(); refresh(); });
    document.querySelector("#sessions-table thead").addEventListener("click", (e) => {
      const th = e.target.closest("th");
      if (!th) return;
      const col = th.dataset.col;
      state.dir = state.sort === col ? -state.dir : (kindOf(col) === "number" ? -1 : 1);
      state.sort = col;
      refresh();
    });
    document.querySelector("#sessions-table tbody").addEventListener("click", (e) => {
      const tr = e.target.closest("tr");
      if (tr && tr.dataset.i !== undefined) openSession(Number(tr.dataset.i));
    });
    $("page-size").addEventListener("change", (e) => {
      const [start] = pageBounds();
      state.size = Number(e.target.value);
      state.page = state.size ? Math.floor(start / state.size) : 0;  // stay near the first row shown
      toPage(state.page);
    });
    $("page-prev").addEventListener("click", () => toPage(state.page - 1));
    $("page-next").addEventListener("click", () => toPage(state.page + 1));
    let pending = false;
    $("sessions-box").addEventListener("scroll", () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => { pending = false; if (!inView()) drawRows(); });
    });
    window.addEventListener("resize", () => { if (!inView()) drawRows(); });
    document.addEventListener("keydown", (e) => {
      if (state.turns === null || e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
      if (e.key === "ArrowRight") step(1);
      if (e.key === "ArrowLeft") step(-1);
    });
    refresh();
  }

  function sessionCount() {
    const seen = new Set();
    for (let i = 0; i < N; i++) seen.add(S.scenario[i] + "\u0000" + S.session_index[i]);
    return seen.size;
  }

  function kindOf(col) { const c = META.columns.find((x) => x.name === col); return c ? c.kind : "text"; }
  function unitOf(col) { const c = META.columns.find((x) => x.name === col); return c ? c.unit : "count"; }

  function matches(i) {
    if (state.outcome && S.outcome[i] !== state.outcome) return false;
    if (state.strategy && S.strategy[i] !== state.strategy) return false;
    if (state.scenario && S.scenario[i] !== state.scenario) return false;
    if (state.text) {
      const text = [S.scenario[i], S.session_index[i], (S.family || [])[i], S.strategy[i], S.outcome[i],
                    (S.loop_rule || [])[i]].join(" ").toLowerCase();
      if (!state.text.split(/\s+/).every((word) => text.includes(word))) return false;
    }
    return true;
  }

  function refresh() {
    const view = [];
    for (let i = 0; i < N; i++) if (matches(i)) view.push(i);
    if (state.sort) {
      const col = S[state.sort], dir = state.dir, numeric = kindOf(state.sort) === "number";
      view.sort((a, b) => {
        const x = col[a], y = col[b];
        if (x === y) return a - b;
        if (x === null) return 1;
        if (y === null) return -1;
        return (numeric ? x - y : (x < y ? -1 : 1)) * dir;
      });
    }
    state.view = view;
    state.page = 0;
    $("sessions-box").scrollTop = 0;
    for (const th of document.querySelectorAll("#sessions-table th")) {
      th.classList.toggle("sorted-asc", th.dataset.col === state.sort && state.dir === 1);
      th.classList.toggle("sorted-desc", th.dataset.col === state.sort && state.dir === -1);
    }
    drawRows();
  }

  function cell(c, i) {
    const v = S[c.name][i];
    if (c.name === "outcome") return `<td class="text"><span class="outcome ${esc(v)}">${esc(v)}</span></td>`;
    if (c.kind === "text") return `<td class="text">${esc(v)}</td>`;
    const exact = typeof v === "number" && !Number.isInteger(v) ? ` title="${esc(v)}"` : "";  // the true value
    return `<td${exact}>${num(v, c.unit)}</td>`;
  }

  // Pages of the filtered, sorted rows: state.size rows each (0: one page of all of them).
  function pages() { return state.size ? Math.max(1, Math.ceil(state.view.length / state.size)) : 1; }

  function toPage(p) {
    state.page = Math.max(0, Math.min(pages() - 1, p));
    $("sessions-box").scrollTop = 0;
    drawRows();
  }

  // The page shown: [start, end) in state.view.
  function pageBounds() {
    const start = state.size ? state.page * state.size : 0;
    return [start, state.size ? Math.min(state.view.length, start + state.size) : state.view.length];
  }

  // The rows of the page inside the scroll box's view, [first, last) from the page's start; the box is
  // never taller than the window (its CSS), so the window's height bounds it before the rows are drawn.
  function visibleRows() {
    const box = $("sessions-box");
    const h = state.rowHeight || 26;
    const top = box.scrollTop - document.querySelector("#sessions-table thead").offsetHeight;
    const [start, end] = pageBounds();
    const height = Math.max(box.clientHeight, window.innerHeight, 320);
    return [Math.max(0, Math.floor(top / h)), Math.min(end - start, Math.ceil((top + height) / h))];
  }

  function inView() {
    const [first, last] = visibleRows();
    return first >= state.drawn[0] && last <= state.drawn[1];
  }

  function spacer(px) {
    return px > 0 ? `<tr class="spacer" aria-hidden="true"><td colspan="${META.columns.length}" ` +
      `style="height:${px.toFixed(2)}px"></td></tr>` : "";
  }

  // Draws the rows of the page in view (and OVERSCAN more each side), with spacers standing for the rest
  // of the page, so a page of all 30,000 rows scrolls as fast as one of 100.
  function drawRows() {
    const [start, end] = pageBounds();
    const [first, last] = visibleRows();
    const from = Math.max(0, first - OVERSCAN), to = Math.min(end - start, last + OVERSCAN);
    state.drawn = [from, to];
    const h = state.rowHeight || 26;
    const body = document.querySelector("#sessions-table tbody");
    body.innerHTML = spacer(from * h) + state.view.slice(start + from, start + to).map((i) =>
      `<tr data-i="${i}"${i === state.open ? ' class="selected"' : ""}>` +
      META.columns.map((c) => cell(c, i)).join("") + "</tr>").join("") + spacer((end - start - to) * h);
    const row = body.querySelector("tr[data-i]");
    if (!state.rowHeight && row) {
      state.rowHeight = row.getBoundingClientRect().height;  // every row is one line (no wrapping)
      if (Math.abs(state.rowHeight - h) > 0.01) { drawRows(); return; }
    }
    const n = state.view.length;
    const en = (x) => x.toLocaleString("en-US");
    $("count").textContent = n ? `rows ${en(start + 1)}–${en(end)} of ${en(n)}` : "no rows match";
    $("matching").textContent = n < N ? `(${en(n)} of the run's ${en(N)} rows match the filters)` : "";
    $("page-prev").disabled = state.page === 0;
    $("page-next").disabled = state.page >= pages() - 1;
  }

  // A session's details ------------------------------------------------------------------------------
  async function details(i) {
    const g = META.detail_of[i];
    if (g < 0) return null;
    if (!cache.has(g)) {
      const bytes = Uint8Array.from(atob(DETAILS[g]), (c) => c.charCodeAt(0));
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
      cache.set(g, { blob: JSON.parse(await new Response(stream).text()), unpacked: new Map() });
    }
    const entry = cache.get(g);
    const strategy = S.strategy[i];
    if (!entry.unpacked.has(strategy)) {
      entry.unpacked.set(strategy, entry.blob[strategy] ? unpack(entry.blob[strategy]) : null);
    }
    return entry.unpacked.get(strategy);
  }

  // One table of a blob: n rows; a column left out holds its default; the columns listed under "~" hold
  // differences from the row before.
  function rows(part, defaults, extra) {
    const out = [];
    if (!part) return out;
    const deltas = new Set(part["~"] || []);
    const cols = Object.keys(part).filter((c) => c !== "n" && c !== "~");
    for (let j = 0; j < part.n; j++) out.push(Object.assign({}, defaults, extra));
    for (const col of cols) {
      let acc = 0;
      for (let j = 0; j < part.n; j++) {
        let v = part[col][j];
        if (deltas.has(col)) { acc += v; v = acc; }
        out[j][col] = v;
      }
    }
    return out;
  }

  function unpack(blob) {
    const defaults = META.event_defaults;
    const calls = new Map(rows(blob.c, {}, {}).map((c) => [c.call_index, c]));
    const events = ["call", "compaction", "lost"].flatMap((kind) => rows(blob[kind], defaults, {event: kind}));
    events.sort((a, b) => a.seq - b.seq);
    const bySeq = new Map(events.map((ev) => [ev.seq, ev]));
    const turns = [];
    const at = new Map();
    let peak = 1;
    for (const ev of events) {
      let t = at.get(ev.turn);
      if (!t) {
        t = { turn: ev.turn, agent: ev.agent, call: null, decision: null, compactions: [], lost: [] };
        at.set(ev.turn, t);
        turns.push(t);
      }
      if (ev.event === "call") {
        t.call = ev;
        t.decision = calls.get(ev.call_index) || null;
        peak = Math.max(peak, KINDS.reduce((s, k) => s + ev[k[0]], 0));
      } else if (ev.event === "compaction") {
        t.compactions.push(ev);
      } else if (ev.event === "lost") {
        t.lost.push(ev);
      }
    }
    turns.sort((a, b) => a.turn - b.turn);
    return { turns, peak, bySeq, at, calls };
  }

  function total(call) { return call ? KINDS.reduce((s, k) => s + call[k[0]], 0) : 0; }

  function bar(call, peak, mini) {
    if (!call) return `<div class="bar${mini ? " mini" : ""}"></div>`;
    const parts = KINDS.filter((k) => call[k[0]] > 0).map((k) =>
      `<span style="width:${(100 * call[k[0]] / peak).toFixed(3)}%;background:${k[2]}" ` +
      `title="${esc(k[1])}: ${num(call[k[0]], "tokens")} tokens"></span>`).join("");
    return `<div class="bar${mini ? " mini" : ""}">${parts}</div>`;
  }

  function legend() {
    return '<div class="legend">' + KINDS.map((k) => `<span><i style="background:${k[2]}"></i>${esc(k[1])}</span>`)
      .join("") + "</div>";
  }

  function sessionTitle(i) {
    return `${esc(S.scenario[i])} #${S.session_index[i]} · ${esc(S.strategy[i])} · ` +
      `<span class="outcome ${esc(S.outcome[i])}">${esc(S.outcome[i])}</span>`;
  }

  function siblings(i) {
    return META.strategies.filter((s) => s !== S.strategy[i] && byKey.has(key(i, s)));
  }

  async function openSession(i) {
    state.open = i;
    state.turns = null;
    for (const tr of document.querySelectorAll("#sessions-table tbody tr")) {
      tr.classList.toggle("selected", Number(tr.dataset.i) === i);
    }
    const panel = $("detail");
    panel.hidden = false;
    const others = siblings(i);
    const facts = META.columns.filter((c) => c.kind === "number" && c.name !== "session_index")
      .map((c) => `${esc(c.label)} <b>${num(S[c.name][i], c.unit)}</b>`).join(" · ");
    const compare = others.length && META.events === "on"
      ? '<div class="stepper">Compare with <select id="compare-with">' +
        others.map((s) => `<option value="${esc(s)}">${esc(s)}</option>`).join("") +
        '</select><button id="compare-open">side by side</button></div>'
      : "";
    panel.innerHTML = `<h2 id="detail-title">${sessionTitle(i)}</h2><p class="subtitle">${facts}</p>` + compare +
      '<div id="turns"><p class="empty">Unpacking…</p></div>';
    if ($("compare-open")) {
      $("compare-open").addEventListener("click", () => openCompare(i, S.strategy[i], $("compare-with").value));
    }
    const d = META.events === "on" ? await details(i) : null;
    if (state.open !== i) return;
    if (!d) {
      $("turns").innerHTML = `<p class="empty" id="no-turns">${META.events === "on"
        ? "No events were recorded for this session (it ended with an error before its first turn)."
        : "No per-turn event log in this run (see the note above)."}</p>`;
      panel.scrollIntoView({block: "start"});
      return;
    }
    state.turns = d;
    state.turn = 0;
    const count = d.turns.length;
    $("turns").innerHTML = overview(d) + legend() +
      '<div class="stepper"><button id="turn-prev" title="previous turn (left arrow)">&#9664; previous</button>' +
      `Turn <input id="turn-number" type="number" min="1" max="${count}" value="1"> of ${count}` +
      '<button id="turn-next" title="next turn (right arrow)">next &#9654;</button>' +
      `<input id="turn-slider" type="range" min="0" max="${count - 1}" value="0"></div>` +
      '<div id="turn-view"></div>';
    $("turn-prev").addEventListener("click", () => step(-1));
    $("turn-next").addEventListener("click", () => step(1));
    $("turn-slider").addEventListener("input", (e) => showTurn(Number(e.target.value)));
    $("turn-number").addEventListener("change", (e) => showTurn(Number(e.target.value) - 1));
    $("overview").addEventListener("click", (e) => {
      const g = e.target.closest("[data-t]");
      if (g) showTurn(Number(g.dataset.t));
    });
    showTurn(0);
    panel.scrollIntoView({block: "start"});
  }

  function overview(d) {
    const w = Math.max(4, Math.min(14, Math.floor(900 / Math.max(1, d.turns.length))));
    const h = 70;
    const cols = d.turns.map((t, j) => {
      let y = h;
      const rects = t.call ? KINDS.filter((k) => t.call[k[0]] > 0).map((k) => {
        const hh = (h - 12) * t.call[k[0]] / d.peak;
        y -= hh;
        return `<rect x="${j * w}" y="${y.toFixed(2)}" width="${w - 1}" height="${hh.toFixed(2)}" fill="${k[2]}"/>`;
      }).join("") : "";
      const mark = (y0, colour) => `<rect x="${j * w}" y="${y0}" width="${w - 1}" height="4" fill="${colour}"/>`;
      const marks = (t.compactions.length ? mark(0, "#bc4c00") : "") + (t.lost.length ? mark(5, "#cf222e") : "");
      return `<g data-t="${j}"><title>turn ${t.turn}</title>` +
        `<rect x="${j * w}" y="0" width="${w}" height="${h}" fill="transparent"/>${rects}${marks}</g>`;
    }).join("");
    return `<svg id="overview" width="${d.turns.length * w}" height="${h}" role="img" ` +
      'aria-label="context per turn; orange: compaction, red: fact lost">' + cols + "</svg>";
  }

  function step(delta) { if (state.turns) showTurn(state.turn + delta); }

  function showTurn(j) {
    const d = state.turns;
    if (!d) return;
    j = Math.max(0, Math.min(d.turns.length - 1, Number.isFinite(j) ? j : 0));
    state.turn = j;
    $("turn-number").value = j + 1;
    $("turn-slider").value = j;
    $("turn-view").innerHTML = turnView(d, d.turns[j]);
  }

  function decisionText(t) {
    const c = t.decision;
    if (!c) return t.call ? '<p class="empty">(no row in calls.parquet)</p>' : '<p class="empty">no model call</p>';
    const malformed = c.malformed_kind ? ", malformed: " + esc(c.malformed_kind) : "";
    const cached = c.cached_input_tokens ? ` (${num(c.cached_input_tokens, "tokens")} cached)` : "";
    return `<p><b id="turn-action">${esc(c.action)}</b> on step <code>${esc(c.step_id)}</code> ` +
      `(attempt ${num(c.attempt)}, ${esc(c.call_kind)} call${malformed})</p>` +
      `<p class="subtitle" id="turn-call">${num(c.input_tokens, "tokens")} tokens in${cached}, ` +
      `${num(c.output_tokens, "tokens")} out, <span id="turn-cost">${num(c.cost_usd, "usd")}</span></p>` +
      traceTable(c.trace);
  }

  // The decision trace: one row per fact looked up, each column's meaning in its tooltip and in the
  // legend under the table (both from META.trace_columns; the legend is the page's template).
  function traceTable(trace) {
    let entries = [];
    try { entries = JSON.parse(trace || "[]"); } catch (err) { return `<pre>${esc(trace)}</pre>`; }
    if (!Array.isArray(entries) || !entries.length) return '<p class="empty">no fact looked up</p>';
    if (entries[0].kept !== undefined) return `<p>summary${keptText(trace)}</p>`;
    const cols = META.trace_columns;
    return '<table class="text" id="turn-trace"><thead><tr>' +
      cols.map((c) => `<th data-col="${esc(c.name)}" title="${esc(c.name)}: ${esc(c.help)}">${esc(c.name)}</th>`)
        .join("") + "</tr></thead><tbody>" + entries.map((e) => "<tr>" + cols.map((c) => {
        const v = e[c.name];
        const css = [c.unit ? "num" : "", c.name === "visible" && v === false ? "worse" : ""].filter(Boolean);
        const exact = typeof v === "number" && c.unit === "share" ? ` title="${esc(v)}"` : "";
        return `<td${css.length ? ` class="${css.join(" ")}"` : ""}${exact}>${num(v, c.unit)}</td>`;
      }).join("") + "</tr>").join("") + "</tbody></table>" + $("trace-legend-template").innerHTML;
  }

  function toolText(call) {
    if (!call || !call.status) return '<p class="empty">no tool result this turn</p>';
    return '<table class="kv"><tbody>' +
      `<tr><td>tool</td><td>${esc(call.tool || "(no call: prose refused)")}</td></tr>` +
      `<tr><td>status</td><td>${esc(call.status)}${call.error_class ? ` (${esc(call.error_class)})` : ""}</td></tr>` +
      `<tr><td>output</td><td>${num(call.output_chars)} chars, ${num(call.output_tokens, "tokens")} tokens</td></tr>` +
      "</tbody></table>";
  }

  // A summary call's trace is [{kept: [keys], n}]: the facts its summary kept.
  function keptText(trace) {
    let kept = null;
    try { kept = (JSON.parse(trace || "[]")[0] || {}).kept; } catch (err) { kept = null; }
    return Array.isArray(kept) ? `; kept ${kept.length ? kept.map(esc).join(", ") : "no fact"}` : "";
  }

  function compactionText(d, t) {
    if (!t.compactions.length) return '<p class="empty">none</p>';
    return "<ul>" + t.compactions.map((c) => {
      const call = c.call_index >= 0 ? d.calls.get(c.call_index) : undefined;
      const summary = call ? ` (summary call: ${num(call.input_tokens, "tokens")} tokens in, ` +
        `${num(call.cost_usd, "usd")}${keptText(call.trace)})` : "";
      return `<li class="compaction"><b>${esc(c.how || "changed")}</b> in <code>${esc(c.hook)}</code>: ` +
        `${num(c.messages_before)} → ${num(c.messages_after)} messages, ${num(c.tokens_before, "tokens")} → ` +
        `${num(c.tokens_after, "tokens")} ` +
        `tokens${summary}${c.facts_dropped ? `; last copy of <b>${esc(c.facts_dropped)}</b> removed` : ""}</li>`;
    }).join("") + "</ul>";
  }

  function lostText(d, t) {
    if (!t.lost.length) return '<p class="empty">none</p>';
    return "<ul>" + t.lost.map((l) => {
      const src = l.dropped_seq >= 0 && d.bySeq.get(l.dropped_seq);
      const where = src ? ` (removed at turn ${src.turn} by ${esc(src.hook)}: ${esc(src.how)})` : "";
      return `<li class="lost">${esc(l.fact)}: ${esc(l.cause)}${where}</li>`;
    }).join("") + "</ul>";
  }

  function turnView(d, t) {
    const call = t.call;
    const prompt = call ? `${num(total(call), "tokens")} tokens (system ${num(call.system_tokens, "tokens")}, ` +
      `${num(call.messages)} messages)` : "no model call this turn";
    return `<h3>Turn ${t.turn}${t.agent && t.agent !== "agent" ? " · agent " + esc(t.agent) : ""}</h3>` +
      `<p id="turn-prompt">What the model saw: ${prompt}</p>` + bar(call, d.peak, false) +
      '<div class="turn-grid"><div><h3>Decision</h3>' + decisionText(t) + "</div>" +
      "<div><h3>Tool result</h3>" + toolText(call) +
      "<h3>Compactions</h3>" + compactionText(d, t) +
      "<h3>Facts lost</h3>" + lostText(d, t) + "</div></div>";
  }

  // Side by side --------------------------------------------------------------------------------------
  function signature(t) {
    if (!t) return "(ended)";
    return t.decision ? `${t.decision.action} ${t.decision.step_id}` : (t.call ? "(call)" : "(no call)");
  }

  function lostSet(t) { return t ? t.lost.map((l) => l.fact).sort().join(",") : ""; }

  async function openCompare(i, a, b) {
    const ia = byKey.get(key(i, a)), ib = byKey.get(key(i, b));
    const panel = $("compare");
    panel.hidden = false;
    const strategies = META.strategies.filter((s) => byKey.has(key(i, s)));
    const pick = (id, chosen) => `<select id="${id}">` + strategies.map((s) =>
      `<option value="${esc(s)}"${s === chosen ? " selected" : ""}>${esc(s)}</option>`).join("") + "</select>";
    panel.innerHTML = `<h2>Side by side: ${esc(S.scenario[i])} #${S.session_index[i]}</h2>` +
      `<div class="stepper">A ${pick("compare-a", a)} B ${pick("compare-b", b)}</div>` +
      '<div id="compare-body"><p class="empty">Unpacking…</p></div>';
    const rerun = () => openCompare(i, $("compare-a").value, $("compare-b").value);
    $("compare-a").addEventListener("change", rerun);
    $("compare-b").addEventListener("change", rerun);
    const [da, db] = [await details(ia), await details(ib)];
    if ($("compare-a").value !== a || $("compare-b").value !== b) return;
    if (!da || !db) {
      $("compare-body").innerHTML = '<p class="empty">One of the two has no events recorded.</p>';
      return;
    }
    const peak = Math.max(da.peak, db.peak);
    const last = Math.max(...da.turns.map((t) => t.turn), ...db.turns.map((t) => t.turn), 0);
    let first = null;
    const rows = [];
    for (let turn = 1; turn <= last; turn++) {
      const ta = da.at.get(turn), tb = db.at.get(turn);
      const differs = signature(ta) !== signature(tb) || lostSet(ta) !== lostSet(tb);
      if (differs && first === null) first = { turn, ta, tb };
      const isFirst = first !== null && first.turn === turn;
      const attrs = (differs ? ` class="diverge${isFirst ? " first" : ""}"` : "") +
        (isFirst ? ' id="first-divergence"' : "");
      rows.push(`<tr data-turn="${turn}"${attrs}><td class="turn">${isFirst ? "&#9670; " : ""}${turn}</td>` +
        `<td>${side(ta, peak)}</td><td>${side(tb, peak)}</td></tr>`);
    }
    const about = (j) => [esc(S.outcome[j]), ...["input_tokens", "latency_s", "cost_usd"].filter((c) => S[c])
      .map((c) => num(S[c][j], unitOf(c)) + (c === "input_tokens" ? " tokens in" : ""))].join(", ");
    const head = `<tr><th class="turn">turn</th><th>A: ${esc(a)} (${about(ia)})</th>` +
      `<th>B: ${esc(b)} (${about(ib)})</th></tr>`;
    $("compare-body").innerHTML = `<div id="divergence">${divergence(first, a, b)}</div>` +
      `<div class="table-box"><table id="compare-table"><thead>${head}</thead><tbody>${rows.join("")}</tbody>` +
      "</table></div>";
    const mark = $("first-divergence");
    if (mark) mark.scrollIntoView({block: "center"});
    panel.scrollIntoView({block: "start"});
  }

  function divergence(first, a, b) {
    if (!first) return "No divergence: the two strategies made the same calls and lost the same facts.";
    const why = [];
    if (signature(first.ta) !== signature(first.tb)) {
      why.push(`different action (A: ${esc(signature(first.ta))}; B: ${esc(signature(first.tb))})`);
    }
    if (lostSet(first.ta) !== lostSet(first.tb)) {
      why.push(`a fact lost on one side only (A: ${esc(lostSet(first.ta) || "none")}; ` +
               `B: ${esc(lostSet(first.tb) || "none")})`);
    }
    return `First divergence at <b>turn ${first.turn}</b>: ${why.join("; ")}.`;
  }

  function side(t, peak) {
    if (!t) return '<span class="empty">(session over)</span>';
    const d = t.decision;
    const what = d ? `<b>${esc(d.action)}</b> <code>${esc(d.step_id)}</code>` : '<span class="empty">no call</span>';
    const tokens = t.call ? ` · ${num(total(t.call), "tokens")} tok` : "";
    const cost = d && d.cost_usd !== undefined ? ` · ${num(d.cost_usd, "usd")}` : "";
    const comp = t.compactions.map((c) => `<span class="badge">${esc(c.how || "changed")} ` +
      `${num(c.tokens_before - c.tokens_after, "tokens")} tok</span>`).join("");
    const lost = t.lost.map((l) => `<span class="badge lost">lost ${esc(l.fact)}</span>`).join("");
    return `${what}${tokens}${cost}${bar(t.call, peak, true)}${comp}${lost}`;
  }

  build();
})();
"""
