// The new-model form's one "Start from" control (issue 46.9): random weights, weights from the
// store, a previous model's snapshot or a weights file. Store weights and a previous model bring
// their own network, so the network choice steps aside for them. Previous models that cannot
// start a training on the chosen dataset (no snapshot, still training, another task) stay listed,
// greyed with the reason: the server draws them for the first dataset, this follows a new choice.
export const modelStart = {
  watch(form, changed) {
    const show = () => {
      const start = this.value(form);
      for (const panel of form.querySelectorAll(".start-panel")) {
        panel.hidden = !panel.dataset.start.split(" ").includes(start);
      }
      const brings = this.bringsNetwork(form);
      form.querySelector("#network-choice").hidden = brings;
      form.querySelector("#network-of-weights").hidden = !brings;
      changed();
    };
    form.addEventListener("change", (e) => {
      if (e.target.name === "start") show();
      if (e.target.name === "dataset") this.greyPrevious(form);
    });
    show();
  },

  value(form) {
    const radio = form.querySelector('input[name="start"]:checked');
    return radio ? radio.value : "scratch";
  },

  // The request then names no network: the server trains the weights' (jobs/kinds/pretrained.py).
  bringsNetwork(form) { return ["store", "previous"].includes(this.value(form)); },

  greyPrevious(form) {
    const box = form.querySelector('input[name="dataset"]:checked');
    const task = box ? box.dataset.task : "";
    const select = form.elements.previous_job;
    for (const option of select.options) {
      if (!option.value) continue;
      const other = task && option.dataset.task !== task;
      const reason = option.dataset.unusable || (other ? `a ${option.dataset.noun}` : "");
      option.disabled = Boolean(reason);
      option.textContent = reason ? `${option.dataset.label}: ${reason}` : option.dataset.label;
    }
    if (select.selectedOptions[0] && select.selectedOptions[0].disabled) select.value = "";
  },

  // The request's `pretrained`: a store entry, JOB[:EPOCH], a file's path, or null (from scratch).
  pretrained(form) {
    const f = form.elements;
    const start = this.value(form);
    if (start === "store") {
      const entry = form.querySelector('input[name="store_entry"]:checked');
      if (!entry) throw new Error("Choose pretrained weights (pull or import them on the Weights page).");
      return entry.value;
    }
    if (start === "previous") {
      if (!f.previous_job.value) throw new Error("Choose a previous model.");
      const epoch = f.previous_epoch.value.trim();
      return epoch ? `${f.previous_job.value}:${epoch}` : f.previous_job.value;
    }
    if (start === "file") {
      const path = f.pretrained_file.value.trim();
      if (!path) throw new Error("Give the path of the weights file on the server.");
      return path;
    }
    return null;
  },
};
