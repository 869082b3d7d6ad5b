package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/rooms"
)

// apikeyMain runs `realsyncd apikey -id <id> -scopes <scope,...>`: it makes
// a new random API key and prints it once, then the line to add to
// REALSYNC_API_KEYS_FILE (the key's SHA-256 hash, never the key). Nothing
// else keeps the key. Returns the exit code: 0 done, 2 bad usage.
func apikeyMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("realsyncd apikey", flag.ContinueOnError)
	fs.SetOutput(stderr)
	id := fs.String("id", "", "the key's id, shown in logs and rate limits as key:<id> (1..64 of A-Z a-z 0-9 . _ -)")
	list := fs.String("scopes", "", "comma-separated scopes: rooms:read, rooms:write, rooms:admin")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "realsyncd apikey: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	scopes, err := rooms.ParseScopes(*list)
	if err != nil {
		fmt.Fprintln(stderr, "realsyncd apikey: -scopes:", err)
		return 2
	}
	key, rec, err := api.NewAPIKey(*id, scopes)
	if err != nil {
		fmt.Fprintln(stderr, "realsyncd apikey: -id:", err)
		return 2
	}
	fmt.Fprintln(stderr, "# the key, shown this once: give it to the server that uses it (Authorization: Bearer <key> or X-API-Key: <key>)")
	fmt.Fprintln(stdout, key)
	fmt.Fprintln(stderr, "# the line to add to REALSYNC_API_KEYS_FILE (it holds the key's hash only):")
	fmt.Fprintln(stdout, rec.Line())
	return 0
}
