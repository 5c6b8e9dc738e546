// The helpers every page of ProfilerHub shares, the profiler app's and the hub's console alike
// (each imports them through its own common.js): the one error shape of an answer, DOM building
// without innerHTML, times and status badges, polling, the theme switch. Served by both from
// profilerhub_core/web as …/static/base/ (neither server may import the other's package).

/** An error answered by the hub or an app: `{"error": {"code", "message"}}`. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The JSON body of an answer (null when it has none); throws ApiError unless it is a success. */
export async function readAnswer(answer) {
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

// Theme: the OS preference, or what the user picked last (one key for the app and the console,
// so both agree); a change is announced as `themechange` (canvases redraw in the new colours).
const root = document.documentElement;
const saved = localStorage.getItem("ph-theme");
root.dataset.theme = saved || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
document.getElementById("theme")?.addEventListener("click", () => {
  root.dataset.theme = root.dataset.theme === "dark" ? "light" : "dark";
  localStorage.setItem("ph-theme", root.dataset.theme);
  window.dispatchEvent(new Event("themechange"));
});
