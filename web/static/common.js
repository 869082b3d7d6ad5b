// Shared by the demo pages: one guest per browser tab (sessionStorage), so
// two tabs play as two players.
import { RealSync } from "./realsync.js";

export async function client() {
  const c = new RealSync({ baseUrl: location.origin, token: sessionStorage.getItem("token") ?? undefined });
  if (!c.token) {
    const name = prompt("Your name?", "player") || "player";
    const g = await c.guest(name);
    sessionStorage.setItem("token", g.token);
    sessionStorage.setItem("name", g.name);
  }
  document.querySelector(".who").textContent = sessionStorage.getItem("name") ?? "";
  return c;
}

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  e.append(...children);
  return e;
}

export function showError(e) {
  document.querySelector(".error").textContent = e ? `${e.code ?? ""} ${e.message}` : "";
}
