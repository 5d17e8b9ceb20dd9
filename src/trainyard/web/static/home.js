// The home page: filters, sorting and pages (sent with every htmx refresh), and selecting several
// jobs to abort or delete. Every 2 s htmx asks for the tables with `since`, the version of what
// they show: the server answers 204 (nothing to swap) unless a job changed. When the tables are
// redrawn the selection survives, because it lives here.
import { ty } from "./app.js";
import { isActive } from "./status.js";
(function () {
  const form = document.getElementById("job-filters");
  const tables = document.getElementById("job-tables");
  const message = document.getElementById("bulk-message");
  const selected = new Set();

  function refresh() {
    delete tables.dataset.version;  // a new query: draw it whatever the version
    const query = new URLSearchParams(new FormData(form));
    for (const [key, value] of [...query]) if (!value || ((key === "dpage" || key === "mpage") && value === "1")) query.delete(key);
    history.replaceState(null, "", query.toString() ? `/?${query}` : "/");
    htmx.trigger(tables, "refresh");
  }

  // The tables refresh every 2 s while the page is visible (here, not in an hx-trigger filter:
  // the Content-Security-Policy forbids the eval htmx needs for those).
  setInterval(() => { if (document.visibilityState === "visible") htmx.trigger(tables, "refresh"); }, 2000);
  function firstPages() {
    form.elements.dpage.value = "1";
    form.elements.mpage.value = "1";
  }

  tables.addEventListener("htmx:configRequest", (e) => {
    if (tables.dataset.version) e.detail.parameters.since = tables.dataset.version;
  });
  tables.addEventListener("htmx:afterRequest", (e) => {
    const version = e.detail.xhr.getResponseHeader("X-Jobs-Version");
    if (version) tables.dataset.version = version;
  });

  let typing = null;
  form.addEventListener("input", (e) => {
    clearTimeout(typing);
    firstPages();  // another filter: its matches start on page 1
    typing = setTimeout(refresh, e.target.name === "q" ? 250 : 0);
  });

  tables.addEventListener("click", (e) => {
    const pageLink = e.target.closest(".page-link");
    if (pageLink) {
      form.elements[pageLink.closest(".pager").dataset.field].value = pageLink.dataset.page;
      refresh();
      return;
    }
    const th = e.target.closest("th[data-sort]");
    if (!th) return;
    const sort = form.elements.sort, order = form.elements.order;
    // A new column starts with the order people expect: names A-Z, numbers and dates high first.
    if (sort.value === th.dataset.sort) order.value = order.value === "asc" ? "desc" : "asc";
    else order.value = th.dataset.sort === "name" || th.dataset.sort === "status" ? "asc" : "desc";
    sort.value = th.dataset.sort;
    firstPages();
    refresh();
  });

  tables.addEventListener("change", (e) => {
    if (e.target.classList.contains("select-all")) {
      for (const box of e.target.closest("table").querySelectorAll(".job-select")) {
        box.checked = e.target.checked;
        if (box.checked) selected.add(box.value); else selected.delete(box.value);
      }
    } else if (e.target.classList.contains("job-select")) {
      if (e.target.checked) selected.add(e.target.value); else selected.delete(e.target.value);
    }
    showSelection();
  });

  // After each refresh: tick again what was ticked; forget jobs that are no longer listed.
  tables.addEventListener("htmx:afterSwap", () => {
    const listed = new Set();
    for (const box of tables.querySelectorAll(".job-select")) {
      listed.add(box.value);
      box.checked = selected.has(box.value);
    }
    for (const id of [...selected]) if (!listed.has(id)) selected.delete(id);
    showSelection();
  });

  function boxes() {
    return [...tables.querySelectorAll(".job-select")].filter((b) => selected.has(b.value));
  }

  function showSelection() {
    const chosen = boxes();
    const active = chosen.filter((b) => isActive(b.dataset.status));
    document.getElementById("selected-count").textContent = chosen.length ? `${chosen.length} selected` : "none selected";
    document.getElementById("abort-selected").disabled = !active.length;
    document.getElementById("delete-selected").disabled = !chosen.length;
    // Two or more models open the compare page (links, so a middle click opens a tab).
    const models = chosen.filter((b) => b.dataset.kind === "model").map((b) => b.value);
    const compare = document.getElementById("compare-selected");
    compare.hidden = models.length < 2;
    compare.setAttribute("aria-disabled", String(models.length < 2));  // screen readers hear it enabled
    compare.href = `/compare?ids=${models.join(",")}`;
  }

  async function each(list, action) {
    const errors = [];
    for (const box of list) {
      try { await action(box.value); } catch (err) { errors.push(`${box.value}: ${err.message}`); }
    }
    message.textContent = errors.join("\n");
    refresh();
  }

  document.getElementById("abort-selected").addEventListener("click", () => {
    const active = boxes().filter((b) => isActive(b.dataset.status));
    if (!confirm(`Abort ${active.length} job(s)? They stop at once; Resume continues them later.`)) return;
    each(active, (id) => ty.api("POST", `/api/jobs/${id}/abort`));
  });

  document.getElementById("delete-selected").addEventListener("click", () => {
    const chosen = boxes();
    if (!confirm(`Delete ${chosen.length} job(s) and their files?`)) return;
    // Models first: a dataset cannot be deleted while a model still uses it.
    chosen.sort((a, b) => (a.dataset.kind === "model" ? 0 : 1) - (b.dataset.kind === "model" ? 0 : 1));
    each(chosen, async (id) => { await ty.api("DELETE", `/api/jobs/${id}`); selected.delete(id); });
  });
  showSelection();

  // Import an archive as a model, then open it.
  const importForm = document.getElementById("import-form");
  importForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    const error = document.getElementById("import-error");
    error.textContent = "";
    const data = new FormData(importForm);
    if (!data.get("name")) data.delete("name");
    try {
      const job = await ty.api("POST", "/api/models/import", data);
      window.location.href = `/models/${job.id}`;
    } catch (err) {
      error.textContent = err.message;
    }
  });
})();
