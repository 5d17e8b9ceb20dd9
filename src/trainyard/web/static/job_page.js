// The one controller of the live job pages (dataset, model, classify-many, evaluate): the
// header that templates/_job_header.html draws (status badge, error, Abort), the progress bar,
// and the job's events over Server-Sent Events. A page adds what is its own through hooks.
import { ty } from "./app.js";
import { isActive, isFinal, Status } from "./status.js";

const EVENT_TYPES = ["log", "progress", "status", "metric", "checkpoint", "result", "summary"];
const $ = (id) => document.getElementById(id);

export class JobPage {
  // hooks, each optional: on[type](event) for each event type, and on.end(status) when the
  // stream ends; afterEvent(); progressText(event, eta); onStatus(next, previous); onEnd(status),
  // once the job has ended; aborting(answer), when Abort was answered before the job ended.
  constructor(root, hooks = {}) {
    this.root = root;
    this.jobId = root.dataset.job;
    this.rendered = root.dataset.status; // the status the server drew the page with
    this.status = this.rendered;
    this.hooks = hooks;
    this.lastId = -1;
    this.source = null;
    this.ended = null; // the final status onEnd was called for
    const abort = $("abort-button");
    if (abort) abort.addEventListener("click", () => this.abort(abort));
  }

  // One connection at a time. The browser reconnects by itself after a drop, sending
  // Last-Event-ID; `after` covers a fresh connection (after a resume). Ids are line numbers,
  // so a repeated event is dropped.
  connect() {
    if (this.source && this.source.readyState !== EventSource.CLOSED) return;
    const source = new EventSource(`/api/jobs/${this.jobId}/events?after=${this.lastId}`);
    this.source = source;
    for (const type of EVENT_TYPES) {
      source.addEventListener(type, (e) => {
        const id = Number(e.lastEventId);
        if (id <= this.lastId) return;
        this.lastId = id;
        this.handle(type, JSON.parse(e.data));
      });
    }
    source.addEventListener("end", (e) => {
      source.close();
      this.stream("ended");
      const { status } = JSON.parse(e.data);
      this.setStatus(status);
      if (this.hooks.on && this.hooks.on.end) this.hooks.on.end(status);
      if (this.hooks.afterEvent) this.hooks.afterEvent();
    });
    source.onopen = () => this.stream("live");
    source.onerror = () => this.stream(source.readyState === EventSource.CLOSED ? "closed" : "reconnecting…");
  }

  handle(type, event) {
    if (type === "progress") this.showProgress(event);
    if (type === "status") this.setStatus(event.status, { error: event.error || undefined });
    const own = this.hooks.on && this.hooks.on[type];
    if (own) own(event);
    if (this.hooks.afterEvent) this.hooks.afterEvent();
  }

  stream(text) { const el = $("stat-stream"); if (el) el.textContent = text; }

  showProgress(event) {
    const bar = $("progress-bar"), text = $("progress-text");
    if (bar && event.total) bar.style.width = `${((100 * event.done) / event.total).toFixed(1)}%`;
    if (!text) return;
    const eta = event.eta != null ? `, about ${ty.duration(event.eta)} left` : "";
    text.textContent = this.hooks.progressText ? this.hooks.progressText(event, eta)
      : `${event.phase}: ${event.done} of ${event.total} images${eta}`;
  }

  // The badge, the error and Abort follow the status; onEnd runs once when the job has ended.
  setStatus(next, { error, detail } = {}) {
    if (!next) return;
    const previous = this.status;
    this.status = next;
    this.root.dataset.status = next;
    const badge = $("job-status");
    badge.textContent = next;
    badge.className = `status status-${next}`;
    if (error !== undefined) $("job-error").textContent = error || "";
    if (detail !== undefined && $("status-detail")) $("status-detail").textContent = detail || "";
    const abort = $("abort-button");
    if (abort) abort.hidden = !isActive(next);
    if (this.hooks.onStatus) this.hooks.onStatus(next, previous);
    if (isFinal(next) && this.ended !== next) {
      this.ended = next;
      const progress = document.querySelector("section[data-job-progress]");
      if (progress && next === Status.DONE) progress.hidden = true;
      if (this.hooks.onEnd) this.hooks.onEnd(next);
    } else if (isActive(next)) {
      this.ended = null; // resumed: it may end again
    }
  }

  // The answer can come while the process is still exiting: then the events (or the page's
  // polling) bring the final status; never step back from one the job already reported.
  async abort(button) {
    // One click stopped hours of training: ask first (issue 31.9).
    const name = this.root.querySelector("h1")?.textContent.trim() || "this job";
    if (!confirm(`Abort ${name}? It stops at once; Resume continues it later.`)) return;
    button.disabled = true;
    try {
      const job = await ty.api("POST", `/api/jobs/${this.jobId}/abort`);
      if (isFinal(job.status)) this.setStatus(job.status, { error: job.error });
      else if (this.hooks.aborting) this.hooks.aborting(job);
    } catch (e) {
      $("job-error").textContent = e.message;
    } finally {
      button.disabled = false;
    }
  }
}
