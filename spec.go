// Package realsync holds the API contract, openapi.yaml, embedded so the
// server serves exactly the spec it was built from.
package realsync

// The event schemas of openapi.yaml come from the domain's event types.
//
//go:generate go run ./internal/eventschema/gen openapi.yaml

import _ "embed"

// OpenAPI is the bytes of openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
