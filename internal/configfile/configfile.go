// Package configfile reads the files a deployment's settings name (keys,
// rules, webhook endpoints, certificates): regular files only, and at
// most MaxSize bytes, so that a wrong path can neither hang a start (a
// FIFO, read by os.ReadFile, waits for a writer for good) nor fill its
// memory (/dev/zero).
package configfile

import (
	"fmt"
	"io"
	"os"
)

// MaxSize is the largest file Read takes.
const MaxSize = 16 << 20

// Read returns the content of the regular file at path. Its errors name
// path: os.Open's as they are, "not a regular file" for a FIFO, a device,
// a directory or a socket, "larger than" past MaxSize.
func Read(path string) ([]byte, error) {
	// nonblock: opening a FIFO for reading waits for a writer without it
	f, err := os.OpenFile(path, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, MaxSize>>20)
	}
	return data, nil
}
