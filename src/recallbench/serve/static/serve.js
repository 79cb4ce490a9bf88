// recallbench serve: the keyboard of the annotation pages, the "different only" filter of
// the comparison and the trend charts. Plain script, no dependencies but Chart.js (loaded
// from /static/chart.js only by the pages that draw).
(function () {
  "use strict";

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

  const only = document.getElementById("different-only");
  const table = document.getElementById("per-query");
  if (only && table) {
    const count = document.getElementById("shown-count");
    const update = function () {
      table.classList.toggle("different-only", only.checked);
      const rows = table.querySelectorAll("tbody tr");
      const shown = only.checked ? table.querySelectorAll('tbody tr[data-differs="yes"]').length : rows.length;
      count.textContent = shown + " of " + rows.length + " queries";
      // the filter's state in the URL, so that a reload or a shared link keeps it
      const plain = location.pathname + location.search;
      history.replaceState(null, "", only.checked ? plain + "#different" : plain);
    };
    only.checked = location.hash === "#different";
    only.addEventListener("change", update);
    update();
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

  const data = document.getElementById("charts");
  if (data && window.Chart) {
    const charts = JSON.parse(data.textContent);
    const colours = ["#2f6fde", "#c62828", "#1a7f37", "#9a6700", "#7b1fa2", "#00838f"];
    document.querySelectorAll("canvas[data-chart]").forEach(function (canvas) {
      const chart = charts[canvas.dataset.chart];
      if (!chart) return;
      new window.Chart(canvas, {
        type: "line",
        data: {
          labels: chart.labels,
          datasets: chart.lines.map(function (line, i) {
            return {
              label: line.label, data: line.data, spanGaps: true, tension: 0,
              borderColor: colours[i % colours.length], backgroundColor: colours[i % colours.length],
              pointRadius: 3,
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
          scales: { x: { title: { display: true, text: "run, oldest first" } } },
        },
      });
    });
  }
})();
