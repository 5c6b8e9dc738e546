// Shared helpers of the console's pages: calls to the hub's public API, /api/v1, with the session
// cookie and the page's CSRF token, and tables; and, re-exported, what the profiler app's pages
// share too (../base/common.js: profilerhub_core/web).
import { el, readAnswer } from "../base/common.js";

export { ApiError, el, errorBox, fill, poll, statusBadge, when } from "../base/common.js";

const csrf = document.querySelector('meta[name="csrf-token"]')?.content || "";
export const me = { ...document.body.dataset, platform: document.body.dataset.platform === "true" };

/** Call `/api/v1/<path>`; JSON in and out; throws ApiError with the hub's message. */
export async function api(path, { method = "GET", body, signal } = {}) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") headers["X-CSRF-Token"] = csrf;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const answer = await fetch(`/api/v1/${path}`, {
    method,
    headers,
    signal,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (answer.status === 401) {
    location.assign("/console/sign-in?ended=1"); // the session ended (signed out elsewhere, revoked)
  }
  return readAnswer(answer);
}

/** A table from column titles and rows of cells (each cell a node or text). */
export function table(titles, rows, empty) {
  if (!rows.length) return el("p", { class: "empty" }, empty);
  return el(
    "div",
    { class: "table-wrap" },
    el(
      "table",
      {},
      el("thead", {}, el("tr", {}, titles.map((t) => el("th", { scope: "col" }, t)))),
      el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c) => el("td", {}, c))))),
    ),
  );
}
