/* session-scorer viewer: index, session pages and trends from the embedded JSON.
   Everything is built with the DOM API (textContent), never from HTML strings. One router
   (`route`) handles clicks on links and URL fragments alike: an evidence link is a plain
   `#/run/<id>/e/<event>` link, so clicking it and opening that URL run the same code. */
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("scorer-data").textContent);
  const PAGE = 200;          // index rows rendered at a time
  const BATCH = 250;         // timeline events rendered at a time
  const runs = DATA.runs;
  const byId = new Map(runs.map((r) => [String(r.run_id), r]));
  const dims = DATA.dimensions;
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
  function colour(norm) {   // red (0) → amber → green (1)
    if (norm === null || norm === undefined) return "transparent";
    return `hsl(${Math.round(120 * norm)}, 65%, ${88 - 8 * Math.abs(norm - 0.5)}%)`;
  }
  function scoreText(s) {
    if (!s) return "–";
    if (s.label) return s.label;
    return s.name === "overall_quality" ? fmt(s.value) : String(Number(s.value));
  }

  /* ---------- index ---------- */
  const state = { sort: "start", asc: false, shown: PAGE };
  const columns = [
    ["title", "title", (r) => titleOf(r)],
    ["start", "start", (r) => startOf(r)],
    ["project", "project", (r) => r.card.session.project || ""],
    ["agent", "agent model", (r) => r.card.session.agent_model || ""],
    ["source", "source", (r) => r.card.source],
    ["judge", "judge", (r) => r.card.judge + (r.card.model ? " " + r.card.model : "")],
    ["overall_quality", "overall", (r) => score(r, "overall_quality")],
    ...dims.map((d) => [d.name, d.short, (r) => score(r, d.name)]),
    ["recommendation", "rec.", (r) => r.card.recommendation || ""],
  ];
  function score(r, name) {
    const s = r.card.scores[name];
    return s ? s.normalized : null;
  }
  function filtered() {
    const f = {
      project: $("f-project").value, judge: $("f-judge").value, rec: $("f-rec").value,
      from: $("f-from").value, to: $("f-to").value, below: $("f-below").value,
      q: $("f-q").value.trim().toLowerCase(),
    };
    return runs.filter((r) => {
      const c = r.card, st = startOf(r).slice(0, 10);
      if (f.project && (c.session.project || "") !== f.project) return false;
      if (f.judge && c.judge !== f.judge) return false;
      if (f.rec && (c.recommendation || "") !== f.rec) return false;
      if (f.from && st < f.from) return false;
      if (f.to && st > f.to) return false;
      if (f.below !== "" && !(c.status === "scored" && score(r, "overall_quality") < Number(f.below))) return false;
      if (f.q) {
        const s = c.session;
        const hay = [c.title, s.task, s.project, c.session_id, s.branch, s.agent_model, c.summary, c.model]
          .join(" ").toLowerCase();
        if (!f.q.split(/\s+/).every((word) => hay.includes(word))) return false;
      }
      return true;
    });
  }
  function sorted(list) {
    const col = columns.find((c) => c[0] === state.sort) || columns[0];
    const get = col[2], dir = state.asc ? 1 : -1;
    return list.slice().sort((a, b) => {
      const x = get(a), y = get(b);
      if (x === y) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      return x < y ? -dir : dir;
    });
  }
  function renderIndex() {
    const head = $("index-head"), body = $("index-body");
    head.replaceChildren(...columns.map(([key, label]) => {
      const th = el("th", { text: label, "data-sort": key, title: key });
      if (key === state.sort) th.className = "sorted" + (state.asc ? " asc" : "");
      return th;
    }));
    const list = sorted(filtered());
    const rows = list.slice(0, state.shown).map(indexRow);
    body.replaceChildren(...rows);
    $("index-count").textContent = `${list.length} of ${runs.length} run(s)`;
    $("index-more").classList.toggle("hidden", list.length <= state.shown);
  }
  function indexRow(r) {
    const c = r.card, href = `#/run/${r.run_id}`;
    const tr = el("tr", { cls: "row", "data-href": href });
    tr.append(
      el("td", { cls: "title" }, el("a", { href, text: titleOf(r), title: c.session_id })),
      el("td", { cls: "when", text: day(startOf(r)) }),
      el("td", { text: c.session.project || "–" }),
      el("td", { text: c.session.agent_model || "–", title: (c.session.agent_models || []).join(", ") }),
      el("td", { text: c.source }),
      el("td", { text: c.judge, title: c.model || "" }),
    );
    for (const name of ["overall_quality", ...dims.map((d) => d.name)]) {
      const s = c.scores[name];
      const td = el("td", { cls: "score", text: c.status === "scored" ? scoreText(s) : (name === "overall_quality" ? "unscored" : "") });
      td.style.background = colour(s ? s.normalized : null);
      tr.append(td);
    }
    tr.append(el("td", { text: c.recommendation || "–" }));
    return tr;
  }
  function fillSelect(id, values) {
    const sel = $(id);
    for (const v of [...new Set(values.filter(Boolean))].sort()) sel.append(el("option", { value: v, text: v }));
  }

  /* ---------- session page ---------- */
  const timelines = new Map();   // timeline id → Promise<[[index, depth, text], ...]>
  let current = null;            // {run, events, rendered, pane}

  async function loadTimeline(id) {
    const node = id && $(id);
    if (!node) return null;
    if (!timelines.has(id)) {
      timelines.set(id, (async () => {
        const bytes = Uint8Array.from(atob(node.textContent.trim()), (ch) => ch.charCodeAt(0));
        const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
        return JSON.parse(await new Response(stream).text());
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
    return el("div", {}, el("h3", { text: title }), el("ul", {}, ...items.map((t) => el("li", { text: t }))));
  }
  function requirements(c) {
    const items = c.requirements || (c.meta && (c.meta.requirements || c.meta.requirement_checklist));
    if (!Array.isArray(items) || !items.length) return null;
    const rows = items.map((it) => {
      if (typeof it === "string") return el("li", { text: it });
      const text = it.requirement || it.text || it.name || JSON.stringify(it);
      const status = it.status ?? (it.met === undefined ? "" : (it.met ? "met" : "not met"));
      const refs = (it.evidence || []).map((e) => "#" + e.event).join(" ");
      return el("li", { cls: "req" }, el("b", { cls: "req-" + status, text: status ? `[${status.replace("_", " ")}] ` : "" }),
        text + (it.core === false ? " (detail)" : ""), refs ? el("span", { cls: "refs", text: " " + refs }) : null);
    });
    const conflict = c.meta && c.meta.checklist_conflict;
    const warn = conflict ? el("p", { cls: "conflict", text: "⚠ " + conflict }) : null;
    return el("div", {}, el("h3", { text: "requirement checklist" }), warn, el("ul", {}, ...rows));
  }
  function scorecard(r) {
    const c = r.card, s = c.session, u = c.usage;
    const wrap = el("div", { cls: "card" });
    const lf = s.langfuse_url ? el("a", { href: s.langfuse_url, target: "_blank", rel: "noopener", text: "open in Langfuse" }) : null;
    wrap.append(el("h2", { text: titleOf(r) }), facts([
      ["session", c.session_id], ["project", s.project], ["branch", s.branch], ["source", c.source],
      ["started", day(s.started_at) + (s.times_from === "file" ? " (file time)" : "")], ["ended", day(s.ended_at)],
      ["agent model", (s.agent_models && s.agent_models.length ? s.agent_models : [s.agent_model]).filter(Boolean).join(", ")],
      ["events", s.n_events === null || s.n_events === undefined ? null : String(s.n_events)],
      ["judge", `${c.judge}${c.model ? " / " + c.model : ""}`], ["scored", day(c.created_at)],
      ["prompt", `${c.prompt_version} (${c.prompt_hash.slice(0, 10)})`], ["rubric", `${c.rubric_version} (${c.rubric_hash.slice(0, 10)})`],
      ["cost", `$${fmt(c.cost_usd, 4)}`], ["tokens in/out/cache r/w", `${u.input_tokens}/${u.output_tokens}/${u.cache_read_tokens}/${u.cache_write_tokens} (${u.requests} req.)`],
      ["chunks", String(c.n_chunks)], ["Langfuse", lf || (r.pushed_at ? "pushed " + day(r.pushed_at) : null)],
    ]));
    if (c.status !== "scored") {
      wrap.append(el("h3", { text: "UNSCORED" }), el("p", { text: c.unscored_reason || "" }));
      if (c.raw_reply) wrap.append(el("pre", { text: c.raw_reply }));
      return wrap;
    }
    wrap.append(el("h3", {}, "recommendation: ", el("span", { cls: "rec", text: c.recommendation || "–" })));
    if (c.summary) wrap.append(el("p", { text: c.summary }));
    for (const part of [list("accomplishments", c.accomplishments), list("failures", c.failures), requirements(c)]) if (part) wrap.append(part);
    const table = el("table", { cls: "scores" }, el("tr", {}, el("th", { text: "dimension" }), el("th", { text: "score" }), el("th", { text: "rationale and evidence" })));
    for (const [name, sc] of orderedScores(c)) {
      const chip = el("span", { cls: "chip", text: scoreText(sc) });
      chip.style.background = colour(sc.normalized);
      const ev = el("ul", { cls: "evidence" }, ...sc.evidence.map((e) => evidenceItem(r, name, e)));
      table.append(el("tr", { id: `score-${name}` }, el("td", { text: name }), el("td", {}, chip), el("td", {}, el("div", { cls: "rationale", text: sc.rationale }), ev)));
    }
    wrap.append(el("h3", { text: "scores" }), table);
    if (c.unknown_refs && c.unknown_refs.length) wrap.append(el("p", { cls: "invalid", text: "judge cited unknown events: " + c.unknown_refs.map((n) => "#" + n).join(" ") }));
    return wrap;
  }
  function orderedScores(c) {   // overall first, then the dimensions by weight
    const order = ["overall_quality", ...dims.map((d) => d.name)];
    const rank = (n) => (order.includes(n) ? order.indexOf(n) : order.length);
    return Object.entries(c.scores).sort((a, b) => rank(a[0]) - rank(b[0]));
  }
  function evidenceItem(r, name, e) {
    const link = el("a", { href: `#/run/${r.run_id}/e/${e.event}`, cls: "ev-link", "data-event": String(e.event), "data-score": name, text: `#${e.event}` });
    if (!e.valid) link.classList.add("invalid");
    return el("li", {}, link, e.quote ? " " : null, e.quote ? el("q", { text: e.quote }) : null);
  }
  async function showRun(r, eventNo) {
    if (!current || current.run !== r) {
      const pane = el("div", { cls: "timeline", id: "timeline" }, el("div", { cls: "note", text: "loading timeline…" }));
      const task = r.card.session.task ? el("details", { cls: "task", open: "" }, el("summary", { text: "task" }), el("pre", { text: r.card.session.task })) : null;
      $("session").replaceChildren(el("p", {}, el("a", { href: "#/", text: "← all sessions" })), el("div", { cls: "layout" }, scorecard(r), el("div", { cls: "right" }, task, pane)));
      current = { run: r, events: null, rendered: 0, pane };
      let events = null;
      try { events = await loadTimeline(r.timeline); } catch (err) { pane.replaceChildren(el("div", { cls: "note err", text: "cannot decode the timeline: " + err })); }
      if (current.run !== r) return;
      current.events = events;
      if (!events) {
        if (!pane.querySelector(".note.err")) pane.replaceChildren(el("div", { cls: "note err", text: "No timeline stored for this session (scored before the store kept timelines, or saved without one)." }));
      } else {
        pane.replaceChildren(el("div", { cls: "note", text: `redacted timeline the judge read: ${events.length} events` }));
        renderMore(BATCH);
        watchScroll();
      }
    }
    if (eventNo !== null) highlight(eventNo);
    else window.scrollTo(0, 0);
  }
  function renderMore(n) {
    const cur = current, end = Math.min(cur.events.length, cur.rendered + n);
    const frag = document.createDocumentFragment();
    for (let i = cur.rendered; i < end; i++) {
      const [index, depth, text] = cur.events[i];
      const div = el("div", { cls: "ev", id: `ev-${index}`, "data-event": String(index) }, el("pre", { text }));
      if (depth) div.style.marginLeft = `${depth * 18}px`;
      frag.append(div);
    }
    cur.pane.append(frag);
    cur.rendered = end;
    let sentinel = $("tl-more");
    if (end < cur.events.length) {
      if (!sentinel) sentinel = el("div", { id: "tl-more", cls: "note", text: "…" });
      cur.pane.append(sentinel);
    } else if (sentinel) sentinel.remove();
  }
  function watchScroll() {
    const cur = current;
    const obs = new IntersectionObserver((entries) => {
      if (current !== cur) { obs.disconnect(); return; }
      if (entries.some((x) => x.isIntersecting)) { renderMore(BATCH); const s = $("tl-more"); if (s) { obs.disconnect(); obs.observe(s); } }
    }, { root: cur.pane, rootMargin: "600px" });
    const s = $("tl-more");
    if (s) obs.observe(s);
  }
  function highlight(eventNo) {
    const cur = current;
    for (const old of document.querySelectorAll(".ev.hl, .cite")) old.classList.contains("cite") ? old.remove() : old.classList.remove("hl");
    if (!cur.events) return;
    const pos = cur.events.findIndex((e) => e[0] === eventNo);
    if (pos < 0) {
      cur.pane.prepend(el("div", { cls: "cite", text: `#${eventNo} is not in the stored timeline (the judge cited an event that was never rendered).` }));
      cur.pane.scrollTop = 0;
      return;
    }
    if (pos >= cur.rendered) renderMore(pos - cur.rendered + BATCH);
    const node = $(`ev-${eventNo}`);
    node.classList.add("hl");
    const cites = [];
    for (const [name, sc] of Object.entries(cur.run.card.scores)) {
      for (const e of sc.evidence) if (e.event === eventNo) cites.push(`${name}: ${e.quote ? "“" + e.quote + "”" : "(no quote)"}`);
    }
    if (cites.length) node.prepend(el("div", { cls: "cite", text: "cited by " + cites.join(" · ") }));
    // Scroll the timeline pane only, so the scorecard beside it stays where it is.
    cur.pane.scrollTop = node.offsetTop - cur.pane.clientHeight / 3;
    cur.pane.scrollIntoView({ block: "nearest" });
  }

  /* ---------- router ---------- */
  function show(view) {
    for (const id of ["index", "session", "trends"]) $(id).classList.toggle("hidden", id !== view);
    for (const a of document.querySelectorAll("header.top a[data-view]")) a.classList.toggle("on", a.dataset.view === view);
  }
  function route() {
    const m = location.hash.match(/^#\/run\/(\d+)(?:\/e\/(\d+))?$/);
    if (m && byId.has(m[1])) {
      show("session");
      return showRun(byId.get(m[1]), m[2] === undefined ? null : Number(m[2]));
    }
    current = null;
    if (location.hash === "#/trends") { show("trends"); return; }
    show("index");
    renderIndex();
  }

  function init() {
    if (!runs.length) return;
    fillSelect("f-project", runs.map((r) => r.card.session.project));
    fillSelect("f-judge", runs.map((r) => r.card.judge));
    fillSelect("f-rec", runs.map((r) => r.card.recommendation));
    for (const id of ["f-project", "f-judge", "f-rec", "f-from", "f-to", "f-below", "f-q"]) {
      for (const kind of ["input", "change"]) $(id).addEventListener(kind, () => { state.shown = PAGE; renderIndex(); });
    }
    $("index-head").addEventListener("click", (ev) => {
      const key = ev.target.dataset && ev.target.dataset.sort;
      if (!key) return;
      state.asc = state.sort === key ? !state.asc : false;
      state.sort = key;
      renderIndex();
    });
    $("index-body").addEventListener("click", (ev) => {
      const tr = ev.target.closest("tr.row");
      if (tr && ev.target.tagName !== "A") location.hash = tr.dataset.href;
    });
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
