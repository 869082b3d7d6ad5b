// The player of this tab: one guest per browser tab (its token in
// sessionStorage), so two tabs play as two players. The name is asked in the
// page (#welcome) and remembered in localStorage for the next time. The SDK
// renews the guest token before it expires (onToken keeps it for the next
// page) and opens event streams with short-lived stream tokens, never the
// guest token itself.
import { RealSync, tokenClaims } from "./realsync.js";
import { $, bindForm, el } from "./ui.js";
import { withReload } from "./errors.js";

/**
 * session returns the tab's client, signed in as its guest, the player's
 * user id (its friend code) and the rooms the player is in (newest first). Without a guest token, or with one the
 * server refuses (it expired, or the server restarted with another secret), it shows the name
 * form and waits for it; the page's #app is shown once the player is known.
 */
export async function session() {
  // An expired token is refused by the server (401, below): a new guest. Not
  // judged by this device's clock, which may be set a day off.
  const token = sessionStorage.getItem("token") ?? undefined;
  const c = new RealSync({ baseUrl: location.origin, token, onToken: (t) => sessionStorage.setItem("token", t) });
  let rooms;
  if (c.token) {
    try {
      rooms = await c.myRooms();
    } catch (err) {
      if (err.code !== "UNAUTHENTICATED") return halt(err);
      c.token = undefined;
      sessionStorage.removeItem("token");
    }
  }
  if (!c.token) {
    await askName(c);
    rooms = [];
  }
  showPlayer(sessionStorage.getItem("name") ?? "");
  $("#app").hidden = false;
  return { client: c, userId: tokenClaims(c.token)?.sub ?? "", rooms };
}

/** askName shows the name form until a guest token is issued for the name. */
function askName(c) {
  const section = $("#welcome");
  const form = $("#welcome form");
  form.elements.name.value = localStorage.getItem("name") ?? "";
  section.hidden = false;
  form.elements.name.focus();
  return new Promise((resolve) => {
    bindForm(form, async ({ name }) => {
      const g = await c.guest(name.trim()); // onToken stores the token
      sessionStorage.setItem("name", g.name);
      localStorage.setItem("name", g.name);
      section.hidden = true;
      resolve();
    });
  });
}

function showPlayer(name) {
  const who = $(".who");
  who.replaceChildren(name);
  who.hidden = !name;
  const change = $("#switch-player");
  change.hidden = !name;
  change.addEventListener("click", () => {
    // A new guest in this tab: the old one's rooms idle out.
    sessionStorage.removeItem("token");
    sessionStorage.removeItem("name");
    location.reload();
  });
}

/** halt says the page cannot start (the server is unreachable) and never settles. */
function halt(err) {
  document.body.append(el("section", { class: "panel narrow welcome", role: "alert" },
    el("h1", {}, "Can't start"), el("p", {}, withReload(err))));
  return new Promise(() => {});
}
