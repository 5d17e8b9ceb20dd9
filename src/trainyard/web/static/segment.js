// The segment page: one image with its mask laid over it in semi-transparent class colours (an
// opacity slider that redraws without asking the server again), a legend of the classes with
// each one's share of the image, and the evaluate form. The mask comes from
// POST /api/models/{id}/segment as an 8-bit index PNG (each pixel's value its class's index):
// it is coloured here, so the PNG offered for download is the server's own.
import { ty } from "./app.js";
(function () {
  const root = document.getElementById("segment");
  if (!root) return;
  const modelId = root.dataset.model;
  const $ = (id) => document.getElementById(id);
  // Each class index's colour, from the page (datasets/segmentation/overlay.py: the dataset
  // page's overlays use the same); class 0, the background, has none: the photo shows through.
  const COLOURS = JSON.parse(root.dataset.colours);
  const colour = (i) => COLOURS[i] || null;
  let current = null; // {image, indices: Uint8ClampedArray RGBA of the mask, classes, areas}

  function loaded(src) {
    return new Promise((resolve, reject) => {
      const image = new Image();
      image.onload = () => resolve(image);
      image.onerror = () => reject(new Error("the image could not be shown"));
      image.src = src;
    });
  }

  async function segmentOne() {
    const file = $("one-file").files[0];
    $("one-error").textContent = "";
    if (!file) { $("one-error").textContent = "Choose an image file."; return; }
    const params = new URLSearchParams();
    if ($("epoch").value) params.set("epoch", $("epoch").value);
    const body = new FormData();
    body.append("images", file);
    $("one-button").disabled = true;
    const started = performance.now();
    try {
      const doc = await ty.api("POST", `/api/models/${modelId}/segment?${params}`, body);
      const result = doc.results[0];
      const [image, mask] = await Promise.all([loaded(URL.createObjectURL(file)), loaded(result.mask)]);
      // The mask is at the image's own size: read its indices once, colour them on each redraw.
      const scratch = document.createElement("canvas");
      scratch.width = mask.naturalWidth;
      scratch.height = mask.naturalHeight;
      const pen = scratch.getContext("2d");
      pen.drawImage(mask, 0, 0);
      current = { image, indices: pen.getImageData(0, 0, scratch.width, scratch.height).data,
        width: scratch.width, height: scratch.height, classes: doc.classes, areas: result.areas };
      $("one-mask-link").href = result.mask;
      $("one-timing").textContent = `epoch ${doc.epoch} · ${Math.round(performance.now() - started)} ms`;
      $("one-result").hidden = false;
      draw();
      legend();
    } catch (e) {
      $("one-error").textContent = e.message;
    } finally {
      $("one-button").disabled = false;
    }
  }

  function draw() {
    if (!current) return;
    const opacity = Number($("opacity").value);
    $("opacity-value").textContent = opacity.toFixed(2);
    const { image, indices, width, height } = current;
    const overlay = document.createElement("canvas");
    overlay.width = width;
    overlay.height = height;
    const layer = overlay.getContext("2d").createImageData(width, height);
    for (let p = 0; p < indices.length; p += 4) {
      const c = colour(indices[p]); // a grey PNG reads with its index in R, G and B alike
      if (!c) continue;
      layer.data.set([c[0], c[1], c[2], Math.round(255 * opacity)], p);
    }
    overlay.getContext("2d").putImageData(layer, 0, 0);
    const canvas = $("one-canvas"), scale = Math.min(1, 640 / image.naturalWidth);
    canvas.width = Math.round(image.naturalWidth * scale);
    canvas.height = Math.round(image.naturalHeight * scale);
    const pen = canvas.getContext("2d");
    pen.drawImage(image, 0, 0, canvas.width, canvas.height);
    pen.imageSmoothingEnabled = false; // class edges stay sharp, as the mask's nearest-neighbour resize left them
    pen.drawImage(overlay, 0, 0, canvas.width, canvas.height);
  }

  function legend() {
    const { classes, areas } = current;
    $("one-legend").innerHTML = `<tr><th>class</th><th>share of the image</th></tr>` +
      classes.map((name, i) => {
        const c = colour(i);
        const swatch = c ? `background: rgb(${c.join(",")})` : "border: 1px solid #999";
        return `<tr><td><span class="swatch" style="display:inline-block;width:1em;height:1em;${swatch}"></span>
          ${ty.escape(name)}</td><td>${(100 * (areas[name] || 0)).toFixed(1)}%</td></tr>`;
      }).join("");
  }

  async function evaluate() {
    $("eval-error").textContent = "";
    const body = { split: $("eval-split").value };
    if ($("epoch").value) body.epoch = Number($("epoch").value);
    try {
      window.location.href = (await ty.api("POST", `/api/models/${modelId}/evaluate`, body)).page;
    } catch (e) {
      $("eval-error").textContent = e.message;
    }
  }

  $("one-button").addEventListener("click", segmentOne);
  $("opacity").addEventListener("input", draw);
  $("eval-button").addEventListener("click", evaluate);
})();
