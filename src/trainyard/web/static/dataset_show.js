// A dataset's page: live build progress, the image explorer, abort and delete.
import { ty } from "./app.js";
import { JobPage } from "./job_page.js";
(function () {
  const root = document.getElementById("job");
  const jobId = root.dataset.job;
  const log = document.getElementById("job-log");

  let skippedSoFar = 0;
  let lastProgress = "";
  function appendLog(event) {
    log.textContent += `[${event.level}] ${event.message}\n`;
    log.scrollTop = log.scrollHeight;
    // The build reports each file it cannot use as a warning: count them while it runs.
    if (event.level === "warning" && event.message.startsWith("skipped ")) {
      skippedSoFar += 1;
      showProgress();
    }
  }
  const skippedText = () => (skippedSoFar ? ` · ${skippedSoFar} file${skippedSoFar > 1 ? "s" : ""} skipped so far` : "");
  function showProgress() { document.getElementById("progress-text").textContent = lastProgress + skippedText(); }

  // Images per class written so far, per split: the table grows while the build runs.
  function showCounts(counts) {
    const table = document.getElementById("live-counts");
    const splits = Object.keys(counts);
    const classes = [...new Set(splits.flatMap((split) => Object.keys(counts[split])))];
    const head = `<thead><tr><th>Class</th>${splits.map((s) => `<th>${ty.escape(s)}</th>`).join("")}</tr></thead>`;
    const rows = classes.map((name) => `<tr><td>${ty.escape(name)}</td>${
      splits.map((s) => `<td>${counts[s][name] || 0}</td>`).join("")}</tr>`).join("");
    table.innerHTML = `${head}<tbody>${rows}</tbody>`;
    table.hidden = false;
  }

  const page = new JobPage(root, {
    on: {
      log: appendLog,
      summary(event) { if (event.counts) showCounts(event.counts); },
      // Reload once when a build we watched finishes, so counts, mean and explorer appear.
      end(status) { if (status !== page.rendered) window.location.reload(); },
    },
    progressText(event, eta) {
      lastProgress = `${event.phase || "building"}: ${event.done} of ${event.total} images${eta}`;
      return lastProgress + skippedText();
    },
  });
  page.connect();

  document.getElementById("delete-button").addEventListener("click", async () => {
    if (!confirm("Delete this dataset and its files?")) return;
    try { await ty.api("DELETE", `/api/jobs/${jobId}`); window.location.href = "/"; }
    catch (err) { alert(err.message); }
  });

  const grid = document.getElementById("explore-grid");
  if (!grid) return;
  const classes = JSON.parse(grid.dataset.classes);
  const detection = grid.dataset.boxes === "true";  // the task registry's words (core/tasks.py)
  const masks = grid.dataset.masks === "true";  // each image shown with its mask laid over it
  const pageSize = detection ? 24 : 48;
  const palette = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#bfef45"];
  const svgNS = "http://www.w3.org/2000/svg";

  // A detection image: the stored picture with its boxes drawn over it in an SVG of the same
  // coordinates (stored pixels), each labelled with its class name (as text nodes: names are
  // user data).
  function boxedFigure(image, src, width, height) {
    const figure = document.createElement("figure");
    const frame = document.createElement("div");
    frame.className = "boxed";
    frame.style.aspectRatio = `${width} / ${height}`;
    const img = document.createElement("img");
    img.loading = "lazy";
    img.src = src;
    img.setAttribute("alt", `${image.boxes.length} boxes`);
    const svg = document.createElementNS(svgNS, "svg");
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    for (const { label, box } of image.boxes) {
      const [x1, y1, x2, y2] = box;
      const colour = palette[label % palette.length];
      const rect = document.createElementNS(svgNS, "rect");
      Object.entries({ x: x1, y: y1, width: x2 - x1, height: y2 - y1, stroke: colour }).forEach(([k, v]) => rect.setAttribute(k, v));
      rect.setAttribute("class", "box");
      const text = document.createElementNS(svgNS, "text");
      text.setAttribute("x", x1 + 1);
      text.setAttribute("y", Math.max(y1 - 1, Math.min(height, 8)));
      text.setAttribute("fill", colour);
      text.setAttribute("font-size", Math.max(6, Math.round(height / 14)));
      text.textContent = classes[label];
      svg.append(rect, text);
    }
    frame.append(img, svg);
    const caption = document.createElement("figcaption");
    const n = image.boxes.length;
    caption.textContent = n ? `${n} box${n > 1 ? "es" : ""}` : "no boxes";
    figure.append(frame, caption);
    return figure;
  }

  // A 16-bit dataset's display window: stored values min..max shown as black..white (the image
  // route's query); none: each image from its own minimum to its maximum.
  let windowQuery = "";
  const windowForm = document.getElementById("explore-window");
  if (windowForm) {
    const used = document.getElementById("explore-window-used");
    const ownText = used.textContent;
    windowForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const low = document.getElementById("explore-min").value.trim();
      const high = document.getElementById("explore-max").value.trim();
      if (low === "" && high === "") { windowQuery = ""; used.textContent = ownText; showPage(); return; }
      const [lo, hi] = [Number(low), Number(high)];
      const whole = (v, s) => s !== "" && Number.isInteger(v) && v >= 0 && v <= 65535;
      if (!whole(lo, low) || !whole(hi, high) || lo >= hi) {
        used.textContent = "Window: min and max must be whole numbers 0..65535, min below max.";
        return;
      }
      windowQuery = `?${new URLSearchParams({ min: lo, max: hi })}`;
      used.textContent = `Window: ${lo} (black) to ${hi} (white), the same for every image.`;
      showPage();
    });
    document.getElementById("explore-window-reset").addEventListener("click", () => {
      document.getElementById("explore-min").value = "";
      document.getElementById("explore-max").value = "";
      windowForm.requestSubmit();
    });
  }

  let offset = 0;
  async function showPage() {
    const split = document.getElementById("explore-split").value;
    const label = document.getElementById("explore-class").value;
    const query = new URLSearchParams({ split, offset, limit: pageSize });
    if (label !== "") query.set("label", label);
    const page = await ty.api("GET", `/api/datasets/${jobId}/images?${query}`);
    // Built as DOM nodes: class names are folder names, which may hold quotes or markup.
    grid.replaceChildren(...page.images.map((image) => {
      const base = `/api/datasets/${encodeURIComponent(jobId)}/images/${encodeURIComponent(split)}/${image.index}`;
      // a segmentation image: the server lays its mask over it in the class colours of the legend
      const src = masks ? `${base}/overlay.png` : `${base}.png${windowQuery}`;
      if (detection) return boxedFigure(image, src, page.width, page.height);
      const figure = document.createElement("figure");
      const img = document.createElement("img");
      img.loading = "lazy";
      img.src = src;
      // a multi-label image names each of its labels (a segmentation image the classes its mask
      // holds); a classification image its class
      const names = image.labels ? image.labels.map((i) => classes[i]).join(", ") || "no label" : classes[image.label];
      img.setAttribute("alt", names);
      const caption = document.createElement("figcaption");
      caption.textContent = names;
      figure.append(img, caption);
      return figure;
    }));
    const last = Math.min(offset + pageSize, page.total);
    document.getElementById("explore-page").textContent = page.total ? `${offset + 1}-${last} of ${page.total}` : "no images";
    document.getElementById("explore-prev").disabled = offset === 0;
    document.getElementById("explore-next").disabled = last >= page.total;
  }
  document.getElementById("explore-split").addEventListener("change", () => { offset = 0; showPage(); });
  document.getElementById("explore-class").addEventListener("change", () => { offset = 0; showPage(); });
  document.getElementById("explore-prev").addEventListener("click", () => { offset = Math.max(0, offset - pageSize); showPage(); });
  document.getElementById("explore-next").addEventListener("click", () => { offset += pageSize; showPage(); });
  showPage();
})();
