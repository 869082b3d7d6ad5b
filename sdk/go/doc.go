// Package realsync is the Go client of RealSync, for dedicated game
// servers, bots and tools: a REST client generated from openapi.yaml
// (APIClient, ClientWithResponses and the models: Room, Player, State...),
// a thin layer on top of it (Client: credentials, typed errors, the calls
// a dedicated server makes), and a reader of the live event streams
// (Stream) that resumes after a drop with Last-Event-ID.
//
//	c := realsync.New("http://localhost:8080", realsync.WithAPIKey(os.Getenv("REALSYNC_API_KEY")))
//	s := c.Stream(ctx, roomID)
//	defer s.Close()
//	for ev, err := range s.Events() {
//		if err != nil {
//			return err // a permanent error: *realsync.Error with the problem code
//		}
//		switch ev := ev.(type) {
//		case *realsync.PlayerJoined:
//			c.PatchState(ctx, roomID, realsync.State{"greeting": "hi " + ev.Player.Name})
//		}
//	}
//
// Calls are not sent again by themselves. To retry one that creates
// something (CreateRoom, QuickJoin, SendMessage) after a 503, a timeout or
// a lost answer, send it under an Idempotency-Key: pass a context from
// WithIdempotencyKey, one key per intended operation.
//
// The package imports none of the server's packages: a game server that
// uses it pulls in neither Redis nor a router.
//
// Do not edit client.gen.go; run `go generate ./...` after changing
// openapi.yaml.
package realsync
