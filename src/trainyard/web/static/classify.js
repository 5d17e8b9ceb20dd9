// The classify page: one image (predictions, Grad-CAM, the layer table with mosaics and
// histograms), and the forms that start classify-many, top-N and evaluation jobs.
"use strict";
const tyClassify = {
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
      <div class="hist-range"><span>${tyClassify.num(edges[0])}</span><span>${tyClassify.num(edges[edges.length - 1])}</span></div>`;
  },
  stats(stats) {
    if (!stats) return "";
    return `<div class="stats-line">mean ${tyClassify.num(stats.mean)} · std ${tyClassify.num(stats.std)}</div>${tyClassify.histogram(stats)}`;
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
    const body = rows.map((r) => `<tr><td>${ty.escape(r.class)}</td><td class="num">${tyClassify.pct(r.precision)}</td>
      <td class="num">${tyClassify.pct(r.recall)}</td><td class="num">${r.f1.toFixed(3)}</td><td class="num">${r.support}</td></tr>`).join("");
    return `<thead><tr><th>Class</th><th>Precision</th><th>Recall (accuracy)</th><th>F1</th><th>Images</th></tr></thead><tbody>${body}</tbody>`;
  },
  metric(label, value) { return `<div>${label}<strong>${value}</strong></div>`; },
  // Progress, status and abort of a job page; reloads once when the job ends.
  watch(root) {
    const jobId = root.dataset.job, $ = (id) => document.getElementById(id);
    $("abort-button").addEventListener("click", async () => {
      try { await ty.api("POST", `/api/jobs/${jobId}/abort`); } catch (e) { $("job-error").textContent = e.message; }
    });
    ty.watchJob(jobId, {
      progress(event) {
        const percent = event.total ? (100 * event.done) / event.total : 0;
        $("progress-bar").style.width = `${percent.toFixed(1)}%`;
        const eta = event.eta != null ? `, about ${ty.duration(event.eta)} left` : "";
        $("progress-text").textContent = `${event.phase}: ${event.done} of ${event.total} images${eta}`;
        if (tyClassify.onProgress) tyClassify.onProgress(event);
      },
      status(event) {
        if (event.error) $("job-error").textContent = event.error;
        tyClassify.showStatus(root, event.status);
      },
      end(event) { tyClassify.showStatus(root, event.status); },
    });
  },
  // The job's own final event draws the results in place (onEnd), without reloading the page.
  showStatus(root, status) {
    const badge = document.getElementById("job-status");
    badge.textContent = status;
    badge.className = `status status-${status}`;
    if (!["done", "failed", "aborted"].includes(status) || root.dataset.shown === status) return;
    root.dataset.shown = status;
    root.dataset.status = status;
    document.getElementById("abort-button").hidden = true;
    const progress = document.querySelector("section[id$='-progress']");
    if (progress && status === "done") progress.hidden = true;
    if (tyClassify.onEnd) tyClassify.onEnd(status);
  },
  // Small mosaics (5x5 filters, 4x4 maps) drawn at a whole multiple of their size, about 240 px
  // on their longer side (a tall mosaic must not become a strip thousands of pixels long).
  enlarge(img) {
    const w = img.naturalWidth, h = img.naturalHeight;
    if (w) img.style.width = `${Math.min(480, w * Math.max(1, Math.floor(240 / Math.max(w, h))))}px`;
  },
  layerRow(layer) {
    const shape = layer.output_shape ? layer.output_shape.join("×") : "–";
    const weights = layer.weights ? `${layer.weight_image ? `<img class="mosaic" src="${layer.weight_image}" alt="weights" onload="tyClassify.enlarge(this)">` : ""}${tyClassify.stats(layer.weights)}` : `<span class="muted small">no weights</span>`;
    const shown = layer.activation_image && layer.output_shape && layer.maps_shown < layer.output_shape[0]
      ? `<div class="small muted">first ${layer.maps_shown} of ${layer.output_shape[0]} maps</div>` : "";
    const acts = `${layer.activation_image ? `<img class="mosaic" src="${layer.activation_image}" alt="activations" onload="tyClassify.enlarge(this)">` : ""}${shown}${tyClassify.stats(layer.activations)}`;
    return `<tr><td class="layer-name"><strong>${ty.escape(layer.name)}</strong><div class="small">${ty.escape(layer.type)}</div>
      <div class="small muted">${shape}</div><div class="small muted">${layer.params.toLocaleString()} params</div></td>
      <td class="vis">${weights}</td><td class="vis">${acts}</td></tr>`;
  },
};

(function () {
  const root = document.getElementById("classify");
  if (!root) return;
  const modelId = root.dataset.model;
  const $ = (id) => document.getElementById(id);
  const epoch = () => $("epoch").value;

  async function classifyOne() {
    const file = $("one-file").files[0], path = $("one-path").value.trim();
    const visualize = $("one-visualize").checked;
    $("one-error").textContent = "";
    if (!file && !path) { $("one-error").textContent = "Choose an image file or give a path."; return; }
    const params = new URLSearchParams({ top: $("one-top").value || "5", visualize });
    if (epoch()) params.set("epoch", epoch());
    let body;
    if (file) { body = new FormData(); body.append("images", file); } else { body = { paths: [path] }; }
    $("one-button").disabled = true;
    const started = performance.now();
    try {
      const doc = await ty.api("POST", `/api/models/${modelId}/classify?${params}`, body);
      show(doc, performance.now() - started, file);
    } catch (e) {
      $("one-error").textContent = e.message;
    } finally {
      $("one-button").disabled = false;
    }
  }

  function show(doc, ms, file) {
    const result = doc.results[0];
    $("one-result").hidden = false;
    tyClassify.predictions($("one-predictions"), result.predictions);
    $("one-timing").textContent = `epoch ${doc.epoch} · ${Math.round(ms)} ms`;
    const layers = result.visualization ? result.visualization.layers : null;
    if (layers) $("one-input").src = layers[0].activation_image;
    else if (file) $("one-input").src = URL.createObjectURL(file);
    $("one-saliency-figure").hidden = !result.saliency;
    if (result.saliency) {
      $("one-saliency").src = result.saliency.image;
      $("one-saliency-caption").textContent = `Grad-CAM for “${result.saliency.class}” (layer ${result.saliency.layer})`;
    }
    $("one-layers-panel").hidden = !layers;
    if (layers) {
      $("one-layer-count").textContent = `${layers.length - 1} layers in network order`;
      $("one-layers").tBodies[0].innerHTML = layers.map(tyClassify.layerRow).join("");
    }
  }

  function manyForm() {
    const form = new FormData($("many-form"));
    for (const [key, value] of [...form.entries()]) {
      if (value === "" || (value instanceof File && !value.name)) form.delete(key);
    }
    if (epoch()) form.set("epoch", epoch());
    return form;
  }

  async function startJob(url, body, errorId) {
    $(errorId).textContent = "";
    try {
      const job = await ty.api("POST", url, body);
      window.location.href = job.page;
    } catch (e) {
      $(errorId).textContent = e.message;
    }
  }

  // "Earlier runs" as they are now, not as they were when the page was made: refreshed when the
  // page is shown (the back button restores it as it was) and every 2 s while a run is active.
  async function refreshRuns() {
    const table = $("inference-jobs");
    if (!table) return;
    let active = false;
    try {
      for (const j of (await ty.api("GET", `/api/models/${modelId}/inference`)).jobs) {
        const row = table.querySelector(`tr[data-job="${j.id}"]`);
        if (!row) continue;
        row.querySelector(".status").textContent = j.status;
        row.querySelector(".status").className = `status status-${j.status}`;
        const summary = j.summary || {};
        if (summary.images != null) row.querySelector(".images").textContent = summary.images;
        if (summary.accuracy != null) row.querySelector(".accuracy").textContent = `${(100 * summary.accuracy).toFixed(2)}%`;
        active = active || ["queued", "waiting", "running"].includes(j.status);
      }
    } catch (e) { return; }
    if (active) setTimeout(refreshRuns, 2000);
  }
  window.addEventListener("pageshow", refreshRuns);

  $("one-form").addEventListener("submit", classifyOne);
  $("many-form").addEventListener("submit", () => startJob(`/api/models/${modelId}/classify-many`, manyForm(), "many-error"));
  $("topn-button").addEventListener("click", () => startJob(`/api/models/${modelId}/top-n`, manyForm(), "many-error"));
  const evaluateForm = $("evaluate-form");
  if (evaluateForm) {
    evaluateForm.addEventListener("submit", () => startJob(`/api/models/${modelId}/evaluate`,
      { split: $("evaluate-split").value, epoch: epoch() ? Number(epoch()) : null }, "evaluate-error"));
  }
})();
