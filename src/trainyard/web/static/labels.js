// A job page's tags and notes: saved with PATCH /api/jobs/{id}; the answer's tags are shown
// as the server cleaned them (lower case, each once).
import { ty } from "./app.js";
(function () {
  const card = document.getElementById("labels");
  if (!card) return;
  const form = document.getElementById("labels-form");
  const message = document.getElementById("labels-message");
  form.addEventListener("submit", async () => {
    const tags = form.elements.tags.value.split(/[\s,]+/).filter(Boolean);
    message.textContent = "saving…";
    try {
      const job = await ty.api("PATCH", `/api/jobs/${card.dataset.job}`, { tags, notes: form.elements.notes.value });
      form.elements.tags.value = job.tags.join(" ");
      const list = document.getElementById("tag-list");
      list.replaceChildren(...job.tags.map((t) => {
        const a = document.createElement("a");
        a.className = "tag";
        a.href = `/?tag=${encodeURIComponent(t)}`;
        a.textContent = t;
        return a;
      }));
      message.textContent = "saved";
    } catch (e) {
      message.textContent = e.message;
    }
  });
})();
