// An evaluation's page: accuracy, per-class table, confusion heat map, most-confused pairs.
import { ty } from "./app.js";
import { view } from "./classify_view.js";
import { JobPage } from "./job_page.js";
import { Status } from "./status.js";
(function () {
  const root = document.getElementById("evaluation");
  const $ = (id) => document.getElementById(id);
  const { model, job, dataset, split } = root.dataset;

  function show(e) {
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
