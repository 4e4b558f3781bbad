/* session-scorer viewer: side-by-side compare of two runs (`#/compare/<a>/<b>`) and of two
   cohorts (`#/cohorts?by=week&a=2026-W45&b=2026-W46&<index filters>`). `viewer.js` calls
   `ScorerCompare(api)` with its helpers and renders what this returns. */
"use strict";
window.ScorerCompare = function (api) {
  const { el, fmt, day, colour, scoreText, titleOf, dims, evidenceItem, prose, tok, score, probScore } = api;
  const NAMES = [api.overall, ...dims.map((d) => d.name)];
  // The scores table's rows: the goal probability (0–1) right under goal_achievement.
  const ROWS = NAMES.flatMap((n) => (n === "goal_achievement" ? [n, api.prob] : [n]));
  const scoreOf = (r, name) => (name === api.prob ? probScore(r) : r.card.scores[name]);

  /* ---------- cohorts: what a run is grouped by ---------- */
  const COHORT_KEYS = {
    week: ["week (start, UTC)", (r) => r.week],
    rubric: ["rubric version", (r) => r.card.rubric_version],
    prompt: ["prompt version", (r) => r.card.prompt_version],
    agent: ["agent model", (r) => r.card.session.agent_model || "(unknown)"],
    judge: ["judge and model", (r) => r.card.judge + (r.card.model ? " " + r.card.model : "")],
    project: ["project", (r) => r.card.session.project || "(none)"],
    source: ["source", (r) => r.card.source],
  };
  function cohortValues(runs, by) {
    const get = COHORT_KEYS[by] ? COHORT_KEYS[by][1] : COHORT_KEYS.week[1];
    return [...new Set(runs.map(get))].sort();
  }

  function delta(a, b) {   // B − A on the normalised scale, coloured by direction
    if (a === null || a === undefined || b === null || b === undefined) return el("td", { cls: "num delta", text: "–" });
    const d = b - a, same = Math.abs(d) < 0.005;   // what rounds to 0.00 has no direction
    const td = el("td", { cls: "num delta", text: (same ? "±" : d > 0 ? "+" : "−") + Math.abs(d).toFixed(2) });
    td.classList.add(same ? "same" : d > 0 ? "up" : "down");
    return td;
  }
  function chip(sc) {
    const c = el("span", { cls: "chip", text: sc ? scoreText(sc) : "–" });
    c.style.background = colour(sc ? sc.normalized : null);
    return c;
  }
  function runHead(r, side) {
    const c = r.card;
    return el("div", { cls: "card side" },
      el("div", { cls: "side-label", text: side }),
      el("h3", {}, el("a", { href: `#/run/${r.run_id}`, text: titleOf(r) })),
      el("div", { cls: "muted" }, tok(c.session_id), " · ", `${c.judge}${c.model ? " / " + c.model : ""}`),
      el("div", { cls: "muted" }, "rubric ", tok(c.rubric_version), " · prompt ", tok(c.prompt_version),
        " · scored ", tok(day(c.created_at)), ...(c.judge === "heuristic" && !c.cost_usd ? [] : [" · ", tok(`$${fmt(c.cost_usd, 4)}`)])),
      el("div", {}, "recommendation: ", el("span", { cls: "rec", text: c.recommendation || "–" })));
  }

  /* ---------- two runs ---------- */
  function runs(a, b) {
    const same = a.card.session_id === b.card.session_id;
    const wrap = el("div", { cls: "compare", id: "compare" });
    wrap.append(el("h2", { text: same ? `Two runs of “${titleOf(a)}”` : "Two runs of different sessions" }),
      el("div", { cls: "sides" }, runHead(a, "A"), runHead(b, "B")));
    const table = el("table", { cls: "cmp" }, el("tr", {},
      el("th", { text: "score" }), el("th", { text: "A" }), el("th", { text: "B" }), el("th", { text: "B − A", title: "difference on the normalised 0–1 scale" })));
    for (const name of ROWS) {
      const sa = scoreOf(a, name), sb = scoreOf(b, name);
      table.append(el("tr", { "data-score": name }, el("td", { text: name }), el("td", {}, chip(sa)), el("td", {}, chip(sb)),
        delta(sa ? sa.normalized : null, sb ? sb.normalized : null)));
    }
    wrap.append(el("h3", { text: "scores" }), table);
    const why = el("table", { cls: "cmp why" }, el("tr", {}, el("th", { text: "dimension" }), el("th", { text: "A: rationale and evidence" }), el("th", { text: "B: rationale and evidence" })));
    for (const name of NAMES.slice(1)) {
      const cell = (r) => {
        const sc = r.card.scores[name];
        if (!sc) return el("td", { text: r.card.status === "scored" ? "–" : "unscored: " + (r.card.unscored_reason || "") });
        return el("td", {}, el("div", { cls: "rationale", text: prose(sc.rationale) }),
          el("ul", { cls: "evidence" }, ...sc.evidence.map((e) => evidenceItem(r, name, e))));
      };
      why.append(el("tr", { id: `why-${name}` }, el("td", { text: name }), cell(a), cell(b)));
    }
    why.append(el("tr", {}, el("td", { text: "summary" }), el("td", { cls: "rationale", text: prose(a.card.summary || "–") }), el("td", { cls: "rationale", text: prose(b.card.summary || "–") })));
    wrap.append(el("h3", { text: "rationales and evidence" }), el("div", { cls: "table-wrap" }, why));
    return wrap;
  }

  /* ---------- two cohorts ---------- */
  function newestPerSession(list) {
    const newest = new Map();
    for (const r of list) {
      const old = newest.get(r.card.session_id);
      if (!old || r.card.created_at > old.card.created_at || (r.card.created_at === old.card.created_at && r.run_id > old.run_id)) newest.set(r.card.session_id, r);
    }
    return [...newest.values()];
  }
  function stats(list, name) {   // the goal probability's mean is the cohort's expected success rate
    const vals = list.map((r) => scoreOf(r, name)).filter(Boolean);
    if (!vals.length) return { n: 0, mean: null, labels: "" };
    const counts = new Map();
    for (const s of vals) if (s.label && name !== api.prob) counts.set(s.label, (counts.get(s.label) || 0) + 1);
    const labels = [...counts].sort((x, y) => y[1] - x[1]).map(([l, k]) => `${l} ${k}`).join(" · ");
    return { n: vals.length, mean: vals.reduce((t, s) => t + s.normalized, 0) / vals.length, labels };
  }
  function paired(a, b, name) {   // sessions in both cohorts: the mean of their own differences
    const inA = new Map(a.map((r) => [r.card.session_id, r]));
    const diffs = [];
    for (const r of b) {
      const other = inA.get(r.card.session_id);
      const sa = other ? score(other, name) : null, sb = score(r, name);
      if (sa !== null && sb !== null) diffs.push(sb - sa);
    }
    return diffs.length ? { n: diffs.length, mean: diffs.reduce((t, d) => t + d, 0) / diffs.length } : null;
  }
  function cohorts(pool, by, va, vb) {
    const key = COHORT_KEYS[by] ? by : "week";
    const get = COHORT_KEYS[key][1];
    const scored = pool.filter((r) => r.card.status === "scored");
    const a = newestPerSession(scored.filter((r) => get(r) === va));
    const b = newestPerSession(scored.filter((r) => get(r) === vb));
    const wrap = el("div", { cls: "compare", id: "cohorts" });
    wrap.append(el("h2", { text: `Cohorts by ${COHORT_KEYS[key][0]}: ${va} vs ${vb}` }),
      el("p", { cls: "muted", text: `A = ${va}: ${a.length} session(s) · B = ${vb}: ${b.length} session(s). ` +
        "Scored runs that pass the index filters, each session's newest run per cohort; means on the normalised 0–1 scale. " +
        "“paired” is the mean difference over sessions scored in both cohorts. " +
        "The mean goal_probability is the cohort's expected success rate (over the sessions that have one)." }));
    const table = el("table", { cls: "cmp" }, el("tr", {},
      el("th", { text: "score" }), el("th", { text: "A mean" }), el("th", { text: "n" }), el("th", { text: "B mean" }), el("th", { text: "n" }),
      el("th", { text: "B − A" }), el("th", { text: "paired (sessions)" }), el("th", { text: "A labels" }), el("th", { text: "B labels" })));
    for (const name of ROWS) {
      const sa = stats(a, name), sb = stats(b, name), p = paired(a, b, name);
      const mean = (s) => { const td = el("td", { cls: "num", text: fmt(s.mean) }); td.style.background = colour(s.mean); return td; };
      const pd = p ? delta(0, p.mean) : el("td", { cls: "num", text: "–" });
      if (p) pd.textContent += ` (${p.n})`;
      table.append(el("tr", { "data-score": name }, el("td", { text: name }), mean(sa), el("td", { cls: "num", text: String(sa.n) }),
        mean(sb), el("td", { cls: "num", text: String(sb.n) }), delta(sa.mean, sb.mean), pd,
        el("td", { cls: "labels", text: sa.labels }), el("td", { cls: "labels", text: sb.labels })));
    }
    wrap.append(el("div", { cls: "table-wrap" }, table));
    const lowest = (list, side) => el("div", { cls: "card side" }, el("div", { cls: "side-label", text: side }),
      el("h3", { text: "lowest overall" }),
      el("ul", {}, ...list.slice().sort((x, y) => x.card.scores[api.overall].normalized - y.card.scores[api.overall].normalized).slice(0, 5)
        .map((r) => el("li", {}, tok(fmt(r.card.scores[api.overall].normalized)), " ", el("a", { href: `#/run/${r.run_id}`, text: titleOf(r) })))));
    wrap.append(el("div", { cls: "sides" }, lowest(a, `A · ${va}`), lowest(b, `B · ${vb}`)));
    return wrap;
  }

  /* ---------- the cohort picker on the index ---------- */
  function picker(poolOf, params) {
    const by = el("select", { id: "c-by" }, ...Object.entries(COHORT_KEYS).map(([k, [label]]) => el("option", { value: k, text: label })));
    const sa = el("select", { id: "c-a" }), sb = el("select", { id: "c-b" });
    const go = el("button", { type: "button", id: "c-go", text: "compare cohorts" });
    function fill() {
      const values = cohortValues(poolOf(), by.value);
      for (const [sel, pick] of [[sa, values[values.length - 2] || values[0]], [sb, values[values.length - 1]]]) {
        const keep = sel.value;
        sel.replaceChildren(...values.map((v) => el("option", { value: v, text: v })));
        sel.value = values.includes(keep) ? keep : pick || "";
      }
    }
    by.value = COHORT_KEYS[params.get("by")] ? params.get("by") : "week";
    by.addEventListener("change", () => { sa.value = ""; sb.value = ""; fill(); });
    go.addEventListener("click", () => {
      const q = api.indexParams();
      q.delete("sel");
      q.set("by", by.value); q.set("a", sa.value); q.set("b", sb.value);
      location.hash = "#/cohorts?" + q.toString();
    });
    fill();
    return { node: el("span", { cls: "cohort-picker" }, "cohorts by ", by, " A ", sa, " B ", sb, " ", go), fill };
  }

  return { runs, cohorts, picker };
};
