// Shared by the demo pages: one guest per browser tab (sessionStorage), so
// two tabs play as two players. The SDK renews the guest token before it
// expires (kept here for the next page) and opens event streams with
// short-lived stream tokens, never the guest token itself.
import { RealSync, tokenExpiry } from "./realsync.js";

export async function client() {
  let token = sessionStorage.getItem("token") ?? undefined;
  if (token && (tokenExpiry(token) ?? 0) <= Date.now()) token = undefined; // expired: a new guest
  const c = new RealSync({ baseUrl: location.origin, token, onToken: (t) => sessionStorage.setItem("token", t) });
  if (!c.token) {
    const name = prompt("Your name?", "player") || "player";
    const g = await c.guest(name); // onToken stores the token
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
