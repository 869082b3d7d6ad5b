// The party panel of the lobby. A player joins a friend's party by the
// friend's code (or the Join party button of a friend's row), which lets that
// friend queue them for matches; Leave takes them out. The panel also lists
// the players who joined the player's own party: Find match queues those
// the player follows (friends) with the player, and the match's room opens
// for everyone. Anyone may join anyone's party, so a member the player does
// not follow is shown as such and left out. No event tells a
// leader that someone joined, so the list is read again every 5 s while the
// page is visible, and right before a search. The party the player joined
// is kept in the tab (the server answers 404 for no party, which a browser
// logs as an error): the server is asked on load only when the tab has one,
// to learn whether it still stands.
import { $, bindForm, el, formError } from "./ui.js";
import { friendly } from "./errors.js";
import { friendNames } from "./friends.js";

/** How often the list of the player's own party is read again. */
const refreshEvery = 5000;

/**
 * party runs the panel for the player userId of client c. Returns
 * friends(), which reads the player's own party again and resolves to the
 * user ids of its members the player follows (find match names them), and
 * join(leader), which puts the player in leader's party (a friend's Join
 * party button).
 */
export function party(c, userId) {
  let members = [];
  const name = (id) => friendNames().get(id) || id;

  function showError(err) {
    $("#party-error").textContent = err ? friendly(err) : "";
  }

  /** showLeader shows the party the player is in (leader: a user id, or undefined for none). */
  function showLeader(leader) {
    if (leader) sessionStorage.setItem("party", leader);
    else sessionStorage.removeItem("party");
    $("#party-in").textContent = leader ? `You are in ${name(leader)}'s party.` : "You are in no party.";
    $("#party-leave").hidden = !leader;
  }

  async function readLeader() {
    try {
      showLeader((await c.getParty()).leaderUserId);
    } catch (err) {
      if (err?.code === "PARTY_NOT_FOUND") showLeader(undefined);
      else showError(err);
    }
  }

  function render() {
    const followed = friendNames();
    $("#party-members").replaceChildren(...members.map((id) =>
      el("li", { "data-user": id }, el("span", { class: "name" }, name(id)),
        followed.has(id) ? null : el("span", { class: "muted" }, "not a friend: not queued with you"))));
    $("#no-members").hidden = members.length > 0;
  }

  async function refresh() {
    members = (await c.listPartyMembers()).map((m) => m.userId);
    render();
    return members;
  }

  /** join puts the player in leader's party (replacing any other). */
  async function join(leader) {
    await c.joinParty(leader);
    showLeader(leader);
    showError(undefined);
    formError($("#party-join"), "");
  }

  bindForm($("#party-join"), async (f, form) => {
    const leader = f.leaderUserId.trim();
    if (leader === userId) return formError(form, "That is your own code: friends join your party with it.");
    await join(leader);
    form.reset();
  });

  $("#party-leave").addEventListener("click", async () => {
    try {
      await c.leaveParty();
      showLeader(undefined);
    } catch (err) {
      showError(err);
    }
  });

  // poll reads the list; its error stays shown until a read succeeds
  let failed = false;
  async function poll() {
    try {
      await refresh();
      if (failed) showError(undefined);
      failed = false;
    } catch (err) {
      failed = true;
      showError(err);
    }
  }
  setInterval(() => {
    if (document.visibilityState === "visible") void poll();
  }, refreshEvery);
  if (sessionStorage.getItem("party")) readLeader();
  void poll();
  return {
    friends: async () => {
      const followed = friendNames();
      return (await refresh()).filter((id) => followed.has(id));
    },
    join: (leader) => join(leader).catch(showError),
  };
}
