// Draws a network as nested boxes from POST /api/networks/inspect: one box per layer with its
// settings, output shape and parameters, top to bottom in the order the forward pass runs them.
// A container whose children all see the same input and are concatenated along channels
// (GoogLeNet's inception blocks) shows those children side by side as branches.
import { ty } from "./app.js";
export const netViz = (function () {
  const esc = (t) => ty.escape(t);
  const SEQUENCES = ["Sequential", "ModuleList", "ModuleDict"];
  const shape = (s) => (s ? s.join("×") : "not run in eval mode");
  const count = (n) => Number(n).toLocaleString("en");

  function tree(layers) {
    const byName = new Map(layers.map((l) => [l.name, { ...l, children: [] }]));
    const roots = [];
    for (const node of byName.values()) {
      const parent = node.parent ? byName.get(node.parent) : null;
      (parent ? parent.children : roots).push(node);
    }
    return roots;
  }

  const shortName = (node) => node.name.slice(node.parent ? node.parent.length + 1 : 0);

  // Children that each map the same input to part of the output's channels.
  function isBranching(node) {
    const out = node.output_shape, kids = node.children;
    if (SEQUENCES.includes(node.type) || kids.length < 2 || !out || out.length !== 3) return false;
    let channels = 0;
    for (const kid of kids) {
      const s = kid.output_shape;
      if (!s || s.length !== 3 || s[1] !== out[1] || s[2] !== out[2]) return false;
      channels += s[0];
    }
    return channels === out[0];
  }

  function footer(node, params) {
    return `<div class="nv-shape">→ ${esc(shape(node.output_shape))}</div>` +
      (params ? `<div class="nv-params">${count(params)} params</div>` : "");
  }

  function leaf(node) {
    return `<div class="nv-layer nv-${esc(node.type)}${node.output_shape ? "" : " nv-idle"}" data-layer="${esc(node.name)}">
      <div class="nv-head"><b>${esc(shortName(node))}</b> <span class="nv-type">${esc(node.type)}</span></div>
      ${node.settings ? `<div class="nv-settings">${esc(node.settings)}</div>` : ""}${footer(node, node.params)}</div>`;
  }

  // A small block of plain layers (conv + batch norm + ReLU) reads best as one box.
  function compact(node) {
    const lines = node.children.map((k) => `<div class="nv-settings">${esc(shortName(k))}: ${esc(k.type)}${k.settings ? ` ${esc(k.settings)}` : ""}</div>`);
    return `<div class="nv-layer nv-block${node.output_shape ? "" : " nv-idle"}" data-layer="${esc(node.name)}">
      <div class="nv-head"><b>${esc(shortName(node))}</b> <span class="nv-type">${esc(node.type)}</span></div>
      ${lines.join("")}${footer(node, node.params_total)}</div>`;
  }

  function group(node) {
    const title = `<div class="nv-group-title"><b>${esc(shortName(node))}</b> <span class="nv-type">${esc(node.type)}</span>
      ${node.settings ? `<span class="nv-settings">${esc(node.settings)}</span>` : ""}
      <span class="nv-params">${count(node.params_total)} params</span></div>`;
    if (isBranching(node)) {
      const branches = node.children.map((k) => `<div class="nv-branch">${render(k)}</div>`).join("");
      return `<div class="nv-group nv-branching" data-layer="${esc(node.name)}">${title}
        <div class="nv-branches">${branches}</div>
        <div class="nv-concat">concatenate → ${esc(shape(node.output_shape))}</div></div>`;
    }
    return `<div class="nv-group${node.output_shape ? "" : " nv-idle"}" data-layer="${esc(node.name)}">${title}
      <div class="nv-seq">${node.children.map(render).join('<div class="nv-arrow">↓</div>')}</div>
      <div class="nv-shape">→ ${esc(shape(node.output_shape))}</div></div>`;
  }

  function render(node) {
    if (!node.children.length) return leaf(node);
    const plain = node.children.every((k) => !k.children.length);
    if (plain && !SEQUENCES.includes(node.type) && node.children.length <= 5) return compact(node);
    return group(node);
  }

  function draw(element, result) {
    const roots = tree(result.layers);
    const ran = roots.filter((n) => n.output_shape), idle = roots.filter((n) => !n.output_shape);
    const input = `<div class="nv-io">input ${esc(shape(result.input_shape))}</div>`;
    const output = `<div class="nv-io">output ${esc(shape(result.output_shape))}</div>`;
    let html = `<div class="nv-summary">${count(result.layers.filter((l) => l.leaf).length)} layers ·
      ${count(result.params)} parameters${result.trainable_params !== result.params ? ` (${count(result.trainable_params)} trainable)` : ""}</div>
      <div class="nv-seq nv-root">${[input, ...ran.map(render), output].join('<div class="nv-arrow">↓</div>')}</div>`;
    if (idle.length) {
      html += `<div class="nv-idle-note small muted">Not run when classifying (e.g. auxiliary classifiers used only in training):</div>
        <div class="nv-branches">${idle.map((n) => `<div class="nv-branch">${render(n)}</div>`).join("")}</div>`;
    }
    element.innerHTML = html;
  }

  return { draw, isBranching, tree };
})();
