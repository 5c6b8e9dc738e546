// Shared helpers of every page of the app: its base path, API calls, number formatting (display
// only: unit changes, never aggregation; every figure is the engine's), URL state, colours; and,
// re-exported, what the console's pages share too (../base/common.js: profilerhub_core/web).
import { readAnswer } from "../base/common.js";

export { ApiError, el, errorBox, fill, poll, statusBadge, when } from "../base/common.js";

export const base = document.body.dataset.base || "/";
export const jobId = document.body.dataset.job || "";

/** GET `api/<path>` as JSON; throws ApiError with the app's message. */
export async function api(path, { signal } = {}) {
  return readAnswer(await fetch(`${base}api/${path}`, { signal, credentials: "same-origin" }));
}

/** POST `body` (JSON) to `api/<path>`; the answer's JSON, or throws ApiError with the app's message. */
export async function apiPost(path, body) {
  const sent = { method: "POST", credentials: "same-origin", headers: { "content-type": "application/json" } };
  return readAnswer(await fetch(`${base}api/${path}`, { ...sent, body: JSON.stringify(body ?? {}) }));
}

/** GET `api/<path>` as an ArrayBuffer (the binary timeline window). */
export async function apiBinary(path, { signal } = {}) {
  const answer = await fetch(`${base}api/${path}`, { signal, credentials: "same-origin" });
  if (!answer.ok) await readAnswer(answer); // throws the answer's ApiError
  return answer.arrayBuffer();
}

const nf = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
const nf0 = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const nf2 = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

/** A count with thousands separators. */
export const count = (n) => (n === null || n === undefined ? "–" : nf0.format(n));
/** A number with up to 2 decimals. */
export const num = (n) => (n === null || n === undefined || Number.isNaN(n) ? "–" : nf2.format(n));
/** A percentage. */
export const pct = (n) => (n === null || n === undefined ? "–" : `${nf.format(n)} %`);

/** µs as a human duration: 850 ns, 12.3 µs, 4.56 ms, 1.23 s, 2 min 3 s. */
export function us(value) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  const a = Math.abs(value);
  if (a === 0) return "0";
  if (a < 1) return `${nf0.format(value * 1000)} ns`;
  if (a < 1000) return `${nf.format(value)} µs`;
  if (a < 1e6) return `${nf2.format(value / 1000)} ms`;
  if (a < 120e6) return `${nf2.format(value / 1e6)} s`;
  return `${Math.floor(value / 60e6)} min ${Math.round((value % 60e6) / 1e6)} s`;
}

/** ns as a human duration. */
export const ns = (value) => us(value / 1000);

/** Seconds as a human duration. */
export const seconds = (s) => (s === null || s === undefined ? "–" : us(s * 1e6));

/** Bytes in KiB/MiB/GiB. */
export function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${i === 0 ? nf0.format(v) : nf.format(v)} ${units[i]}`;
}

/** Read the page's URL query as an object; `setQuery` writes it back without a reload. */
export const query = () => Object.fromEntries(new URLSearchParams(location.search));
export function setQuery(values, { push = false } = {}) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined && value !== null && value !== "") params.set(key, value);
  }
  const url = `${location.pathname}${params.toString() ? `?${params}` : ""}`;
  if (url !== `${location.pathname}${location.search}`) {
    history[push ? "pushState" : "replaceState"](null, "", url);
  }
}

/** Colour `i` of the Okabe-Ito series palette as a CSS value (theme-aware). */
export function color(i) {
  return getComputedStyle(document.documentElement).getPropertyValue(`--c${i % 8}`).trim();
}
export const cssVar = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
