// The detect page: one image with its boxes drawn (labels, scores, a score-threshold slider that
// redraws without asking the server again), and the form that starts an evaluation job.
import { ty } from "./app.js";
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
    const params = new URLSearchParams({ threshold: "0" });
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
      $("one-result").hidden = false;
    } catch (e) {
      $("one-error").textContent = e.message;
    } finally {
      $("one-button").disabled = false;
    }
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

  $("one-button").addEventListener("click", detectOne);
  $("threshold").addEventListener("input", draw);
  $("eval-button").addEventListener("click", evaluate);
})();
