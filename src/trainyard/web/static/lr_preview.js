// The new-model form's learning-rate preview: the policy's curve over the whole training, with
// the optimizer steps counted as training counts them, and each policy's own settings shown.
import { ty } from "./app.js";
import { charts } from "./charts.js";
export const lrPreview = {
  // Returns the (debounced) redraw, for the form to call when any field changes.
  attach(form, { lrSettings, numbers, firstDataset, checked }) {
    const f = form.elements;
    const $ = (id) => document.getElementById(id);
    const curve = new charts.Table(["lr"]);
    const curveChart = charts.lineChart($("lr-preview"), {
      table: curve, height: 150, series: [{ name: "lr", label: "learning rate", color: "#c53030", scale: "lr", digits: 3 }],
      scales: { lr: { auto: true } }, axes: [{ scale: "lr", label: "learning rate", values: charts.significantTicks }],
    });

    // Optimizer steps as training counts them (training/data.py, schedule.py): each of the
    // processes drops its last partial batch only when it is a small share of its images (under
    // a tenth, or a single image), and steps are epochs x batches / accumulation, rounded.
    function iterations() {
      const d = firstDataset();
      const row = checked("network")[0] && checked("network")[0].closest("tr");
      // "auto" is chosen by the job: the preview counts with the network's default meanwhile
      const given = numbers("batch_size", "Batch size", true, ["auto"])[0];
      const batch = (typeof given === "number" && given) || (row && +row.dataset.batch) || 32;
      const accumulation = Math.max(1, parseInt(f.accumulation.value, 10) || 1);
      if (!d || !+d.train) return null;
      const images = Math.floor(+d.train / processes());
      const rest = images % batch;
      const dropped = images >= batch && (rest <= 1 || rest < 0.1 * images) ? rest : 0;
      const batches = Math.ceil((images - dropped) / batch);
      return Math.max(1, Math.round((Number(f.epochs.value) || 1) * batches / accumulation));
    }
    function processes() {
      const mode = form.querySelector('input[name="gpu_mode"]:checked');
      if (!mode) return 1;
      return Math.max(1, mode.value === "ids" ? checked("gpu_id").length : parseInt(f.gpu_count.value, 10) || 1);
    }

    const previewCurve = debounce(async () => {
      let lr, total;
      try {
        lr = { ...lrSettings(), base_lr: numbers("base_lr", "Base learning rate")[0] || 0.01 };
        total = iterations();
      } catch (err) { $("lr-preview-note").textContent = err.message; return; }
      const epochs = Number(f.epochs.value) || 1;
      try {
        const doc = await ty.api("POST", "/api/solvers/lr-curve", { lr, iterations: total || 1000, points: 300 });
        curve.cols = [doc.points.map((p) => (p[0] * epochs) / 100), doc.points.map((p) => p[1])];
        curveChart.setData(curve.cols);
        $("lr-preview").dataset.points = curve.cols[0].length;
        $("lr-preview-note").textContent = total ? `${total.toLocaleString("en")} iterations in all`
          : "Choose a dataset for the exact number of iterations (1,000 assumed).";
      } catch (err) { $("lr-preview-note").textContent = err.message; }
    }, 200);

    function debounce(fn, ms) {
      let timer = null;
      return () => { clearTimeout(timer); timer = setTimeout(fn, ms); };
    }

    function showPolicyParams(applyDefaults) {
      const option = f.lr_policy.selectedOptions[0];
      const uses = option.dataset.uses.split(",");
      for (const span of form.querySelectorAll(".policy-param")) span.hidden = !uses.includes(span.dataset.param);
      if (applyDefaults) {
        for (const [name, value] of Object.entries(JSON.parse(option.dataset.defaults || "{}"))) {
          if (f[name]) f[name].value = Array.isArray(value) ? value.join(", ") : value;
        }
      }
    }
    f.lr_policy.addEventListener("change", () => showPolicyParams(true));
    showPolicyParams(false);
    return previewCurve;
  },
};
