// The compare page: every run's curves on shared axes (one colour per run, as in the table's
// swatches) from /api/jobs/compare, and the runs table sorted by any column.
import { ty } from "./app.js";
import { charts } from "./charts.js";
(function () {
  const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
    "#bcbd22", "#393b79", "#ad494a", "#637939", "#e6550d", "#7b4173", "#843c39", "#de9ed6", "#3182bd", "#31a354", "#756bb1"];
  const root = document.getElementById("compare");

  // uPlot wants one x array for every series: the union of the runs' epochs, null where a run
  // has no point there (spanGaps joins its line across those).
  function aligned(doc, metric) {
    const xs = [...new Set(doc.jobs.flatMap((j) => (doc.series[j.id][metric] || []).map((p) => p[0])))].sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const cols = doc.jobs.map((j) => {
      const col = new Array(xs.length).fill(null);
      for (const [x, y] of doc.series[j.id][metric] || []) col[index.get(x)] = y;
      return col;
    });
    return [xs, ...cols];
  }

  function draw(element, doc) {
    const metric = element.dataset.metric;
    const data = aligned(doc, metric);
    const logScale = metric === "lr" && data.slice(1).flat().every((v) => v == null || v > 0);
    const series = [{ label: "epoch", value: charts.fmt(5) }, ...doc.jobs.map((j, i) => ({
      label: j.name, stroke: PALETTE[i % PALETTE.length], width: 1.5, spanGaps: true,
      value: charts.fmt(4, metric === "val_accuracy" ? "%" : ""),
      points: { show: metric === "val_accuracy", size: 5, fill: PALETTE[i % PALETTE.length] },
    }))];
    const width = () => Math.max(element.clientWidth, 280);
    const plot = new uPlot({
      width: width(), height: 240, series, legend: { show: false },
      scales: { x: { time: false }, y: logScale ? { distr: 3 } : {} },
      axes: [{ label: "epoch", labelSize: 18, size: 36 }, { size: charts.fitAxis, values: charts.significantTicks }],
      cursor: { drag: { x: true, y: false } },
    }, data, element);
    new ResizeObserver(() => { if (width() !== plot.width) plot.setSize({ width: width(), height: plot.height }); })
      .observe(element);
  }

  function sortable(table) {
    const body = table.tBodies[0];
    table.querySelectorAll("th.sortable").forEach((th, column) => {
      th.addEventListener("click", () => {
        const ascending = !th.classList.contains("sorted-asc");
        table.querySelectorAll("th.sortable").forEach((h) => h.classList.remove("sorted-asc", "sorted-desc"));
        th.classList.add(ascending ? "sorted-asc" : "sorted-desc");
        const key = (row) => row.cells[column].dataset.value ?? row.cells[column].textContent;
        const rows = [...body.rows].sort((a, b) => {
          const x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
          if (x === "" || y === "") return x === y ? 0 : x === "" ? 1 : -1;  // blanks last either way
          const order = !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
          return ascending ? order : -order;
        });
        rows.forEach((r) => body.appendChild(r));
      });
    });
  }

  sortable(document.getElementById("compare-table"));
  ty.api("GET", `/api/jobs/compare?ids=${encodeURIComponent(root.dataset.ids)}`).then((doc) => {
    document.querySelectorAll(".chart[data-metric]").forEach((element) => draw(element, doc));
  }).catch((e) => { document.getElementById("compare-error").textContent = e.message; });
})();
