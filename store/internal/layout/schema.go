package layout

import "errors"

// SchemaVersion is the version of the key schema, recorded in the meta
// hash (Keys.Meta) at the first start; an instance refuses to start on data
// written with another, and store/migrate upgrades older data to it, one
// step a version. 2: player records "<joinedAt offset>|<name>", the user
// index a hash; 3: a user's log meta and cursors keyed
// {p:s}:ulogm:<userId> and {p:s}:ulogc:<userId>; 4: the shards' hash
// tags spread evenly over the slots (SpreadTags). A change to a key's name
// or encoding raises it and ships with a step from the version before,
// but for 4: a deployment of schema 3 keeps its plain tags and is served
// as it is (PlainSchema, SchemeOf), so an upgrade moves no key; new
// deployments record 4, which releases before it refuse.
// (Here, beside the keys, so that the root store, which checks it, and
// store/migrate, which upgrades to it, share it; store re-exports it.)
const SchemaVersion = 4

// ErrLayout says Redis holds data laid out for another deployment: another
// shard count or key-schema version. It is a configuration error, never an
// outage: retrying cannot help. Returned (wrapped) by the root store's
// Init and by store/migrate; store re-exports it as store.ErrLayout.
var ErrLayout = errors.New("redis holds data of another layout")
