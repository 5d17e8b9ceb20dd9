// A model's page, live: every event of the job arrives over Server-Sent Events (the whole history
// first, then new ones); the hardware panel and the status are polled from the API every 1.5 s.
import { ty } from "./app.js";
import { charts } from "./charts.js";
import { JobPage } from "./job_page.js";
import { isActive, Status } from "./status.js";
(function () {
  const root = document.getElementById("job");
  const jobId = root.dataset.job;
  const $ = (id) => document.getElementById(id);

  // -- charts ------------------------------------------------------------------------------------
  // A detector charts COCO's mAP (0..1) where a classifier charts its accuracy (percent).
  const detection = root.dataset.boxes === "true";  // the task registry's word (core/tasks.py)
  const BEST = detection ? "val_map50" : "val_accuracy";
  const quality = detection ? [
    { name: "val_map50", label: "val mAP@0.5", color: "#1f8a4c", scale: "pct", points: true },
    { name: "val_map", label: "val mAP@0.5:0.95", color: "#7c3aed", scale: "pct", dash: [6, 4], points: true },
  ] : [
    { name: "val_accuracy", label: "val accuracy (top-1)", color: "#1f8a4c", scale: "pct", points: true, unit: "%" },
    { name: "val_top5", label: "val accuracy (top-5)", color: "#7c3aed", scale: "pct", dash: [6, 4], points: true, unit: "%" },
  ];
  const main = new charts.Table(["train_loss", "val_loss", ...quality.map((q) => q.name)]);
  const lr = new charts.Table(["lr"]);
  let best = null; // {x: epoch, y: accuracy or mAP@0.5}
  const mainChart = charts.lineChart($("chart-main"), {
    table: main, height: 320,
    series: [
      { name: "train_loss", label: "train loss", color: "#2f6fde", scale: "loss" },
      { name: "val_loss", label: "val loss", color: "#b7791f", scale: "loss", points: true },
      ...quality,
    ],
    scales: { loss: { auto: true }, pct: { range: detection ? [0, 1] : [0, 100] } },
    axes: [{ scale: "loss", label: "loss" }, { scale: "pct", label: detection ? "mAP" : "accuracy (%)", side: 1 }],
    plugins: [charts.bestMarker(() => best && { ...best, scale: "pct", unit: detection ? "" : "%" })],
  });
  const lrChart = charts.lineChart($("chart-lr"), {
    table: lr, height: 180,
    series: [{ name: "lr", label: "learning rate", color: "#c53030", scale: "lr", digits: 3 }],
    scales: { lr: { auto: true } }, axes: [{ scale: "lr", label: "learning rate", values: charts.significantTicks }],
  });

  // -- state from events -------------------------------------------------------------------------
  const log = [];
  const view = { epoch: null, speed: null, eta: null, done: null, total: null };
  const snapshots = new Set([...$("snapshot-list").children].map((li) => li.dataset.epoch));
  // The job writes its final status a moment before the server records it: for a while after,
  // a poll that still says "running" is old news, not a restart.
  let endedByEvent = 0;

  const on = {
    metric(e) {
      if (main.has(e.name)) main.add(e.name, e.epoch, e.value);
      else if (e.name === "lr") lr.add("lr", e.epoch, e.value);
      else if (e.name === "images_per_second") view.speed = e.value;
      if (e.name === BEST && (!best || e.value > best.y)) best = { x: e.epoch, y: e.value };
      view.epoch = Math.max(view.epoch ?? 0, e.epoch);
    },
    progress(e) { Object.assign(view, { done: e.done, total: e.total, eta: e.eta }); },
    checkpoint(e) { addSnapshot(e.epoch); },
    status(e) { if (!isActive(e.status)) endedByEvent = Date.now(); },
    summary(e) { if (Array.isArray(e.diagnosis)) showDiagnosis(e.diagnosis); },
    log(e) { log.push(`[${e.level}] ${e.message}`); if (log.length > 600) log.splice(0, log.length - 500); },
  };

  // Training that cannot learn (training/diagnosis.py): each validation's summary holds what
  // its figures show now, so the latest one replaces the list (a finding that no longer holds goes).
  function showDiagnosis(findings) {
    $("diagnosis").hidden = !findings.length;
    $("diagnosis-list").replaceChildren(...findings.map((text) => Object.assign(document.createElement("li"),
      { textContent: `${text.charAt(0).toUpperCase()}${text.slice(1)}.` })));
  }

  const render = charts.throttle(() => {
    if (main.dirty) { main.dirty = false; mainChart.setData(main.cols); $("chart-main").dataset.points = main.length; }
    if (lr.dirty) { lr.dirty = false; lrChart.setData(lr.cols); }
    if (view.epoch != null) $("stat-epoch").textContent = +view.epoch.toFixed(2);
    if (view.total) $("stat-iteration").textContent = `${view.done} / ${view.total}`;
    if (view.speed != null) $("stat-speed").textContent = Math.round(view.speed).toLocaleString();
    $("stat-eta").textContent = isActive(page.status) && view.eta != null ? ty.duration(view.eta) : "–";
    if (best) $("stat-best").textContent = detection ? `mAP@0.5 ${charts.scoreText(best.y, "")} (epoch ${+best.x.toFixed(3)})`
      : `${charts.scoreText(best.y, "%")} (epoch ${+best.x.toFixed(3)})`;
    const pre = $("job-log");
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.textContent = log.join("\n");
    if (atBottom) pre.scrollTop = pre.scrollHeight;
  }, 250);

  // -- status and actions ------------------------------------------------------------------------
  // What the model page does beside the header when the status changes (job_page.js).
  function onStatus(next, previous) {
    showActions();
    if (isActive(next) && !isActive(previous)) { page.connect(); poll(); }
    if (!isActive(next)) showEnded();
    if (next !== shownTimeline) refreshTimeline(next);
  }

  // Only what can work: Classify needs a snapshot; Resume continues from the last checkpoint, so
  // a job that failed before writing one would fail again at once. A failed job's main action
  // is to clone it and change what made it fail.
  function showActions() {
    const hasSnapshot = snapshots.size > 0;
    const status = page.status;
    $("abort-button").hidden = !isActive(status);
    $("resume-button").hidden = !(status === Status.ABORTED || (status === Status.FAILED && hasSnapshot));
    $("classify-link").hidden = !hasSnapshot;
    const clone = $("clone-button");
    clone.textContent = status === Status.FAILED ? "Clone and edit" : "Clone";
    clone.classList.toggle("secondary", status !== Status.FAILED);
  }

  function showEnded() {  // an ended job holds no GPU and runs no process: no live figures
    clearTimeout(polling);
    $("hardware-gpus").innerHTML = "";
    $("hardware-system").textContent = "";
    $("hardware-time").textContent = "";
    $("hardware-cpu").innerHTML = `<p class="muted small">The job has ended; figures appear while it runs.</p>`;
  }

  // The status timeline, redrawn from the API when the status changes. An ended job's timeline
  // ends with how it ended (as the server draws it: web/model_page.py timeline).
  // The page may learn of an end (the abort button's answer) before the server has recorded it
  // (the process is still exiting): then it asks again until the server's status is the page's.
  let shownTimeline = root.dataset.status;
  let timelineRetry = null;
  async function refreshTimeline(next, tries = 30) {
    shownTimeline = next;
    clearTimeout(timelineRetry);
    try {
      const job = await ty.api("GET", `/api/jobs/${jobId}`);
      if (job.status !== page.status && tries > 0) {
        timelineRetry = setTimeout(() => refreshTimeline(page.status, tries - 1), 1000);
      }
      const ended = !isActive(job.status);
      const history = [...job.history];
      if (ended && job.finished_at && (!history.length || history[history.length - 1].status !== job.status)) {
        history.push({ status: job.status, time: job.finished_at, detail: null });
      }
      const rows = history.map((h, i) => {
        const end = i + 1 < history.length ? history[i + 1].time : (ended ? null : Date.now() / 1000);
        return `<tr><th><span class="status status-${h.status}">${h.status}</span></th>
          <td>${ty.clock(h.time)}</td><td>${end == null ? "" : ty.duration(end - h.time)}</td>
          <td class="muted">${ty.escape(h.detail || "")}</td></tr>`;
      });
      $("timeline-table").innerHTML = rows.join("");
      runClock = { elapsed: job.elapsed, at: Date.now() / 1000, running: job.status === Status.RUNNING,
                   started: job.started_at, finished: job.finished_at };
      showRunTime();
    } catch (err) { /* the page keeps the timeline it has */ }
  }

  // The run time ticks while the job runs: the server's figure plus the time since it was read.
  const runTimeEl = $("run-time");
  let runClock = { elapsed: runTimeEl.dataset.elapsed === "" ? null : Number(runTimeEl.dataset.elapsed),
                   at: Date.now() / 1000, running: root.dataset.status === Status.RUNNING };
  function showRunTime() {
    const c = runClock;
    if (c.elapsed == null) { runTimeEl.textContent = "Not started yet."; return; }
    const seconds = c.elapsed + (c.running ? Date.now() / 1000 - c.at : 0);
    const span = c.finished && c.started ? ` (started ${ty.clock(c.started)}, ended ${ty.clock(c.finished)})` : "";
    runTimeEl.innerHTML = `Run time: <strong>${ty.duration(seconds)}</strong>${c.running ? " so far" : ty.escape(span)}`;
  }
  setInterval(() => { if (runClock.running) showRunTime(); }, 1000);

  function addSnapshot(epoch) {
    const key = String(+Number(epoch).toFixed(4));
    if (snapshots.has(key)) return;
    snapshots.add(key);
    const li = document.createElement("li");
    li.dataset.epoch = key;
    li.innerHTML = `<span>epoch ${key}</span> <a href="/api/models/${jobId}/download?epoch=${key}">Download</a>
      <a href="/models/${jobId}/classify?epoch=${key}">Classify</a>`;
    $("snapshot-list").prepend(li);
    $("snapshot-empty").hidden = true;
    showActions();
  }

  async function action(button, method, url, after) {
    button.disabled = true;
    try { after(await ty.api(method, url)); } catch (err) { alert(err.message); } finally { button.disabled = false; }
  }
  $("resume-button").addEventListener("click", (e) =>
    action(e.target, "POST", `/api/jobs/${jobId}/resume`, (job) => {
      endedByEvent = 0;
      page.setStatus(job.status, { error: job.error, detail: job.status_detail });
    }));
  $("delete-button").addEventListener("click", (e) => {
    if (!confirm("Delete this model, its checkpoints and its log?")) return;
    action(e.target, "DELETE", `/api/jobs/${jobId}`, () => { window.location.href = "/"; });
  });

  // -- hardware ----------------------------------------------------------------------------------
  const gib = (bytes) => (bytes == null ? "?" : (bytes / 2 ** 30).toFixed(1));
  const meter = (label, percent, text) => `<div class="meter"><span class="label">${label}</span>
    <div class="progress"><div style="width:${Math.min(100, percent || 0).toFixed(1)}%"></div></div><span>${text}</span></div>`;

  function showHardware(hw) {
    $("hardware-gpus").innerHTML = hw.gpus.map((g) => `<div class="hw-block gpu" data-gpu="${g.index}">
      <div class="hw-title">GPU ${g.index} · ${ty.escape(g.name || "")}</div>
      ${meter("Utilization", g.utilization, g.utilization == null ? "n/a" : `${g.utilization} %`)}
      ${meter("Memory", g.memory_total ? (100 * g.memory_used) / g.memory_total : 0, `${gib(g.memory_used)} / ${gib(g.memory_total)} GiB`)}
      <div class="small">Temperature ${g.temperature == null ? "n/a" : `${g.temperature} °C`} ·
        Power ${g.power == null ? "n/a" : `${g.power} W`}${g.power_limit ? ` / ${g.power_limit} W` : ""}</div></div>`).join("");
    const cpu = hw.cpu, sys = hw.system;
    $("hardware-cpu").innerHTML = cpu ? `<div class="hw-title">Job processes (${cpu.processes})</div>
      ${meter("CPU", cpu.percent / sys.cpu_count, `<span id="hw-cpu-percent">${cpu.percent.toFixed(0)} %</span>`)}
      <div class="small">Memory <span id="hw-cpu-memory">${gib(cpu.rss)} GiB</span> (RSS) · 100 % = one of ${sys.cpu_count} cores</div>`
      : `<p class="muted small">Figures appear while the job runs.</p>`;
    $("hardware-workers").innerHTML = (hw.workers || []).map((w) => `<div class="hw-block worker" data-rank="${w.rank}">
      <div class="hw-title">Rank ${w.rank} · ${ty.escape(w.host || "")} · ${ty.escape(w.device)}</div>
      ${w.cpu ? meter("CPU", w.cpu.percent / (w.cpu.cores || 1), `${w.cpu.percent.toFixed(0)} %`) +
        `<div class="small">Memory ${gib(w.cpu.rss)} GiB (RSS) · 100 % = one of ${w.cpu.cores} cores</div>`
        : `<p class="muted small">no figures from this worker</p>`}
      ${(w.gpus || []).map((g) => meter(`GPU ${g.index}`, g.utilization, g.utilization == null ? "n/a" : `${g.utilization} %`) +
        meter("Memory", g.memory_total ? (100 * g.memory_used) / g.memory_total : 0, `${gib(g.memory_used)} / ${gib(g.memory_total)} GiB`)).join("")}
      </div>`).join("");
    $("hardware-system").textContent = `Machine: CPU ${sys.cpu_percent.toFixed(0)} %, memory ${gib(sys.memory_used)} / ${gib(sys.memory_total)} GiB`;
    $("hardware-time").textContent = `updated ${ty.clock(hw.time)}`;
  }

  let polling = null;
  async function poll() {
    clearTimeout(polling);
    let hw = null;
    try {
      hw = await ty.api("GET", `/api/jobs/${jobId}/hardware`);
      if (isActive(hw.status)) showHardware(hw);
      const stale = isActive(hw.status) && !isActive(page.status) && Date.now() - endedByEvent < 15000;
      if (hw.status !== page.status && !stale) page.setStatus(hw.status, { error: hw.error, detail: hw.status_detail });
      else $("status-detail").textContent = hw.status_detail || "";
    } catch (err) {
      $("hardware-time").textContent = `not updated: ${err.message}`;
    }
    // Poll while the job may still change; a document in a background tab polls less often.
    if (isActive(page.status) || isActive(hw && hw.status)) {
      polling = setTimeout(poll, document.hidden ? 10000 : 1500);
    }
  }

  const page = new JobPage(root, {
    on, afterEvent: render, onStatus,
    aborting() { if (isActive(page.status)) $("status-detail").textContent = "stopping…"; },
  });
  onStatus(page.status, page.status);  // the buttons and panels for the status drawn
  page.connect();
  poll();
})();
