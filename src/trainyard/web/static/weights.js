// The weights page: search the store, pull with live progress, import, remove, and share.
import { ty } from "./app.js";
(() => {
  const body = document.querySelector("#weights-table tbody");
  const search = document.getElementById("weights-search");
  const source = document.getElementById("weights-source");
  const present = document.getElementById("weights-present");
  const count = document.getElementById("weights-count");
  const polling = new Set();

  const size = (row) => (row.size_mb ? `${row.size_mb.toFixed(1)} MB` : "");
  const top1 = (row) => {
    const key = Object.keys(row.accuracy || {}).find((k) => k.endsWith("acc@1"));
    return key && Number.isFinite(row.accuracy[key]) ? `${row.accuracy[key].toFixed(1)}%` : "";
  };

  function storeCell(row) {
    const cell = document.createElement("td");
    const pull = row.pull;
    if (pull && pull.state === "running") {
      const pct = pull.total ? (100 * pull.done) / pull.total : 0;
      cell.innerHTML = `<div class="progress"><div style="width:${pct}%"></div></div>
        <span class="small muted">${(pull.done / 2 ** 20).toFixed(1)} MB${pull.total ? ` of ${(pull.total / 2 ** 20).toFixed(1)}` : ""}</span>`;
      return cell;
    }
    const button = document.createElement("button");
    if (row.present) {
      button.textContent = "Remove";
      button.className = "danger";
      button.onclick = () => act(row, "DELETE", `/api/weights/${encodeURIComponent(row.name)}`);
    } else if (row.source !== "user") {
      button.textContent = "Pull";
      button.onclick = () => act(row, "POST", `/api/weights/${encodeURIComponent(row.name)}/pull`);
    }
    if (button.textContent) cell.append(button);
    if (row.present && row.verified === false) {
      const note = document.createElement("div");
      note.className = "small muted";
      note.textContent = "unverified: its source published no hash";
      cell.append(note);
    }
    if (pull && pull.state === "failed") {
      const error = document.createElement("div");
      error.className = "error-text small";
      error.textContent = pull.error;
      cell.append(error);
    }
    return cell;
  }

  // Who it is and who sees it; its owner (or an admin: row.changeable) gets a select that
  // PATCHes the visibility, whose options are the server's (weights.html's template).
  function ownerCell(row) {
    const cell = document.createElement("td");
    if (!row.present) return cell;
    if (!row.changeable) {
      cell.textContent = `${row.owner || ""} · ${row.visibility}`;
      return cell;
    }
    const select = document.getElementById("weights-visibility-template").content.firstElementChild.cloneNode(true);
    select.value = row.visibility;
    select.setAttribute("aria-label", `who sees ${row.name}`);
    select.onchange = () => act(row, "PATCH", `/api/weights/${encodeURIComponent(row.name)}`,
                                { visibility: select.value });
    cell.append(`${row.owner || ""} `, select);
    return cell;
  }

  function render(row, tr = document.createElement("tr")) {
    tr.replaceChildren();
    tr.dataset.name = row.name;
    const input = Array.isArray(row.input_size) ? row.input_size.slice(1).join("x") : "";
    for (const text of [row.name, row.network, input, top1(row), size(row)]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    tr.append(ownerCell(row), storeCell(row));
    if (row.pull && row.pull.state === "running") watch(row.name, tr);
    return tr;
  }

  async function act(row, method, url, payload) {
    try {
      const updated = await ty.api(method, url, payload);
      render(updated, body.querySelector(`tr[data-name="${CSS.escape(row.name)}"]`));
    } catch (error) {
      alert(error.message);
    }
  }

  function watch(name, tr) {
    if (polling.has(name)) return;
    polling.add(name);
    const tick = async () => {
      const row = await ty.api("GET", `/api/weights/${encodeURIComponent(name)}`);
      polling.delete(name);
      render(row, tr);  // re-renders, and watches again while it runs
    };
    setTimeout(tick, 500);
  }

  // The server searches and pages (1,800 entries would be a page 5,000 px tall): one page at a time.
  const PAGE = 50;
  const prev = document.getElementById("weights-prev");
  const next = document.getElementById("weights-next");
  let offset = 0;
  let timer = null;
  async function refresh() {
    const query = new URLSearchParams({ search: search.value.trim(), limit: String(PAGE), offset: String(offset) });
    if (source.value) query.set("source", source.value);
    if (present.checked) query.set("present", "true");
    const data = await ty.api("GET", `/api/weights?${query}`);
    body.replaceChildren(...data.weights.map((row) => render(row)));
    const last = offset + data.weights.length;
    count.textContent = data.total === 0 ? "no entries match"
      : data.total > data.weights.length ? `${offset + 1}–${last} of ${data.total}` : `${data.total} entries`;
    prev.disabled = offset === 0;
    next.disabled = last >= data.total;
  }
  prev.addEventListener("click", () => { offset = Math.max(0, offset - PAGE); refresh(); });
  next.addEventListener("click", () => { offset += PAGE; refresh(); });
  for (const input of [search, source, present]) {
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => { offset = 0; refresh(); }, 250);
    });
  }

  document.getElementById("weights-import").addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = document.getElementById("weights-import-error");
    error.textContent = "";
    try {
      const row = await ty.api("POST", "/api/weights", new FormData(event.target));
      search.value = row.name;
      offset = 0;
      await refresh();
    } catch (e) {
      error.textContent = e.message;
    }
  });
  refresh();
})();
