// The classify page: one image (predictions, Grad-CAM, the layer table with mosaics and
// histograms), and the forms that start classify-many, top-N and evaluation jobs.
import { ty } from "./app.js";
import { isActive } from "./status.js";
import { view } from "./classify_view.js";
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
    // A multi-label model's answer first: every label over its threshold (or none), then the scores.
    const labels = result.labels ? [`<tr><td colspan="3"><strong>Labels:</strong> ${result.labels.length
      ? result.labels.map((x) => `${ty.escape(x.label)} (${x.score.toFixed(3)})`).join(", ") : "none"}</td></tr>`] : [];
    view.predictions($("one-predictions"), result.predictions);
    $("one-predictions").insertAdjacentHTML("afterbegin", labels.join(""));
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
      view.layerTable($("one-layers").tBodies[0], layers);
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
        active = active || isActive(j.status);
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
