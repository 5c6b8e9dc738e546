// Shared helpers of every page: the app's base path, API calls with the one error shape,
// DOM building without innerHTML, number formatting (display only: unit changes, never
// aggregation; every figure is the engine's), the theme switch.

export const base = document.body.dataset.base || "/";
export const jobId = document.body.dataset.job || "";

/** An error answered by the app: `{"error": {"code", "message"}}`. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** GET `api/<path>` as JSON; throws ApiError with the app's message. */
export async function api(path, { signal } = {}) {
  const answer = await fetch(`${base}api/${path}`, { signal, credentials: "same-origin" });
  const type = answer.headers.get("content-type") || "";
  const body = type.includes("json") ? await answer.json() : null;
  if (!answer.ok) {
    const error = (body && body.error) || {};
    throw new ApiError(answer.status, error.code || "Error", error.message || `HTTP ${answer.status}`);
  }
  return body;
}

/** GET `api/<path>` as an ArrayBuffer (the binary timeline window). */
export async function apiBinary(path, { signal } = {}) {
  const answer = await fetch(`${base}api/${path}`, { signal, credentials: "same-origin" });
  if (!answer.ok) {
    let message = `HTTP ${answer.status}`;
    try {
      message = (await answer.json()).error.message;
    } catch (_) {
      /* not the JSON error shape */
    }
    throw new ApiError(answer.status, "Error", message);
  }
  return answer.arrayBuffer();
}

/** `el("a", {href, class: "x"}, "text", child)`: build DOM nodes; attributes `on*` bind events. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace a node's children. */
export function fill(node, ...children) {
  node.replaceChildren();
  append(node, children);
  node.removeAttribute("aria-busy");
  return node;
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

/** An ISO time as "3 min ago" with the full local time as a title. */
export function when(iso) {
  if (!iso) return el("span", { class: "muted" }, "–");
  const t = new Date(iso);
  const ago = (Date.now() - t.getTime()) / 1000;
  let text;
  if (ago < 45) text = "just now";
  else if (ago < 3600) text = `${Math.round(ago / 60)} min ago`;
  else if (ago < 86400) text = `${Math.round(ago / 3600)} h ago`;
  else text = t.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
  return el("time", { datetime: iso, title: t.toLocaleString() }, text);
}

/** The status badge: glyph + word (+ colour). */
export const statusBadge = (status) => el("span", { class: `status status-${status}` }, status);

/** A message in place of a page part that could not load. */
export function errorBox(error) {
  return el("div", { class: "error-box", role: "alert" }, error.message || String(error));
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

// Theme: the OS preference, or what the user picked last (kept in localStorage).
const root = document.documentElement;
const saved = localStorage.getItem("ph-theme");
root.dataset.theme = saved || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
document.getElementById("theme")?.addEventListener("click", () => {
  root.dataset.theme = root.dataset.theme === "dark" ? "light" : "dark";
  localStorage.setItem("ph-theme", root.dataset.theme);
  window.dispatchEvent(new Event("themechange"));
});

/** Run `fn` now and every `ms` while `active()` says so; returns a stop function. */
export function poll(fn, ms, active = () => true) {
  let timer = null;
  let stopped = false;
  const tick = async () => {
    if (stopped) return;
    try {
      await fn();
    } catch (error) {
      console.warn("poll failed:", error.message);
    }
    if (!stopped && active()) timer = setTimeout(tick, document.hidden ? ms * 4 : ms);
  };
  tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
