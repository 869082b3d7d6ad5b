// Package netns runs test processes in Linux network namespaces joined to
// the host's by veth links that a test cuts and heals: a network partition
// on one machine. It needs root and the ip command (iproute2).
package netns

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Unavailable says why namespaces cannot be used here ("" when they can).
func Unavailable() string {
	if os.Geteuid() != 0 {
		return "network namespaces need root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "network namespaces need the ip command (iproute2)"
	}
	return ""
}

// NS is a network namespace with its loopback up and nothing else until
// links are added. It is deleted, with its links, when the test ends.
type NS struct {
	Name  string
	links int
}

// New creates a namespace, removed when tb ends.
func New(tb testing.TB) *NS {
	tb.Helper()
	n := &NS{Name: "rs" + randomHex(4)}
	run(tb, "ip", "netns", "add", n.Name)
	// Deleting the namespace destroys the veth ends inside it, and so their
	// peers on the host.
	tb.Cleanup(func() { exec.Command("ip", "netns", "del", n.Name).Run() })
	run(tb, "ip", "-n", n.Name, "link", "set", "lo", "up")
	return n
}

// Command is a command that runs inside the namespace (ip netns exec
// replaces itself with it, so the process is the command's own).
func (n *NS) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Link is a veth pair between the host and a namespace, on a /30 of its own:
// Host is the host end's address, Inside the namespace end's.
type Link struct {
	Host, Inside string
	dev          string // the host end
	tb           testing.TB
}

// Link adds a veth pair between the host and the namespace, up, on a random
// /30 in 10.200.0.0/13.
func (n *NS) Link(tb testing.TB) *Link {
	tb.Helper()
	n.links++
	host, inside := fmt.Sprintf("%sh%d", n.Name, n.links), fmt.Sprintf("%si%d", n.Name, n.links)
	var b [4]byte
	rand.Read(b[:])
	v := binary.BigEndian.Uint32(b[:])
	base := fmt.Sprintf("10.%d.%d.%d", 200+v%8, (v>>3)%256, ((v>>11)%64)*4)
	l := &Link{Host: ip(base, 1), Inside: ip(base, 2), dev: host, tb: tb}
	run(tb, "ip", "link", "add", host, "type", "veth", "peer", "name", inside, "netns", n.Name)
	tb.Cleanup(func() { exec.Command("ip", "link", "del", host).Run() })
	run(tb, "ip", "addr", "add", l.Host+"/30", "dev", host)
	run(tb, "ip", "-n", n.Name, "addr", "add", l.Inside+"/30", "dev", inside)
	run(tb, "ip", "link", "set", host, "up")
	run(tb, "ip", "-n", n.Name, "link", "set", inside, "up")
	return l
}

// Cut takes the host end down: packets either way are dropped silently, as
// in a partition (no reset, no "unreachable": connections hang).
func (l *Link) Cut() { run(l.tb, "ip", "link", "set", l.dev, "down") }

// Heal brings the host end up again.
func (l *Link) Heal() { run(l.tb, "ip", "link", "set", l.dev, "up") }

func ip(base string, last int) string {
	i := strings.LastIndexByte(base, '.')
	var n int
	fmt.Sscan(base[i+1:], &n)
	return fmt.Sprintf("%s.%d", base[:i], n+last)
}

func run(tb testing.TB, name string, args ...string) {
	tb.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}
