// Charts over uPlot (vendored): a growing table of aligned series, and line charts that redraw
// at most a few times a second however fast points arrive. Every point is kept: uPlot draws
// tens of thousands of points in a few milliseconds, so nothing is thinned out.
export const charts = (function () {
  // Columns aligned on one x array, as uPlot wants them: [xs, ys1, ys2, ...], null where a series
  // has no point at that x. Points nearly always arrive in x order (append); a resumed job
  // repeats epochs (the later value replaces the earlier one) and may insert (binary search).
  class Table {
    constructor(names) {
      this.names = names;
      this.column = Object.fromEntries(names.map((name, i) => [name, i + 1]));
      this.cols = [[], ...names.map(() => [])];
      this.counts = Object.fromEntries(names.map((name) => [name, 0]));
      this.dirty = false;
    }
    has(name) { return name in this.column; }
    add(name, x, y) {
      const c = this.column[name];
      if (!c) return;
      const xs = this.cols[0];
      let i = xs.length - 1;
      if (i < 0 || x > xs[i]) {
        xs.push(x);
        for (let k = 1; k < this.cols.length; k++) this.cols[k].push(null);
        i = xs.length - 1;
      } else if (x !== xs[i]) {
        let lo = 0, hi = xs.length;
        while (lo < hi) { const mid = (lo + hi) >> 1; if (xs[mid] < x) lo = mid + 1; else hi = mid; }
        i = lo;
        if (xs[i] !== x) {
          xs.splice(i, 0, x);
          for (let k = 1; k < this.cols.length; k++) this.cols[k].splice(i, 0, null);
        }
      }
      if (this.cols[c][i] == null) this.counts[name]++;
      this.cols[c][i] = y;
      this.dirty = true;
    }
    get length() { return this.cols[0].length; }
  }

  function fmt(digits, unit = "") {
    return (u, v) => (v == null ? "–" : `${Number(v).toPrecision(digits).replace(/\.?0+$/, "")}${unit}`);
  }

  // Axis ticks with two significant digits: small learning rates (8e-4, 1.2e-3) stay distinct.
  function significantTicks(u, splits) {
    return splits.map((v) => (v == null ? "" : v === 0 ? "0" : String(Number(v.toPrecision(2)))));
  }

  // An axis at least 56 px wide (charts stacked on a page keep their plots aligned), wider where
  // its widest tick label needs it (uPlot calls this as the axis' size): a fixed width clipped
  // the first digits of small learning rates ("0.00001" showed as ".00001").
  function fitAxis(u, values, axisIdx, cycleNum) {
    const axis = u.axes[axisIdx];
    if (cycleNum > 1) return axis._size;  // uPlot settles sizes in a few passes; keep the last
    const longest = (values || []).reduce((a, v) => (String(v).length > a.length ? String(v) : a), "");
    u.ctx.font = axis.font[0];
    return Math.max(56, Math.ceil(axis.ticks.size + axis.gap + u.ctx.measureText(longest).width / devicePixelRatio + 4));
  }

  // A score as the pages show it: a percentage with two decimals, a fraction (a detector's mAP)
  // to three significant digits, so a weak model's 0.004 reads 0.004, not 0.00%.
  function scoreText(y, unit) {
    return unit === "%" ? `${y.toFixed(2)}%` : `${+y.toPrecision(3)}`;
  }

  // A dashed line and a dot at the best point, e.g. best() -> {x: 12, y: 97.5, scale: "pct"}.
  function bestMarker(best) {
    return {
      hooks: {
        draw: [(u) => {
          const b = best();
          if (!b || b.x < u.scales.x.min || b.x > u.scales.x.max) return;
          const ctx = u.ctx, pr = devicePixelRatio;
          const x = Math.round(u.valToPos(b.x, "x", true)), y = u.valToPos(b.y, b.scale, true);
          ctx.save();
          ctx.strokeStyle = "#1f8a4c";
          ctx.lineWidth = pr;
          ctx.setLineDash([4 * pr, 4 * pr]);
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
          ctx.setLineDash([]);
          ctx.fillStyle = "#1f8a4c";
          ctx.beginPath();
          ctx.arc(x, y, 4.5 * pr, 0, 2 * Math.PI);
          ctx.fill();
          ctx.font = `${11 * pr}px system-ui, sans-serif`;
          const text = `best ${scoreText(b.y, b.unit)} @ ${+b.x.toFixed(3)}`;
          const right = x + ctx.measureText(text).width + 8 * pr > u.bbox.left + u.bbox.width;
          ctx.textAlign = right ? "right" : "left";
          ctx.fillText(text, x + (right ? -6 : 6) * pr, u.bbox.top + 12 * pr);
          ctx.restore();
        }],
      },
    };
  }

  // options: {table, height, series: [{name, label, color, scale, dash, points, unit}],
  //           scales: {name: {range}}, axes: [{scale, label, side}], xLabel, plugins}
  function lineChart(element, options) {
    const table = options.table;
    const series = [{ label: options.xLabel || "epoch", value: fmt(5) }];
    for (const s of options.series) {
      series.push({
        label: s.label, scale: s.scale, stroke: s.color, width: 1.5, dash: s.dash, spanGaps: true,
        value: fmt(s.digits || 4, s.unit || ""),
        // Dots for sparse series (validation), so even a single point shows; none once they
        // would crowd (more than one per 8 CSS pixels).
        points: { show: s.points ? (u) => table.counts[s.name] <= u.bbox.width / devicePixelRatio / 8 : false,
                  size: 6, fill: s.color },
      });
    }
    const scales = { x: { time: false }, ...(options.scales || {}) };
    const axes = [{ label: options.xLabel || "epoch", labelSize: 18, size: 36 }];
    for (const a of options.axes || []) {
      axes.push({ scale: a.scale, label: a.label, side: a.side ?? 3, labelSize: 18, size: fitAxis,
                  grid: { show: a.grid ?? (a.side !== 1) }, values: a.values });
    }
    const width = Math.max(element.clientWidth, 300);
    const plot = new uPlot({
      width, height: options.height || 300, series, scales, axes, plugins: options.plugins || [],
      legend: { live: true }, cursor: { drag: { x: true, y: false } },
    }, table.cols, element);
    new ResizeObserver(() => {
      const w = Math.max(element.clientWidth, 300);
      if (w !== plot.width) plot.setSize({ width: w, height: plot.height });
    }).observe(element);
    return plot;
  }

  // Calls fn at most every `ms`, and once more after the last call (so the final state shows).
  function throttle(fn, ms) {
    let timer = null, again = false;
    return function run() {
      if (timer) { again = true; return; }
      fn();
      timer = setTimeout(() => { timer = null; if (again) { again = false; run(); } }, ms);
    };
  }

  return { Table, lineChart, bestMarker, scoreText, throttle, fmt, significantTicks, fitAxis };
})();
