// Small helpers shared by every page: JSON calls to the API, formatting, escaping (an ES module:
// pages import what they use; a job's live events are job_page.js's).
export const ty = {
  async api(method, url, body) {
    const options = { method, headers: {} };
    if (body instanceof FormData) {
      options.body = body;
    } else if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(url, options);
    const text = await response.text();
    const data = text ? (() => { try { return JSON.parse(text); } catch { return text; } })() : null;
    if (!response.ok) {
      const detail = data && data.detail ? data.detail : text || response.statusText;
      const error = new Error(typeof detail === "string" ? detail : JSON.stringify(detail));
      error.status = response.status;
      error.retryAfter = response.headers.get("Retry-After"); // seconds, with a 429 or 503
      throw error;
    }
    return data;
  },
  // One date format on every page, the server's too (core/formatting.py clock): ISO order, local time.
  clock(seconds) {
    if (!seconds) return "";
    const d = new Date(seconds * 1000), two = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} `
      + `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  },
  duration(seconds) {
    if (seconds == null) return "";
    seconds = Math.round(seconds);
    if (seconds < 60) return `${seconds}s`;
    const m = Math.floor(seconds / 60), s = seconds % 60;
    if (m < 60) return `${m}m ${String(s).padStart(2, "0")}s`;
    return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
  },
  // For text put into HTML strings, inside elements and inside quoted attributes alike: a name
  // like `x" onload="..."` must stay text. Prefer textContent/setAttribute where it is easy.
  escape(text) {
    const entities = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
    return (text == null ? "" : String(text)).replace(/[&<>"']/g, (c) => entities[c]);
  },
  // Content-Security-Policy forbids inline handlers (onsubmit="..."): forms that are driven by
  // script carry data-no-submit instead.
  noSubmit(root = document) {
    for (const form of root.querySelectorAll("form[data-no-submit]")) {
      form.addEventListener("submit", (e) => e.preventDefault());
    }
  },
};
document.addEventListener("DOMContentLoaded", () => ty.noSubmit());
