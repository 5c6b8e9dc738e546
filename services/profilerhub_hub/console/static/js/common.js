// Shared helpers of the console's pages (the profiler app's conventions: DOM building without
// innerHTML, one error shape, status as glyph + word, polling, the theme switch). Every call goes
// to the hub's public API, /api/v1, with the session cookie and the page's CSRF token.

const csrf = document.querySelector('meta[name="csrf-token"]')?.content || "";
export const me = { ...document.body.dataset, platform: document.body.dataset.platform === "true" };

/** An error answered by the hub: `{"error": {"code", "message"}}`. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

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
  const type = answer.headers.get("content-type") || "";
  const data = type.includes("json") ? await answer.json() : null;
  if (!answer.ok) {
    const error = (data && data.error) || {};
    throw new ApiError(answer.status, error.code || "Error", error.message || `HTTP ${answer.status}`);
  }
  return data;
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

/** An ISO time as "3 min ago" with the full local time as a title. */
export function when(iso) {
  if (!iso) return el("span", { class: "muted" }, "–");
  const t = new Date(iso);
  const ago = (Date.now() - t.getTime()) / 1000;
  let text;
  if (ago < 45 && ago > -45) text = "just now";
  else if (ago < 0) text = t.toLocaleString();
  else if (ago < 3600) text = `${Math.round(ago / 60)} min ago`;
  else if (ago < 86400) text = `${Math.round(ago / 3600)} h ago`;
  else text = t.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
  return el("time", { datetime: iso, title: t.toLocaleString() }, text);
}

/** The status badge: glyph + word (+ colour). */
export const statusBadge = (status) => el("span", { class: `status status-${status}` }, status);

/** A message in place of a page part that could not load, saying what to do. */
export function errorBox(error) {
  return el("div", { class: "error-box", role: "alert" }, error.message || String(error));
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

// Theme: the OS preference, or what the user picked last (the profiler app's key, so both agree).
const root = document.documentElement;
const saved = localStorage.getItem("ph-theme");
root.dataset.theme = saved || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
document.getElementById("theme")?.addEventListener("click", () => {
  root.dataset.theme = root.dataset.theme === "dark" ? "light" : "dark";
  localStorage.setItem("ph-theme", root.dataset.theme);
});
