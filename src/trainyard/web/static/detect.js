// The detect page: one image with its boxes drawn (labels, scores, a score-threshold slider that
// redraws without asking the server again), on demand the backbone's layer views (drawn as the
// classify page draws a classifier's), and the forms that start detect-many and evaluation jobs.
import { ty } from "./app.js";
import { view } from "./classify_view.js";
(function () {
  const root = document.getElementById("detect");
  if (!root) return;
  const modelId = root.dataset.model;
  const $ = (id) => document.getElementById(id);
  const COLOURS = ["#e6194b", "#3cb44b", "#0082c8", "#f58230", "#911eb4", "#46f0f0"];
  let current = null; // {image: HTMLImageElement, boxes: [...]} of the last answer

  async function detectOne() {
    const file = $("one-file").files[0];
    $("one-error").textContent = "";
    if (!file) { $("one-error").textContent = "Choose an image file."; return; }
    // Every box the detector gives (threshold 0): the slider filters them here.
    const params = new URLSearchParams({ threshold: "0", visualize: $("one-visualize").checked });
    if ($("epoch").value) params.set("epoch", $("epoch").value);
    const body = new FormData();
    body.append("images", file);
    $("one-button").disabled = true;
    const started = performance.now();
    try {
      const doc = await ty.api("POST", `/api/models/${modelId}/detect?${params}`, body);
      const image = new Image();
      image.onload = () => { current = { image, boxes: doc.results[0].boxes }; draw(); };
      image.src = URL.createObjectURL(file); // drawn here, at its own size: the boxes are in its pixels
      $("one-timing").textContent = `epoch ${doc.epoch} · ${Math.round(performance.now() - started)} ms`;
      showLayers(doc.results[0].visualization);
      $("one-result").hidden = false;
    } catch (e) {
      $("one-error").textContent = e.message;
    } finally {
      $("one-button").disabled = false;
    }
  }

  function showLayers(visualization) {
    const layers = visualization ? visualization.layers : null;
    $("one-layers-panel").hidden = !layers;
    if (!layers) return;
    $("one-layer-count").textContent = `${layers.length - 1} layers in the order they ran`;
    view.layerTable($("one-layers").tBodies[0], layers);
  }

  function draw() {
    if (!current) return;
    const threshold = Number($("threshold").value);
    $("threshold-value").textContent = threshold.toFixed(2);
    const { image, boxes } = current;
    const canvas = $("one-canvas"), scale = Math.min(1, 640 / image.naturalWidth);
    canvas.width = Math.round(image.naturalWidth * scale);
    canvas.height = Math.round(image.naturalHeight * scale);
    const pen = canvas.getContext("2d");
    pen.drawImage(image, 0, 0, canvas.width, canvas.height);
    pen.lineWidth = 2;
    pen.font = "12px sans-serif";
    const shown = boxes.filter((b) => b.score >= threshold);
    shown.forEach((b, i) => {
      const [x1, y1, x2, y2] = b.box.map((v) => v * scale);
      pen.strokeStyle = pen.fillStyle = COLOURS[i % COLOURS.length];
      pen.strokeRect(x1, y1, x2 - x1, y2 - y1);
      pen.fillText(`${b.label} ${b.score.toFixed(2)}`, x1 + 2, Math.max(12, y1 - 3));
    });
    $("one-boxes").innerHTML = `<tr><th>label</th><th>score</th><th>box (x1, y1, x2, y2)</th></tr>` +
      (shown.map((b) => `<tr><td>${ty.escape(b.label)}</td><td>${(100 * b.score).toFixed(1)}%</td>
        <td>${b.box.map((v) => v.toFixed(1)).join(", ")}</td></tr>`).join("") ||
        `<tr><td colspan="3" class="muted">No box at or above this score.</td></tr>`);
  }

  async function evaluate() {
    $("eval-error").textContent = "";
    const body = { split: $("eval-split").value };
    if ($("epoch").value) body.epoch = Number($("epoch").value);
    try {
      const job = await ty.api("POST", `/api/models/${modelId}/evaluate`, body);
      window.location.href = job.page;
    } catch (e) {
      $("eval-error").textContent = e.message;
    }
  }

  // Detect many: a folder or list inside the data roots, or an uploaded archive or list, as a job.
  async function detectMany() {
    $("many-error").textContent = "";
    const body = new FormData();
    const file = $("many-file").files[0], path = $("many-path").value.trim();
    if (file) body.append("file", file);
    else if (path) body.append("path", path);
    else { $("many-error").textContent = "Give a folder or list file, or choose an archive to upload."; return; }
    body.append("threshold", $("many-threshold").value);
    if ($("epoch").value) body.append("epoch", $("epoch").value);
    $("many-button").disabled = true;
    try {
      window.location.href = (await ty.api("POST", `/api/models/${modelId}/classify-many`, body)).page;
    } catch (e) {
      $("many-error").textContent = e.message;
      $("many-button").disabled = false;
    }
  }

  $("one-button").addEventListener("click", detectOne);
  $("many-button").addEventListener("click", detectMany);
  $("threshold").addEventListener("input", draw);
  $("eval-button").addEventListener("click", evaluate);
})();
