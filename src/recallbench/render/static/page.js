// recallbench report page: renders the JSON embedded in #data (see _html.py) into views.
// Text from the data (queries, memories) is only ever set as textContent, never as HTML.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("data").textContent);
  const app = document.getElementById("app");
  const nav = document.getElementById("tabs");
  const PAGE_ROWS = 100; // rows of a per-query table drawn at a time: pages, not one long table
  const HISTOGRAM_BINS = 10;
  const DELTA_BARS = 800; // a sorted Δ chart of more queries shows evenly spaced quantiles
  let charts = [];

  Chart.defaults.animation = false; // a report is read, not watched; screenshots are stable
  Chart.defaults.maintainAspectRatio = false;

  // ---- helpers -------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "className") node.className = value;
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const missingValue = (v) => v === null || v === undefined || (typeof v === "number" && !Number.isFinite(v));
  const fmt = (value, digits = 3) => (missingValue(value) ? "–" : Number(value).toFixed(digits));
  const signed = (value, digits = 3) => {
    if (missingValue(value)) return "–";
    const shown = Number(value).toFixed(digits);
    return Number(shown) === 0 ? (0).toFixed(digits) : (value > 0 ? "+" : "") + shown;
  };
  const hasBounds = (i) => i && !missingValue(i.low) && !missingValue(i.high);
  const ci = (i, digits = 3) => (hasBounds(i) ? `[${fmt(i.low, digits)}, ${fmt(i.high, digits)}]${i.small ? "*" : ""}` : "–");
  // a number cell; a missing value shows "–" and says why in its title
  const num = (text, why) => el("td", { className: "num", title: text === "–" && why ? why : null }, text);
  const na = (why) => el("span", { className: "na", title: why }, "–");

  function table(header, rows, numeric, label) {
    const isNum = (i) => numeric && numeric.includes(i);
    const t = el("table", {},
      label ? el("caption", { className: "sr-only" }, label) : null,
      el("thead", {}, el("tr", {}, header.map((h, i) => el("th", { scope: "col", className: isNum(i) ? "num" : null }, h)))),
      el("tbody", {}, rows));
    // a table wider than the page scrolls inside its own box; the page never does
    return el("div", { className: "table-wrap", "data-label": label || header.join(", ") }, t);
  }

  function select(label, key, options, fallback) {
    const current = state[key] || fallback;
    return el("label", {}, label + " ",
      el("select", { name: key, onchange: (e) => update({ [key]: e.target.value, page: "" }) },
        options.map(([value, text]) => el("option", { value, selected: value === current }, text))));
  }

  // filters as you type: the view follows the text after a short pause
  let typing = null;
  function search(key, placeholder) {
    const input = el("input", { type: "search", name: key, placeholder, value: state[key] || "", "aria-label": placeholder });
    input.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => update({ [key]: input.value, page: "" }), 120);
    });
    input.addEventListener("change", () => { clearTimeout(typing); if ((state[key] || "") !== input.value) update({ [key]: input.value, page: "" }); });
    return el("label", {}, input);
  }

  function checkbox(label, key) {
    return el("label", {}, el("input", {
      type: "checkbox", name: key, checked: state[key] === "1",
      onchange: (e) => update({ [key]: e.target.checked ? "1" : "", page: "" }),
    }), " " + label);
  }

  function warnings(list) {
    return list && list.length ? el("ul", { className: "warnings", "aria-label": "warnings" }, list.map((w) => el("li", {}, w))) : null;
  }

  function meta(pairs) {
    return el("dl", { className: "meta" }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== "")
      .map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  }

  function card(label, value, note, cls) {
    return el("div", { className: "card" + (cls ? " " + cls : "") },
      el("div", { className: "card-label" }, label), el("div", { className: "card-value" }, value),
      note ? el("div", { className: "card-note" }, note) : null);
  }

  function glance(cards) {
    return el("section", { className: "glance", "aria-labelledby": "glance-title" },
      el("h2", { id: "glance-title" }, "At a glance"), el("div", { className: "cards" }, cards));
  }

  // rows of a long table, one page at a time; the page number lives in the URL
  function paged(rows, make) {
    const pages = Math.max(1, Math.ceil(rows.length / PAGE_ROWS));
    const page = Math.min(pages, Math.max(1, parseInt(state.page || "1", 10) || 1));
    const first = (page - 1) * PAGE_ROWS;
    const shown = rows.slice(first, first + PAGE_ROWS).map(make);
    const go = (n) => update({ page: n === 1 ? "" : String(n) });
    const pager = pages > 1 ? el("nav", { className: "pager", "aria-label": "pages" },
      el("button", { type: "button", name: "prev", disabled: page === 1, onclick: () => go(page - 1) }, "‹ previous"),
      el("span", { className: "muted" }, `rows ${first + 1}–${Math.min(rows.length, first + PAGE_ROWS)} of ${rows.length} · page ${page} of ${pages}`),
      el("button", { type: "button", name: "next", disabled: page === pages, onclick: () => go(page + 1) }, "next ›")) : null;
    return { shown, pager };
  }

  // a row that opens a query: by mouse, and by keyboard (Tab to it, Enter or Space)
  function openRow(className, id, cells) {
    const toggle = () => update({ query: id === state.query ? "" : id });
    return el("tr", {
      className: "clickable " + className + (id === state.query ? " selected" : ""), "data-id": id, tabindex: "0",
      "aria-selected": String(id === state.query), onclick: toggle,
      onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); } },
    }, cells);
  }

  // ---- state in the URL hash: a view, its filters and the open query can be shared -----

  const state = {};
  const readHash = () => Object.assign(state, Object.fromEntries(new URLSearchParams(location.hash.slice(1))));
  readHash();
  // a hash typed or pasted into the address bar: show what it says
  window.addEventListener("hashchange", () => {
    for (const key of Object.keys(state)) delete state[key];
    readHash();
    render();
  });

  function update(changes) {
    Object.assign(state, changes);
    for (const key of Object.keys(state)) if (state[key] === "" || state[key] === undefined) delete state[key];
    try {
      history.replaceState(null, "", "#" + new URLSearchParams(state).toString());
    } catch (error) {
      // some browsers refuse replaceState on file:// pages; the view still follows the state
    }
    render();
  }

  // ---- charts ---------------------------------------------------------------------------

  const css = () => getComputedStyle(document.documentElement);
  const colour = (name) => css().getPropertyValue(name).trim();
  const COLOURS = ["#2f6fde", "#e07b00", "#1a9f47", "#c0408a", "#7b5fe6", "#00a0aa", "#b08d00", "#e04848"];

  function themeCharts() {
    Chart.defaults.color = colour("--muted");
    Chart.defaults.borderColor = colour("--grid");
  }
  themeCharts();

  // whiskers [low, high] drawn over each point of a dataset that has ``errorBars``
  Chart.register({
    id: "errorBars",
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx;
      chart.data.datasets.forEach((dataset, index) => {
        if (!dataset.errorBars) return;
        const points = chart.getDatasetMeta(index);
        if (points.hidden) return;
        const y = chart.scales.y;
        ctx.save();
        ctx.strokeStyle = dataset.borderColor;
        ctx.lineWidth = 1.5;
        points.data.forEach((point, i) => {
          const bar = dataset.errorBars[i];
          if (!bar || missingValue(point.x)) return;
          const [top, bottom] = [y.getPixelForValue(bar[1]), y.getPixelForValue(bar[0])];
          const cap = Math.min(8, Math.max(3, (chart.chartArea.right - chart.chartArea.left) / dataset.errorBars.length / 6));
          ctx.beginPath();
          ctx.moveTo(point.x, top); ctx.lineTo(point.x, bottom);
          ctx.moveTo(point.x - cap, top); ctx.lineTo(point.x + cap, top);
          ctx.moveTo(point.x - cap, bottom); ctx.lineTo(point.x + cap, bottom);
          ctx.stroke();
        });
        ctx.restore();
      });
    },
  });

  function chartBox(title, config, tall, summary) {
    // the canvas is named and described in words, for those who cannot see it
    const canvas = el("canvas", { role: "img", "aria-label": title + (summary ? ". " + summary : "") });
    const box = el("div", { className: "chart" + (tall ? " tall" : "") }, canvas);
    queueMicrotask(() => { if (canvas.isConnected) charts.push(new Chart(canvas, config)); });
    return el("section", { className: "figure" }, el("h3", {}, title), box);
  }

  // a y axis that shows the values: [0, 1] for scores in it, around 0 for differences,
  // padded otherwise, so that one point or close values are never a flat line at the edge
  function axisFor(values, kind) {
    const finite = values.filter((v) => !missingValue(v));
    if (!finite.length) return {};
    let low = Math.min(...finite), high = Math.max(...finite);
    if (kind === "delta") {
      const reach = Math.max(Math.abs(low), Math.abs(high), 1e-3) * 1.15;
      return { suggestedMin: -reach, suggestedMax: reach };
    }
    if (low >= 0 && high <= 1) return { min: 0, max: 1 };
    const pad = (high - low) * 0.1 || Math.abs(high) * 0.1 || 1;
    return { suggestedMin: low >= 0 ? Math.max(0, low - pad) : low - pad, suggestedMax: high + pad };
  }

  // means as points with their intervals as error bars
  function intervalChart(title, labels, means, intervals, yTitle, kind) {
    const bars = intervals.map((i) => (hasBounds(i) ? [i.low, i.high] : null));
    const axis = axisFor([...means, ...bars.flat()], kind);
    const fg = colour("--fg");
    const described = labels.map((l, i) => `${l} ${fmt(means[i])} ${ci(intervals[i])}`).join("; ");
    return chartBox(title, {
      type: "line",
      data: {
        labels,
        datasets: [{ label: "mean with 95% interval", data: means, showLine: false, pointRadius: 5, pointHoverRadius: 6,
          backgroundColor: colour("--accent"), borderColor: fg, errorBars: bars, clip: 8 }],
      },
      options: {
        layout: { padding: { left: 4, right: 12 } },
        plugins: {
          legend: { display: false },
          tooltip: { callbacks: { label: (item) => `mean ${fmt(item.raw, 4)} ${ci(intervals[item.dataIndex], 4)}` } },
        },
        scales: {
          x: { offset: true, ticks: { autoSkip: false, maxRotation: 60 } },
          y: { ...axis, title: { display: !!yTitle, text: yTitle } },
        },
      },
    }, labels.length > 8, described);
  }

  function histogram(values, bins) {
    const finite = values.filter((v) => !missingValue(v));
    if (!finite.length) return { labels: [], counts: [] };
    let low = Infinity, high = -Infinity;
    for (const v of finite) { if (v < low) low = v; if (v > high) high = v; }
    if (low >= 0 && high <= 1) { low = 0; high = 1; } // scores in [0, 1]: fixed, comparable bins
    if (high === low) high = low + 1;
    const width = (high - low) / bins;
    const counts = new Array(bins).fill(0);
    for (const v of finite) counts[Math.min(bins - 1, Math.floor((v - low) / width))] += 1;
    const digits = width < 0.1 ? 3 : width < 10 ? 1 : 0;
    const labels = counts.map((_, i) => `${(low + i * width).toFixed(digits)}–${(low + (i + 1) * width).toFixed(digits)}`);
    return { labels, counts };
  }

  function histogramChart(title, values, bins, xTitle) {
    const { labels, counts } = histogram(values, bins);
    return chartBox(title, {
      type: "bar",
      data: { labels, datasets: [{ label: "queries", data: counts, backgroundColor: colour("--accent"), barPercentage: 1, categoryPercentage: 0.95 }] },
      options: { plugins: { legend: { display: false } }, scales: { x: { title: { display: true, text: xTitle } }, y: { beginAtZero: true, title: { display: true, text: "queries" } } } },
    }, false, labels.map((l, i) => `${l}: ${counts[i]}`).join("; "));
  }

  // every paired query's Δ, sorted: where the difference between two systems comes from
  function deltaChart(title, pairs, higherIsBetter) {
    let sorted = pairs.slice().sort((a, b) => a[1] - b[1]);
    const n = sorted.length;
    if (n > DELTA_BARS) sorted = Array.from({ length: DELTA_BARS }, (_, i) => sorted[Math.round((i * (n - 1)) / (DELTA_BARS - 1))]);
    const good = colour("--good"), bad = colour("--bad");
    const tint = (d) => (d === 0 ? colour("--muted") : (d > 0) === higherIsBetter ? good : bad);
    const worse = pairs.filter(([, d]) => (higherIsBetter ? d < 0 : d > 0)).length;
    const better = pairs.filter(([, d]) => (higherIsBetter ? d > 0 : d < 0)).length;
    return chartBox(title, {
      type: "bar",
      data: { labels: sorted.map(([id]) => id), datasets: [{ label: "Δ", data: sorted.map(([, d]) => d), backgroundColor: sorted.map(([, d]) => tint(d)), barPercentage: 1, categoryPercentage: 1 }] },
      options: {
        plugins: { legend: { display: false } },
        scales: { x: { ticks: { display: n <= 40 }, title: { display: true, text: `${n} paired queries, sorted by Δ` + (n > DELTA_BARS ? ` (${DELTA_BARS} quantiles shown)` : "") } },
          y: { ...axisFor(sorted.map(([, d]) => d), "delta"), title: { display: true, text: "Δ (system − baseline)" } } },
      },
    }, false, `${worse} queries worse, ${better} better, ${n - worse - better} unchanged`);
  }

  // ---- memories: ranked hits with grades and texts, and the gold that did not come back ---

  function grade(value, threshold) {
    if (value === undefined) return el("span", { className: "grade grade-no", title: "not judged" }, "·");
    return el("span", { className: "grade " + (value >= threshold ? "grade-rel" : "grade-no"), title: "grade" }, String(value));
  }

  function memoryText(id) {
    const found = DATA.texts[id];
    if (!found) return el("span", { className: "muted" }, "(text not in this report)");
    const [text, length] = found;
    return el("div", { className: "memory" }, text,
      text.length < length ? el("span", { className: "muted" }, ` … (${text.length} of ${length} characters)`) : null);
  }

  // ``scores``: the system's scores (a run report) or null; ``reference``: the baseline's
  // ranking, to say where each memory stood there (a comparison), or null.
  function hitsTable(ids, scores, grades, threshold, reference) {
    const header = ["#", "memory", "grade", scores ? "score" : null, reference ? "baseline #" : null, "text"].filter((h) => h);
    const before = (id) => (reference.includes(id) ? String(reference.indexOf(id) + 1) : "new");
    return table(header, ids.map((id, i) =>
      el("tr", { className: "hit" }, num(String(i + 1)), el("td", { className: "id" }, id), el("td", {}, grade(grades[id], threshold)),
        scores ? num(fmt(scores[i], 4), "no score returned") : null, reference ? num(before(id)) : null, el("td", {}, memoryText(id)))),
      header.flatMap((h, i) => (["#", "score", "baseline #"].includes(h) ? [i] : [])), "ranked hits");
  }

  const missedOf = (ids, grades, threshold) => {
    const returned = new Set(ids);
    return Object.keys(grades).filter((id) => grades[id] >= threshold && !returned.has(id));
  };

  function missedTable(ids, grades, threshold) {
    const missed = missedOf(ids, grades, threshold);
    if (!missed.length) return el("p", { className: "muted" }, "every gold memory came back in these results");
    return table(["gold memory missed", "grade", "text"], missed.map((id) =>
      el("tr", { className: "missed" }, el("td", { className: "id" }, id), el("td", {}, grade(grades[id], threshold)), el("td", {}, memoryText(id)))),
    null, "gold memories missed");
  }

  // ---- run report -------------------------------------------------------------------------

  function measureOptions(measures) {
    return measures.map((m) => [m.name, m.name]);
  }

  const BY_ID = DATA.kind === "report" ? new Map(DATA.queries.map((q) => [q.id, q])) : new Map();

  // why a query has no value for a measure
  function whyMissing(q) {
    if (q.status === "no_relevant") return "no relevant memory judged: not in the means";
    if (!q.included) return "not in the means";
    return "not in this measure's population";
  }

  function intervalWhy(i) {
    return i && i.reason ? i.reason : "no interval";
  }

  function worstCategory(measure) {
    const groups = (DATA.breakdowns.category || []).filter((g) => !missingValue(g.means[measure]));
    if (!groups.length) return null;
    const higher = DATA.measures.find((m) => m.name === measure).higher_is_better;
    return groups.reduce((a, b) => ((higher ? b.means[measure] < a.means[measure] : b.means[measure] > a.means[measure]) ? b : a));
  }

  function reportGlance() {
    const s = DATA.summary, c = s.counts;
    const headline = DATA.measures.slice(0, 4).map((m) => {
      const i = DATA.intervals[m.name];
      const mean = DATA.means[m.name];
      return card(m.name, missingValue(mean) ? na("no query in this measure's population") : fmt(mean, 3),
        hasBounds(i) ? `95% CI ${ci(i)} · n ${i.n}` : el("span", { title: intervalWhy(i) }, "no interval: " + intervalWhy(i)));
    });
    const main = DATA.measures[0].name;
    const worst = worstCategory(main);
    return glance([
      card("system", s.system, s.replayed_from ? `replayed from ${s.replayed_from}` : null),
      card("dataset", `${s.dataset.name} ${s.dataset.version}`, `sha256 ${s.dataset.sha256.slice(0, 12)}`),
      card("queries", String(c.queries), `${c.evaluated} in the means`),
      ...headline,
      card("failures", String(c.failed), c.failed ? `of ${c.queries} queries (scored 0)` : "none", c.failed ? "bad" : "good"),
      worst ? card(`worst category (${main})`, worst.name, `${fmt(worst.means[main])} ${ci(worst.intervals[main])} · n ${worst.n}`) : null,
    ]);
  }

  function meansTable() {
    const rows = DATA.measures.map((m) => {
      const i = DATA.intervals[m.name];
      return el("tr", {}, el("td", {}, m.name), num(i && !(i.n === 0 && i.reason) ? `${i.n}${i.small ? "*" : ""}` : "–", "an aggregate with no per-query values"),
        num(fmt(DATA.means[m.name], 4), "no query in this measure's population"), num(ci(i, 4), intervalWhy(i)),
        el("td", { className: "muted" }, (m.higher_is_better ? "" : "lower is better. ") + m.definition));
    });
    return table(["measure", "n", "mean", "95% interval", "definition"], rows, [1, 2, 3], "means");
  }

  function groupTables() {
    const names = DATA.measures.map((m) => m.name);
    return Object.entries(DATA.breakdowns).filter(([, groups]) => groups.length).map(([key, groups]) => [
      el("h2", {}, `By ${key}`),
      table([key, "n", ...names], groups.map((g) => el("tr", {}, el("td", {}, g.name),
        num(`${g.n}${Object.values(g.intervals).some((i) => i.small) ? "*" : ""}`),
        names.map((m) => num(hasBounds(g.intervals[m]) ? `${fmt(g.means[m])} ${ci(g.intervals[m])}` : fmt(g.means[m]),
          missingValue(g.means[m]) ? "no query of the group in this measure's population" : null)))),
      names.map((_, i) => i + 1), `by ${key}`),
    ]);
  }

  function worstSection() {
    const ids = DATA.summary.worst_queries;
    const names = DATA.measures.map((m) => m.name).slice(0, 3);
    const rows = ids.map((id) => BY_ID.get(id)).filter((q) => q).map((q) => {
      const returned = q.hits.map((h) => h[0]);
      const expected = Object.entries(q.grades).filter(([, g]) => g >= q.threshold).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
      const missed = missedOf(returned, q.grades, q.threshold);
      return openRow("worst-row", q.id, [el("td", { className: "id" }, q.id), el("td", {}, q.text),
        el("td", {}, [q.category, q.intent].filter((t) => t).join(", ")),
        el("td", {}, names.map((m) => `${m} ${fmt(q.values[m])}`).join(" · ")),
        el("td", {}, q.error ? el("span", { className: "worse" }, q.error) : ""),
        el("td", {}, expected.map(([d, g]) => `${d} (${g})`).join(", ") || "nothing"),
        el("td", {}, returned.slice(0, 10).map((d) => d + (q.grades[d] >= q.threshold ? " ✓" : "")).join(", ") || "nothing"),
        el("td", {}, missed.join(", ") || "none")]);
    });
    return [el("h2", { id: "worst" }, `The ${ids.length} worst queries`),
      el("p", { className: "muted" }, "Lowest mean over all measures; ✓ marks a returned memory judged relevant; missed: relevant memories not returned. Open a row for its hits and texts."),
      table(["query", "text", "category, intent", "values", "error", "expected", "returned", "missed"], rows, null, "worst queries")];
  }

  function failuresSection() {
    const failed = DATA.queries.filter((q) => q.status === "failed" || q.status === "missing");
    if (!failed.length) return [el("h2", { id: "failures" }, "Failures"), el("p", { className: "muted" }, "No query failed and none is missing.")];
    const { shown, pager } = paged(failed, (q) => openRow("failure-row", q.id, [el("td", { className: "id" }, q.id), el("td", {}, q.text), el("td", {}, q.status), el("td", {}, q.error || (q.status === "missing" ? "not in the run" : ""))]));
    return [el("h2", { id: "failures" }, "Failures"),
      el("p", { className: "muted" }, `${failed.length} queries failed or are missing from the run; each scores 0 and counts in the means.`),
      table(["query", "text", "status", "error"], shown, null, "failures"), pager];
  }

  function agentMemorySection() {
    const agent = DATA.sections.agent_memory;
    if (!agent) return null;
    return [el("h2", {}, "Agent memory"),
      agent.targets.length ? table(["measure", "value", "95% interval", "target", "verdict"], agent.targets.map((t) => el("tr", {},
        el("td", {}, t.measure), num(fmt(t.value, 4)), num(t.interval), num(t.target),
        el("td", { className: t.verdict === "met" ? "better" : t.verdict === "missed" ? "worse" : "" }, t.verdict))), [1, 2, 3], "agent-memory targets") : null,
      agent.details.map((d) => [el("h3", {}, `${d.title} (${d.measure}): ${d.queries.length} queries`),
        table(["query", "text", "missed"], d.queries.map(([id, items]) => el("tr", {}, el("td", { className: "id" }, id),
          el("td", {}, (BY_ID.get(id) || { text: "" }).text.slice(0, 80)), el("td", {}, items.join(", ")))), null, d.title)])];
  }

  function stabilitySection() {
    const st = DATA.summary.stability;
    if (!st) return null;
    return [el("h2", {}, "Stability"),
      el("p", {}, `Each query was asked ${st.repeats} times in a row; the measures score the first answer.`),
      el("ul", {}, el("li", {}, st.rate === null ? "no query was answered without error every time" : `identical rankings: ${st.stable} of ${st.queries} queries (${(100 * st.rate).toFixed(1)}%)`),
        st.failed_in_some ? el("li", {}, `failed in some runs but not all: ${st.failed_in_some} queries`) : null),
      st.changed.length ? [el("p", {}, "Queries whose ranking changed:"), el("ul", {}, st.changed.map((id) => el("li", {}, `${id} ${(BY_ID.get(id) || { text: "" }).text}`)))] : null];
  }

  function sessionSection() {
    const lift = DATA.summary.session_lift;
    if (!lift) return null;
    return [el("h2", {}, "Session personalisation"),
      el("p", {}, `${lift.measure} with and without the session's earlier queries, over the ${lift.n} queries whose session asked an earlier query (${lift.n_all} queries in all).`),
      el("ul", {}, el("li", {}, `with session context: ${fmt(lift.mean_with, 4)}`), el("li", {}, `without: ${fmt(lift.mean_without, 4)}`),
        el("li", {}, `lift: ${signed(lift.delta, 4)}` + (lift.ci_low !== null && lift.ci_high !== null ? ` (interval ${signed(lift.ci_low, 4)} to ${signed(lift.ci_high, 4)})` : "") + (lift.p !== null ? `, p = ${fmt(lift.p, 4)}` : "")),
        el("li", {}, `over all ${lift.n_all} queries: ${signed(lift.delta_all, 4)}`), el("li", {}, `wins / ties / losses: ${lift.wins} / ${lift.ties} / ${lift.losses}`),
        el("li", {}, `method: ${lift.method}`))];
  }

  function channelsSection() {
    const ch = DATA.sections.channels;
    if (!ch) return null;
    return [el("h2", {}, "Channels"), el("p", {}, ch.intro),
      table(ch.header, ch.rows.map((row) => el("tr", {}, row.map((cell, i) => (i ? num(cell) : el("td", {}, cell))))), ch.header.map((_, i) => i).slice(1), "channels"),
      ch.expansion ? el("p", {}, ch.expansion) : null];
  }

  const reportViews = {
    summary() {
      const s = DATA.summary;
      const c = s.counts;
      const lat = s.latency_ms;
      const main = DATA.measures[0].name;
      const withIntervals = DATA.measures.filter((m) => hasBounds(DATA.intervals[m.name]));
      const categories = (DATA.breakdowns.category || []);
      return [
        reportGlance(),
        warnings(s.warnings),
        el("div", { className: "grid" },
          categories.length ? intervalChart(`${main} by category (mean, 95% interval)`, categories.map((g) => `${g.name} (${g.n})`),
            categories.map((g) => g.means[main]), categories.map((g) => g.intervals[main]), main) : null,
          histogramChart(`Distribution of ${main} over the queries`, DATA.queries.map((q) => q.values[main]), HISTOGRAM_BINS, main)),
        el("h2", {}, "Summary"),
        meta([
          ["system", s.system + (s.replayed_from ? ` (replayed from ${s.replayed_from})` : "")],
          ["dataset", `${s.dataset.name} ${s.dataset.version} (sha256 ${s.dataset.sha256.slice(0, 12)})` + (s.dataset.loader ? `, loader ${s.dataset.loader}` : "")],
          ["queries", `${c.queries}: ${c.evaluated} in the means, ${c.no_relevant} without a relevant memory (not in the means), ${c.failed} failed, ${c.missing} missing, ${c.duplicates} duplicate results`],
          ["k", s.k_searched ? `${s.k} (the profile caps searches at ${s.k_searched}: measures at cutoffs above it see at most ${s.k_searched} results)` : s.k],
          ["restarts", s.restarts ? `the system's process restarted ${s.restarts} times (it hung or died)` : null],
          ["unmatched", s.unmatched], ["scores", s.system_scores ? "returned by the system" : "none: results taken in the order returned"],
          ["latency", lat ? `p50 ${fmt(lat.p50, 1)} ms, p95 ${fmt(lat.p95, 1)} ms, p99 ${fmt(lat.p99, 1)} ms` : null],
          ["made", `${s.created_at} by recallbench ${s.recallbench_version}` + (s.git_revision ? ` (${s.git_revision.slice(0, 12)})` : "")],
        ]),
        meansTable(),
        el("ul", { className: "muted notes" }, DATA.sections.interval_notes.map((t) => el("li", {}, t))),
        el("ul", {}, DATA.sections.distributions.map((t) => el("li", {}, t))),
        withIntervals.length > 1 ? el("div", { className: "narrow" }, intervalChart("Means with their 95% intervals", withIntervals.map((m) => m.name),
          withIntervals.map((m) => DATA.means[m.name]), withIntervals.map((m) => DATA.intervals[m.name]))) : null,
        agentMemorySection(),
        stabilitySection(),
        sessionSection(),
        channelsSection(),
        groupTables(),
        s.bootstrap && Object.keys(DATA.breakdowns).length ? el("p", { className: "muted" }, `Group means with their ${Math.round(100 * s.bootstrap.level)}% intervals; * marks groups of fewer than ${s.bootstrap.small_n} queries, whose intervals tend to be too narrow.`) : null,
        worstSection(),
        BY_ID.get(state.query) ? queryDetail(BY_ID.get(state.query)) : null,
        failuresSection(),
        el("h2", {}, "Rules"),
        el("ul", {}, Object.entries(DATA.sections.rules).map(([k, v]) => el("li", {}, `${k.replace(/_/g, " ")}: ${v}`))),
        el("h2", {}, "Measures"),
        el("ul", {}, DATA.measures.map((m) => el("li", {}, el("code", {}, m.name), `: ${m.definition}`))),
      ];
    },

    charts() {
      const measure = state.measure || DATA.measures[0].name;
      const figures = [];
      for (const [key, groups] of Object.entries(DATA.breakdowns)) {
        if (!groups.length) continue;
        figures.push(intervalChart(`${measure} by ${key} (mean, 95% interval)`, groups.map((g) => `${g.name} (${g.n})`),
          groups.map((g) => g.means[measure]), groups.map((g) => g.intervals[measure]), measure));
      }
      figures.push(histogramChart(`Distribution of ${measure} over the queries`, DATA.queries.map((q) => q.values[measure]), HISTOGRAM_BINS, measure));
      figures.push(histogramChart("Latency (ms)", DATA.queries.map((q) => q.latency), 20, "milliseconds"));
      return [el("h2", {}, `Charts of ${measure}`), el("div", { className: "controls" }, select("measure", "measure", measureOptions(DATA.measures))), el("div", { className: "grid" }, figures)];
    },

    queries() {
      const measure = state.measure || DATA.measures[0].name;
      const text = (state.q || "").toLowerCase();
      const options = (key) => [["", "all"], ...[...new Set(DATA.queries.map((q) => q[key]).filter((v) => v))].sort().map((v) => [v, v])];
      let rows = DATA.queries.filter((q) =>
        (!text || q.text.toLowerCase().includes(text) || q.id.toLowerCase().includes(text)) &&
        (!state.status || q.status === state.status) &&
        (!state.category || q.category === state.category) &&
        (!state.intent || q.intent === state.intent));
      if (state.sort === "worst" || state.sort === "best") {
        const sign = state.sort === "worst" ? 1 : -1;
        rows = [...rows].sort((a, b) => sign * ((a.values[measure] ?? Infinity) - (b.values[measure] ?? Infinity)));
      }
      const open = BY_ID.get(state.query);
      const { shown, pager } = paged(rows, (q) => openRow("query-row", q.id, [
        el("td", { className: "id" }, q.id), el("td", {}, q.text), el("td", {}, q.category || ""), el("td", {}, q.intent || ""),
        el("td", {}, q.status), num(fmt(q.values[measure], 3), whyMissing(q)), num(fmt(q.latency, 1), "not recorded")]));
      return [
        el("div", { className: "controls" },
          search("q", "search query text or id"),
          select("measure", "measure", measureOptions(DATA.measures)),
          select("status", "status", [["", "all"], ["ok", "ok"], ["failed", "failed"], ["missing", "missing"], ["no_relevant", "no relevant"]]),
          options("category").length > 1 ? select("category", "category", options("category")) : null,
          options("intent").length > 1 ? select("intent", "intent", options("intent")) : null,
          select("order", "sort", [["", "dataset"], ["worst", `worst ${measure} first`], ["best", `best ${measure} first`]]),
          el("span", { className: "muted", id: "count", role: "status" }, `${rows.length} of ${DATA.queries.length} queries`)),
        open ? queryDetail(open) : el("p", { className: "muted" }, "Open a query (click, or Tab to it and press Enter) to see what came back."),
        el("div", { className: "scroll" }, table(["query", "text", "category", "intent", "status", measure, "ms"], shown, [5, 6], "queries")),
        pager,
      ];
    },
  };

  function queryDetail(q) {
    const details = Object.entries(q.details).map(([m, items]) => el("li", {}, `${m}: ${items.join(", ")}`));
    return el("div", { className: "panel", id: "detail" },
      el("h2", {}, `${q.id}: ${q.text}`),
      meta([["category", q.category], ["intent", q.intent], ["status", q.status + (q.included ? "" : " (not in the means)")],
        ["error", q.error], ["latency", q.latency === null ? null : `${fmt(q.latency, 1)} ms`],
        ["values", DATA.measures.map((m) => `${m.name} ${fmt(q.values[m.name], 3)}`).join(" · ") + (DATA.measures.some((m) => missingValue(q.values[m.name])) ? ` (– ${whyMissing(q)})` : "")]]),
      details.length ? el("ul", {}, details) : null,
      el("h3", {}, `Ranked hits (first ${q.hits.length})`),
      q.hits.length ? hitsTable(q.hits.map((h) => h[0]), q.hits.some((h) => h[1] !== null) ? q.hits.map((h) => h[1]) : null, q.grades, q.threshold, null) : el("p", { className: "muted" }, "nothing returned"),
      el("h3", {}, "Gold memories missed"),
      missedTable(q.hits.map((h) => h[0]), q.grades, q.threshold));
  }

  // ---- comparison -------------------------------------------------------------------------

  const CLASSES = ["identical", "minor", "major", "incompatible"];

  function compareBase() {
    const comparison = DATA.comparison;
    return { comparison, baseline: comparison.baseline, others: DATA.labels.filter((l) => l !== comparison.baseline), measures: comparison.measures };
  }

  function verdictCell(row) {
    const cls = row.verdict === "better" ? "better" : row.verdict === "worse" ? "worse" : "";
    return el("td", { className: cls }, row.verdict);
  }

  function comparisonGlance() {
    const { comparison, baseline, others, measures } = compareBase();
    const main = measures[0].name;
    const cards = [card("baseline", baseline), card("dataset", `${comparison.dataset.name} ${comparison.dataset.version}`, `sha256 ${comparison.dataset.sha256.slice(0, 12)}`),
      card("paired queries", String(comparison.queries.paired), `of ${comparison.queries.dataset}`)];
    for (const other of others) {
      const row = comparison.comparisons.find((r) => r.system === other && r.measure === main);
      const changed = DATA.what_changed[other][main];
      if (row) cards.push(card(`${other}: Δ ${main}`, signed(row.delta, 3), `${row.ci ? `CI [${signed(row.ci.low)}, ${signed(row.ci.high)}] · ` : ""}${row.verdict}`,
        row.verdict === "better" ? "good" : row.verdict === "worse" ? "bad" : null));
      cards.push(card(`${other}: queries`, `${changed.worse_count} worse · ${changed.better_count} better`, `${changed.unchanged} unchanged (${main})`));
      const worst = changed.categories.find((c) => c.worse > 0);
      if (worst) cards.push(card(`${other}: most worse in`, worst.category, `${worst.worse} of ${worst.compared} queries worse, mean Δ ${signed(worst.mean_delta)}`));
      const failed = comparison.systems.find((s) => s.label === other);
      if (failed && failed.failed) cards.push(card(`${other}: failures`, String(failed.failed), "queries whose search failed (scored 0)", "bad"));
    }
    return glance(cards);
  }

  function changedTable(list, texts, side) {
    if (!list.length) return el("p", { className: "muted" }, `No query got ${side}.`);
    return table(["query", "Δ", "baseline", "system", "category", "text"], list.map((c) => openRow("changed-row", c.id, [
      el("td", { className: "id" }, c.id), num(signed(c.delta)), num(fmt(c.first)), num(fmt(c.second)), el("td", {}, c.categories.join(", ")),
      el("td", {}, texts.get(c.id) || "")])), [1, 2, 3], `got ${side}`);
  }

  const comparisonViews = {
    summary() {
      const { comparison, baseline, others } = compareBase();
      const s = comparison.settings;
      const rows = comparison.comparisons.map((r) => el("tr", {}, el("td", {}, r.system), el("td", {}, r.measure), num(String(r.n)),
        num(fmt(r.mean_baseline, 4)), num(fmt(r.mean_system, 4)), num(signed(r.delta, 4)),
        num(r.ci ? `[${signed(r.ci.low, 4)}, ${signed(r.ci.high, 4)}]` : "–", r.not_available || "fewer than 2 queries"), num(r.ci_level ? `${(100 * r.ci_level).toFixed(2)}%` : "–", "no interval"),
        r.p_randomisation === null ? el("td", { className: "num" }, na(r.not_available || "not tested: fewer than 2 paired queries"))
          : num(`${fmt(r.p_randomisation, 4)} / ${fmt(r.p_adjusted.randomisation, 4)}`), verdictCell(r),
        num(`${r.wins}/${r.ties}/${r.losses}`), num(fmt(r.mde, 3), r.not_available || "not available")));
      const tested = comparison.comparisons.filter((r) => r.ci);
      const ranks = comparison.rank_differences.map((d) => el("tr", {}, el("td", {}, d.system), num(String(d.k)),
        CLASSES.map((c) => num(String(d.classes[c] || 0))), num(fmt(d.mean_kendall_tau, 3)), num(fmt(d.mean_jaccard, 3)), num(String(d.top1_changed))));
      const rankColours = ["#8fd19e", "#cde38a", "#f5b971", "#ef8a8a"];
      return [
        comparisonGlance(),
        warnings(comparison.warnings),
        el("h2", {}, "Summary"),
        meta([["baseline", baseline], ["compared", others.join(", ")],
          ["dataset", `${comparison.dataset.name} ${comparison.dataset.version} (sha256 ${comparison.dataset.sha256.slice(0, 12)})`],
          ["queries", `${comparison.queries.paired} of ${comparison.queries.dataset} paired`],
          ["tests", `${s.correction} correction, alpha ${s.alpha}, ${s.interval} intervals, ${s.resamples} resamples, seed ${s.seed}`]]),
        el("h2", {}, "Differences (system − baseline)"),
        table(["system", "measure", "n", "baseline", "system", "Δ", "CI", "level", "p rand. raw / adj.", "verdict", "W/T/L", "MDE"], rows, [2, 3, 4, 5, 6, 7, 8, 10, 11], "differences"),
        el("div", { className: "grid" },
          tested.length ? intervalChart("Δ with its interval", tested.map((r) => `${r.system} · ${r.measure}`), tested.map((r) => r.delta), tested.map((r) => r.ci), "Δ", "delta") : null,
          comparison.rank_differences.length ? chartBox(`Rank changes against ${baseline} (top ${s.k})`, {
            type: "bar",
            data: {
              labels: comparison.rank_differences.map((d) => d.system),
              datasets: CLASSES.map((c, i) => ({ label: c, data: comparison.rank_differences.map((d) => d.classes[c] || 0), backgroundColor: rankColours[i] })),
            },
            options: { indexAxis: "y", scales: { x: { stacked: true, title: { display: true, text: "queries" } }, y: { stacked: true } } },
          }, false, comparison.rank_differences.map((d) => `${d.system}: ` + CLASSES.map((c) => `${d.classes[c] || 0} ${c}`).join(", ")).join("; ")) : null),
        el("h2", {}, "Rank changes"),
        table(["system", "k", ...CLASSES, "mean tau", "mean Jaccard", "top 1 changed"], ranks, [1, 2, 3, 4, 5, 6, 7, 8], "rank changes"),
        el("p", { className: "muted" }, comparison.methods.rank_classes || ""),
        el("h2", {}, "Methods"),
        el("ul", { className: "muted" }, Object.entries(comparison.methods).map(([k, v]) => el("li", {}, el("strong", {}, k), `: ${v}`))),
      ];
    },

    changes() {
      const { baseline, others, measures } = compareBase();
      const system = others.includes(state.system) ? state.system : others[0];
      const names = measures.map((m) => m.name);
      const measure = names.includes(state.measure) ? state.measure : names[0];
      const info = measures.find((m) => m.name === measure);
      const changed = DATA.what_changed[system][measure];
      const texts = new Map(DATA.rows.map((r) => [r.id, r.text]));
      const pairs = DATA.rows.map((r) => [r.id, r.values[baseline][measure], r.values[system][measure]])
        .filter(([, a, b]) => !missingValue(a) && !missingValue(b)).map(([id, a, b]) => [id, b - a]);
      const open = DATA.rows.find((r) => r.id === state.query);
      return [
        el("div", { className: "controls" },
          others.length > 1 ? select("system", "system", others.map((o) => [o, o]), system) : null,
          select("measure", "measure", measureOptions(measures), measure)),
        el("h2", {}, `What changed: ${system} vs ${baseline} (${measure})`),
        el("p", {}, `Of ${changed.compared} paired queries, ${changed.worse_count} got worse, ${changed.better_count} got better, ${changed.unchanged} unchanged; mean Δ ${signed(changed.mean_delta, 4)}` +
          (info.higher_is_better ? "" : " (lower is better)") + "."),
        el("div", { className: "grid" },
          pairs.length ? deltaChart(`Δ ${measure} per query (${system} − ${baseline})`, pairs, info.higher_is_better) : null,
          changed.categories.length ? chartBox(`Queries worse and better by category (${measure})`, {
            type: "bar",
            data: { labels: changed.categories.map((c) => c.category), datasets: [
              { label: "worse", data: changed.categories.map((c) => -c.worse), backgroundColor: colour("--bad") },
              { label: "better", data: changed.categories.map((c) => c.better), backgroundColor: colour("--good") }] },
            options: { indexAxis: "y", scales: { x: { stacked: true, ticks: { callback: (v) => Math.abs(v) }, title: { display: true, text: "queries (worse left, better right)" } }, y: { stacked: true } },
              plugins: { tooltip: { callbacks: { label: (item) => `${item.dataset.label}: ${Math.abs(item.raw)}` } } } },
          }, changed.categories.length > 8, changed.categories.map((c) => `${c.category}: ${c.worse} worse, ${c.better} better`).join("; ")) : null),
        el("h3", {}, "By category"),
        table(["category", "queries", "worse", "mean Δ of worse", "better", "mean Δ of better", "mean Δ"], changed.categories.map((c) => el("tr", {},
          el("td", {}, c.category), num(String(c.compared)), num(String(c.worse)), num(signed(c.worse_delta), "none got worse"), num(String(c.better)),
          num(signed(c.better_delta), "none got better"), num(signed(c.mean_delta))))
        , [1, 2, 3, 4, 5, 6], "what changed by category"),
        open ? comparedDetail(open, baseline, others) : null,
        el("h3", {}, `Got worse, largest first` + (changed.worse_count > changed.worse.length ? ` (${changed.worse.length} of ${changed.worse_count})` : "")),
        changedTable(changed.worse, texts, "worse"),
        el("h3", {}, `Got better, largest first` + (changed.better_count > changed.better.length ? ` (${changed.better.length} of ${changed.better_count})` : "")),
        changedTable(changed.better, texts, "better"),
      ];
    },

    queries() {
      const { baseline, others, measures } = compareBase();
      const measure = state.measure || "any";
      const names = measure === "any" ? measures.map((m) => m.name) : [measure];
      const system = others.includes(state.system) ? state.system : others[0];
      const text = (state.q || "").toLowerCase();
      const differs = (row) => others.some((o) => names.some((m) => row.values[o][m] !== row.values[baseline][m]));
      const rows = DATA.rows.filter((row) =>
        (!text || row.text.toLowerCase().includes(text) || row.id.toLowerCase().includes(text)) &&
        (state.different !== "1" || differs(row)) &&
        (!state.rank || (state.rank === "changed" ? row.classes[system].class !== "identical" : row.classes[system].class === state.rank)));
      const shown = measure === "any" ? measures[0].name : measure;
      const open = DATA.rows.find((r) => r.id === state.query);
      const page = paged(rows, (row) => openRow("compare-row", row.id, [
        el("td", { className: "id" }, row.id), el("td", {}, row.text), num(fmt(row.values[baseline][shown], 3), "not in this measure's population"),
        others.flatMap((o) => {
          const a = row.values[baseline][shown], b = row.values[o][shown];
          const delta = missingValue(a) || missingValue(b) ? null : b - a;
          return [num(fmt(b, 3), "not in this measure's population"), num(signed(delta, 3), "a value is missing on one side"), el("td", {}, el("span", { className: "badge " + row.classes[o].class }, row.classes[o].class))];
        })]));
      return [
        el("div", { className: "controls" },
          search("q", "search query text or id"),
          select("measure", "measure", [["any", "any measure"], ...measureOptions(measures)]),
          checkbox("different only", "different"),
          others.length > 1 ? select("system", "system", others.map((o) => [o, o]), system) : null,
          select("rank change", "rank", [["", "any"], ["changed", "not identical"], ...CLASSES.map((c) => [c, c])]),
          el("span", { className: "muted", id: "count", role: "status" }, `${rows.length} of ${DATA.rows.length} queries`)),
        open ? comparedDetail(open, baseline, others) : el("p", { className: "muted" }, "Open a query (click, or Tab to it and press Enter) to see both rankings side by side."),
        el("div", { className: "scroll" }, table(["query", "text", `${baseline} ${shown}`, ...others.flatMap((o) => [`${o} ${shown}`, "Δ", "rank change"])], page.shown,
          [2, ...others.flatMap((_, i) => [3 + 3 * i, 4 + 3 * i])], "paired queries")),
        page.pager,
      ];
    },

    groups() {
      const { comparison, measures } = compareBase();
      const measure = state.measure && state.measure !== "any" ? state.measure : measures[0].name;
      const rows = comparison.breakdowns.filter((r) => r.measure === measure);
      const figures = [];
      for (const grouping of ["category", "intent"]) {
        const mine = rows.filter((r) => r.grouping === grouping && r.ci);
        if (mine.length) figures.push(intervalChart(`Δ ${measure} by ${grouping}`, mine.map((r) => `${r.group} · ${r.system}`), mine.map((r) => r.delta), mine.map((r) => r.ci), "Δ", "delta"));
      }
      return [
        el("h2", {}, `Δ ${measure} by group`),
        el("div", { className: "controls" }, select("measure", "measure", measureOptions(measures), measure)),
        el("div", { className: "grid" }, figures),
        table(["by", "group", "system", "n", "baseline", "system", "Δ", "CI", "p adj.", "verdict", "W/T/L"], rows.map((r) => el("tr", {},
          el("td", {}, r.grouping), el("td", {}, r.group), el("td", {}, r.system), num(String(r.n)), num(fmt(r.mean_baseline, 3)),
          num(fmt(r.mean_system, 3)), num(signed(r.delta, 3)), num(r.ci ? `[${signed(r.ci.low, 3)}, ${signed(r.ci.high, 3)}]` : "–", r.not_available || "fewer than 2 queries"),
          num(fmt(r.p_adjusted.randomisation, 4), "not tested"), verdictCell(r), num(`${r.wins}/${r.ties}/${r.losses}`))), [3, 4, 5, 6, 7, 8, 10], "by group"),
      ];
    },
  };

  function comparedDetail(row, baseline, others) {
    const measures = DATA.comparison.measures.map((m) => m.name);
    return el("div", { className: "panel", id: "detail" },
      el("h2", {}, `${row.id}: ${row.text}`),
      meta([["category", row.category], ["intent", row.intent],
        ...others.map((o) => [`rank change (${o})`, `${row.classes[o].class}: tau ${fmt(row.classes[o].tau, 3)}, Jaccard ${fmt(row.classes[o].jaccard, 3)}${row.classes[o].top1_changed ? ", top 1 changed" : ""}`])]),
      el("div", { className: "drill" }, [baseline, ...others].map((label) => el("section", {},
        el("h3", {}, label + (label === baseline ? " (baseline)" : "")),
        el("p", { className: "muted" }, measures.map((m) => `${m} ${fmt(row.values[label][m], 3)}`).join(" · ")),
        row.rankings[label].length
          ? hitsTable(row.rankings[label], null, row.grades, row.threshold, label === baseline ? null : row.rankings[baseline])
          : el("p", { className: "muted" }, "nothing returned"),
        missedTable(row.rankings[label], row.grades, row.threshold)))));
  }

  // ---- leaderboard ------------------------------------------------------------------------

  const leaderboardViews = {
    leaderboard() {
      const context = Object.entries(DATA.context);
      return [context.length ? meta(context) : null, DATA.boards.map((board, index) => {
        const names = board.measures.map((m) => m.name);
        const key = `m${index}`;
        const measure = names.includes(state[key]) ? state[key] : names[0];
        const rows = board.systems.map((s) => el("tr", {}, num(s.rank.label), el("td", {}, el("a", { href: s.href }, s.system)),
          names.map((m) => (missingValue(s.means[m]) ? el("td", { className: "num" }, na("no query in this measure's population"))
            : num(`${fmt(s.means[m], 3)} ${ci(s.intervals[m])}`))),
          num(fmt(s.latency_p50, 2), "not recorded"), num(String(s.failed)), el("td", {}, s.scores ? "yes" : "no")));
        return el("section", { className: "board" },
          el("h2", {}, `${board.dataset.name} ${board.dataset.version}`),
          el("p", { className: "muted" }, `${board.queries} queries, ${board.evaluated} in the means; sha256 ${board.dataset.sha256.slice(0, 12)}`),
          table(["rank", "system", ...names.map((m) => `${m} [95% CI]`), "p50 ms", "failed", "scores"], rows, [0, ...names.map((_, i) => i + 2), names.length + 2, names.length + 3], `leaderboard of ${board.dataset.name}`),
          el("ul", { className: "muted" }, el("li", {}, board.rank_method), el("li", {}, board.interval_method)),
          warnings(board.warnings),
          el("div", { className: "controls" }, select("measure", key, names.map((m) => [m, m]), measure)),
          intervalChart(`${measure}: mean and 95% interval per system`, board.systems.map((s) => `${s.rank.label}. ${s.system}`),
            board.systems.map((s) => s.means[measure]), board.systems.map((s) => s.intervals[measure]), measure));
      })];
    },

    categories() {
      return DATA.boards.map((board, index) => {
        const names = board.measures.map((m) => m.name);
        const key = `m${index}`;
        const measure = names.includes(state[key]) ? state[key] : names[0];
        const categories = [...new Set(board.systems.flatMap((s) => s.categories.map((g) => g.name)))].sort();
        if (!categories.length) return el("section", {}, el("h2", {}, board.dataset.name), el("p", { className: "muted" }, "no categories in this dataset"));
        const cell = (s, name) => s.categories.find((g) => g.name === name);
        return el("section", { className: "board" },
          el("h2", {}, `${board.dataset.name}: ${measure} by category`),
          el("div", { className: "controls" }, select("measure", key, names.map((m) => [m, m]), measure)),
          chartBox(`${measure} by category`, {
            type: "bar",
            data: { labels: categories, datasets: board.systems.map((s, i) => ({ label: s.system, backgroundColor: COLOURS[i % COLOURS.length], data: categories.map((c) => (cell(s, c) ? cell(s, c).means[measure] : null)) })) },
            options: { scales: { y: axisFor(board.systems.flatMap((s) => s.categories.map((g) => g.means[measure]))) } },
          }, true),
          table(["system", ...categories], board.systems.map((s) => el("tr", {}, el("td", {}, s.system), categories.map((c) => {
            const g = cell(s, c);
            return num(g ? `${fmt(g.means[measure], 3)} ${ci(g.intervals[measure])} n=${g.n}` : "–", "no query of this category");
          }))), categories.map((_, i) => i + 1), `${measure} by category`));
      });
    },
  };

  // ---- views: tabs with the keyboard behaviour of the ARIA tabs pattern --------------------

  const VIEWS = {
    report: [["summary", "Summary"], ["charts", "Charts"], ["queries", "Queries"], reportViews],
    comparison: [["summary", "Summary"], ["changes", "What changed"], ["queries", "Queries"], ["groups", "By group"], comparisonViews],
    leaderboard: [["leaderboard", "Leaderboard"], ["categories", "By category"], leaderboardViews],
  }[DATA.kind];
  const renderers = VIEWS[VIEWS.length - 1];
  const tabs = VIEWS.slice(0, -1);
  nav.setAttribute("role", "tablist");
  app.setAttribute("role", "tabpanel");

  function tabKeys(event) {
    const names = tabs.map(([name]) => name);
    const at = names.indexOf(event.target.dataset.view);
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: names.length - 1 }[event.key];
    if (to === undefined) return;
    event.preventDefault();
    update({ view: names[(to + names.length) % names.length], page: "" });
    nav.querySelector("[aria-selected=true]").focus();
  }

  // tables that scroll sideways can be scrolled from the keyboard too
  function markScrolling() {
    for (const box of app.querySelectorAll(".table-wrap, .scroll")) {
      if (getComputedStyle(box).overflowX === "visible") continue;
      const scrolls = box.scrollWidth > box.clientWidth + 1 || box.scrollHeight > box.clientHeight + 1;
      if (scrolls && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", box.dataset.label || (box.querySelector("[data-label]") || box).dataset.label || "table");
      } else if (!scrolls && box.getAttribute("tabindex") === "0") {
        box.removeAttribute("tabindex"); box.removeAttribute("role"); box.removeAttribute("aria-label");
      }
    }
  }
  window.addEventListener("resize", () => { clearTimeout(markScrolling.timer); markScrolling.timer = setTimeout(markScrolling, 100); });

  function render() {
    for (const chart of charts) chart.destroy();
    charts = [];
    const view = tabs.some(([name]) => name === state.view) ? state.view : tabs[0][0];
    nav.replaceChildren(...tabs.map(([name, label]) => el("button", {
      type: "button", role: "tab", id: `tab-${name}`, "data-view": name, "aria-selected": String(name === view), "aria-controls": "app",
      tabindex: name === view ? "0" : "-1", onclick: () => update({ view: name, page: "" }), onkeydown: tabKeys,
    }, label)));
    app.setAttribute("aria-labelledby", `tab-${view}`);
    // filters and rows keep focus across a re-render; focus would be lost with the element
    const active = document.activeElement;
    const focusName = active && app.contains(active) ? active.getAttribute("name") : null;
    const focusRow = active && app.contains(active) && active.dataset ? active.dataset.id : null;
    const caret = focusName && typeof active.selectionStart === "number" ? active.selectionStart : null;
    app.replaceChildren(...[renderers[view]()].flat(3).filter((node) => node));
    app.dataset.view = view;
    app.parentElement.dataset.view = view; // on <main> too: the tests wait for main[data-view]
    if (focusName) {
      const again = app.querySelector(`[name="${focusName}"]`);
      if (again) { again.focus(); if (caret !== null && again.setSelectionRange) again.setSelectionRange(caret, caret); }
    } else if (focusRow) {
      const again = [...app.querySelectorAll("tr[data-id]")].find((row) => row.dataset.id === focusRow);
      if (again) again.focus();
    }
    requestAnimationFrame(markScrolling);
  }

  // a change of the system's colour scheme redraws the charts in the new colours
  const scheme = window.matchMedia("(prefers-color-scheme: dark)");
  if (scheme.addEventListener) scheme.addEventListener("change", () => { themeCharts(); render(); });

  render();
  // the first view is drawn, charts included (they are made in microtasks of the render):
  // the browser tests time the page up to here
  requestAnimationFrame(() => performance.mark("recallbench:rendered"));
})();
