// Form errors shown at the field (or fieldset) they are about and scrolled into view, not in one
// line at the bottom of a long form; each goes away as soon as its field is changed.
export const formErrors = {
  // An error about one field: throw it from code that reads the form.
  FieldError: class FieldError extends Error {
    constructor(field, message) { super(message); this.field = field; }
  },

  show(target, message) {
    const box = target.tagName === "FIELDSET" ? target : target.closest("label") || target;
    const note = document.createElement("p");
    note.className = "field-error error-text";
    note.setAttribute("role", "alert");
    note.textContent = message;
    note.errorFor = target;
    if (box.tagName === "FIELDSET") box.querySelector("legend").insertAdjacentElement("afterend", note);
    else box.insertAdjacentElement("afterend", note);
    target.classList.add("has-error");
    note.scrollIntoView({ block: "center" });
    if (typeof target.focus === "function" && target.tagName !== "FIELDSET") target.focus({ preventScroll: true });
    return note;
  },

  clear(form, changed) {
    for (const note of form.querySelectorAll(".field-error")) {
      if (!changed || note.errorFor.contains(changed)) {
        note.errorFor.classList.remove("has-error");
        note.remove();
      }
    }
  },

  // Clear each field's error when that field changes.
  watch(form) {
    const clear = (e) => formErrors.clear(form, e.target);
    form.addEventListener("input", clear);
    form.addEventListener("change", clear);
  },
};
