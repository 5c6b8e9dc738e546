// A running job's buttons on its dashboard (docs/jobs.md), as the console's: "Capture N steps
// now" asks the run for a PyTorch-profiler capture of its next N steps (`POST api/jobs/{id}/captures`),
// "Stop" asks it to stop at its next step (`POST api/jobs/{id}/stop`, after a confirmation). The app
// passes both to the hub, which decides and audits; a refusal's reason shows beside the buttons.
// dashboard.js calls `showControls` with the job each time it reads it.
import { apiPost, el, errorBox, fill } from "./common.js";

const DEFAULT_STEPS = 5;
let shown = ""; // what the buttons were drawn for (redrawn only when that changes)
let said = ""; // the last request's outcome (kept across redraws)
let wanted = DEFAULT_STEPS; // the steps typed in (kept across redraws)

const running = (job) => job.status === "InProgress" && !job.completed_at;

function stopNote(job) {
  const stop = job.stop_request;
  if (!stop) return null;
  if (stop.by === "user") return `Stop asked by ${stop.actor}: the run stops at its next step`;
  return stop.rule ? `Stop asked by rule ${stop.rule}` : null;
}

/** Draw the buttons for `job` in `node`; `changed()` runs after a request the hub took. */
export function showControls(node, job, changed) {
  const captures = job.captures || [];
  const key = JSON.stringify([running(job), job.stop_request, captures.length]);
  if (key === shown) return;
  shown = key;
  if (!running(job)) {
    fill(node);
    node.dataset.running = "false";
    return;
  }
  const note = el("span", { class: "note", id: "job-actions-note", "aria-live": "polite" }, said || stopNote(job) || "");
  const steps = el("input", { type: "number", id: "capture-steps", min: 1, max: 100, value: wanted, "aria-label": "steps to capture" });
  const capture = el("button", { type: "button", id: "capture-now" }, `Capture ${wanted} steps now`);
  steps.addEventListener("input", () => {
    wanted = steps.value;
    capture.textContent = `Capture ${steps.value || "N"} steps now`;
  });
  const act = async (button, request, done) => {
    button.disabled = true;
    node.querySelector(".error-box")?.remove();
    try {
      said = note.textContent = done(await request());
      changed();
    } catch (error) {
      note.after(errorBox(error));
    } finally {
      button.disabled = false;
    }
  };
  capture.addEventListener("click", () =>
    act(capture, () => apiPost(`jobs/${encodeURIComponent(job.job_id)}/captures`, { steps: Number(steps.value) }), (c) =>
      `Capture ${c.id} asked: ${c.steps} steps from the run's next step; its trace shows here once ingested`,
    ),
  );
  const stopped = job.stop_request && job.stop_request.by === "user";
  const stop = stopped
    ? null
    : el("button", { type: "button", id: "stop-job", class: "danger" }, "Stop");
  stop?.addEventListener("click", () => {
    if (!confirm(`Stop ${job.name}? Its script gets ph.StopTraining at its next step.`)) return;
    act(stop, () => apiPost(`jobs/${encodeURIComponent(job.job_id)}/stop`), () => "Stop asked: the run stops at its next step");
  });
  fill(node, el("label", { class: "muted" }, steps), capture, stop, note);
  node.dataset.running = "true";
  node.dataset.captures = String(captures.length);
}
