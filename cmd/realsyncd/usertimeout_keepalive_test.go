//go:build linux

package main

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/realsync/realsync/internal/netns"
)

// A live client whose connection idles (a keep-alive connection between
// requests, a request the server has not answered yet) keeps it when one
// keepalive probe, or its answer, is lost. With TCP_USER_TIMEOUT set the
// kernel drops an idle connection once nothing was received for the
// timeout and a probe is unanswered, whatever the keepalive count: with
// Go's keepalive (15 s idle, 15 s between probes) and a timeout of at most
// 30 s, the first probe is the only one, and a single lost packet on a
// phone's network would cut a live client. The listener spaces the probes
// so that several fit within the timeout. A real kernel connection: the
// client in a network namespace, its link down while the first probe goes.
func TestUserTimeoutKeepsIdleClientPastALostProbe(t *testing.T) {
	if why := netns.Unavailable(); why != "" {
		t.Skip(why)
	}
	ns := netns.New(t)
	link := ns.Link(t)
	ln, err := net.Listen("tcp", link.Host+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wrapped := withUserTimeout(ln, 6*time.Second, slog.Default())
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	// the client: connects, then sends nothing and closes nothing (its
	// kernel answers the probes)
	client := ns.Command("bash", "-c", "exec 3<>/dev/tcp/"+link.Host+"/"+port+" && exec sleep 600")
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Process.Kill(); client.Wait() })
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(time.Minute)) // a client that never came fails, not hangs
	raw := acceptSocket(t, wrapped)
	info := func() *unix.TCPInfo {
		return getsockopt(t, raw, func(fd int) (*unix.TCPInfo, error) {
			return unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		})
	}
	// a bound against a hang only: the kernel's own timers decide
	deadline := time.Now().Add(2 * time.Minute)
	link.Cut()
	for info().Probes == 0 { // the first probe, lost
		if i := info(); i.State != unix.BPF_TCP_ESTABLISHED || time.Now().After(deadline) {
			t.Fatalf("no keepalive probe sent (state %d)", i.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	link.Heal()
	for {
		i := info()
		if i.State != unix.BPF_TCP_ESTABLISHED {
			t.Fatalf("a live idle client's connection was dropped after one lost keepalive probe (state %d, %d probes out)", i.State, i.Probes)
		}
		if i.Probes == 0 { // a later probe answered: the connection lives
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no probe answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
