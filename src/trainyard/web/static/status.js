// The job statuses, as core/status.py names them: base.html renders them into every page
// (<script type="application/json" id="status-vocabulary">), so no script spells a status.
const vocabulary = JSON.parse(document.getElementById("status-vocabulary").textContent);

export const Status = Object.freeze({ ...vocabulary.values }); // Status.DONE === "done"
export const FINAL = Object.freeze([...vocabulary.final]);
export const ACTIVE = Object.freeze([...vocabulary.active]); // in the order a job goes through them
export const isFinal = (status) => FINAL.includes(status);
export const isActive = (status) => ACTIVE.includes(status);
