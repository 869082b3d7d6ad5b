// Package web holds the demo served by realsyncd at /demo: a lobby page and
// a room page built on the TypeScript SDK (static/realsync.js is its
// bundle, made by `npm run bundle` in sdk/typescript).
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// Demo is the demo's files.
func Demo() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err)
	}
	return sub
}
