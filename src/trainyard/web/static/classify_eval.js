// An evaluation's page: accuracy, per-class table, confusion heat map, most-confused pairs; for a
// detector, mAP, per-class AP, precision-recall curves and the images with the worst misses.
import { ty } from "./app.js";
import { view } from "./classify_view.js";
import { JobPage } from "./job_page.js";
import { Status } from "./status.js";
(function () {
  const root = document.getElementById("evaluation");
  const $ = (id) => document.getElementById(id);
  const { model, job, dataset, split } = root.dataset;

  function showDetection(e) {
    $("eval-result").hidden = false;
    $("eval-metrics").innerHTML = [view.metric("mAP@0.5", e.map50.toFixed(3)),
      view.metric("mAP@0.5:0.95", e.map.toFixed(3)), view.metric("Images", e.images)].join("");
    $("per-class").innerHTML = `<tr><th>class</th><th>AP@0.5</th><th>AP@0.5:0.95</th><th>boxes</th></tr>` +
      e.per_class.map((r) => `<tr><td>${ty.escape(r.class)}</td><td>${r.ap50.toFixed(3)}</td>
        <td>${r.ap.toFixed(3)}</td><td>${r.boxes}</td></tr>`).join("");
    $("confusion-title").textContent = "Precision-recall (IoU 0.5)";
    $("confusion-note").textContent = "Precision at each of COCO's 101 recall points, per class.";
    $("confusion").innerHTML = `<div class="pr-curves">${prCurves(e.pr_curves)}</div>`;
    $("pairs-title").textContent = `Worst misses (boxes scoring ${e.miss_score} or more)`;
    $("pairs").innerHTML = e.worst.length ? `<div class="image-grid">${e.worst.map((w) => `<figure>
      <img loading="lazy" src="/api/datasets/${dataset}/images/${split}/${w.index}.png" alt="${split} image ${w.index}">
      <figcaption>#${w.index} · missed ${w.missed} of ${w.boxes} · ${w.false_positives} false</figcaption></figure>`).join("")}</div>`
      : `<p class="empty">No box was missed.</p>`;
  }

  function prCurves(curves) {
    const names = Object.keys(curves), colours = ["#e6194b", "#3cb44b", "#0082c8", "#f58230", "#911eb4"];
    const lines = names.map((name, k) => `<polyline fill="none" stroke="${colours[k % colours.length]}" stroke-width="2"
      points="${curves[name].map((p, i) => `${20 + i * 3},${220 - 200 * p}`).join(" ")}"><title>${ty.escape(name)}</title></polyline>`);
    const legend = names.map((name, k) => `<text x="330" y="${30 + 16 * k}" fill="${colours[k % colours.length]}"
      font-size="12">${ty.escape(name)}</text>`);
    return `<svg viewBox="0 0 420 240" role="img" aria-label="precision-recall curves">
      <rect x="20" y="20" width="300" height="200" fill="none" stroke="#999"/>
      <text x="150" y="238" font-size="11">recall</text><text x="0" y="15" font-size="11">precision</text>
      ${lines.join("")}${legend.join("")}</svg>`;
  }

  // A multi-label classifier's evaluation: F1 micro and macro, mAP, and per label its figures at
  // the threshold its checkpoint saved (no confusion matrix: an image has several labels).
  function showMultilabel(e) {
    $("eval-result").hidden = false;
    $("eval-metrics").innerHTML = [
      view.metric("Micro F1", e.micro_f1.toFixed(3)), view.metric("Macro F1", e.macro_f1.toFixed(3)),
      view.metric("mAP", e.map.toFixed(3)), view.metric("Images", e.images)].join("");
    const body = e.per_label.map((r) => `<tr><td>${ty.escape(r.label)}</td><td class="num">${view.pct(r.precision)}</td>
      <td class="num">${view.pct(r.recall)}</td><td class="num">${r.f1.toFixed(3)}</td><td class="num">${r.ap.toFixed(3)}</td>
      <td class="num">${r.threshold.toFixed(2)}</td><td class="num">${r.support}</td></tr>`).join("");
    $("per-class").innerHTML = `<thead><tr><th>Label</th><th>Precision</th><th>Recall</th><th>F1</th><th>AP</th>
      <th>Threshold</th><th>Images</th></tr></thead><tbody>${body}</tbody>`;
    $("confusion").innerHTML = "";
    $("pairs").innerHTML = "";
  }

  function show(e) {
    if (e.task === "detection") { showDetection(e); return; }
    if (e.micro_f1 !== undefined) { showMultilabel(e); return; }
    $("eval-result").hidden = false;
    $("eval-metrics").innerHTML = [
      view.metric("Accuracy", view.pct(e.accuracy)),
      view.metric("Top-5 accuracy", view.pct(e.top5_accuracy)),
      view.metric("Macro precision", view.pct(e.macro.precision)),
      view.metric("Macro recall", view.pct(e.macro.recall)),
      view.metric("Macro F1", e.macro.f1 == null ? "–" : e.macro.f1.toFixed(3)),
      view.metric("Images", e.images)].join("");
    $("per-class").innerHTML = view.perClass(e.per_class);
    $("confusion").innerHTML = view.confusion(e.confusion, e.classes);
    $("pairs").innerHTML = e.most_confused.length ? e.most_confused.map((p) => `<div class="pair">
      <h3><strong>${ty.escape(p.true)}</strong> taken for <strong>${ty.escape(p.predicted)}</strong>:
        ${p.count} images (${view.pct(p.share)} of ${ty.escape(p.true)})</h3>
      <div class="image-grid">${p.examples.map((x) => `<figure><img loading="lazy" src="/api/datasets/${dataset}/images/${split}/${x.index}.png" alt="${split} image ${x.index}">
        <figcaption>#${x.index} · ${(100 * x.confidence).toFixed(1)}%</figcaption></figure>`).join("")}</div></div>`).join("")
      : `<p class="empty">No image was misclassified.</p>`;
  }

  function load() {
    ty.api("GET", `/api/models/${model}/evaluations/${job}`).then((doc) => { if (doc.evaluation) show(doc.evaluation); })
      .catch((e) => { $("job-error").textContent = e.message; });
  }
  new JobPage(root, { onEnd(status) { if (status === Status.DONE) load(); } }).connect();
  load();
})();
