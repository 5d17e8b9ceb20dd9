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
    $("system-gpus").innerHTML = doc.gpus.map((g) => `<div class="small">${ty.escape(g.label)}` +
      `${g.utilization == null ? "" : ` · ${g.utilization} %`}${g.job ? ` · job <a href="/models/${g.job}">${g.job}</a>` : ""}</div>`).join("");
    const body = document.querySelector("#system-nodes tbody");
    if (!body) return;
    body.innerHTML = (doc.nodes || []).map((n) => `<tr class="${n.alive ? "" : "muted"}">
      <td title="${n.id}">${n.id.slice(0, 8)}${n.head ? " (head)" : ""}</td><td>${ty.escape(n.host || "")}</td>
      <td>${n.alive ? "alive" : "dead"}</td><td>${used(n.cpus_in_use, n.cpus)}</td>
      <td>${used(n.gpus_in_use, n.gpus.length)}</td>
      <td>${n.gpus.map((g) => ty.escape(`${g.name || "GPU " + g.index}${g.memory_total ? ` (${gib(g.memory_total)} GiB)` : ""}`)).join(", ")}</td>
      <td>${n.jobs.map((j) => `<a href="/models/${j}">${j}</a>`).join(", ")}</td></tr>`).join("");
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
