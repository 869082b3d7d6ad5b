package redistest

import (
	"errors"
	"strconv"
	"testing"
)

// A server started on a port another server holds is not taken for
// started: the one that answers there is not its process (before, the
// test went on against the other test's server).
func TestStartOnATakenPortFails(t *testing.T) {
	a, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	b, err := NewServer()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	b.args[1] = strconv.Itoa(a.Port)
	b.Addr = a.Addr
	err = b.Start()
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("start on a taken port: %v", err)
	}
}
