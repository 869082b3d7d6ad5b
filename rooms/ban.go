package rooms

// MaxBans bounds the bans one room holds (user ids of at most 128
// characters: at most about 130 KB per room). A kick with ban past it is
// refused with a validation error on "ban" and kicks nobody; a plain kick
// still works. Bans live as long as the room and go with it.
const MaxBans = 1000
