// The new-model form's networks beyond the table: timm's zoo by search (details fetched when a
// name is picked, so hundreds of names cost nothing), and the weights store's entries for the
// pretrained-networks tab.
import { ty } from "./app.js";
import { modelForm } from "./model_new.js";
(() => {
  const form = document.getElementById("model-form");
  const search = document.getElementById("timm-search");
  const results = document.getElementById("timm-results");
  const store = document.getElementById("store-entries");
  const picked = new Set();  // timm names ticked, kept while the search changes

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  function timmRow(name) {
    const tr = document.createElement("tr");
    tr.dataset.network = name;
    const box = Object.assign(document.createElement("input"), { type: "checkbox", name: "network", value: name });
    box.checked = picked.has(name);
    const size = cell(""), params = cell("", "params");
    const fill = async () => {  // one network's details, on demand
      if (params.textContent) return;
      params.textContent = "…";
      try {
        const info = await ty.api("GET", `/api/networks/${encodeURIComponent(name)}`);
        size.textContent = `${info.image_size}×${info.image_size}`;
        params.textContent = info.params.toLocaleString("en");
        tr.dataset.batch = info.batch_size;
      } catch (err) { params.textContent = err.message; }
    };
    box.addEventListener("change", () => {
      if (box.checked) { picked.add(name); fill(); } else { picked.delete(name); }
      modelForm.updateSweep();
    });
    const button = Object.assign(document.createElement("button"), { type: "button", textContent: "Visualize",
                                                                     className: "secondary small-button" });
    button.addEventListener("click", () => { fill(); modelForm.visualize({ network: name }, name); });
    const first = document.createElement("td");
    first.append(box);
    const actions = document.createElement("td");
    actions.append(button);
    tr.append(first, cell(name), size, params, actions);
    if (box.checked) fill();
    return tr;
  }

  let timer = null;
  async function find() {
    const q = search.value.trim();
    const names = q ? (await ty.api("GET", `/api/networks/search?q=${encodeURIComponent(q)}&limit=30`)).networks : [];
    const shown = [...new Set([...picked, ...names])];
    results.hidden = !shown.length;
    results.tBodies[0].replaceChildren(...shown.map(timmRow));
    modelForm.updateSweep();
  }
  search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(find, 250); });
  // A cloned timm job: its network is not in the table, so show it ticked.
  for (const name of (form.dataset.timmNetworks || "").split(",").filter(Boolean)) picked.add(name);
  if (picked.size) find();

  async function loadStore() {
    const doc = await ty.api("GET", "/api/weights?present=true&limit=0");
    const body = store.tBodies[0];
    if (!doc.weights.length) {
      body.innerHTML = '<tr><td colspan="5" class="muted">The store is empty: pull or import weights on the <a href="/weights">Weights</a> page.</td></tr>';
      return;
    }
    body.replaceChildren(...doc.weights.map((row) => {
      const tr = document.createElement("tr");
      const radio = Object.assign(document.createElement("input"), { type: "radio", name: "store_entry", value: row.name });
      radio.checked = row.name === store.dataset.selected;
      radio.addEventListener("change", () => modelForm.updateSweep());
      const first = document.createElement("td");
      first.append(radio);
      const key = Object.keys(row.accuracy || {}).find((k) => k.endsWith("acc@1"));
      tr.append(first, cell(row.name), cell(row.network), cell(row.input_size.slice(1).join("×")),
                cell(key && typeof row.accuracy[key] === "number" ? `${row.accuracy[key].toFixed(1)}%` : ""));
      return tr;
    }));
    modelForm.updateSweep();
  }
  loadStore().catch((err) => { store.tBodies[0].innerHTML = `<tr><td colspan="5" class="error-text"></td></tr>`;
                               store.tBodies[0].querySelector("td").textContent = err.message; });
})();
