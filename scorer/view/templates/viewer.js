/* session-scorer viewer: index, session pages, compare and trends from the embedded JSON.
   Everything is built with the DOM API (textContent), never from HTML strings. One router
   (`route`) handles clicks on links and URL fragments alike: an evidence link is a plain
   `#/run/<id>/e/<event>` link, so clicking it and opening that URL run the same code. The
   index keeps its filters, sort and selection in the URL (`#/?project=x&sort=overall_quality
   &sel=3,7`), so a reload or a shared link shows the same rows. */
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("scorer-data").textContent);
  const PAGE = 200;          // index rows rendered at a time
  const BATCH = 250;         // timeline events rendered at a time
  const LONG = 20;           // an output longer than this many lines starts collapsed
  const HEAD = 10;           // lines a collapsed output shows
  const runs = DATA.runs;
  const byId = new Map(runs.map((r) => [String(r.run_id), r]));
  const dims = DATA.dimensions;
  const OVERALL = DATA.overall;
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === "text") node.textContent = v;
      else if (k === "cls") node.className = v;
      else node.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }
  const fmt = (v, d = 2) => (v === null || v === undefined ? "–" : Number(v).toFixed(d));
  const day = (iso) => (iso ? iso.slice(0, 16).replace("T", " ") : "–");
  const startOf = (r) => r.card.session.started_at || r.card.session.ended_at || r.card.created_at;
  const titleOf = (r) => r.card.title || r.card.session.title || r.card.session_id;
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  // A token that must never break across lines (an id, a hash, a date, a price).
  const tok = (text) => el("span", { cls: "tok", text });
  // A long name without spaces (a model id, a project folder) that breaks after its
  // separators: `openai/app-dsw4xd-1757654301803448727` wraps instead of widening a column.
  // A part of one or two characters stays with the one before (`opus-4-6`, never `4-` `6`),
  // and parts up to 12 characters are never broken; a longer one may be, where it must.
  function breakable(text, cls) {
    const parts = [];
    for (const part of String(text).split(/(?<=[/\-_.:@])/)) {
      if (parts.length && part.replace(/[/\-_.:@]$/, "").length <= 2) parts[parts.length - 1] += part;
      else parts.push(part);
    }
    const piece = (part) => (part.length <= 12 ? el("span", { cls: "nb", text: part }) : part);
    return el("span", { cls, title: text }, ...parts.flatMap((part, i) => (i ? [el("wbr"), piece(part)] : [piece(part)])));
  }
  // Judge prose: escaped `\n` and the timeline's `⏎` (a flattened newline) become line breaks.
  const prose = (text) => (text || "").replace(/\\n/g, "\n").replace(/ ?⏎ ?/g, "\n");
  function colour(norm) {   // red (0) → amber → green (1)
    if (norm === null || norm === undefined) return "transparent";
    return `hsl(${Math.round(120 * norm)}, 65%, ${88 - 8 * Math.abs(norm - 0.5)}%)`;
  }
  function scoreText(s) {
    if (!s) return "–";
    if (s.label) return s.label;
    return s.name === OVERALL ? fmt(s.value) : String(Number(s.value));
  }
  function score(r, name) {
    const s = r.card.scores[name];
    return s ? s.normalized : null;
  }

  /* ---------- URL state ---------- */
  function parseHash() {
    const h = location.hash || "#/", q = h.indexOf("?");
    return { path: q < 0 ? h.slice(1) : h.slice(1, q), params: new URLSearchParams(q < 0 ? "" : h.slice(q + 1)) };
  }
  const FILTERS = { q: "f-q", project: "f-project", agent: "f-agent", judge: "f-judge", rec: "f-rec", from: "f-from", to: "f-to", below: "f-below" };
  const state = { sort: "start", asc: false, shown: PAGE, sel: [] };
  let lastIndex = "#/";

  function indexParams() {
    const q = new URLSearchParams();
    for (const [key, id] of Object.entries(FILTERS)) if ($(id).value.trim() !== "") q.set(key, $(id).value.trim());
    if (state.sort !== "start" || state.asc) { q.set("sort", state.sort); if (state.asc) q.set("asc", "1"); }
    if (state.sel.length) q.set("sel", state.sel.join(","));
    return q;
  }
  function applyParams(params) {
    for (const [key, id] of Object.entries(FILTERS)) {
      const node = $(id), value = params.get(key) || "";
      if (node.tagName === "SELECT" && value && ![...node.options].some((o) => o.value === value)) node.append(el("option", { value, text: value }));
      node.value = value;
    }
    state.sort = columns.some((c) => c[0] === params.get("sort")) ? params.get("sort") : "start";
    state.asc = params.get("asc") === "1";
    state.sel = (params.get("sel") || "").split(",").filter((id) => byId.has(id));
  }
  function writeIndexUrl() {
    const qs = indexParams().toString();
    lastIndex = "#/" + (qs ? "?" + qs : "");
    if (location.hash !== lastIndex) history.replaceState(null, "", lastIndex);
  }

  /* ---------- index ---------- */
  const columns = [
    ["sel", "", null],
    ["title", "title", (r) => titleOf(r)],
    ["start", "start", (r) => startOf(r)],
    ["project", "project", (r) => r.card.session.project || ""],
    ["agent", "agent model", (r) => r.card.session.agent_model || ""],
    ["source", "source", (r) => r.card.source],
    ["judge", "judge", (r) => r.card.judge + (r.card.model ? " " + r.card.model : "")],
    [OVERALL, "overall", (r) => score(r, OVERALL)],
    ...dims.map((d) => [d.name, d.short, (r) => score(r, d.name)]),
    ["recommendation", "rec.", (r) => r.card.recommendation || ""],
  ];
  const WIDE = new Set(["agent", "source", "judge", "project", "recommendation"]);   // hidden on narrow screens
  const ABBR = { process_adherence: "proc", tool_efficiency: "tool", context_efficiency: "ctx", error_handling: "err", output_quality: "out" };
  function filterRuns(f) {
    const q = (f.q || "").toLowerCase();
    return runs.filter((r) => {
      const c = r.card, st = startOf(r).slice(0, 10);
      if (f.project && (c.session.project || "") !== f.project) return false;
      if (f.agent && (c.session.agent_model || "") !== f.agent) return false;
      if (f.judge && c.judge !== f.judge) return false;
      if (f.rec && (c.recommendation || "") !== f.rec) return false;
      if (f.from && st < f.from) return false;
      if (f.to && st > f.to) return false;
      if (f.below && !(c.status === "scored" && score(r, OVERALL) < Number(f.below))) return false;
      if (q) {
        const s = c.session;
        const hay = [c.title, s.task, s.project, c.session_id, s.branch, s.agent_model, c.summary, c.model].join(" ").toLowerCase();
        if (!q.split(/\s+/).every((word) => hay.includes(word))) return false;
      }
      return true;
    });
  }
  const filtered = () => filterRuns(Object.fromEntries([...indexParams()]));
  function sorted(list) {
    const col = columns.find((c) => c[0] === state.sort && c[2]) || columns[1];
    const get = col[2], dir = state.asc ? 1 : -1;
    return list.slice().sort((a, b) => {
      const x = get(a), y = get(b);
      if (x === y) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      return x < y ? -dir : dir;
    });
  }
  function cellClass(key) {
    return WIDE.has(key) ? "wide" : key === "title" ? "title" : key === "sel" ? "sel" : null;
  }
  function renderIndex() {
    const head = $("index-head"), body = $("index-body");
    head.replaceChildren(...columns.map(([key, label]) => {
      const th = el("th", { "data-sort": key === "sel" ? null : key, title: key === "sel" ? "select two runs to compare" : key, cls: cellClass(key) });
      if (ABBR[key]) th.append(el("span", { cls: "full", "data-sort": key, text: label }), el("span", { cls: "abbr", "data-sort": key, text: ABBR[key] }));
      else th.textContent = label;
      if (key === state.sort) th.classList.add("sorted", ...(state.asc ? ["asc"] : []));
      return th;
    }));
    const list = sorted(filtered());
    $("index-summary").replaceChildren(...summaryRow(list));
    body.replaceChildren(...list.slice(0, state.shown).map(indexRow));
    $("index-count").textContent = `${list.length} of ${plural(runs.length, "run")}`;
    $("index-more").classList.toggle("hidden", list.length <= state.shown);
    renderSelection();
    if (cohortPicker) cohortPicker.fill();
  }
  function summaryRow(list) {   // the filtered set at a glance: count, date range, mean scores
    const scored = list.filter((r) => r.card.status === "scored");
    const starts = list.map(startOf).sort();
    const cells = [el("td", { cls: "sel" }),
      el("td", { cls: "title" }, el("b", { text: `${plural(list.length, "run")}` }), scored.length < list.length ? ` (${scored.length} scored)` : "", el("div", { cls: "muted", text: "mean of the filtered runs" })),
      el("td", { cls: "when" }, starts.length ? tok(starts[0].slice(0, 10)) : "–", starts.length > 1 ? el("br") : null, starts.length > 1 ? tok("– " + starts[starts.length - 1].slice(0, 10)) : null),
      el("td", { cls: "wide", text: plural(new Set(list.map((r) => r.card.session.project).filter(Boolean)).size, "project") }),
      el("td", { cls: "wide", text: plural(new Set(list.map((r) => r.card.session.agent_model).filter(Boolean)).size, "model") }),
      el("td", { cls: "wide" }), el("td", { cls: "wide" })];
    for (const name of [OVERALL, ...dims.map((d) => d.name)]) {
      const vals = scored.map((r) => score(r, name)).filter((v) => v !== null);
      const mean = vals.length ? vals.reduce((t, v) => t + v, 0) / vals.length : null;
      const td = el("td", { cls: "score", "data-score": name, text: fmt(mean), title: `mean of ${vals.length} normalised (0–1) score(s)` });
      td.style.background = colour(mean);
      cells.push(td);
    }
    const esc = scored.filter((r) => r.card.recommendation === "escalate").length;
    cells.push(el("td", { cls: "wide", text: esc ? `${esc} escalate` : "–" }));
    return cells;
  }
  function indexRow(r) {
    const c = r.card, href = `#/run/${r.run_id}`;
    const tr = el("tr", { cls: "row", "data-href": href, "data-run": String(r.run_id) });
    const box = el("input", { type: "checkbox", cls: "pick", "data-run": String(r.run_id), title: "select to compare" });
    box.checked = state.sel.includes(String(r.run_id));
    tr.append(
      el("td", { cls: "sel" }, box),
      el("td", { cls: "title" }, el("a", { href, text: titleOf(r), title: c.session_id }), el("div", { cls: "muted line" }, tok(c.session_id.slice(0, 8)),
        el("span", { cls: "narrow-only" }, ...[[c.session.project, "project"], [c.session.agent_model, "agent"]].filter(([x]) => x).flatMap(([x, cls]) => [" · ", breakable(x, cls)])))),
      el("td", { cls: "when" }, tok(day(startOf(r)).slice(0, 10)), " ", tok(day(startOf(r)).slice(11))),
      el("td", { cls: "wide project" }, c.session.project ? breakable(c.session.project) : "–"),
      el("td", { cls: "wide agent", title: (c.session.agent_models || []).join(", ") }, c.session.agent_model ? breakable(c.session.agent_model) : "–"),
      el("td", { cls: "wide nw", text: c.source }),
      el("td", { cls: "wide nw", text: c.judge, title: c.model || "" }),
    );
    for (const name of [OVERALL, ...dims.map((d) => d.name)]) {
      const s = c.scores[name];
      const td = el("td", { cls: "score", text: c.status === "scored" ? scoreText(s) : (name === OVERALL ? "unscored" : "") });
      td.style.background = colour(s ? s.normalized : null);
      tr.append(td);
    }
    tr.append(el("td", { cls: "wide nw", text: c.recommendation || "–" }));
    return tr;
  }
  function renderSelection() {
    const n = state.sel.length, go = $("compare-go");
    $("compare-note").textContent = n === 2 ? "2 runs selected" : n ? `${plural(n, "run")} selected: select exactly two to compare` : "select two runs (☐) to compare them side by side";
    go.disabled = n !== 2;
    $("compare-clear").classList.toggle("hidden", !n);
  }
  function fillSelect(id, values) {
    const sel = $(id);
    for (const v of [...new Set(values.filter(Boolean))].sort()) sel.append(el("option", { value: v, text: v }));
  }

  /* ---------- session page ---------- */
  const LABELS = Object.entries(DATA.event_labels || {}).flatMap(([kind, labels]) => labels.map((l) => [l.toUpperCase(), kind]));
  function kindOf(text) {   // how render.py started the event's text; anything else is a tool call
    const body = text.replace(/^\s*#\d+ /, "").toUpperCase();
    const hit = LABELS.find(([label]) => body.startsWith(label));
    return hit ? hit[1] : "tool_call";
  }
  function isError(kind, text) {
    const first = text.split("\n", 1)[0];
    if (kind === "api_error") return true;
    if (kind === "tool_result") {   // `↳ result of #4 (exit 2) ERROR: …`, as render.py writes it
      const m = first.match(/^\s*#\d+ ↳ result(?: of #\d+)?( \(exit -?\d+\))?( ERROR)?:/);
      return Boolean(m && (m[1] || m[2]));
    }
    return kind === "result" && /RESULT \(ERROR/.test(first);
  }
  // A tool call is one line: its flattened newlines (⏎) and a JSON input's escaped `\n`
  // are shown as real line breaks; outputs are shown as they are.
  function display(kind, text) {
    if (kind !== "tool_call") return text;
    let out = text.replace(/ ⏎ /g, " ⏎\n    ");
    if (/^\s*#\d+ (tool )?\S+ \{"/.test(out)) out = out.replace(/(^|[^\\])\\n/g, "$1\n    ");
    return out;
  }
  const timelines = new Map();   // timeline id → Promise<[[index, depth, text], ...]>
  let current = null;            // {run, events, view, rendered, pane, filter, open}

  async function loadTimeline(id) {
    const node = id && $(id);
    if (!node) return null;
    if (!timelines.has(id)) {
      timelines.set(id, (async () => {
        const bytes = Uint8Array.from(atob(node.textContent.trim()), (ch) => ch.charCodeAt(0));
        const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
        const raw = JSON.parse(await new Response(stream).text());
        return raw.map(([index, depth, text]) => { const kind = kindOf(text); return { index, depth, text, kind, error: isError(kind, text) }; });
      })());
    }
    return timelines.get(id);
  }
  function facts(pairs) {
    const dl = el("dl", { cls: "facts" });
    for (const [k, v] of pairs) dl.append(el("dt", { text: k }), el("dd", {}, v === null || v === undefined || v === "" ? "–" : v));
    return dl;
  }
  function list(title, items) {
    if (!items || !items.length) return null;
    return el("div", {}, el("h3", { text: title }), el("ul", {}, ...items.map((t) => el("li", { cls: "rationale", text: prose(t) }))));
  }
  const STATUS = { met: "met", likely_met: "likely met", unmet: "unmet", not_attempted: "not attempted", unverified: "unverified" };
  function requirements(r) {
    const c = r.card, items = c.requirements || [];
    const conflict = c.meta && c.meta.checklist_conflict;
    if (!items.length && !conflict) return null;
    const box = el("div", { cls: "checklist", id: "checklist" }, el("h3", { text: `requirement checklist (${items.filter((i) => i.status === "met").length}/${items.length} met)` }));
    if (conflict) box.append(el("div", { cls: "conflict", text: "checklist conflict: " + conflict }));
    box.append(el("ul", {}, ...items.map((it) => el("li", { cls: "req" },
      el("span", { cls: `status st-${it.status}`, text: `[${STATUS[it.status] || it.status}]` }), " ",
      el("span", { text: it.requirement }), it.core === false ? el("span", { cls: "muted", text: " (detail)" }) : null,
      it.evidence && it.evidence.length ? el("ul", { cls: "evidence" }, ...it.evidence.map((e) => evidenceItem(r, "requirement", e))) : null))));
    return box;
  }
  function otherRuns(r) {   // the session's other runs, each a link to compare with this one
    const others = runs.filter((o) => o.card.session_id === r.card.session_id && o !== r);
    if (!others.length) return null;
    return el("div", { cls: "others", id: "other-runs" }, el("h3", { text: `other runs of this session (${others.length})` }),
      el("ul", {}, ...others.map((o) => el("li", {},
        el("a", { href: `#/compare/${r.run_id}/${o.run_id}`, cls: "cmp-link", text: "compare" }), " with ",
        el("a", { href: `#/run/${o.run_id}`, text: `${o.card.judge}${o.card.model ? " / " + o.card.model : ""}` }),
        ` · rubric ${o.card.rubric_version} · scored `, tok(day(o.card.created_at)), ` · overall ${fmt(score(o, OVERALL))}`))));
  }
  function scorecard(r) {
    const c = r.card, s = c.session, u = c.usage;
    const wrap = el("div", { cls: "card" });
    const lf = s.langfuse_url ? el("a", { href: s.langfuse_url, target: "_blank", rel: "noopener", text: "open in Langfuse" }) : null;
    const hasCost = c.judge !== "heuristic" || c.cost_usd > 0;
    wrap.append(el("h2", { text: titleOf(r) }), facts([
      ["session", tok(c.session_id)], ["project", s.project], ["branch", s.branch && tok(s.branch)], ["source", c.source],
      ["started", s.started_at ? el("span", {}, tok(day(s.started_at)), s.times_from === "file" ? " (file time)" : "") : null], ["ended", s.ended_at && tok(day(s.ended_at))],
      ["agent model", (s.agent_models && s.agent_models.length ? s.agent_models : [s.agent_model]).filter(Boolean).join(", ")],
      ["events", s.n_events === null || s.n_events === undefined ? null : String(s.n_events)],
      ["judge", `${c.judge}${c.model ? " / " + c.model : ""}`], ["scored", tok(day(c.created_at))],
      ["prompt", el("span", {}, c.prompt_version + " ", tok(`(${c.prompt_hash.slice(0, 10)})`))], ["rubric", el("span", {}, c.rubric_version + " ", tok(`(${c.rubric_hash.slice(0, 10)})`))],
      ...(hasCost ? [["cost", tok(`$${fmt(c.cost_usd, 4)}`)], ["tokens in/out/cache r/w", `${u.input_tokens}/${u.output_tokens}/${u.cache_read_tokens}/${u.cache_write_tokens} (${plural(u.requests, "request")})`]] : [["cost", "none (offline heuristic judge)"]]),
      ["chunks", String(c.n_chunks)], ["Langfuse", lf || (r.pushed_at ? el("span", {}, "pushed ", tok(day(r.pushed_at))) : null)],
    ]));
    if (c.status !== "scored") {
      wrap.append(el("h3", { text: "UNSCORED" }), el("p", { text: c.unscored_reason || "" }));
      if (c.raw_reply) wrap.append(el("pre", { text: c.raw_reply }));
      return wrap;
    }
    wrap.append(el("h3", {}, "recommendation: ", el("span", { cls: "rec", text: c.recommendation || "–" })));
    if (c.summary) wrap.append(el("p", { cls: "rationale", text: prose(c.summary) }));
    for (const part of [list("accomplishments", c.accomplishments), list("failures", c.failures), requirements(r), otherRuns(r)]) if (part) wrap.append(part);
    const table = el("table", { cls: "scores" }, el("tr", {}, el("th", { text: "dimension" }), el("th", { text: "score" }), el("th", { text: "rationale and evidence" })));
    for (const [name, sc] of orderedScores(c)) {
      const chip = el("span", { cls: "chip", text: scoreText(sc) });
      chip.style.background = colour(sc.normalized);
      const ev = el("ul", { cls: "evidence" }, ...sc.evidence.map((e) => evidenceItem(r, name, e)));
      const note = name === "goal_achievement" && c.meta && c.meta.checklist_conflict ? el("div", { cls: "conflict", text: "does not follow the checklist: " + c.meta.checklist_conflict }) : null;
      table.append(el("tr", { id: `score-${name}` }, el("td", { text: name }), el("td", {}, chip), el("td", {}, el("div", { cls: "rationale", text: prose(sc.rationale) }), note, ev)));
    }
    wrap.append(el("h3", { text: "scores" }), table);
    if (c.unknown_refs && c.unknown_refs.length) wrap.append(el("p", { cls: "invalid", text: "judge cited unknown events: " + c.unknown_refs.map((n) => "#" + n).join(" ") }));
    return wrap;
  }
  function orderedScores(c) {   // overall first, then the dimensions by weight
    const order = [OVERALL, ...dims.map((d) => d.name)];
    const rank = (n) => (order.includes(n) ? order.indexOf(n) : order.length);
    return Object.entries(c.scores).sort((a, b) => rank(a[0]) - rank(b[0]));
  }
  function evidenceItem(r, name, e) {
    const link = el("a", { href: `#/run/${r.run_id}/e/${e.event}`, cls: "ev-link", "data-event": String(e.event), "data-score": name, text: `#${e.event}` });
    if (!e.valid) link.classList.add("invalid");
    return el("li", {}, link, e.quote ? " " : null, e.quote ? el("q", { text: prose(e.quote) }) : null);
  }
  function cited(r, name) {   // event numbers a dimension (or the checklist) cites
    const refs = name === "requirement" ? (r.card.requirements || []).flatMap((it) => it.evidence || []) : ((r.card.scores[name] || {}).evidence || []);
    return new Set(refs.map((e) => e.event));
  }
  function wanted(filter, r) {
    if (filter === "errors") return (ev) => ev.error;
    if (filter === "tools") return (ev) => ev.kind === "tool_call";
    if (filter.startsWith("ev:")) { const set = cited(r, filter.slice(3)); return (ev) => set.has(ev.index); }
    return () => true;
  }
  function toolbar(r, events) {
    const count = (f) => events.filter(wanted(f, r)).length;
    const bar = el("div", { cls: "tl-tools", id: "tl-tools" }, el("span", { cls: "muted", text: "show " }));
    for (const [f, label] of [["all", `all ${events.length}`], ["errors", `errors ${count("errors")}`], ["tools", `tool calls ${count("tools")}`]]) {
      bar.append(el("button", { type: "button", "data-filter": f, text: label }));
    }
    const names = [...dims.map((d) => d.name), ...((r.card.requirements || []).length ? ["requirement"] : [])];
    bar.append(el("select", { id: "tl-dim", title: "only the events a score cites" }, el("option", { value: "", text: "evidence of…" }),
      ...names.map((n) => el("option", { value: "ev:" + n, text: `${n} ${count("ev:" + n)}` }))));
    bar.append(el("button", { type: "button", id: "tl-expand", text: "expand long outputs" }));
    bar.addEventListener("click", (ev) => {
      const f = ev.target.dataset && ev.target.dataset.filter;
      if (f) setFilter(f, true);
      if (ev.target.id === "tl-expand") { current.open = !current.open; ev.target.textContent = current.open ? "collapse long outputs" : "expand long outputs"; redraw(); }
    });
    bar.querySelector("#tl-dim").addEventListener("change", (ev) => setFilter(ev.target.value || "all", true));
    return bar;
  }
  function setFilter(filter, toUrl) {
    const cur = current;
    if (!cur || !cur.events) return;
    cur.filter = ["all", "errors", "tools"].includes(filter) || filter.startsWith("ev:") ? filter : "all";
    for (const b of document.querySelectorAll("#tl-tools button[data-filter]")) b.classList.toggle("on", b.dataset.filter === cur.filter);
    $("tl-dim").value = cur.filter.startsWith("ev:") ? cur.filter : "";
    if (toUrl) history.replaceState(null, "", `#/run/${cur.run.run_id}` + (cur.filter === "all" ? "" : "?show=" + encodeURIComponent(cur.filter)));
    redraw();
  }
  function redraw() {
    const cur = current;
    cur.view = cur.events.filter(wanted(cur.filter, cur.run));
    cur.rendered = 0;
    const what = cur.filter === "all" ? `${cur.events.length} events` : `${cur.view.length} of ${cur.events.length} events (${cur.filter.replace("ev:", "evidence of ")})`;
    cur.pane.replaceChildren(el("div", { cls: "note", id: "tl-note", text: `redacted timeline the judge read: ${what}` }));
    renderMore(BATCH);
    watchScroll();
  }
  function eventNode(ev) {
    const div = el("div", { cls: `ev k-${ev.kind}` + (ev.error ? " err" : ""), id: `ev-${ev.index}`, "data-event": String(ev.index) });
    if (ev.depth) div.style.marginLeft = `${ev.depth * 18}px`;
    const text = display(ev.kind, ev.text), lines = text.split("\n");
    const pre = el("pre", { text });
    div.append(pre);
    if (lines.length > LONG) {
      const head = lines.slice(0, HEAD).join("\n"), more = lines.length - HEAD;
      const btn = el("button", { type: "button", cls: "fold" });
      const set = (open) => { pre.textContent = open ? text : head; btn.textContent = open ? "▴ collapse" : `▾ show ${more} more lines`; div.classList.toggle("folded", !open); };
      btn.addEventListener("click", () => set(div.classList.contains("folded")));
      div.append(btn);
      div.unfold = () => set(true);
      set(current.open);
    }
    return div;
  }
  function renderMore(n) {
    const cur = current, end = Math.min(cur.view.length, cur.rendered + n);
    const frag = document.createDocumentFragment();
    for (let i = cur.rendered; i < end; i++) frag.append(eventNode(cur.view[i]));
    cur.pane.append(frag);
    cur.rendered = end;
    let sentinel = $("tl-more");
    if (end < cur.view.length) {
      if (!sentinel) sentinel = el("div", { id: "tl-more", cls: "note", text: "…" });
      cur.pane.append(sentinel);
    } else if (sentinel) sentinel.remove();
  }
  function watchScroll() {
    const cur = current, view = cur.view;
    const obs = new IntersectionObserver((entries) => {
      if (current !== cur || cur.view !== view) { obs.disconnect(); return; }
      if (entries.some((x) => x.isIntersecting)) { renderMore(BATCH); const s = $("tl-more"); if (s) { obs.disconnect(); obs.observe(s); } }
    }, { root: cur.pane, rootMargin: "600px" });
    const s = $("tl-more");
    if (s) obs.observe(s);
  }
  async function showRun(r, eventNo, params) {
    if (!current || current.run !== r) {
      const pane = el("div", { cls: "timeline", id: "timeline" }, el("div", { cls: "note", text: "loading timeline…" }));
      const task = r.card.session.task ? el("details", { cls: "task", open: "" }, el("summary", { text: "task" }), el("pre", { text: r.card.session.task })) : null;
      const tools = el("div", { id: "tl-tools-slot" });
      $("session").replaceChildren(el("p", {}, el("a", { href: lastIndex, text: "← all sessions" })), el("div", { cls: "layout" }, scorecard(r), el("div", { cls: "right" }, task, tools, pane)));
      current = { run: r, events: null, view: [], rendered: 0, pane, filter: "all", open: false };
      let events = null;
      try { events = await loadTimeline(r.timeline); } catch (err) { pane.replaceChildren(el("div", { cls: "note err", text: "cannot decode the timeline: " + err })); }
      if (current.run !== r) return;
      current.events = events;
      if (!events) {
        if (!pane.querySelector(".note.err")) pane.replaceChildren(el("div", { cls: "note err", text: "No timeline stored for this session (scored before the store kept timelines, or saved without one)." }));
        return;
      }
      tools.replaceWith(toolbar(r, events));
      setFilter(params.get("show") || "all", false);
    } else if (current.events && eventNo === null && (params.get("show") || "all") !== current.filter) {
      setFilter(params.get("show") || "all", false);
    }
    if (eventNo !== null) highlight(eventNo);
    else window.scrollTo(0, 0);
  }
  function highlight(eventNo) {
    const cur = current;
    for (const old of document.querySelectorAll(".ev.hl, .cite")) old.classList.contains("cite") ? old.remove() : old.classList.remove("hl");
    if (!cur.events) return;
    if (!cur.events.some((e) => e.index === eventNo)) {
      cur.pane.prepend(el("div", { cls: "cite", text: `#${eventNo} is not in the stored timeline (the judge cited an event that was never rendered).` }));
      cur.pane.scrollTop = 0;
      return;
    }
    if (!cur.view.some((e) => e.index === eventNo)) setFilter("all", false);   // the filter hid it
    const pos = cur.view.findIndex((e) => e.index === eventNo);
    if (pos >= cur.rendered) renderMore(pos - cur.rendered + BATCH);
    const node = $(`ev-${eventNo}`);
    if (node.unfold) node.unfold();
    node.classList.add("hl");
    const cites = [];
    for (const [name, sc] of Object.entries(cur.run.card.scores)) {
      for (const e of sc.evidence) if (e.event === eventNo) cites.push(`${name}: ${e.quote ? "“" + prose(e.quote) + "”" : "(no quote)"}`);
    }
    for (const it of cur.run.card.requirements || []) {
      for (const e of it.evidence || []) if (e.event === eventNo) cites.push(`requirement “${it.requirement}” (${STATUS[it.status] || it.status})`);
    }
    if (cites.length) node.prepend(el("div", { cls: "cite", text: "cited by " + cites.join(" · ") }));
    // Scroll the timeline pane only, so the scorecard beside it stays where it is.
    cur.pane.scrollTop = node.offsetTop - cur.pane.clientHeight / 3;
    cur.pane.scrollIntoView({ block: "nearest" });
  }

  /* ---------- router ---------- */
  const compare = window.ScorerCompare({ el, fmt, day, colour, scoreText, titleOf, dims, evidenceItem, prose, tok, indexParams, overall: OVERALL });
  let cohortPicker = null;
  function show(view) {
    for (const id of ["index", "session", "compare-view", "missing", "trends"]) $(id).classList.toggle("hidden", id !== view);
    const tab = view === "trends" ? "trends" : "index";
    for (const a of document.querySelectorAll("header.top a[data-view]")) a.classList.toggle("on", a.dataset.view === tab);
  }
  // A link to a run this file does not hold (scored since, filtered out, mistyped) says so
  // rather than showing the index as if it had been followed.
  function missing(ids, path) {
    current = null;
    const what = !ids ? `There is no page #${path} in this file` : ids.length === 1 ? `There is no run ${ids[0]} in this file` : `There are no runs ${ids.join(" and ")} in this file`;
    $("missing-what").textContent = what;
    show("missing");
    window.scrollTo(0, 0);
  }
  function route() {
    const { path, params } = parseHash();
    let m = path.match(/^\/run\/([^/]+)(?:\/e\/(\d+))?$/);
    if (m && byId.has(m[1])) {
      show("session");
      return showRun(byId.get(m[1]), m[2] === undefined ? null : Number(m[2]), params);
    }
    if (m) return missing([m[1]]);
    current = null;
    m = path.match(/^\/compare\/([^/]+)\/([^/]+)$/);
    if (m && [m[1], m[2]].some((id) => !byId.has(id))) return missing([m[1], m[2]].filter((id) => !byId.has(id)));
    if (m) {
      $("compare-view").replaceChildren(el("p", {}, el("a", { href: lastIndex, text: "← all sessions" })), compare.runs(byId.get(m[1]), byId.get(m[2])));
      show("compare-view");
      window.scrollTo(0, 0);
      return;
    }
    if (path === "/cohorts") {
      const pool = filterRuns(Object.fromEntries([...params].filter(([k]) => k in FILTERS)));
      $("compare-view").replaceChildren(el("p", {}, el("a", { href: lastIndex, text: "← all sessions" })), compare.cohorts(pool, params.get("by") || "week", params.get("a") || "", params.get("b") || ""));
      show("compare-view");
      window.scrollTo(0, 0);
      return;
    }
    if (path === "/trends") { show("trends"); return; }
    if (path !== "/" && path !== "") return missing(null, path);
    show("index");
    applyParams(params);
    state.shown = PAGE;
    renderIndex();
    lastIndex = location.hash || "#/";
  }

  function init() {
    if (!runs.length) return;
    fillSelect("f-project", runs.map((r) => r.card.session.project));
    fillSelect("f-agent", runs.map((r) => r.card.session.agent_model));
    fillSelect("f-judge", runs.map((r) => r.card.judge));
    fillSelect("f-rec", runs.map((r) => r.card.recommendation));
    for (const id of Object.values(FILTERS)) {
      for (const kind of ["input", "change"]) $(id).addEventListener(kind, () => { state.shown = PAGE; writeIndexUrl(); renderIndex(); });
    }
    cohortPicker = compare.picker(filtered, parseHash().params);
    $("cohort-slot").replaceWith(cohortPicker.node);
    $("index-head").addEventListener("click", (ev) => {
      const key = ev.target.dataset && ev.target.dataset.sort;
      if (!key) return;
      state.asc = state.sort === key ? !state.asc : false;
      state.sort = key;
      writeIndexUrl();
      renderIndex();
    });
    $("index-body").addEventListener("click", (ev) => {
      const box = ev.target.closest("input.pick");
      if (box) {
        const id = box.dataset.run;
        state.sel = box.checked ? [...state.sel.filter((x) => x !== id), id] : state.sel.filter((x) => x !== id);
        writeIndexUrl();
        renderSelection();
        return;
      }
      const tr = ev.target.closest("tr.row");
      if (tr && ev.target.tagName !== "A" && !ev.target.closest("td.sel")) location.hash = tr.dataset.href;
    });
    $("compare-go").addEventListener("click", () => { if (state.sel.length === 2) location.hash = `#/compare/${state.sel[0]}/${state.sel[1]}`; });
    $("compare-clear").addEventListener("click", () => { state.sel = []; writeIndexUrl(); renderIndex(); });
    $("index-more").addEventListener("click", () => { state.shown += PAGE; renderIndex(); });
    // A second click on the link already in the URL fires no hashchange: route anyway.
    document.addEventListener("click", (ev) => {
      const a = ev.target.closest && ev.target.closest("a.ev-link");
      if (a && a.getAttribute("href") === location.hash) { ev.preventDefault(); route(); }
    });
    window.addEventListener("hashchange", route);
    route();
  }
  init();
})();
