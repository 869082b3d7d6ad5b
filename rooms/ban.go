package rooms

// MaxBans bounds the bans one room holds (user ids of at most 128
// characters: at most about 130 KB per room). A kick with ban past it is
// refused with a validation error on "ban" and kicks nobody; a plain kick
// still works. Bans live as long as the room and go with it. A room also
// remembers its last MaxBans plain kicks, by user: quick-join and the
// matcher's backfill do not send a kicked user back to it (a join by id or
// code still may).
const MaxBans = 1000
