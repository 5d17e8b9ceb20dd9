// The model page's Export panel (issue 44): pick a format, POST /api/models/{id}/export, then
// show how close the copy came to PyTorch (the archive's manifest) and a link to download it.
import { ty } from "./app.js";
import { exportFigures } from "./export_figures.js";

function watch(section) {
  const form = document.getElementById("export-form");
  const f = form.elements;
  const status = document.getElementById("export-status");
  const figures = document.getElementById("export-figures");
  const download = document.getElementById("export-download");
  const note = document.getElementById("export-format-note");
  const button = document.getElementById("export-button");
  const { model, task, custom } = section.dataset;
  let formats = {};

  // The formats this model can take, those not installed here named with what installs them.
  ty.api("GET", "/api/export-formats").then((doc) => {
    formats = Object.fromEntries(doc.formats.map((x) => [x.name, x]));
    const usable = doc.formats.filter((x) => x.tasks.includes(task) && (custom !== "true" || x.name === doc.default));
    f.format.replaceChildren(...usable.map((x) => new Option(`${x.name}${x.available ? "" : " (not installed)"}`, x.name)));
    showNote();
  }).catch(() => {});  // the onnx option stays
  function showNote() {
    const chosen = formats[f.format.value];
    note.textContent = chosen ? (chosen.available ? chosen.summary : `Needs: ${chosen.install}`) : "";
  }
  f.format.addEventListener("change", showNote);

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = { format: f.format.value, force: f.force.checked };
    const epoch = f.epoch.value.trim(), calibration = f.calibration_images.value.trim();
    if (epoch) body.epoch = Number(epoch);
    if (calibration) body.calibration_images = Number(calibration);
    button.disabled = true;
    status.classList.remove("error-text");
    status.innerHTML = `<span class="spinner" aria-hidden="true"></span> Exporting to ${ty.escape(body.format)} and checking it against PyTorch…`;
    figures.hidden = true;
    document.getElementById("export-download-row").hidden = true;
    try {
      const doc = await ty.api("POST", `/api/models/${model}/export`, body);
      status.textContent = "Written and checked.";
      figures.tBodies[0].replaceChildren(...exportFigures(doc).map(([label, text]) => {
        const tr = document.createElement("tr");
        tr.append(Object.assign(document.createElement("th"), { textContent: label }),
                  Object.assign(document.createElement("td"), { textContent: text }));
        return tr;
      }));
      figures.hidden = false;
      download.href = doc.download;
      download.textContent = `Download the ${doc.export_format} archive`;
      document.getElementById("export-download-row").hidden = false;
    } catch (err) {
      status.textContent = err.message;
      status.classList.add("error-text");
    } finally {
      button.disabled = false;
    }
  });
}

if (typeof document !== "undefined" && document.getElementById("export")) watch(document.getElementById("export"));
