// The system page: /api/system every few seconds (this machine's GPUs, CPU and memory; in
// cluster mode every node of the cluster, with what is in use and by which jobs).
import { ty } from "./app.js";

(() => {
  const $ = (id) => document.getElementById(id);
  const gib = (bytes) => (bytes == null ? "?" : (bytes / 2 ** 30).toFixed(1));
  const used = (n, total) => (n == null ? `? / ${total}` : `${n} / ${total}`);

  function show(doc) {
    $("system-error").textContent = "";
    $("system-machine").textContent = `This machine: ${doc.cpu.count} cores, CPU ${doc.cpu.percent.toFixed(0)} %, ` +
      `memory ${gib(doc.memory.used)} / ${gib(doc.memory.total)} GiB`;
    const disk = doc.disk || {};
    $("system-disk").textContent = disk.path ? `Disk: ${gib(disk.free)} GiB free of ${gib(disk.total)} GiB under ${disk.path}` : "";
    $("system-versions").textContent = "Versions: " + Object.entries(doc.versions || { trainyard: doc.version })
      .map(([name, v]) => `${name} ${v || "not installed"}`).join(" · ");
    const rows = [...doc.gpus.map((g) => ({ label: g.label, job: g.job, holder: g.holder,
                                            use: g.utilization == null ? "" : `${g.utilization} %` })),
                  ...(doc.slots || [])];
    document.querySelector("#system-devices tbody").innerHTML = rows.map((r) => `<tr>
      <td>${ty.escape(r.label || "")}</td><td>${ty.escape(r.use || "")}</td><td>${held(r)}</td></tr>`).join("");
    const body = document.querySelector("#system-nodes tbody");
    if (!body) return;
    body.innerHTML = (doc.nodes || []).map((n) => `<tr class="${n.alive ? "" : "muted"}">
      <td title="${n.id}">${n.id.slice(0, 8)}${n.head ? " (head)" : ""}</td><td>${ty.escape(n.host || "")}</td>
      <td>${n.alive ? "alive" : "dead"}</td><td>${used(n.cpus_in_use, n.cpus)}</td>
      <td>${used(n.gpus_in_use, n.gpus.length)}</td>
      <td>${n.gpus.map((g) => ty.escape(`${g.name || "GPU " + g.index}${g.memory_total ? ` (${gib(g.memory_total)} GiB)` : ""}`)).join(", ")}</td>
      <td>${n.jobs.map((j) => `<a href="/models/${j}">${j}</a>`).join(", ")}</td></tr>`).join("");
  }

  // A holder's name, linked to its page where it has one (models and datasets); "free" when none.
  function held(r) {
    if (!r.job) return '<span class="muted">free</span>';
    const name = ty.escape(r.holder ? r.holder.name : r.job);
    const page = { model: "models", dataset: "datasets" }[r.holder && r.holder.kind];
    return page ? `<a href="/${page}/${r.job}">${name}</a> <span class="small muted">${r.job}</span>`
      : `${name} <span class="small muted">${r.job}</span>`;
  }

  async function poll() {
    try {
      show(await ty.api("GET", "/api/system"));
    } catch (err) {
      $("system-error").textContent = err.message;  // e.g. 503: no Ray cluster reachable
    }
    setTimeout(poll, document.hidden ? 15000 : 3000);
  }
  poll();
})();
