# Thin wrappers; scripts/test.sh is what CI runs.
.PHONY: run generate check-generate test lint bench

run:
	go run ./cmd/realsyncd

generate:
	go generate ./...

check-generate: generate
	git diff --exit-code -- api/oapi sdk/go/client.gen.go

test:
	./scripts/test.sh

lint:
	gofmt -l . && go vet ./...

bench:
	go test -run '^$$' -bench . ./store/
