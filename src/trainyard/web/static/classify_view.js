// How inference results are drawn, shared by the classify, classify-many and evaluation pages:
// predictions, statistics with histograms, confusion matrices, per-class tables, layer rows.
import { ty } from "./app.js";

export const view = {
  // "1.234e-5" style numbers for statistics: 4 significant digits.
  num(x) {
    if (x == null) return "–";
    const a = Math.abs(x);
    return a !== 0 && (a < 1e-3 || a >= 1e5) ? x.toExponential(2) : Number(x.toPrecision(4)).toString();
  },
  // A 20-bin histogram as an inline SVG bar chart, with the value range under it.
  histogram(stats) {
    const counts = stats.histogram.counts;
    if (!counts.length) return "";
    const w = 160, h = 40, most = Math.max(...counts, 1), bw = w / counts.length;
    const bars = counts.map((c, i) => {
      const bh = c ? Math.max(1, (h * c) / most) : 0;
      return `<rect x="${(i * bw).toFixed(1)}" y="${(h - bh).toFixed(1)}" width="${(bw - 1).toFixed(1)}" height="${bh.toFixed(1)}"><title>${c}</title></rect>`;
    }).join("");
    const edges = stats.histogram.edges;
    return `<svg class="histogram" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-label="histogram">${bars}</svg>
      <div class="hist-range"><span>${view.num(edges[0])}</span><span>${view.num(edges[edges.length - 1])}</span></div>`;
  },
  stats(stats) {
    if (!stats) return "";
    return `<div class="stats-line">mean ${view.num(stats.mean)} · std ${view.num(stats.std)}</div>${view.histogram(stats)}`;
  },
  predictions(table, predictions) {
    table.innerHTML = predictions.map(([label, p]) => `<tr><td>${ty.escape(label)}</td>
      <td class="bar-cell"><div class="pbar" style="width:${(100 * p).toFixed(1)}%"></div></td>
      <td class="num">${(100 * p).toFixed(2)}%</td></tr>`).join("");
  },
  pct(x) { return x == null ? "–" : `${(100 * x).toFixed(2)}%`; },
  // The confusion matrix as a table shaded by each cell's share of its row (the true class).
  confusion(matrix, classes, limit = 60) {
    if (classes.length > limit) return `<p class="muted small">${classes.length} classes: too many to draw; the matrix is in the JSON.</p>`;
    const head = classes.map((c) => `<th class="col" title="predicted ${ty.escape(c)}">${ty.escape(c)}</th>`).join("");
    const rows = matrix.map((row, i) => {
      const total = row.reduce((a, b) => a + b, 0) || 1;
      const cells = row.map((n, j) => {
        const share = n / total, colour = i === j ? "31,138,76" : "197,48,48";
        const style = n ? `background: rgba(${colour},${(0.12 + 0.88 * share).toFixed(3)}); color:${share > 0.55 ? "#fff" : "inherit"}` : "";
        return `<td style="${style}" title="${ty.escape(classes[i])} → ${ty.escape(classes[j])}: ${n}">${n || ""}</td>`;
      }).join("");
      return `<tr><th>${ty.escape(classes[i])}</th>${cells}</tr>`;
    }).join("");
    return `<table class="confusion"><tr><th></th>${head}</tr>${rows}</table>`;
  },
  perClass(rows) {
    const body = rows.map((r) => `<tr><td>${ty.escape(r.class)}</td><td class="num">${view.pct(r.precision)}</td>
      <td class="num">${view.pct(r.recall)}</td><td class="num">${r.f1.toFixed(3)}</td><td class="num">${r.support}</td></tr>`).join("");
    return `<thead><tr><th>Class</th><th>Precision</th><th>Recall (accuracy)</th><th>F1</th><th>Images</th></tr></thead><tbody>${body}</tbody>`;
  },
  metric(label, value) { return `<div>${label}<strong>${value}</strong></div>`; },
  // Small mosaics (5x5 filters, 4x4 maps) drawn at a whole multiple of their size, about 240 px
  // on their longer side (a tall mosaic must not become a strip thousands of pixels long).
  enlarge(img) {
    const w = img.naturalWidth, h = img.naturalHeight;
    if (w) img.style.width = `${Math.min(480, w * Math.max(1, Math.floor(240 / Math.max(w, h))))}px`;
  },
  // Every layer's row into a table body, mosaics enlarged once they are decoded.
  layerTable(body, layers) {
    body.innerHTML = layers.map(view.layerRow).join("");
    for (const img of body.querySelectorAll("img.mosaic")) {
      if (img.complete) view.enlarge(img); else img.addEventListener("load", () => view.enlarge(img));
    }
  },
  layerRow(layer) {
    const shape = layer.output_shape ? layer.output_shape.join("×") : "–";
    const weights = layer.weights ? `${layer.weight_image ? `<img class="mosaic" src="${layer.weight_image}" alt="weights">` : ""}${view.stats(layer.weights)}` : `<span class="muted small">no weights</span>`;
    const shown = layer.activation_image && layer.output_shape && layer.maps_shown < layer.output_shape[0]
      ? `<div class="small muted">first ${layer.maps_shown} of ${layer.output_shape[0]} maps</div>` : "";
    const acts = `${layer.activation_image ? `<img class="mosaic" src="${layer.activation_image}" alt="activations">` : ""}${shown}${view.stats(layer.activations)}`;
    return `<tr><td class="layer-name"><strong>${ty.escape(layer.name)}</strong><div class="small">${ty.escape(layer.type)}</div>
      <div class="small muted">${shape}</div><div class="small muted">${layer.params.toLocaleString()} params</div></td>
      <td class="vis">${weights}</td><td class="vis">${acts}</td></tr>`;
  },
};
