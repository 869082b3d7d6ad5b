// Friendly error messages: a RealSyncError's problem code becomes a sentence
// a player understands, and its field errors become hints by field (never a
// raw regex from the server's validation message).

/** Sentences by problem code; `context` picks a more precise one where it helps. */
const sentences = {
  NETWORK: "Can't reach the server. Check your connection and try again.",
  UNAUTHENTICATED: "Your session has ended (it expired, or the server restarted). Reload the page to play again.",
  GUEST_AUTH_DISABLED: "This server doesn't accept guest players.",
  ROOM_NOT_FOUND: "That room doesn't exist any more.",
  PLAYER_NOT_FOUND: "That player isn't in the room any more.",
  NO_MATCH: "No open room of that mode and region right now. Create one!",
  ROOM_FULL: "That room is full.",
  ROOM_NOT_JOINABLE: "That room has already started or is locked.",
  NOT_OWNER: "Only the room's owner can do that.",
  NOT_A_MEMBER: "You're not in this room (any more).",
  STATE_KEY_FORBIDDEN: "You can only change your own keys (they start with player_<your number>_); the owner can change any key.",
  INVALID_TRANSITION: "The game can't switch to that status from where it is.",
  ROOM_FINISHED: "This game is over: the room is read-only now.",
  VERSION_MISMATCH: "Someone changed that at the same moment. Try again.",
  PAYLOAD_TOO_LARGE: "That's too long.",
  OWNED_ROOMS_LIMIT: "You already own as many rooms as allowed. Leave one first.",
  JOINED_ROOMS_LIMIT: "You're in as many rooms as allowed. Leave one first.",
  TOO_MANY_STREAMS: "This room is open in too many tabs. Close some and reload.",
  STREAM_LIMIT: "You have too many rooms open at once. Close some tabs and reload.",
  RATE_LIMITED: "Slow down a little, then try again in a few seconds.",
  ROOM_RATE_LIMITED: "This room is very busy. Try again in a second.",
  STREAM_OPENS_LIMITED: "Reconnecting too often. Wait a minute and reload.",
  CODE_GUESSES_LIMITED: "Too many wrong invite codes. Wait a minute before trying again.",
  BANNED: "The owner has removed you from this room for good.",
  VALIDATION_FAILED: "Please check the fields marked below.",
  TICKET_ACTIVE: "You, or a player in your party, are already searching for a match.",
  MEMBER_QUEUED_IN_PARTY: "Your party's leader is already searching for a match with you.",
  PARTY_CONSENT_REQUIRED: "A player in your party hasn't agreed to be queued by you (they may have just left). Try again.",
  STORE_UNAVAILABLE: "The server is having trouble. Try again in a moment.",
  REQUEST_TIMEOUT: "The server took too long to answer. Try again.",
  INTERNAL: "Something went wrong on the server. Try again in a moment.",
};

/** More precise sentences for one action. */
const byContext = {
  joinByCode: { ROOM_NOT_FOUND: "No room has that invite code. Check it and try again." },
  join: { ROOM_NOT_FOUND: "That room is gone, or it is private (ask for its invite code)." },
  kick: { PLAYER_NOT_FOUND: "That player has already left." },
  patch: { STATE_KEY_FORBIDDEN: "That key isn't yours: players set only their own keys (see below), the owner any key." },
};

/** Hints by field, shown instead of the server's wording (which may hold a regex). */
const fieldHints = {
  playerName: "Pick a name of 1 to 32 characters.",
  name: "Give the room a name of 1 to 64 characters.",
  mode: "Lowercase letters, digits, - and _ (up to 32), starting with a letter or digit.",
  region: "Lowercase letters, digits, - and _ (up to 32), starting with a letter or digit.",
  maxPlayers: "Choose between 1 and 100 players.",
  inviteCode: "Invite codes look like K7Q2-MX9P-4HRT (12 letters and digits).",
  key: "Keys use letters, digits and _ . : - (1 to 64 characters).",
  text: "Messages hold up to 500 characters.",
  leaderUserId: "That isn't a friend code: copy it from your friend's Friends panel.",
};

/** fieldName maps a server field path ("regions.0", "patch.score") to a form field name. */
export function fieldName(field) {
  if (field === "regions" || field.startsWith("regions.")) return "region";
  if (field.startsWith(".") || field.startsWith("state.")) return "key"; // a state key
  if (field === "data" || field.startsWith("data.")) return "text";
  return field;
}

/** fieldMessage is the hint for a field error: the server's allowed names
 * when it lists them, else the field's hint, else its message without any regex. */
export function fieldMessage(field, message = "") {
  if (message.startsWith("must be one of: ")) return `Choose one of: ${message.slice(16)}.`;
  const hint = fieldHints[field];
  if (hint) return hint;
  if (/[\^$\\[\]{}]/.test(message)) return "This value isn't in an accepted form.";
  return message ? message[0].toUpperCase() + message.slice(1) + "." : "This value isn't accepted.";
}

/** hintFor is a field's hint (for client-side validation), if it has one. */
export function hintFor(field) {
  return fieldHints[field];
}

/** friendly is the sentence for an error thrown by the SDK (or anything else). */
export function friendly(err, context) {
  const code = err?.code;
  if (code && byContext[context]?.[code]) return byContext[context][code];
  if (code && sentences[code]) return sentences[code];
  if (code) return `Something went wrong (${code}).`;
  return "Something went wrong. Try again.";
}

/** withReload is friendly(err) followed by hint, a sentence asking to
 * reload, unless friendly(err) already asks for that (never twice). */
export function withReload(err, hint = "Reload the page to try again.") {
  const sentence = friendly(err);
  return /\breload\b/i.test(sentence) ? sentence : `${sentence} ${hint}`;
}
