//go:build unix

package configfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Read takes a regular file, or a symbolic link to one (a Kubernetes
// Secret's files are links), and refuses at once what is not one: a FIFO
// (os.ReadFile waits for its writer for good), a directory, a device; and
// a file past MaxSize.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "keys")
	if err := os.WriteFile(good, []byte("k1 sha256:00 rooms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, make([]byte, MaxSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	atMost := filepath.Join(dir, "atmost")
	if err := os.WriteFile(atMost, make([]byte, MaxSize), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, err string
		size            int
	}{
		{name: "Regular", path: good, size: 19},
		{name: "Link", path: link, size: 19},
		{name: "AtMost", path: atMost, size: MaxSize},
		{name: "Missing", path: filepath.Join(dir, "none"), err: "open " + filepath.Join(dir, "none") + ": no such file"},
		{name: "FIFO", path: fifo, err: fifo + ": not a regular file (p"},
		{name: "Directory", path: dir, err: dir + ": not a regular file (d"},
		{name: "Device", path: "/dev/zero", err: "/dev/zero: not a regular file (D"},
		{name: "TooLarge", path: huge, err: huge + ": larger than 16 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var data []byte
			var err error
			go func() { data, err = Read(tc.path); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Minute): // a hang is for good; a loaded CI took over 10 s for 16 MiB under -race
				t.Fatal("Read hangs")
			}
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "" && len(data) != tc.size:
				t.Fatalf("read %d bytes, want %d", len(data), tc.size)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}
