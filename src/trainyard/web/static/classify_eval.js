// An evaluation's page: accuracy, per-class table, confusion heat map, most-confused pairs.
"use strict";
(function () {
  const root = document.getElementById("evaluation");
  const $ = (id) => document.getElementById(id);
  const { model, job, dataset, split } = root.dataset;

  function show(e) {
    $("eval-result").hidden = false;
    $("eval-metrics").innerHTML = [
      tyClassify.metric("Accuracy", tyClassify.pct(e.accuracy)),
      tyClassify.metric("Top-5 accuracy", tyClassify.pct(e.top5_accuracy)),
      tyClassify.metric("Macro precision", tyClassify.pct(e.macro.precision)),
      tyClassify.metric("Macro recall", tyClassify.pct(e.macro.recall)),
      tyClassify.metric("Macro F1", e.macro.f1 == null ? "–" : e.macro.f1.toFixed(3)),
      tyClassify.metric("Images", e.images)].join("");
    $("per-class").innerHTML = tyClassify.perClass(e.per_class);
    $("confusion").innerHTML = tyClassify.confusion(e.confusion, e.classes);
    $("pairs").innerHTML = e.most_confused.length ? e.most_confused.map((p) => `<div class="pair">
      <h3><strong>${ty.escape(p.true)}</strong> taken for <strong>${ty.escape(p.predicted)}</strong>:
        ${p.count} images (${tyClassify.pct(p.share)} of ${ty.escape(p.true)})</h3>
      <div class="image-grid">${p.examples.map((x) => `<figure><img loading="lazy" src="/api/datasets/${dataset}/images/${split}/${x.index}.png" alt="${split} image ${x.index}">
        <figcaption>#${x.index} · ${(100 * x.confidence).toFixed(1)}%</figcaption></figure>`).join("")}</div></div>`).join("")
      : `<p class="empty">No image was misclassified.</p>`;
  }

  function load() {
    ty.api("GET", `/api/models/${model}/evaluations/${job}`).then((doc) => { if (doc.evaluation) show(doc.evaluation); })
      .catch((e) => { $("job-error").textContent = e.message; });
  }
  tyClassify.onEnd = (status) => { if (status === "done") load(); };
  tyClassify.watch(root);
  load();
})();
