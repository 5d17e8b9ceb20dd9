// The new-model form: network tabs and code editor, "Visualize", the LR-curve preview, the sweep
// count, and turning the form into a TrainRequest for POST /api/models.
import { ty } from "./app.js";
import { formErrors } from "./form_errors.js";
import { formFields } from "./form_fields.js";
import { lrPreview } from "./lr_preview.js";
import { modelRecipe } from "./model_recipe.js";
import { modelStart } from "./model_start.js";
import { netViz } from "./netviz.js";
import { networkTable } from "./network_table.js";
import { sweepForm } from "./sweep_form.js";

// For model_new_networks.js: timm rows found by search draw and count like the others.
export const modelForm = (function () {
  const form = document.getElementById("model-form");
  const $ = (id) => document.getElementById(id);
  const f = form.elements;
  const checked = (name) => [...form.querySelectorAll(`input[name="${name}"]:checked`)];
  let lastSweepSize = 1; // what updateSweep last counted: the jobs Create makes
  const sweepSize = () => Math.max(lastSweepSize, 1);

  const EXAMPLE = `# A custom network: build() returns a torch.nn.Module whose output is (batch, num_classes).
from torch import nn


def build(num_classes, in_channels, image_size):
    return nn.Sequential(
        nn.Conv2d(in_channels, 32, kernel_size=3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, kernel_size=3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(64, num_classes),
    )
`;

  // -- network tabs and editor -------------------------------------------------------------------
  const editor = CodeMirror.fromTextArea($("network-source"), {
    mode: "python", lineNumbers: true, indentUnit: 4,
    extraKeys: { Tab: (cm) => cm.replaceSelection("    ") },
  });
  if (!editor.getValue().trim()) editor.setValue(EXAMPLE);
  // A detection dataset starts the editor from a detector (the server's template); an example the
  // user has not edited follows the chosen dataset's task, an edited file is never replaced.
  const examples = { classification: EXAMPLE };
  async function exampleForTask() {
    const task = geometry().task;
    const current = editor.getValue();
    if (!Object.values(examples).includes(current)) return;
    try {
      examples[task] ??= await ty.api("GET", `/api/networks/templates/${task}`);
    } catch (err) { return; }
    if (editor.getValue() === current && current !== examples[task]) editor.setValue(examples[task]);
  }
  form.addEventListener("change", (e) => { if (e.target.name === "dataset") exampleForTask(); });
  let errorLine = null;
  editor.on("change", () => { clearErrorLine(); formErrors.clear(form, $("network-source")); updateSweep(); });

  function showTab(name) {
    f.network_mode.value = name;
    for (const tab of form.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.tab === name);
    for (const panel of form.querySelectorAll(".tab-panel")) panel.hidden = panel.dataset.panel !== name;
    if (name === "custom") editor.refresh(); // CodeMirror measures itself only when visible
    updateSweep();
  }
  for (const tab of form.querySelectorAll(".tab")) tab.addEventListener("click", () => showTab(tab.dataset.tab));
  showTab(f.network_mode.value);

  for (const link of form.querySelectorAll(".customize")) {
    link.addEventListener("click", async (e) => {
      e.preventDefault();
      try {
        editor.setValue(await ty.api("GET", `/api/networks/${link.dataset.network}/source`));
        showTab("custom");
        editor.focus();
      } catch (err) { $("form-error").textContent = err.message; }
    });
  }

  networkTable.watch(form, () => geometry());
  networkTable.followTask(form);
  modelStart.watch(form, () => updateSweep());
  networkTable.followRecommended(form);
  modelRecipe.watch(form);  // before the preview's listeners: they draw what it fills in
  exampleForTask();

  // -- visualize ---------------------------------------------------------------------------------
  function firstDataset() {
    const box = checked("dataset")[0];
    return box ? box.dataset : null;
  }

  // The input the job will see: the dataset's channels and classes, crop or the short side.
  function geometry() {
    const d = firstDataset();
    const crop = parseInt(f.crop.value, 10);
    const side = d && d.width ? Math.min(+d.width, +d.height) : null;
    return { num_classes: d && +d.classes ? +d.classes : 10, in_channels: d && +d.channels ? +d.channels : 3,
             image_size: crop > 0 ? crop : side, task: (d && d.task) || "classification" };
  }

  async function visualize(body, title) {
    $("network-view").hidden = false;
    $("network-view-title").innerHTML = `<span class="spinner" aria-hidden="true"></span> ${ty.escape(title)}: building…`;
    $("network-error").textContent = "";
    $("network-diagram").innerHTML = "";
    clearErrorLine();
    const g = geometry();
    try {
      const result = await ty.api("POST", "/api/networks/inspect", { ...g, ...body });
      if (!result.ok) {
        // A check that could not finish (too slow, crashed) says nothing about the network.
        $("network-view-title").textContent = `${title}: ${result.transient ? "not checked" : "does not build"}`;
        $("network-error").textContent = result.line ? `Line ${result.line}: ${result.error.replace(/^line \d+: /, "")}` : result.error;
        if (result.line && body.source !== undefined) markErrorLine(result.line);
        return;
      }
      $("network-view-title").textContent = `${title} for ${g.num_classes} classes, ${result.input_shape.join("×")} input`;
      netViz.draw($("network-diagram"), result);
    } catch (err) {
      $("network-view-title").textContent = `${title}: could not inspect`;
      $("network-error").textContent = err.message;
    }
  }

  function markErrorLine(line) {
    errorLine = editor.addLineClass(line - 1, "background", "cm-error-line");
    editor.scrollIntoView({ line: line - 1, ch: 0 }, 80);
  }
  function clearErrorLine() {
    if (errorLine) editor.removeLineClass(errorLine, "background", "cm-error-line");
    errorLine = null;
  }

  for (const button of form.querySelectorAll(".visualize-standard")) {
    button.addEventListener("click", () => visualize({ network: button.dataset.network }, button.dataset.network));
  }
  $("visualize-custom").addEventListener("click", () => {
    const g = geometry();
    visualize({ source: editor.getValue(), image_size: g.image_size || 224 }, "Custom network");
  });
  $("network-view-close").addEventListener("click", () => { $("network-view").hidden = true; });

  // -- reading the form --------------------------------------------------------------------------
  const { number, numbers, lrSettings, trainSettings } = formFields(f);

  function request() {
    // Store weights and a previous model bring their network; otherwise the tabs name it.
    const mode = modelStart.bringsNetwork(form) ? "weights" : f.network_mode.value;
    const settings = trainSettings();
    const body = {
      name: f.name.value.trim(), datasets: checked("dataset").map((b) => b.value),
      networks: mode === "standard" ? networkTable.ticked(form).map((b) => b.value) : [],
      network_source: mode === "custom" ? editor.getValue() : null,
      ...sweepForm.fields(f, numbers),
      pretrained: modelStart.pretrained(form), settings,
    };
    if (f.gpu_mode) {
      const mode = form.querySelector('input[name="gpu_mode"]:checked');
      if (mode && mode.value === "ids") {
        body.gpu_ids = checked("gpu_id").map((b) => Number(b.value));
        if (!body.gpu_ids.length) throw new formErrors.FieldError($("gpu-fieldset"), "Tick the GPUs to train on, or choose the next free ones.");
      } else {
        body.gpus = number("gpu_count", "Number of GPUs", { integer: true });
      }
    }
    return body;
  }

  // Ticking a GPU means "these GPUs"; typing a count means "the next free ones".
  for (const box of form.querySelectorAll('input[name="gpu_id"]')) {
    box.addEventListener("change", () => { form.querySelector('input[name="gpu_mode"][value="ids"]').checked = true; });
  }
  if (f.gpu_count) f.gpu_count.addEventListener("input", () => { form.querySelector('input[name="gpu_mode"][value="count"]').checked = true; });

  // -- sweep count -------------------------------------------------------------------------------
  function updateSweep() {
    const out = $("sweep-count");
    let lrs, batches, drawn;
    try { [lrs, batches, drawn] = sweepForm.counted(f, numbers); }
    catch (err) { out.textContent = err.message; return; }
    const start = modelStart.value(form);
    const networks = start === "previous" ? (f.previous_job.value ? 1 : 0)
      : start === "store" ? checked("store_entry").length
      : f.network_mode.value === "custom" ? 1 : networkTable.ticked(form).length;
    // With trials, each trial draws its values: say which, not "N learning rates" (issue 31.9).
    const what = drawn && drawn.length ? ` (each draws a ${drawn.join(" and a ")})` : "";
    const parts = [
      [checked("dataset").length, "datasets"], [networks, "networks"],
      ...(drawn ? [[lrs.length, `trials${what}`]]
        : [[Math.max(lrs.length, 1), "learning rates"], [Math.max(batches.length, 1), "batch sizes"]]),
    ];
    const jobs = parts.reduce((n, [k]) => n * k, 1);
    lastSweepSize = jobs;
    if (!jobs) {
      out.textContent = !parts[0][0] ? "Choose a dataset." : "Choose a network.";
    } else {
      const varied = parts.filter(([k]) => k > 1).map(([k, words]) => `${k} ${words}`);
      out.textContent = `Creates ${jobs} job${jobs > 1 ? "s" : ""}${varied.length ? `: ${varied.join(" × ")}` : ""}.`;
    }
    $("create-button").textContent = jobs > 1 ? `Create ${jobs} jobs` : "Create";
  }

  // -- learning-rate preview (lr_preview.js) ------------------------------------------------------
  const previewCurve = lrPreview.attach(form, { lrSettings, numbers: sweepForm.lowEnds(f, numbers), firstDataset, checked });

  form.addEventListener("input", () => { updateSweep(); previewCurve(); });
  form.addEventListener("change", () => { updateSweep(); previewCurve(); });
  updateSweep();
  previewCurve();

  // -- submit ------------------------------------------------------------------------------------
  formErrors.watch(form);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    $("form-error").textContent = "";
    formErrors.clear(form);
    let body;
    try {
      body = request();
      if (!body.datasets.length) throw new formErrors.FieldError($("datasets-fieldset"), "Choose a dataset.");
      if (!body.networks.length && !body.network_source && !body.pretrained) {
        throw new formErrors.FieldError($("network-fieldset"), "Choose a network.");
      }
      if (!body.name) throw new formErrors.FieldError(f.name, "Give the model a name.");
    } catch (err) { showError(err); return; }
    $("create-button").disabled = true;
    const jobs = sweepSize();
    try {
      // Two steps, each said: the network check (seconds the first time), then the jobs (the
      // check is cached by then, so creating is quick).
      await untilAccepted(() => ty.api("POST", "/api/models/check", body), "Checking the network…");
      const doc = await untilAccepted(() => ty.api("POST", "/api/models", body),
                                      `Creating ${jobs} job${jobs === 1 ? "" : "s"}…`);
      say(`Created ${doc.jobs.length} job${doc.jobs.length === 1 ? "" : "s"}; opening…`);
      window.location.href = doc.jobs.length === 1 ? `/models/${doc.jobs[0].id}` : "/?group=sweep";
    } catch (err) {
      say("");
      showError(serverError(err));
      $("create-button").disabled = false;
    }
  });

  function say(text, busy = false) {
    $("create-status").innerHTML = busy ? `<span class="spinner" aria-hidden="true"></span> ${ty.escape(text)}` : ty.escape(text);
  }

  // A server busy with other checks answers 429 and when to come back: wait that long (saying
  // so) and ask again, a few times, before giving its message.
  async function untilAccepted(call, doing) {
    for (let attempt = 0; ; attempt++) {
      say(doing, true);
      try { return await call(); } catch (err) {
        if (err.status !== 429 || attempt >= 4) throw err;
        const seconds = Math.min(Math.max(Number(err.retryAfter) || 2, 1), 60);
        say(`The server is checking other networks; trying again in ${seconds} s…`, true);
        await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      }
    }
  }

  function showError(err) {
    if (err instanceof formErrors.FieldError) formErrors.show(err.field, err.message);
    else { $("form-error").textContent = err.message; $("form-error").scrollIntoView({ block: "center" }); }
  }

  // The server's refusals, at the field they are about: a network that does not run on the
  // dataset (its line marked in the editor), a crop, a pretrained model.
  function serverError(err) {
    const text = err.message;
    if (/^(network |the custom network )/.test(text)) {
      const line = /line (\d+):/.exec(text);
      if (line && f.network_mode.value === "custom") markErrorLine(Number(line[1]));
      return new formErrors.FieldError($("network-fieldset"), text);
    }
    if (/^dataset .* is a \w+ dataset and /.test(text)) return new formErrors.FieldError($("datasets-fieldset"), text);
    if (/^crop /.test(text)) return new formErrors.FieldError(f.crop, text);
    // A setting the server's validation refused: "epochs: ...", "lr.gamma: ...", "augment.noise_std: ...".
    const field = /^(?:lr\.|augment\.)?(\w+):/.exec(text);
    const name = field && field[1];
    if (name && f[name] && f[name].tagName) return new formErrors.FieldError(f[name], text);
    if (/pretrained|model job/.test(text)) return new formErrors.FieldError($("start-choice"), text);
    return err;
  }
  return { visualize, updateSweep };
})();
