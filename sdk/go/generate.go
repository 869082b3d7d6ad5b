package realsync

// client.gen.go: models and a client of every route, from the contract.
//go:generate go tool oapi-codegen -config config.yaml ../../openapi.yaml
