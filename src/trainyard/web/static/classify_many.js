// A classify-many job's page: live progress, paged results, top-N per class, accuracy; for a
// detection model (detect-many) each image's boxes, labels and a link to it drawn with them.
import { ty } from "./app.js";
import { view } from "./classify_view.js";
import { JobPage } from "./job_page.js";
(function () {
  const root = document.getElementById("many");
  const $ = (id) => document.getElementById(id);
  const api = `/api/models/${root.dataset.model}/classify-many/${root.dataset.job}`;
  const PAGE = 50;
  let offset = 0, total = 0;

  async function loadRows() {
    const page = await ty.api("GET", `${api}/results?offset=${offset}&limit=${PAGE}`);
    total = page.total;
    $("rows-text").textContent = total ? `rows ${offset + 1}–${Math.min(offset + PAGE, total)} of ${total}` : "no result yet";
    $("prev-page").disabled = offset === 0;
    $("next-page").disabled = offset + PAGE >= total;
    $("results-table").tBodies[0].innerHTML = page.rows.map((r) => {
      if (r.boxes) return detectionRow(r);
      const top = r.predictions[0];
      const wrong = r.label && top && top[0] !== r.label ? "wrong" : "";
      const preds = r.error ? `<span class="error-text">${ty.escape(r.error)}</span>`
        : r.predictions.map(([l, p]) => `${ty.escape(l)} <span class="muted">${(100 * p).toFixed(1)}%</span>`).join(", ");
      // A thumbnail beside each image's name, as DIGITS had (none for an image that could not be read)
      const thumb = r.error ? "" : `<img class="thumb" loading="lazy" src="${api}/images/${r.row}" alt="">`;
      return `<tr class="${wrong}"><td>${r.row}</td><td class="thumb">${thumb}</td><td class="path">${ty.escape(r.image)}</td>`
        + `<td>${ty.escape(r.label || "")}</td><td>${preds}</td></tr>`;
    }).join("");
  }

  // A detection model's row: box count, its labels with their best score, the image drawn with its boxes.
  function detectionRow(r) {
    const best = new Map();
    for (const b of r.boxes) if (!best.has(b.label)) best.set(b.label, b.score);  // best first
    const labels = r.error ? `<span class="error-text">${ty.escape(r.error)}</span>`
      : [...best].slice(0, 5).map(([l, p]) => `${ty.escape(l)} <span class="muted">${(100 * p).toFixed(1)}%</span>`).join(", ");
    const thumb = r.error ? "" : `<img class="thumb" loading="lazy" src="${api}/images/${r.row}" alt="">`;
    const drawn = r.error ? "" : `<a href="${api}/images/${r.row}?boxes=true" target="_blank">drawn</a>`;
    return `<tr><td>${r.row}</td><td class="thumb">${thumb}</td><td class="path">${ty.escape(r.image)}</td>`
      + `<td>${r.error ? "" : r.boxes.length}</td><td>${labels}</td><td>${drawn}</td></tr>`;
  }

  function showSummary(s) {
    $("many-summary").hidden = false;
    if (s.task === "detection") {
      $("many-metrics").innerHTML = [view.metric("Images", s.images), view.metric("Unreadable", s.errors),
        view.metric("Boxes", s.boxes), view.metric("Images with boxes", s.images_with_boxes)].join("");
      return;
    }
    const parts = [view.metric("Images", s.images), view.metric("Unreadable", s.errors)];
    if (s.labelled) {
      parts.push(view.metric("Top-1 accuracy", view.pct(s.accuracy)),
        view.metric("Top-5 accuracy", view.pct(s.top5_accuracy)), view.metric("Labelled", s.labelled));
      $("accuracy-tab").hidden = false;
      $("per-class").innerHTML = view.perClass(s.per_class);
      $("confusion").innerHTML = view.confusion(s.confusion, s.classes);
    }
    $("many-metrics").innerHTML = parts.join("");
    $("topn").innerHTML = s.top_n.map((c) => `<div class="topn-class"><h3>${ty.escape(c.class)}</h3>
      <div class="image-grid">${c.images.map((im) => `<figure><img loading="lazy" src="${api}/images/${im.row}" alt="${ty.escape(im.image)}">
      <figcaption title="${ty.escape(im.image)}">${(100 * im.confidence).toFixed(1)}% · ${ty.escape(im.image)}</figcaption></figure>`).join("")}</div></div>`).join("");
  }

  function showTab(name) {
    for (const tab of document.querySelectorAll("#many-tabs .tab")) tab.classList.toggle("active", tab.dataset.tab === name);
    for (const panel of document.querySelectorAll(".tab-panel")) panel.hidden = panel.id !== `panel-${name}`;
  }

  document.querySelectorAll("#many-tabs .tab").forEach((tab) => tab.addEventListener("click", () => showTab(tab.dataset.tab)));
  $("prev-page").addEventListener("click", () => { offset = Math.max(0, offset - PAGE); loadRows(); });
  $("next-page").addEventListener("click", () => { offset += PAGE; loadRows(); });
  let lastRefresh = 0;
  function refreshRows() {  // the first page, now and then while rows arrive
    if (offset === 0 && Date.now() - lastRefresh > 2000) { lastRefresh = Date.now(); loadRows(); }
  }
  function loadSummary() {
    return ty.api("GET", api).then((doc) => { if (doc.summary) showSummary(doc.summary); });
  }
  new JobPage(root, { on: { progress: refreshRows }, onEnd() { loadRows(); loadSummary(); } }).connect();
  loadRows();
  loadSummary().then(() => { if (window.location.hash === "#top-n") showTab("topn"); });
})();
