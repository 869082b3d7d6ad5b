// Command composeconfig loads a Compose file the way `docker compose
// config` does (compose-go: schema, interpolation, merge keys, defaults) and
// prints the resolved project as JSON. deploy/lint.sh runs it where no
// Docker engine or compose plugin is installed.
//
// Usage: composeconfig FILE
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: composeconfig FILE")
		os.Exit(2)
	}
	opts, err := cli.NewProjectOptions([]string{os.Args[1]}, cli.WithOsEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "composeconfig:", err)
		os.Exit(1)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "composeconfig:", err)
		os.Exit(1)
	}
	out, err := project.MarshalJSON()
	if err != nil {
		fmt.Fprintln(os.Stderr, "composeconfig:", err)
		os.Exit(1)
	}
	os.Stdout.Write(append(out, '\n'))
}
