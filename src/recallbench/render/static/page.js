// recallbench report page: renders the JSON embedded in #data (see _html.py) into views.
// Text from the data (queries, memories) is only ever set as textContent, never as HTML.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("data").textContent);
  const app = document.getElementById("app");
  const nav = document.getElementById("tabs");
  const ROWS_SHOWN = 1000; // a table this long is already more than anyone scrolls
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

  const fmt = (value, digits = 3) => (value === null || value === undefined ? "–" : Number(value).toFixed(digits));
  const signed = (value, digits = 3) => (value === null || value === undefined ? "–" : (value > 0 ? "+" : "") + Number(value).toFixed(digits));
  const ci = (i, digits = 3) => (i && i.low !== null && i.high !== null ? `[${fmt(i.low, digits)}, ${fmt(i.high, digits)}]${i.small ? "*" : ""}` : "–");
  const num = (text) => el("td", { className: "num" }, text);

  function table(header, rows, numeric) {
    const isNum = (i) => numeric && numeric.includes(i);
    return el("table", {},
      el("thead", {}, el("tr", {}, header.map((h, i) => el("th", { className: isNum(i) ? "num" : "" }, h)))),
      el("tbody", {}, rows));
  }

  function select(label, key, options, fallback) {
    const current = state[key] || fallback;
    return el("label", {}, label,
      el("select", { name: key, onchange: (e) => update({ [key]: e.target.value }) },
        options.map(([value, text]) => el("option", { value, selected: value === current }, text))));
  }

  function search(key, placeholder) {
    const input = el("input", { type: "search", name: key, placeholder, value: state[key] || "" });
    input.addEventListener("change", () => update({ [key]: input.value }));
    return el("label", {}, input);
  }

  function checkbox(label, key) {
    return el("label", {}, el("input", {
      type: "checkbox", name: key, checked: state[key] === "1",
      onchange: (e) => update({ [key]: e.target.checked ? "1" : "" }),
    }), label);
  }

  function warnings(list) {
    return list && list.length ? el("ul", { className: "warnings" }, list.map((w) => el("li", {}, w))) : null;
  }

  function meta(pairs) {
    return el("dl", { className: "meta" }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== "")
      .map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
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

  const COLOURS = ["#2f6fde", "#e07b00", "#1a7f37", "#b0307a", "#6b4fd6", "#008c95", "#8a6d00", "#c62828"];

  function chartBox(title, config, tall) {
    const canvas = el("canvas", { role: "img", "aria-label": title });
    const box = el("div", { className: "chart" + (tall ? " tall" : "") }, canvas);
    queueMicrotask(() => charts.push(new Chart(canvas, config)));
    return el("section", { className: "figure" }, el("h3", {}, title), box);
  }

  // A mean as a point and its interval as a floating bar [low, high] around it.
  function intervalChart(title, labels, means, intervals, yTitle) {
    return chartBox(title, {
      type: "bar",
      data: {
        labels,
        datasets: [
          {
            type: "bar", label: "interval", barPercentage: 0.35, backgroundColor: "rgba(47,111,222,0.25)",
            borderColor: "#2f6fde", borderWidth: 1, borderSkipped: false,
            data: intervals.map((i) => (i && i.low !== null && i.high !== null ? [i.low, i.high] : null)),
          },
          { type: "line", label: "mean", data: means, showLine: false, pointRadius: 5, backgroundColor: "#1d2330", borderColor: "#1d2330" },
        ],
      },
      options: { scales: { y: { title: { display: !!yTitle, text: yTitle } } } },
    });
  }

  function histogram(values, bins) {
    const finite = values.filter((v) => v !== null && v !== undefined && Number.isFinite(v));
    if (!finite.length) return { labels: [], counts: [] };
    let low = Math.min(...finite), high = Math.max(...finite);
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
      data: { labels, datasets: [{ label: "queries", data: counts, backgroundColor: "#2f6fde", barPercentage: 1, categoryPercentage: 0.95 }] },
      options: { plugins: { legend: { display: false } }, scales: { x: { title: { display: true, text: xTitle } }, y: { title: { display: true, text: "queries" } } } },
    });
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
      el("tr", { className: "hit" }, num(String(i + 1)), el("td", {}, id), el("td", {}, grade(grades[id], threshold)),
        scores ? num(fmt(scores[i], 4)) : null, reference ? num(before(id)) : null, el("td", {}, memoryText(id)))),
      header.flatMap((h, i) => (["#", "score", "baseline #"].includes(h) ? [i] : [])));
  }

  function missedTable(ids, grades, threshold) {
    const returned = new Set(ids);
    const missed = Object.keys(grades).filter((id) => grades[id] >= threshold && !returned.has(id));
    if (!missed.length) return el("p", { className: "muted" }, "every gold memory came back in these results");
    return table(["gold memory missed", "grade", "text"], missed.map((id) =>
      el("tr", { className: "missed" }, el("td", {}, id), el("td", {}, grade(grades[id], threshold)), el("td", {}, memoryText(id)))));
  }

  // ---- run report -------------------------------------------------------------------------

  function measureOptions(measures) {
    return measures.map((m) => [m.name, m.name]);
  }

  const reportViews = {
    summary() {
      const s = DATA.summary;
      const c = s.counts;
      const lat = s.latency_ms;
      const rows = DATA.measures.map((m) => {
        const i = DATA.intervals[m.name];
        return el("tr", {}, el("td", {}, m.name), num(fmt(DATA.means[m.name], 4)), num(ci(i, 4)),
          num(i ? String(i.n) : "–"), el("td", { className: "muted" }, (m.higher_is_better ? "" : "lower is better. ") + m.definition));
      });
      const withIntervals = DATA.measures.filter((m) => DATA.intervals[m.name] && DATA.intervals[m.name].low !== null);
      return [
        meta([
          ["system", s.system + (s.replayed_from ? ` (replayed from ${s.replayed_from})` : "")],
          ["dataset", `${s.dataset.name} ${s.dataset.version} (sha256 ${s.dataset.sha256.slice(0, 12)})`],
          ["queries", `${c.queries}: ${c.evaluated} in the means, ${c.no_relevant} without a relevant memory, ${c.failed} failed, ${c.missing} missing`],
          ["k", s.k_searched ? `${s.k} (the profile caps searches at ${s.k_searched}: measures at cutoffs above it see at most ${s.k_searched} results)` : s.k],
          ["unmatched", s.unmatched], ["scores", s.system_scores ? "returned by the system" : "none: results taken in the order returned"],
          ["latency", lat ? `p50 ${fmt(lat.p50, 1)} ms, p95 ${fmt(lat.p95, 1)} ms, p99 ${fmt(lat.p99, 1)} ms` : null],
          ["stability", s.stability && s.stability.rate !== null ? `${(100 * s.stability.rate).toFixed(1)}% of ${s.stability.queries} queries ranked alike over ${s.stability.repeats} repeats` : null],
          ["made", `${s.created_at} by recallbench ${s.recallbench_version}` + (s.git_revision ? ` (${s.git_revision.slice(0, 12)})` : "")],
        ]),
        warnings(s.warnings),
        el("h2", {}, "Means"),
        table(["measure", "mean", "95% CI", "n", "definition"], rows, [1, 2, 3]),
        el("p", { className: "muted" }, s.interval_method),
        withIntervals.length ? intervalChart("Means with their 95% intervals", withIntervals.map((m) => m.name),
          withIntervals.map((m) => DATA.means[m.name]), withIntervals.map((m) => DATA.intervals[m.name])) : null,
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
      figures.push(histogramChart(`Distribution of ${measure} over the queries`, DATA.queries.map((q) => q.values[measure]), 10, measure));
      figures.push(histogramChart("Latency (ms)", DATA.queries.map((q) => q.latency), 20, "milliseconds"));
      return [el("div", { className: "controls" }, select("measure", "measure", measureOptions(DATA.measures))), el("div", { className: "grid" }, figures)];
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
      const open = DATA.queries.find((q) => q.id === state.query);
      return [
        el("div", { className: "controls" },
          search("q", "search query text or id"),
          select("measure", "measure", measureOptions(DATA.measures)),
          select("status", "status", [["", "all"], ["ok", "ok"], ["failed", "failed"], ["missing", "missing"], ["no_relevant", "no relevant"]]),
          options("category").length > 1 ? select("category", "category", options("category")) : null,
          options("intent").length > 1 ? select("intent", "intent", options("intent")) : null,
          select("order", "sort", [["", "dataset"], ["worst", `worst ${measure} first`], ["best", `best ${measure} first`]]),
          el("span", { className: "muted", id: "count" }, `${rows.length} of ${DATA.queries.length} queries`)),
        open ? queryDetail(open) : el("p", { className: "muted" }, "Click a query to see what came back."),
        el("div", { className: "scroll" }, table(["query", "text", "category", "intent", "status", measure, "ms"],
          rows.slice(0, ROWS_SHOWN).map((q) => el("tr", {
            className: "clickable query-row" + (q.id === state.query ? " selected" : ""), "data-id": q.id,
            onclick: () => update({ query: q.id === state.query ? "" : q.id }),
          }, el("td", {}, q.id), el("td", {}, q.text), el("td", {}, q.category || ""), el("td", {}, q.intent || ""),
          el("td", {}, q.status), num(fmt(q.values[measure], 3)), num(fmt(q.latency, 1)))), [5, 6])),
        rows.length > ROWS_SHOWN ? el("p", { className: "muted" }, `first ${ROWS_SHOWN} shown: filter to narrow`) : null,
      ];
    },
  };

  function queryDetail(q) {
    const details = Object.entries(q.details).map(([m, items]) => el("li", {}, `${m}: ${items.join(", ")}`));
    return el("div", { className: "panel", id: "detail" },
      el("h2", {}, `${q.id}: ${q.text}`),
      meta([["category", q.category], ["intent", q.intent], ["status", q.status + (q.included ? "" : " (not in the means)")],
        ["error", q.error], ["latency", q.latency === null ? null : `${fmt(q.latency, 1)} ms`],
        ["values", DATA.measures.map((m) => `${m.name} ${fmt(q.values[m.name], 3)}`).join(" · ")]]),
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

  const comparisonViews = {
    summary() {
      const { comparison, baseline, others } = compareBase();
      const s = comparison.settings;
      const rows = comparison.comparisons.map((r) => el("tr", {}, el("td", {}, r.system), el("td", {}, r.measure), num(String(r.n)),
        num(fmt(r.mean_baseline, 4)), num(fmt(r.mean_system, 4)), num(signed(r.delta, 4)),
        num(r.ci ? `[${signed(r.ci.low, 4)}, ${signed(r.ci.high, 4)}]` : "–") , num(r.ci_level ? `${(100 * r.ci_level).toFixed(2)}%` : "–"),
        num(`${fmt(r.p_randomisation, 4)} / ${fmt(r.p_adjusted.randomisation, 4)}`), verdictCell(r),
        num(`${r.wins}/${r.ties}/${r.losses}`), num(fmt(r.mde, 3))));
      const tested = comparison.comparisons.filter((r) => r.ci);
      const ranks = comparison.rank_differences.map((d) => el("tr", {}, el("td", {}, d.system), num(String(d.k)),
        CLASSES.map((c) => num(String(d.classes[c] || 0))), num(fmt(d.mean_kendall_tau, 3)), num(fmt(d.mean_jaccard, 3)), num(String(d.top1_changed))));
      return [
        meta([["baseline", baseline], ["compared", others.join(", ")],
          ["dataset", `${comparison.dataset.name} ${comparison.dataset.version} (sha256 ${comparison.dataset.sha256.slice(0, 12)})`],
          ["queries", `${comparison.queries.paired} of ${comparison.queries.dataset} paired`],
          ["tests", `${s.correction} correction, alpha ${s.alpha}, ${s.interval} intervals, ${s.resamples} resamples, seed ${s.seed}`]]),
        warnings(comparison.warnings),
        el("h2", {}, "Differences (system − baseline)"),
        table(["system", "measure", "n", "baseline", "system", "Δ", "CI", "level", "p rand. raw / adj.", "verdict", "W/T/L", "MDE"], rows, [2, 3, 4, 5, 6, 7, 8, 10, 11]),
        el("div", { className: "grid" },
          tested.length ? intervalChart("Δ with its interval", tested.map((r) => `${r.system} · ${r.measure}`), tested.map((r) => r.delta), tested.map((r) => r.ci), "Δ") : null,
          comparison.rank_differences.length ? chartBox(`Rank changes against ${baseline} (top ${s.k})`, {
            type: "bar",
            data: {
              labels: comparison.rank_differences.map((d) => d.system),
              datasets: CLASSES.map((c, i) => ({ label: c, data: comparison.rank_differences.map((d) => d.classes[c] || 0), backgroundColor: ["#8fd19e", "#cde38a", "#f5b971", "#ef8a8a"][i] })),
            },
            options: { indexAxis: "y", scales: { x: { stacked: true, title: { display: true, text: "queries" } }, y: { stacked: true } } },
          }) : null),
        el("h2", {}, "Rank changes"),
        table(["system", "k", ...CLASSES, "mean tau", "mean Jaccard", "top 1 changed"], ranks, [1, 2, 3, 4, 5, 6, 7, 8]),
        el("p", { className: "muted" }, comparison.methods.rank_classes || ""),
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
      return [
        el("div", { className: "controls" },
          search("q", "search query text or id"),
          select("measure", "measure", [["any", "any measure"], ...measureOptions(measures)]),
          checkbox("different only", "different"),
          others.length > 1 ? select("system", "system", others.map((o) => [o, o]), system) : null,
          select("rank change", "rank", [["", "any"], ["changed", "not identical"], ...CLASSES.map((c) => [c, c])]),
          el("span", { className: "muted", id: "count" }, `${rows.length} of ${DATA.rows.length} queries`)),
        open ? comparedDetail(open, baseline, others) : el("p", { className: "muted" }, "Click a query to see both rankings side by side."),
        el("div", { className: "scroll" }, table(["query", "text", `${baseline} ${shown}`, ...others.flatMap((o) => [`${o} ${shown}`, "Δ", "rank change"])],
          rows.slice(0, ROWS_SHOWN).map((row) => el("tr", {
            className: "clickable compare-row" + (row.id === state.query ? " selected" : ""), "data-id": row.id,
            onclick: () => update({ query: row.id === state.query ? "" : row.id }),
          }, el("td", {}, row.id), el("td", {}, row.text), num(fmt(row.values[baseline][shown], 3)),
          others.flatMap((o) => {
            const a = row.values[baseline][shown], b = row.values[o][shown];
            const delta = a === null || b === null ? null : b - a;
            return [num(fmt(b, 3)), num(signed(delta, 3)), el("td", {}, el("span", { className: "badge " + row.classes[o].class }, row.classes[o].class))];
          }))))),
        rows.length > ROWS_SHOWN ? el("p", { className: "muted" }, `first ${ROWS_SHOWN} shown: filter to narrow`) : null,
      ];
    },

    groups() {
      const { comparison, measures } = compareBase();
      const measure = state.measure && state.measure !== "any" ? state.measure : measures[0].name;
      const rows = comparison.breakdowns.filter((r) => r.measure === measure);
      const figures = [];
      for (const grouping of ["category", "intent"]) {
        const mine = rows.filter((r) => r.grouping === grouping && r.ci);
        if (mine.length) figures.push(intervalChart(`Δ ${measure} by ${grouping}`, mine.map((r) => `${r.group} · ${r.system}`), mine.map((r) => r.delta), mine.map((r) => r.ci), "Δ"));
      }
      return [
        el("div", { className: "controls" }, select("measure", "measure", measureOptions(measures), measure)),
        el("div", { className: "grid" }, figures),
        table(["by", "group", "system", "n", "baseline", "system", "Δ", "CI", "p adj.", "verdict", "W/T/L"], rows.map((r) => el("tr", {},
          el("td", {}, r.grouping), el("td", {}, r.group), el("td", {}, r.system), num(String(r.n)), num(fmt(r.mean_baseline, 3)),
          num(fmt(r.mean_system, 3)), num(signed(r.delta, 3)), num(r.ci ? `[${signed(r.ci.low, 3)}, ${signed(r.ci.high, 3)}]` : "–"),
          num(fmt(r.p_adjusted.randomisation, 4)), verdictCell(r), num(`${r.wins}/${r.ties}/${r.losses}`))), [3, 4, 5, 6, 7, 8, 10]),
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
          names.map((m) => num(`${fmt(s.means[m], 3)} ${ci(s.intervals[m])}`)),
          num(fmt(s.latency_p50, 2)), num(String(s.failed)), el("td", {}, s.scores ? "yes" : "no")));
        return el("section", { className: "board" },
          el("h2", {}, `${board.dataset.name} ${board.dataset.version}`),
          el("p", { className: "muted" }, `${board.queries} queries, ${board.evaluated} in the means; sha256 ${board.dataset.sha256.slice(0, 12)}`),
          table(["rank", "system", ...names.map((m) => `${m} [95% CI]`), "p50 ms", "failed", "scores"], rows, [0, ...names.map((_, i) => i + 2), names.length + 2, names.length + 3]),
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
          }, true),
          table(["system", ...categories], board.systems.map((s) => el("tr", {}, el("td", {}, s.system), categories.map((c) => {
            const g = cell(s, c);
            return num(g ? `${fmt(g.means[measure], 3)} ${ci(g.intervals[measure])} n=${g.n}` : "–");
          }))), categories.map((_, i) => i + 1)));
      });
    },
  };

  // ---- views --------------------------------------------------------------------------------

  const VIEWS = {
    report: [["summary", "Summary"], ["charts", "Charts"], ["queries", "Queries"], reportViews],
    comparison: [["summary", "Summary"], ["queries", "Queries"], ["groups", "By group"], comparisonViews],
    leaderboard: [["leaderboard", "Leaderboard"], ["categories", "By category"], leaderboardViews],
  }[DATA.kind];
  const renderers = VIEWS[VIEWS.length - 1];
  const tabs = VIEWS.slice(0, -1);

  function render() {
    for (const chart of charts) chart.destroy();
    charts = [];
    const view = tabs.some(([name]) => name === state.view) ? state.view : tabs[0][0];
    nav.replaceChildren(...tabs.map(([name, label]) => el("button", {
      type: "button", "data-view": name, "aria-selected": String(name === view), onclick: () => update({ view: name }),
    }, label)));
    // filters keep their place across a re-render; focus would be lost with the element
    const focused = document.activeElement && document.activeElement.name;
    app.replaceChildren(...[renderers[view]()].flat(2).filter((node) => node));
    app.dataset.view = view;
    if (focused) { const again = app.querySelector(`[name="${focused}"]`); if (again) again.focus(); }
  }

  render();
})();
