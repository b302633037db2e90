// DOM helpers. Every string becomes a text node: the UI never assigns innerHTML.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "style" && typeof v === "object") Object.assign(el.style, v);
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// -- formatting ------------------------------------------------------------------------

const nf = new Intl.NumberFormat();

export function fmtNum(n) {
  return typeof n === "number" && Number.isFinite(n) ? nf.format(n) : "–";
}

export function fmtBytes(n) {
  if (typeof n !== "number") return "–";
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

export function fmtTime(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

export function relTime(iso) {
  const d = new Date(iso);
  if (!iso || Number.isNaN(d.getTime())) return "–";
  const sec = Math.round((Date.now() - d.getTime()) / 1000);
  if (sec < 5) return "just now";
  if (sec < 60) return `${sec}s ago`;
  if (sec < 3600) return `${Math.floor(sec / 60)}m ago`;
  if (sec < 86400) return `${Math.floor(sec / 3600)}h ago`;
  if (sec < 86400 * 30) return `${Math.floor(sec / 86400)}d ago`;
  return d.toLocaleDateString();
}

export function timeEl(iso) {
  return h("time", { datetime: iso, title: fmtTime(iso) }, relTime(iso));
}

export function shortId(id) {
  return id ? String(id).slice(0, 8) : "";
}

/**
 * shortRef is the one ref relay shows for an artifact: the daemon already sends it (6 hex
 * digits, the full ref's random tail); a full 26-digit ref from older data is shown the same way.
 */
export function shortRef(ref) {
  const r = ref ? String(ref) : "";
  return /^[0-9a-f]{26}$/.test(r) ? r.slice(-6) : r;
}

/** jsonView renders a value as indented JSON with token classes for colouring. */
export function jsonView(value, attrs = {}) {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  const pre = h("pre", { class: "json", ...attrs });
  const re = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;
  let last = 0;
  let m;
  while ((m = re.exec(text))) {
    if (m.index > last) pre.appendChild(document.createTextNode(text.slice(last, m.index)));
    if (m[1]) {
      pre.appendChild(h("span", { class: m[2] ? "j-key" : "j-str" }, m[1]));
      if (m[2]) pre.appendChild(document.createTextNode(m[2]));
    } else if (m[3]) pre.appendChild(h("span", { class: "j-lit" }, m[3]));
    else pre.appendChild(h("span", { class: "j-num" }, m[4]));
    last = re.lastIndex;
  }
  if (last < text.length) pre.appendChild(document.createTextNode(text.slice(last)));
  return pre;
}

export function copyButton(text, label = "copy") {
  const b = h("button", { class: "btn small ghost", type: "button", title: "Copy to clipboard" }, label);
  b.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      b.textContent = "copied";
    } catch {
      b.textContent = "copy failed";
    }
    setTimeout(() => (b.textContent = label), 1200);
  });
  return b;
}
