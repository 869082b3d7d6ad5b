// The friends panel of the lobby: the player's friend code (its user id, to
// give to friends), following a friend by code, and each friend's status
// live from the player's personal stream (platform "web"): online with its
// platforms, or offline. Whom the player follows is the server's (PUT
// /v1/me/following, whose answer replaces the list); the tab keeps a copy,
// with the names the player gave, to show the list before the stream's
// first presence events.
import { $, bindForm, copy, el, formError } from "./ui.js";
import { friendly } from "./errors.js";

const platformNames = { pc: "PC", console: "console", mobile: "mobile", web: "web" };

/** friendNames is the tab's friends: user id → the name the player gave ("" for none). */
export function friendNames() {
  try {
    return new Map(Object.entries(JSON.parse(sessionStorage.getItem("friends") ?? "{}")));
  } catch {
    return new Map();
  }
}

/**
 * friends runs the panel for the player userId of client c, following the
 * presence events of me (the player's LiveMe); each friend's Join party
 * button calls joinParty with the friend's user id. Returns nothing; the
 * panel lives as long as the page.
 */
export function friends(c, userId, me, joinParty) {
  const names = friendNames();
  const keep = () => sessionStorage.setItem("friends", JSON.stringify(Object.fromEntries(names)));

  $("#my-code").textContent = userId;
  $("#copy-code").addEventListener("click", async (e) => {
    const button = e.currentTarget;
    button.textContent = (await copy(userId, $("#my-code"))) ? "Copied" : "Select + copy";
  });

  /** follow sends the whole list; the server's answer (sorted, deduplicated) is kept. */
  async function follow(ids) {
    const now = await c.setFollowing(ids);
    for (const id of [...names.keys()]) if (!now.includes(id)) names.delete(id);
    for (const id of now) if (!names.has(id)) names.set(id, "");
    keep();
    render();
  }

  function status(id) {
    const p = me.presence.get(id);
    if (!p) return { on: false, text: "…" };
    if (!p.online) return { on: false, text: "offline" };
    return { on: true, text: `online · ${p.platforms.map((x) => platformNames[x] ?? x).join(", ")}` };
  }

  function row(id) {
    const s = status(id);
    const name = names.get(id) || id;
    return el("li", { "data-user": id },
      el("span", { class: `dot${s.on ? " on" : ""}`, "aria-hidden": "true" }),
      el("span", { class: "name" }, name),
      el("span", { class: "muted presence" }, s.text),
      el("button", { type: "button", class: "small ghost", "aria-label": `Join ${name}'s party`,
        onclick: () => joinParty(id) }, "Join party"),
      el("button", { type: "button", class: "small ghost", "aria-label": `Unfollow ${name}`,
        onclick: () => follow([...names.keys()].filter((x) => x !== id)).catch(showError) }, "Unfollow"));
  }

  function render() {
    $("#friends").replaceChildren(...[...names.keys()].map(row));
    $("#no-friends").hidden = names.size > 0;
  }

  function showError(err) {
    $("#friends-error").textContent = friendly(err);
  }

  bindForm($("#follow"), async (f, form) => {
    const id = f.userId.trim();
    if (id === userId) return formError(form, "That is your own code: give it to a friend.");
    names.set(id, f.label.trim());
    try {
      await follow([...names.keys()]);
    } catch (err) {
      names.delete(id);
      throw err;
    }
    form.reset();
  }, "follow");

  me.on("presence", render);
  me.on("closed", (e) => {
    if (e?.error) showError(e.error);
  });
  me.ready?.catch(() => {}); // shown by the closed handler
  render();
  if (names.size > 0) follow([...names.keys()]).catch(showError); // the server's list may be gone (an embedded store restarted)
}
