// Command gen rewrites the event schemas in openapi.yaml from the domain's
// event types (see package eventschema). Run by `go generate` in the
// repository root: go run ./internal/eventschema/gen openapi.yaml
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/realsync/realsync/internal/eventschema"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "eventschema:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: gen <openapi.yaml>")
	}
	spec, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	block, err := eventschema.Block()
	if err != nil {
		return err
	}
	out, err := eventschema.Splice(spec, block)
	if err != nil {
		return err
	}
	if bytes.Equal(out, spec) {
		return nil
	}
	return os.WriteFile(args[0], out, 0o644)
}
