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
