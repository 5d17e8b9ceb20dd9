// Reading the new-model form's number fields, each refusal a FieldError at its field: a number,
// a comma-separated list, the LR policy's settings and the augmentations (model_new.js sends them).
import { formErrors } from "./form_errors.js";

export function formFields(f) {
  function number(name, label, { integer = false, optional = false } = {}) {
    const text = f[name].value.trim();
    if (!text) {
      if (optional) return undefined;
      throw new formErrors.FieldError(f[name], `${label} is empty`);
    }
    const value = Number(text);
    if (!Number.isFinite(value) || (integer && !Number.isInteger(value))) {
      throw new formErrors.FieldError(f[name], `${label}: "${text}" is not ${integer ? "a whole number" : "a number"}`);
    }
    return value;
  }
  // words: names allowed beside numbers (a batch size's "auto": the largest that fits)
  function numbers(name, label, integer = false, words = []) {
    return f[name].value.split(",").map((t) => t.trim()).filter(Boolean).map((t) => {
      if (words.includes(t)) return t;
      const value = Number(t);
      if (!Number.isFinite(value) || (integer && !Number.isInteger(value))) {
        throw new formErrors.FieldError(f[name], `${label}: "${t}" is not ${integer ? "a whole number" : "a number"}`);
      }
      return value;
    });
  }

  function lrSettings() {
    const lr = { policy: f.lr_policy.value, steps_percent: numbers("steps_percent", "Step points") };
    for (const [name, label] of [["step_percent", "Step size"], ["gamma", "Gamma"], ["power", "Power"],
                                 ["warmup_percent", "Warm-up"], ["warmup_start_factor", "Warm-up start"]]) {
      lr[name] = number(name, label);
    }
    return lr;
  }

  function augment() {
    const out = { flip: f.flip.value, quarter_turns: f.quarter_turns.checked };
    for (const [name, label] of [["rotate_degrees", "Rotation"], ["scale_jitter", "Scale"], ["noise_std", "Noise"],
                                 ["contrast", "Contrast"], ["hue_shift", "Hue"], ["saturation_shift", "Saturation"],
                                 ["value_shift", "Value"], ["mosaic", "Mosaic"], ["mosaic_off_percent", "Mosaic off"]]) {
      out[name] = number(name, label);
    }
    return out;
  }

  // The request's ``settings``: every field as the form shows it (a network's recipe, where the
  // form filled it in, is sent as the values shown: model_recipe.js).
  function trainSettings() {
    const settings = {
      epochs: number("epochs", "Training epochs"), accumulation: number("accumulation", "Batch accumulation", { integer: true }),
      solver: f.solver.value, lr: lrSettings(), momentum: number("momentum", "Momentum"),
      weight_decay: number("weight_decay", "Weight decay"), ema: number("ema", "Weight average (EMA)"),
      snapshot_interval: number("snapshot_interval", "Snapshot interval"),
      val_interval: number("val_interval", "Validation interval"), mean: f.mean.value, precision: f.precision.value,
      augment: augment(), freeze_backbone: f.freeze_backbone.checked,
      backbone_lr_mult: number("backbone_lr_mult", "Backbone learning rate"),
    };
    if (f.scale_lr && f.scale_lr.checked) settings.scale_lr = true;
    const seed = number("seed", "Random seed", { integer: true, optional: true });
    const crop = number("crop", "Crop size", { integer: true, optional: true });
    if (seed !== undefined) settings.seed = seed;
    if (crop !== undefined) settings.crop = crop;
    return settings;
  }

  return { number, numbers, lrSettings, augment, trainSettings };
}
