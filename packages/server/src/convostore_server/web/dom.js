// Building the page: every piece of stored data goes in as text (createTextNode, textContent),
// never as HTML, so a message holding markup or script is shown, not run.

/** An element: h("a", {href: "#/", class: "x", onclick: f}, "text", child, [more]). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") el.className = value;
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name in el && typeof value !== "string") el[name] = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Append children: strings and numbers as text nodes, nodes as they are, arrays flattened. */
export function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** Replace every child of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A time element for epoch milliseconds: local date and time, ISO in `datetime`. */
export function time(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms)) return h("span", {}, "—");
  const d = new Date(ms);
  return h("time", { datetime: d.toISOString(), title: d.toISOString() }, formatTime(d));
}

/** A date and a time, today's too (a page left open, or a screenshot, outlives the day). */
export function formatTime(d) {
  return d.toLocaleString([], { dateStyle: "medium", timeStyle: "medium" });
}

/** Pretty JSON of any value (a string holding JSON is parsed first). */
export function pretty(value) {
  if (typeof value === "string") {
    try {
      const parsed = JSON.parse(value);
      if (parsed !== null && typeof parsed === "object") return JSON.stringify(parsed, null, 2);
    } catch {
      return value;
    }
    return value;
  }
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A collapsible block of pretty JSON. */
export function jsonBlock(label, value, { open = false, cls = "json" } = {}) {
  return h("details", { class: cls, open }, h("summary", {}, label), h("pre", {}, pretty(value)));
}

export function plural(n, one, many = `${one}s`) {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}

export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** An id as a segment of the page's own address (#/c/<id>): a '/' in it as %2F. */
export const seg = (id) => encodeURIComponent(id);
