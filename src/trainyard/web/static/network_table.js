// The new-model form's table of standard networks: parameter counts for the chosen dataset's
// classes and channels (the same figure Visualize gives), and a warning where a network's
// intended image size is far from the dataset's.
import { ty } from "./app.js";
export const networkTable = {
  watch(form, geometry) {
    let shown = "";
    const refresh = async () => {
      const g = geometry();
      this.warnSizes(form, g.image_size);
      const key = `${g.num_classes},${g.in_channels}`;
      if (key === shown) return;
      shown = key;
      try {
        const doc = await ty.api("GET", `/api/networks?num_classes=${g.num_classes}&in_channels=${g.in_channels}`);
        if (key !== shown) return; // the dataset changed again meanwhile
        for (const n of doc.networks) {
          const row = form.querySelector(`tr[data-network="${n.name}"]`);
          if (!row) continue;
          row.dataset.batch = n.batch_size;
          row.querySelector("td.params").textContent = n.params.toLocaleString("en");
        }
        const note = form.querySelector("#params-for");
        note.textContent = `(${g.num_classes} classes, ${g.in_channels} channel${g.in_channels > 1 ? "s" : ""})`;
      } catch (err) { shown = ""; }
    };
    form.addEventListener("change", (e) => { if (e.target.name === "dataset" || e.target.name === "crop") refresh(); });
    refresh();
  },

  // A form whose ticked network is the dataset's recommended one follows the dataset: choosing a
  // detection dataset ticks its detector (networks/recommend.py), not a classifier Create would
  // refuse. A network the user ticked by hand stays.
  followRecommended(form) {
    const recommendedOf = () => {
      const box = form.querySelector('input[name="dataset"]:checked');
      return box ? box.dataset.recommended || "" : "";
    };
    let recommended = recommendedOf();
    form.addEventListener("change", (e) => {
      if (e.target.name !== "dataset") return;
      const next = recommendedOf();
      const boxes = [...form.querySelectorAll('#network-table input[name="network"]')];
      const ticked = boxes.filter((b) => b.checked).map((b) => b.value);
      const target = boxes.find((b) => b.value === next);
      const untouched = !ticked.length || (ticked.length === 1 && ticked[0] === recommended);
      if (target && next !== recommended && untouched) {
        for (const box of boxes) box.checked = box === target;
        target.dispatchEvent(new Event("change", { bubbles: true }));  // the recipe and the sweep count follow
      }
      recommended = next;
    });
  },

  // Only the networks that train the chosen dataset's task (core/tasks.py network_task): a
  // classification dataset lists no detector, and timm's search offers only the heads that fit.
  followTask(form) {
    const apply = () => {
      const box = form.querySelector('input[name="dataset"]:checked');
      const task = box ? box.dataset.networkTask : "";
      const off = (el) => Boolean(task) && el.dataset.task !== task;
      for (const row of form.querySelectorAll("#network-table tr[data-network]")) row.hidden = off(row);
      const head = form.querySelector("#timm-head");
      for (const option of head.options) { option.hidden = off(option); option.disabled = off(option); }
      const fitting = [...head.options].filter((o) => !o.disabled);
      form.querySelector("#timm-block").hidden = !fitting.length;
      if (fitting.length && head.selectedOptions[0].disabled) {
        head.value = fitting[0].value;
        head.dispatchEvent(new Event("change"));  // the search follows the head
      }
    };
    form.addEventListener("change", (e) => { if (e.target.name === "dataset") apply(); });
  },

  // The ticked networks a request sends: none that the chosen task hides.
  ticked(form) {
    return [...form.querySelectorAll('input[name="network"]:checked')].filter((box) => !box.closest("[hidden]"));
  },

  // A network trained far from its intended size works poorly (or not at all: Create refuses
  // sizes below the minimum); say so beside the network before anyone waits for a job.
  warnSizes(form, size) {
    for (const row of form.querySelectorAll("#network-table tr[data-network]")) {
      const native = +row.dataset.size, minimum = +row.dataset.minSize;
      const note = row.querySelector(".size-warning");
      let text = "";
      if (size && size < minimum) text = `too small: needs at least ${minimum}×${minimum}, the dataset gives ${size}×${size}`;
      else if (size && (size < native / 2 || size > native * 2)) text = `far from the dataset's ${size}×${size}`;
      note.textContent = text;
      note.hidden = !text;
    }
  },
};
