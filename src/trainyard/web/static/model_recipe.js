// The new-model form and a network's training recipe (networks/table.py: a YOLO's AdamW, cosine
// LR with warm-up, EMA, mosaic, HSV, scale, flips). Ticking networks that share one recipe fills
// the solver, LR and augmentation fields with its values and says so beside them; a field the
// user changed keeps the user's value, and what the form shows is what it sends (issue 41.2).
import { modelStart } from "./model_start.js";

// A recipe's panels as the form's field names: lr.policy is the "lr_policy" select.
const LR_FIELDS = { policy: "lr_policy" };

// {field name: value} for a recipe (TrainSettings fields, the lr and augment panels as dicts).
export function recipeFields(recipe) {
  const out = {};
  for (const [key, value] of Object.entries(recipe || {})) {
    if (value && typeof value === "object") {
      for (const [inner, v] of Object.entries(value)) out[key === "lr" ? LR_FIELDS[inner] || inner : inner] = v;
    } else {
      out[key] = value;
    }
  }
  return out;
}

// The recipe every ticked network trains by: its JSON text, "" where none has one, null where
// they differ (the fields then apply to all of them as shown).
export function sharedRecipe(texts) {
  const distinct = new Set(texts.map((t) => (t && t !== "{}" ? t : "")));
  if (distinct.size > 1) return null;
  return distinct.size ? [...distinct][0] : "";
}

export const modelRecipe = {
  watch(form) {
    const f = form.elements;
    const note = document.getElementById("recipe-note");
    const text = document.getElementById("recipe-text");
    const toggle = document.getElementById("recipe-on");
    const names = new Set();  // every field some network's recipe sets
    for (const row of form.querySelectorAll("#network-table tr[data-recipe]")) {
      for (const name of Object.keys(recipeFields(JSON.parse(row.dataset.recipe)))) if (f[name]) names.add(name);
    }
    const read = (name) => (f[name].type === "checkbox" ? f[name].checked : f[name].value);
    const write = (name, value) => {
      if (f[name].type === "checkbox") f[name].checked = Boolean(value);
      else f[name].value = String(value);
    };
    const plain = Object.fromEntries([...names].map((n) => [n, read(n)]));  // the defaults, or a clone's
    const shown = { ...plain };  // what this module last put in each field

    function ticked() {  // weights that bring their network (modelStart) fine-tune it: no recipe
      if (f.network_mode.value !== "standard" || modelStart.bringsNetwork(form)) return [];
      return [...form.querySelectorAll('input[name="network"]:checked')]
        .filter((box) => !box.closest("[hidden]")).map((box) => box.closest("tr"));  // none of another task
    }

    function fill(values) {
      // The policy first: choosing one fills its own parameters, which the recipe may then set.
      for (const name of ["lr_policy", ...[...names].filter((n) => n !== "lr_policy")]) {
        if (!names.has(name) || String(read(name)) !== String(shown[name])) continue;  // the user's value stays
        const before = read(name);
        write(name, values[name]);
        shown[name] = read(name);
        if (name === "lr_policy" && before !== shown[name]) f.lr_policy.dispatchEvent(new Event("change", { bubbles: true }));
      }
    }

    function apply(writing = true) {
      const rows = ticked();
      const shared = sharedRecipe(rows.map((row) => row.dataset.recipe || ""));
      const recipe = shared ? JSON.parse(shared) : {};
      if (writing) fill({ ...plain, ...(toggle.checked ? recipeFields(recipe) : {}) });
      const withRecipe = rows.filter((row) => (row.dataset.recipe || "{}") !== "{}");
      note.hidden = !withRecipe.length;
      if (shared) {
        const who = rows.length > 1 ? rows.map((row) => row.dataset.network).join(", ") : rows[0].dataset.network;
        text.textContent = `${who}'s recipe: ${rows[0].dataset.recipeNote}. ` +
          (toggle.checked ? "Filled in below; change any field to override it." : "Off: the fields show the plain defaults.");
      } else if (shared === null) {
        text.textContent = `${withRecipe.map((row) => row.dataset.network).join(", ")} ha${withRecipe.length > 1 ? "ve" : "s"} a recipe ` +
          "the other networks ticked do not: the values below apply to every one of them.";
      }
      toggle.parentElement.hidden = !shared;
    }

    form.addEventListener("change", (e) => { if (["network", "start", "dataset"].includes(e.target.name)) apply(); });
    for (const tab of form.querySelectorAll(".tab")) tab.addEventListener("click", () => apply());
    toggle.addEventListener("change", () => apply());
    apply(!form.dataset.clone);  // a clone shows its own job's settings, recipe or not
  },
};
