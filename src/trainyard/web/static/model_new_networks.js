// The new-model form's networks beyond the table: timm's zoo by search (details fetched when a
// name is picked, so hundreds of names cost nothing), and the weights store's entries for the
// "Start from: pretrained weights" choice (model_start.js).
import { ty } from "./app.js";
import { modelForm } from "./model_new.js";
(() => {
  const form = document.getElementById("model-form");
  const search = document.getElementById("timm-search");
  const head = document.getElementById("timm-head");  // "": classifiers; a detector head: its backbones
  const results = document.getElementById("timm-results");
  const none = document.getElementById("timm-none");
  const store = document.getElementById("store-entries");
  const picked = new Set();  // timm names ticked, kept while the search changes

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  function timmRow(name, imageSize) {
    const tr = document.createElement("tr");
    tr.dataset.network = name;
    const box = Object.assign(document.createElement("input"), { type: "checkbox", name: "network", value: name });
    box.checked = picked.has(name);
    const size = cell(imageSize ? `${imageSize}×${imageSize}` : ""), params = cell("", "params");
    const fill = async () => {  // one network's details (its parameters are counted on the server)
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
    tr.fill = fill;
    return tr;
  }

  // Every row's parameters, one count at a time (each built on the server's meta device, then
  // cached), so no column stays blank; a newer search stops the older one's counting.
  let searches = 0;
  async function countAll(rows, search) {
    for (const row of rows) {
      if (search !== searches) return;
      await row.fill();
    }
  }

  let timer = null;
  async function find() {
    const q = search.value.trim();
    const query = `q=${encodeURIComponent(q)}&limit=30&head=${encodeURIComponent(head.value)}`;
    const answer = q ? await ty.api("GET", `/api/networks/search?${query}`) : { networks: [] };
    const shown = [...new Set([...picked, ...answer.networks])];
    results.hidden = !shown.length;
    none.hidden = !q || answer.networks.length > 0;
    none.textContent = `No timm network matches “${q}”: try fewer or shorter words (e.g. resnet, vit small).`;
    const rows = shown.map((name) => timmRow(name, (answer.image_sizes || {})[name]));
    results.tBodies[0].replaceChildren(...rows);
    modelForm.updateSweep();
    countAll(rows, ++searches);
  }
  search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(find, 250); });
  head.addEventListener("change", find);
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
