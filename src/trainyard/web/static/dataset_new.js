// The new-dataset form: source tabs, live resize preview, submit to the API.
import { ty } from "./app.js";
(function () {
  const form = document.getElementById("dataset-form");
  const parent = form.dataset.parent;
  let activeTab = "folder";

  for (const tab of form.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => {
      activeTab = tab.dataset.tab;
      form.querySelectorAll(".tab").forEach((t) => t.classList.toggle("active", t === tab));
      form.querySelectorAll(".tab-panel").forEach((p) => { p.hidden = p.dataset.panel !== activeTab; });
    });
  }

  const preview = document.getElementById("resize-preview");
  const previewFile = document.getElementById("preview-file");
  let previewRequest = 0; // answers can arrive out of order: only the latest request's is shown
  async function updatePreview() {
    if (!preview) return;
    const request = ++previewRequest;
    const data = new FormData();
    for (const name of ["width", "height", "channels", "resize"]) {
      if (form.elements[name].value !== "") data.append(name, form.elements[name].value);
    }
    if (previewFile && previewFile.files.length) data.append("image", previewFile.files[0]);
    else if (form.elements.train_folder.value) data.append("folder", form.elements.train_folder.value);
    else { preview.hidden = true; document.getElementById("preview-note").textContent = ""; return; }
    try {
      const response = await fetch("/api/datasets/preview", { method: "POST", body: data });
      if (!response.ok) throw new Error((await response.json()).detail);
      const blob = await response.blob();
      if (request !== previewRequest) return;
      if (preview.src) URL.revokeObjectURL(preview.src);
      preview.src = URL.createObjectURL(blob);
      preview.hidden = false;
      document.getElementById("preview-note").textContent = `Preview: ${form.elements.resize.value} to ${form.elements.width.value}x${form.elements.height.value}`;
    } catch (err) {
      if (request !== previewRequest) return;
      preview.hidden = true;
      document.getElementById("preview-note").textContent = `No preview: ${err.message}`;
    }
  }
  if (preview) {
    for (const name of ["width", "height", "channels", "resize", "train_folder"]) {
      form.elements[name].addEventListener("change", updatePreview);
    }
    previewFile.addEventListener("change", updatePreview);
  }

  function specFromForm() {
    const spec = {};
    const fields = ["name", "width", "height", "channels", "depth", "resize", "encoding", "val_percent",
      "test_percent", "min_per_class", "max_per_class"];
    const sources = {
      folder: ["train_folder", "val_folder", "test_folder"],
      lists: ["train_list", "labels_file", "val_list", "test_list", "image_root"],
      upload: [],
    };
    // A task's panel (images + label files) names its task, and its fields carry a prefix so that
    // they do not clash with the folder tab's: its fields are whatever inputs it holds.
    const panel = form.querySelector(`.tab-panel[data-panel="${activeTab}"]`);
    const own = sources[activeTab] || [...panel.querySelectorAll("[name]")].map((input) => input.name);
    for (const name of fields.concat(own)) {
      const input = form.elements[name];
      if (!input || input.value === "") continue;
      spec[name] = input.type === "number" || name === "channels" || name === "depth" ? Number(input.value) : input.value;
    }
    if (panel.dataset.task) {
      const prefix = panel.dataset.prefix;
      for (const key of Object.keys(spec)) {
        if (key.startsWith(prefix)) { spec[key.slice(prefix.length)] = spec[key]; delete spec[key]; }
      }
      spec.task = panel.dataset.task;
      for (const key of ["min_per_class", "max_per_class", "depth"]) delete spec[key];
    }
    return spec;
  }

  // An error is about what was submitted: once a field changes it no longer applies.
  form.addEventListener("input", () => { document.getElementById("form-error").textContent = ""; });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = document.getElementById("form-error");
    error.textContent = "";
    const spec = specFromForm();
    const base = parent ? `/api/datasets/${parent}/append` : "/api/datasets";
    try {
      let job;
      if (activeTab === "upload") {
        const data = new FormData();
        if (!form.elements.file.files.length) throw new Error("choose an archive to upload");
        data.append("file", form.elements.file.files[0]);
        if (!parent && form.elements.val_file.files.length) data.append("val_file", form.elements.val_file.files[0]);
        data.append("spec", JSON.stringify(spec));
        job = await ty.api("POST", base + "/upload", data);
      } else {
        job = await ty.api("POST", base, spec);
      }
      window.location.href = `/datasets/${job.id}`;
    } catch (err) {
      error.textContent = err.message;
    }
  });
})();
