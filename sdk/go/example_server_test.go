package realsync_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	rs "github.com/realsync/realsync/sdk/go"
)

// The dedicated-server example, built and run as a user would: it creates
// a room, greets a player who joins by writing the state, and on SIGINT
// closes the room and exits 0.
func TestDedicatedServerExample(t *testing.T) {
	s := newServer(t, redistestEmbedded, serverOpts{})
	bin := filepath.Join(t.TempDir(), "dedicated-server")
	if out, err := exec.Command("go", "build", "-o", bin, "./examples/dedicated-server").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "REALSYNC_URL="+s.url, "REALSYNC_API_KEY="+s.keys.all, "REALSYNC_HOST_TOKEN=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed once the process was waited for
	var exitErr error
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default: // the test failed midway
			cmd.Process.Kill()
			for range lines {
			}
			<-exited
		}
	})
	line := func() string {
		t.Helper()
		select {
		case l := <-lines:
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("no output from the example within 30 s")
		}
		return ""
	}

	first := line()
	id, ok := strings.CutPrefix(first, "room ")
	id, ok2 := strings.CutSuffix(id, " created")
	if !ok || !ok2 {
		t.Fatalf("first line %q", first)
	}
	c := ctx(t)
	watch := rs.New(s.url, rs.WithAPIKey(s.keys.reader)).Stream(c, id)
	defer watch.Close()
	if err := watch.Ready(); err != nil {
		t.Fatal(err)
	}
	bob := s.guest(t, "bob")
	if _, err := bob.JoinRoom(c, id); err != nil {
		t.Fatal(err)
	}
	got := until(t, watch, func(ev rs.Event) bool { _, ok := ev.(*rs.StateChanged); return ok })
	st := got[len(got)-1].(*rs.StateChanged)
	if st.By != 0 || st.Set["lastJoined"] != "bob" || st.Set["player_2_greeting"] != "welcome, bob" {
		t.Fatalf("state event %s", st.Raw)
	}
	if l := line(); l != "bob joined as player 2" {
		t.Fatalf("output %q", l)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	<-exited
	if exitErr != nil {
		t.Fatalf("exit: %v (output %q)", exitErr, rest)
	}
	if strings.Join(rest, "\n") != "stream closed: closed\nroom "+id+" closed" {
		t.Fatalf("output after SIGINT: %q", rest)
	}
	if _, err := bob.GetRoom(c, id); !rs.IsCode(err, "ROOM_NOT_FOUND") {
		t.Fatalf("the room after the example stopped: %v", err)
	}
}
