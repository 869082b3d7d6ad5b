// Small DOM helpers shared by the demo pages: building elements, forms that
// validate on the client and show the server's field errors by field, and
// the connection badge of a live stream.
import { fieldMessage, fieldName, friendly, hintFor } from "./errors.js";

/**
 * el builds an element: attrs "onx" add listeners, false/null/undefined attrs are skipped; "style" is set
 * through the CSSOM (the pages' Content-Security-Policy refuses style attributes).
 */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "style") e.style.cssText = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  e.append(...children.filter((c) => c !== null && c !== undefined && c !== false));
  return e;
}

/** $ is document.querySelector. */
export const $ = (sel, root = document) => root.querySelector(sel);

/** fieldError shows (or clears, with "") the error of a form field, below it. */
function fieldError(form, name, text) {
  const input = form.elements.namedItem(name);
  if (!(input instanceof HTMLElement)) return false;
  const id = `${form.id}-${name}-error`;
  let note = document.getElementById(id);
  if (!note && text) {
    note = el("small", { class: "field-error", id });
    (input.closest("label") ?? input).after(note);
  }
  if (note) note.textContent = text;
  if (text) {
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", id);
  } else {
    input.removeAttribute("aria-invalid");
  }
  return true;
}

/** formError shows (or clears) the sentence of a form's error. */
export function formError(form, text) {
  let p = form.querySelector(".form-error");
  if (!p) {
    p = el("p", { class: "form-error", role: "alert" });
    form.append(p);
  }
  p.textContent = text ?? "";
}

function clearErrors(form) {
  for (const note of form.querySelectorAll(".field-error")) note.textContent = "";
  for (const input of form.querySelectorAll("[aria-invalid]")) input.removeAttribute("aria-invalid");
  formError(form, "");
}

/** validate checks the form's constraints (the browser's, with our sentences); true when valid. */
function validate(form) {
  let ok = true;
  for (const input of form.elements) {
    if (!input.name || !input.willValidate || input.checkValidity()) continue;
    const v = input.validity;
    const text = v.valueMissing ? "Please fill this in." : (hintFor(input.dataset.field ?? input.name) ?? input.validationMessage);
    fieldError(form, input.name, text);
    if (ok) input.focus();
    ok = false;
  }
  return ok;
}

/** showProblem shows an error thrown by the SDK on the form: field errors
 * by field, the problem's sentence (in context) on the form. */
export function showProblem(form, err, context) {
  const rest = [];
  for (const fe of err?.errors ?? []) {
    const name = fieldName(fe.field);
    const hintField = form.elements.namedItem(name)?.dataset?.field ?? name;
    if (!fieldError(form, name, fieldMessage(hintField, fe.message))) rest.push(fieldMessage(name, fe.message));
  }
  formError(form, [friendly(err, context), ...rest].join(" "));
}

/**
 * bindForm runs handler(values, form) on submit after the client-side checks
 * pass (the form is novalidate: our sentences replace the browser's), with
 * its buttons disabled meanwhile; an error it throws is shown on the form.
 */
export function bindForm(form, handler, context) {
  form.noValidate = true;
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearErrors(form);
    if (!validate(form)) return;
    const buttons = form.querySelectorAll("button");
    for (const b of buttons) b.disabled = true;
    try {
      await handler(Object.fromEntries(new FormData(form)), form);
    } catch (err) {
      showProblem(form, err, context);
    } finally {
      for (const b of buttons) b.disabled = false;
    }
  });
}

/** Badge shows a live stream's connection in a header badge. */
export class Badge {
  constructor(node) {
    this.node = node;
    this.set("connecting", "Connecting…");
  }

  /** set shows state ("connecting" | "live" | "reconnecting" | "offline") with text. */
  set(state, text) {
    this.node.dataset.state = state;
    this.node.textContent = text;
    this.node.title = `Live updates: ${text}`;
  }

  /**
   * follow listens to a live room or lobby: the SDK's connection events
   * (connecting/open/reconnecting/resumed/closed), and for a bundle without
   * them, the first change (live) and errors (reconnecting). Returns a
   * function that stops following.
   */
  follow(live) {
    const stops = [
      live.on("connecting", (e) => this.set("connecting", e?.attempt > 1 ? `Connecting (try ${e.attempt})…` : "Connecting…")),
      live.on("open", () => this.set("live", "Live")),
      live.on("resumed", () => this.set("live", "Live")),
      live.on("reconnecting", (e) => this.set("reconnecting",
        e?.delayMs >= 1000 ? `Reconnecting in ${Math.round(e.delayMs / 1000)} s…` : "Reconnecting…")),
      live.on("change", () => this.node.dataset.state === "live" || this.set("live", "Live")),
      live.on("error", () => live.closed || this.set("reconnecting", "Reconnecting…")),
      live.on("closed", () => this.set("offline", "Offline")),
    ];
    this.set("connecting", "Connecting…");
    return () => stops.forEach((stop) => stop());
  }
}

/** copy copies text to the clipboard; where the browser refuses, it
 * selects the text in node for the player to copy. Returns whether it copied. */
export async function copy(text, node) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const range = document.createRange();
    range.selectNodeContents(node);
    getSelection()?.removeAllRanges();
    getSelection()?.addRange(range);
    return false;
  }
}
