// Package oapi holds the server interface and models generated from
// openapi.yaml. Do not edit oapi.gen.go; run `go generate ./...`.
package oapi

//go:generate go tool oapi-codegen -config config.yaml ../../openapi.yaml
