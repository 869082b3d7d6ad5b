package realsync_test

import (
	"context"
	"fmt"

	realsync "github.com/realsync/realsync/sdk/go"
)

// A dedicated server follows a room with an API key and greets each player
// who joins by writing the room state.
func Example() {
	url, apiKey, stop := exampleServer() // a RealSync server for this example
	defer stop()
	ctx := context.Background()

	// Rooms are created by players: here a guest host.
	host := realsync.New(url)
	if _, err := host.Guest(ctx, "host"); err != nil {
		panic(err)
	}
	created, err := host.CreateRoom(ctx, realsync.CreateRoomRequest{Name: "Arena", Mode: "battle", Region: "eu"})
	if err != nil {
		panic(err)
	}
	roomID := created.Room.Id

	server := realsync.New(url, realsync.WithAPIKey(apiKey))
	s := server.Stream(ctx, roomID)
	defer s.Close()
	for ev, err := range s.Events() {
		if err != nil {
			fmt.Println(err) // a permanent error: *realsync.Error
			return
		}
		switch ev := ev.(type) {
		case *realsync.Snapshot:
			fmt.Println("room", ev.Room.Name, "with", ev.Room.PlayerCount, "player")
			bob := realsync.New(url)
			if _, err := bob.Guest(ctx, "bob"); err != nil {
				panic(err)
			}
			if _, err := bob.JoinRoom(ctx, roomID); err != nil {
				panic(err)
			}
		case *realsync.PlayerJoined:
			fmt.Println(ev.Player.Name, "joined as player", ev.Player.PlayerId)
			if _, err := server.PatchState(ctx, roomID, realsync.State{"greeting": "welcome, " + ev.Player.Name}); err != nil {
				panic(err)
			}
		case *realsync.StateChanged:
			fmt.Printf("state by %d: %v\n", ev.By, ev.Set)
			return
		}
	}
	// Output:
	// room Arena with 1 player
	// bob joined as player 2
	// state by 0: map[greeting:welcome, bob]
}

// Error answers are *realsync.Error values with the problem code.
func ExampleIsCode() {
	url, _, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	c := realsync.New(url)
	if _, err := c.Guest(ctx, "alice"); err != nil {
		panic(err)
	}
	_, err := c.GetRoom(ctx, "no-such-room")
	fmt.Println(realsync.IsCode(err, "ROOM_NOT_FOUND"), realsync.StatusOf(err))
	fmt.Println(err)
	// Output:
	// true 404
	// realsync: 404 ROOM_NOT_FOUND: Room not found
}

// A read-modify-write of the state that loses no concurrent update: on
// VERSION_MISMATCH, read again.
func ExampleClient_PatchStateIf() {
	var c *realsync.Client // realsync.New(url, realsync.WithAPIKey(key))
	ctx, roomID := context.Background(), "r7Kx2"
	for {
		st, err := c.GetState(ctx, roomID)
		if err != nil {
			return
		}
		round, _ := st.State["round"].(float64)
		_, err = c.PatchStateIf(ctx, roomID, st.StateVersion, realsync.State{"round": round + 1})
		if !realsync.IsCode(err, "VERSION_MISMATCH") {
			return
		}
	}
}
