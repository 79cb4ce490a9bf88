// recallbench serve: the keyboard of the annotation pages; tables that scroll in their own
// box; the comparison's filters and sort by Δ; query lists moved through with j/k whose
// Enter opens the query in a side panel (Escape closes it, focus back on the row, the
// list's scroll kept); the query log filtered as you type; the trend charts, coloured from
// the stylesheet (light or dark). Plain script, no dependencies but Chart.js (loaded from
// /static/chart.js only by the pages that draw). The Content-Security-Policy runs no inline
// script: the pages' data comes in JSON blocks this file reads.
(function () {
  "use strict";

  const typing = function (target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(target.tagName));
  };

  // A key submits the form whose button carries data-key="KEY" (the buttons work by mouse
  // too). Keys typed into a field (the annotator's name) are the field's; one submission
  // at a time, so that a held key does not label the next pair unseen.
  let sent = false;
  document.addEventListener("keydown", function (event) {
    if (sent || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    const key = event.key.toLowerCase();
    const button = Array.from(document.querySelectorAll("button[data-key]")).find(
      (b) => b.dataset.key === key
    );
    if (!button) return;
    event.preventDefault();
    sent = true;
    button.form.requestSubmit(button);
  });
  window.addEventListener("pageshow", function () { sent = false; });

  const annotator = document.getElementById("annotator");
  if (annotator && !annotator.value) annotator.focus();

  // -- tables scroll in their own box ---------------------------------------------------
  // A template wraps its tables in div.scroll; any other table (a page added later) is
  // wrapped here. A box that does scroll becomes focusable, so the keyboard can scroll it.
  const boxes = function (root) {
    root.querySelectorAll("table").forEach(function (table) {
      const parent = table.parentElement;
      if (parent && parent.classList.contains("scroll")) return;
      const box = document.createElement("div");
      box.className = "scroll";
      parent.insertBefore(box, table);
      box.appendChild(table);
    });
    root.querySelectorAll(".scroll").forEach(function (box) {
      const scrolls = box.scrollWidth > box.clientWidth + 1;
      if (scrolls) {
        box.tabIndex = 0;
        box.setAttribute("role", "region");
        const table = box.querySelector("table");
        const title = table && (table.getAttribute("aria-label") || (table.caption && table.caption.textContent));
        box.setAttribute("aria-label", (title || "table") + " (scrolls sideways)");
      } else if (box.getAttribute("role") === "region") {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
    });
  };
  const main = document.querySelector("main");
  boxes(main);
  let resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () { boxes(main); }, 150);
  });

  // -- the side panel -------------------------------------------------------------------
  const panel = document.getElementById("panel");
  const panelTitle = document.getElementById("panel-title");
  const panelBody = document.getElementById("panel-body");
  let opener = null;
  // On a narrow screen the panel covers the page: a modal drawer, the page behind it inert.
  const narrow = window.matchMedia("(max-width: 900px)");
  const behind = function (modal) {
    document.querySelectorAll("body > header, body > main, body > footer").forEach((e) => { e.inert = modal; });
    if (panel) panel.setAttribute("aria-modal", modal ? "true" : "false");
  };
  narrow.addEventListener("change", function () { if (panel && !panel.hidden) behind(narrow.matches); });
  // The list keeps its place: the row stays where it was on the screen when the panel,
  // opening or closing, narrows or widens the page beside it.
  const steady = function (row, change) {
    const top = row && document.contains(row) ? row.getBoundingClientRect().top : null;
    change();
    if (top !== null) window.scrollBy(0, row.getBoundingClientRect().top - top);
  };
  const closePanel = function () {
    if (panel.hidden) return;
    steady(opener, function () {
      panel.hidden = true;
      document.body.classList.remove("panel-open");
    });
    behind(false);
    document.querySelectorAll("tr.open").forEach((r) => r.classList.remove("open"));
    if (opener && document.contains(opener)) {
      opener.focus({ preventScroll: true });
      const box = opener.getBoundingClientRect();
      if (box.bottom < 0 || box.top > window.innerHeight) opener.scrollIntoView({ block: "nearest" });
    }
    boxes(main);
  };
  let loading = 0;
  const openPanel = function (url, from, stay) {
    // stay: the focus stays on the row (j/k with the panel open shows the next query)
    opener = from;
    const mine = ++loading;
    document.querySelectorAll("tr.open").forEach((r) => r.classList.remove("open"));
    if (from && from.tagName === "TR") from.classList.add("open");
    panelTitle.textContent = "Loading…";
    panelBody.textContent = "";
    steady(from, function () {
      panel.hidden = false;
      document.body.classList.add("panel-open");
    });
    behind(narrow.matches);
    if (!stay) panelTitle.focus({ preventScroll: true });
    fetch(url, { credentials: "same-origin" })
      .then((response) => response.text())
      .then(function (text) {
        if (mine !== loading) return;  // a later query was opened meanwhile
        const page = new DOMParser().parseFromString(text, "text/html");
        const content = page.querySelector("main");
        const heading = content && content.querySelector(".panel-heading, h2");
        panelTitle.textContent = heading ? heading.textContent : "Detail";
        if (heading) heading.remove();
        panelBody.replaceChildren(...(content ? Array.from(content.childNodes) : []));
        const full = document.createElement("p");
        full.className = "small";
        const link = document.createElement("a");
        link.href = url;
        link.textContent = "open as a page";
        full.appendChild(link);
        panelBody.appendChild(full);
        boxes(panelBody);
      })
      .catch(function (error) { panelTitle.textContent = "Could not load: " + error; });
  };
  if (panel) {
    document.getElementById("panel-close").addEventListener("click", closePanel);
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && !panel.hidden) { event.preventDefault(); closePanel(); }
    });
    document.addEventListener("click", function (event) {
      const link = event.target.closest && event.target.closest("a[data-panel], table.list tbody tr[data-href] a");
      if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
      const row = link.closest("tr[data-href]");
      if (row && link.getAttribute("href") !== row.dataset.href) return;  // another link in the row
      event.preventDefault();
      openPanel(link.getAttribute("href"), row || link);
    });
  }

  // -- query lists: one tab stop, j/k or arrows move, Enter opens -------------------------
  const shownRows = function (table) {
    return Array.from(table.querySelectorAll("tbody tr[data-href]")).filter((r) => r.offsetParent !== null);
  };
  const rove = function (table) {
    const rows = shownRows(table);
    const current = table.querySelector("tbody tr[tabindex='0']");
    table.querySelectorAll("tbody tr[data-href]").forEach((r) => { r.tabIndex = -1; });
    const keep = current && rows.includes(current) ? current : rows[0];
    if (keep) keep.tabIndex = 0;
  };
  const lists = function (root) {
    root.querySelectorAll("table.list").forEach(function (table) {
      rove(table);
      table.querySelector("tbody").addEventListener("keydown", function (event) {
        const row = event.target.closest("tr[data-href]");
        if (!row || event.target !== row || event.ctrlKey || event.metaKey || event.altKey) return;
        const rows = shownRows(table);
        const at = rows.indexOf(row);
        let next = null;
        if (event.key === "j" || event.key === "ArrowDown") next = rows[Math.min(at + 1, rows.length - 1)];
        else if (event.key === "k" || event.key === "ArrowUp") next = rows[Math.max(at - 1, 0)];
        else if (event.key === "Home") next = rows[0];
        else if (event.key === "End") next = rows[rows.length - 1];
        else if (event.key === "Enter") { event.preventDefault(); openPanel(row.dataset.href, row); return; }
        else return;
        event.preventDefault();
        if (next) {
          row.tabIndex = -1;
          next.tabIndex = 0;
          next.focus();
          if (!panel.hidden) openPanel(next.dataset.href, next, true);
        }
      });
    });
  };
  lists(document);

  // -- the comparison: filters and sort by Δ --------------------------------------------
  const table = document.getElementById("per-query");
  if (table) {
    const only = document.getElementById("different-only");
    const count = document.getElementById("shown-count");
    const pick = {
      category: document.getElementById("filter-category"),
      intent: document.getElementById("filter-intent"),
      direction: document.getElementById("filter-direction"),
    };
    const threshold = document.getElementById("filter-threshold");
    const update = function () {
      table.classList.toggle("different-only", only.checked);
      const rows = table.querySelectorAll("tbody tr");
      const least = parseFloat(threshold.value);
      let shown = 0;
      rows.forEach(function (row) {
        let out = only.checked && row.dataset.differs === "no";
        if (least > 0) {  // the first measure's change: at least this large either way
          const delta = row.cells[3] ? row.cells[3].dataset.delta : "";
          if (delta === "" || delta === undefined || Math.abs(parseFloat(delta)) < least) out = true;
        }
        for (const name in pick) {
          if (pick[name] && pick[name].value && row.dataset[name] !== pick[name].value) out = true;
        }
        row.classList.toggle("filtered-out", out);
        if (!out) shown++;
      });
      count.textContent = shown + " of " + rows.length + " queries";
      rove(table);
      // the filters in the URL, so that a reload or a shared link keeps them
      const state = new URLSearchParams();
      if (only.checked) state.set("different", "1");
      for (const name in pick) if (pick[name] && pick[name].value) state.set(name, pick[name].value);
      if (least > 0) state.set("at-least", threshold.value);
      const plain = location.pathname + location.search;
      const hash = state.toString();
      history.replaceState(null, "", hash ? plain + "#" + (hash === "different=1" ? "different" : hash) : plain);
    };
    const saved = new URLSearchParams(location.hash === "#different" ? "different=1" : location.hash.slice(1));
    only.checked = saved.get("different") === "1";
    for (const name in pick) {
      if (pick[name] && saved.get(name)) pick[name].value = saved.get(name);
      if (pick[name]) pick[name].addEventListener("change", update);
    }
    if (saved.get("at-least")) threshold.value = saved.get("at-least");
    threshold.addEventListener("input", update);
    only.addEventListener("change", update);
    update();

    const body = table.querySelector("tbody");
    const original = Array.from(body.rows);
    table.querySelectorAll("button.sort").forEach(function (button) {
      button.addEventListener("click", function () {
        const header = button.closest("th");
        const column = header.cellIndex;
        const order = { none: "ascending", ascending: "descending", descending: "none" }[header.getAttribute("aria-sort") || "none"];
        table.querySelectorAll("thead th[aria-sort]").forEach((th) => th.setAttribute("aria-sort", "none"));
        header.setAttribute("aria-sort", order);
        let rows = original.slice();
        if (order !== "none") {
          const value = function (row) {
            const text = row.cells[column].dataset.delta;
            return text === "" || text === undefined ? null : parseFloat(text);
          };
          const sign = order === "ascending" ? 1 : -1;
          rows.sort(function (x, y) {
            const a = value(x), b = value(y);
            if (a === null && b === null) return 0;
            if (a === null) return 1;  // queries without a Δ last, either way
            if (b === null) return -1;
            return sign * (a - b);
          });
        }
        body.replaceChildren(...rows);
        rove(table);
      });
    });
  }

  // Two ticked runs on the runs page make the comparison's ?a=&b=.
  const picked = document.getElementById("compare-picked");
  if (picked) {
    picked.form.addEventListener("submit", function (event) {
      const ids = Array.from(document.querySelectorAll("input.pick:checked")).map((c) => c.value);
      event.preventDefault();
      if (ids.length !== 2) { alert("Tick exactly two runs."); return; }
      location.href = "/compare?a=" + encodeURIComponent(ids[1]) + "&b=" + encodeURIComponent(ids[0]);
    });
  }

  // A form marked data-auto applies a choice as soon as it is made (its button stays, for
  // the keyboard and without script).
  document.querySelectorAll("form[data-auto] select").forEach(function (select) {
    select.addEventListener("change", function () { select.form.requestSubmit(); });
  });

  // -- the query log filters as you type --------------------------------------------------
  const search = document.getElementById("log-q");
  const results = document.getElementById("log-results");
  if (search && results) {
    let waiting = null;
    let asked = 0;
    search.addEventListener("input", function () {
      clearTimeout(waiting);
      waiting = setTimeout(function () {
        const url = "/telemetry" + (search.value ? "?" + new URLSearchParams({ q: search.value }) : "");
        const mine = ++asked;
        fetch(url, { credentials: "same-origin" })
          .then((response) => response.text())
          .then(function (text) {
            if (mine !== asked) return;  // a later search is under way
            const page = new DOMParser().parseFromString(text, "text/html");
            const fresh = page.getElementById("log-results");
            const counted = page.getElementById("log-count");
            if (!fresh) return;
            results.replaceChildren(...Array.from(fresh.childNodes));
            if (counted) document.getElementById("log-count").textContent = counted.textContent;
            history.replaceState(null, "", url);
            boxes(results);
            lists(results);
          });
      }, 250);
    });
  }

  // -- trend charts ---------------------------------------------------------------------
  const data = document.getElementById("charts");
  if (data && window.Chart) {
    const charts = JSON.parse(data.textContent);
    const dark = window.matchMedia("(prefers-color-scheme: dark)");
    const drawn = [];
    const draw = function () {
      drawn.splice(0).forEach((c) => c.destroy());
      const style = getComputedStyle(document.documentElement);
      const ink = style.getPropertyValue("--fg").trim();
      const grid = style.getPropertyValue("--line").trim();
      const colours = dark.matches
        ? ["#8ab4ff", "#ff8a80", "#5fd47e", "#f0c25a", "#d39cff", "#4dd0e1"]
        : ["#1f5fcc", "#c62828", "#1a7f37", "#9a6700", "#7b1fa2", "#00838f"];
      window.Chart.defaults.color = ink;
      window.Chart.defaults.borderColor = grid;
      document.querySelectorAll("canvas[data-chart]").forEach(function (canvas) {
        const chart = charts[canvas.dataset.chart];
        if (!chart) return;
        // one run (or a flat series): points on a sensible axis, not a line auto-scaled
        // into a sliver (0..1 for values in it, else ±10% around the value)
        const values = chart.lines.flatMap((l) => l.data).filter((v) => v !== null && isFinite(v));
        const low = Math.min(...values), high = Math.max(...values);
        const single = chart.labels.length === 1;
        const y = {};
        if (values.length && (single || high - low < 1e-9)) {
          if (low >= 0 && high <= 1) { y.min = 0; y.max = 1; }
          else { const pad = Math.abs(high) * 0.1 || 1; y.min = low - pad; y.max = high + pad; }
        }
        drawn.push(new window.Chart(canvas, {
          type: "line",
          data: {
            labels: chart.labels,
            datasets: chart.lines.map(function (line, i) {
              return {
                label: line.label, data: line.data, spanGaps: true, tension: 0, showLine: !single,
                borderColor: colours[i % colours.length], backgroundColor: colours[i % colours.length],
                pointRadius: single ? 5 : 3,
              };
            }),
          },
          options: {
            animation: false, maintainAspectRatio: false,
            interaction: { mode: "index", intersect: false },
            plugins: {
              tooltip: {
                callbacks: {
                  afterLabel: function (item) {
                    const bounds = chart.lines[item.datasetIndex].intervals[item.dataIndex];
                    return bounds && bounds[0] !== null
                      ? "95% interval " + bounds[0].toFixed(4) + " – " + bounds[1].toFixed(4) : "";
                  },
                },
              },
            },
            scales: {
              x: { title: { display: true, text: "run, oldest first" }, grid: { color: grid }, offset: single },
              y: Object.assign({ grid: { color: grid } }, y),
            },
          },
        }));
      });
    };
    draw();
    dark.addEventListener("change", draw);
  }
})();
