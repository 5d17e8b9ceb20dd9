// The new-model form's search fields: a learning rate or batch size given as LOW..HIGH draws
// "Trials" combinations (log-uniform rates, whole batch sizes), and "Stop hopeless runs early"
// asks for early stopping across the sweep. Lists (0.1,0.01) still make a grid.
import { formErrors } from "./form_errors.js";
export const sweepForm = {
  // [low, high] for "1e-4..1e-1", null for anything else.
  range(f, name, label, integer = false) {
    const text = f[name].value.trim();
    if (!text.includes("..")) return null;
    const bounds = text.split("..").map((t) => Number(t.trim()));
    if (bounds.length !== 2 || !bounds.every((v) => Number.isFinite(v) && (!integer || Number.isInteger(v)))) {
      throw new formErrors.FieldError(f[name], `${label}: "${text}" should be a range LOW..HIGH, e.g. ${integer ? "16..128" : "1e-4..1e-1"}`);
    }
    return bounds;
  },
  trials(f) {
    const text = f.trials ? f.trials.value.trim() : "";
    if (!text) return null;
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1) throw new formErrors.FieldError(f.trials, `Trials: "${text}" is not a whole number of 1 or more`);
    return value;
  },
  // The request's lists, ranges, trials and early stop; numbers() reads a comma-separated list.
  fields(f, numbers) {
    const lrRange = this.range(f, "base_lr", "Base learning rate");
    const batchRange = this.range(f, "batch_size", "Batch size", true);
    return {
      base_lrs: lrRange ? [] : numbers("base_lr", "Base learning rate"),
      batch_sizes: batchRange ? [] : numbers("batch_size", "Batch size", true, ["auto"]),
      lr_range: lrRange, batch_size_range: batchRange, trials: this.trials(f),
      early_stop: Boolean(f.early_stop && f.early_stop.checked),
    };
  },
  // numbers() that reads a range as its low end (the LR preview draws one curve).
  lowEnds(f, numbers) {
    return (name, label, integer = false, words = []) => {
      const bounds = this.range(f, name, label, integer);
      return bounds ? [bounds[0]] : numbers(name, label, integer, words);
    };
  },
  // [learning rates, batch sizes, drawn] as the sweep count multiplies them. With trials there
  // are N draws, and `drawn` names what each draws (a range, or a list to pick from):
  // ["learning rate", "batch size"] when both vary; null without trials.
  counted(f, numbers) {
    const fields = this.fields(f, numbers);
    if (!fields.trials) return [fields.base_lrs, fields.batch_sizes, null];
    const drawn = [];
    if (fields.lr_range || fields.base_lrs.length > 1) drawn.push("learning rate");
    if (fields.batch_size_range || fields.batch_sizes.length > 1) drawn.push("batch size");
    return [new Array(fields.trials).fill(0), [], drawn];
  },
};
