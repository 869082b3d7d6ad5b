// Command dedicated-server is a RealSync dedicated game server in a few
// dozen lines: it opens a room, follows the room's events, greets each
// player who joins by writing the room state, and closes the room when it
// is stopped (SIGINT or SIGTERM).
//
// It acts as a server with an API key (REALSYNC_API_KEY, scopes
// rooms:read, rooms:write, rooms:admin): the key reads the events, writes
// any state key and closes the room. Creating a room is for players only,
// so the room is created with the identity token of the server's host
// player (REALSYNC_HOST_TOKEN: a studio's JWT), or a guest token when
// that is unset (servers with guest tokens on).
//
//	REALSYNC_URL=http://localhost:8080 REALSYNC_API_KEY=rsk_... go run ./sdk/go/examples/dedicated-server
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	realsync "github.com/realsync/realsync/sdk/go"
)

func main() {
	url := os.Getenv("REALSYNC_URL")
	if url == "" {
		url = "http://localhost:8080"
	}
	key := os.Getenv("REALSYNC_API_KEY")
	if key == "" {
		log.Fatal("REALSYNC_API_KEY is required (a key with rooms:read, rooms:write and rooms:admin)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, url, key, os.Getenv("REALSYNC_HOST_TOKEN")); err != nil {
		log.Fatal(err)
	}
}

// run serves one room until ctx ends, then closes it.
func run(ctx context.Context, url, key, hostToken string) error {
	host := realsync.New(url, realsync.WithToken(hostToken))
	if hostToken == "" {
		if _, err := host.Guest(ctx, "host"); err != nil { // the guest token replaces the empty one
			return fmt.Errorf("host guest token: %w", err)
		}
	}
	created, err := host.CreateRoom(ctx, realsync.CreateRoomRequest{Name: "Dedicated arena", Mode: "battle", Region: "eu"})
	if err != nil {
		return fmt.Errorf("creating the room: %w", err)
	}
	id := created.Room.Id

	server := realsync.New(url, realsync.WithAPIKey(key))
	defer func() {
		// ctx is over by now: the close gets a few seconds of its own
		closing, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := server.DeleteRoom(closing, id); err != nil && !realsync.IsCode(err, "ROOM_NOT_FOUND") {
			log.Printf("closing room %s: %v", id, err)
			return
		}
		fmt.Println("room", id, "closed")
	}()

	s := server.Stream(ctx, id)
	defer s.Close()
	// announced once the stream is open: every player who joins after the
	// line gets a player_joined event here (one who joined before is only
	// in the snapshot)
	if err := s.Ready(); err != nil {
		return fmt.Errorf("room %s: %w", id, err)
	}
	fmt.Println("room", id, "created")
	for ev, err := range s.Events() {
		if err != nil {
			return fmt.Errorf("room %s: %w", id, err) // a permanent error: *realsync.Error
		}
		switch ev := ev.(type) {
		case *realsync.PlayerJoined:
			fmt.Println(ev.Player.Name, "joined as player", ev.Player.PlayerId)
			patch := realsync.State{"lastJoined": ev.Player.Name,
				fmt.Sprintf("player_%d_greeting", ev.Player.PlayerId): "welcome, " + ev.Player.Name}
			if _, err := server.PatchState(ctx, id, patch); err != nil && !errors.Is(err, context.Canceled) {
				log.Printf("greeting %s: %v", ev.Player.Name, err)
			}
		case *realsync.Reconnecting:
			log.Printf("stream: %v; reconnecting in %s", ev.Err, ev.Delay)
		case *realsync.Resumed:
			log.Printf("stream resumed (snapshot: %v)", ev.Snapshot)
		case *realsync.Closed:
			fmt.Println("stream closed:", ev.Reason)
		}
	}
	return nil
}
