package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// openOn is New, then before (given the store's client, before Init reads
// anything), then Init: a store of prefix and 8 shards on b.
func openOn(t *testing.T, b redistest.Backend, prefix string, before func(s *store.Store)) (*store.Store, error) {
	t.Helper()
	s, err := store.New(store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: prefix, Shards: 8, Batch: testBatch()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if before != nil {
		before(s)
	}
	return s, s.Init(context.Background())
}

// shardOfKey is the shard of the room whose hash key is key: its id's
// first two base-36 digits.
func shardOfKey(key string) int {
	n, _ := strconv.ParseInt(key[strings.LastIndexByte(key, ':')+1:][:2], 36, 32)
	return int(n)
}

// The shards' tags a deployment has come from the schema it recorded: a
// new deployment records SchemaVersion and spread tags; one of PlainSchema
// (every deployment made before) keeps its plain tags, its keys where they
// are; a store that finds the record gone but plain-tagged data (the
// record alone lost) records PlainSchema; other schemas are refused.
func TestShardTagsOfADeployment(t *testing.T) {
	ctx := context.Background()
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		// createAndRead creates a room on s and reads it on r, and
		// returns its hash key as the store names it
		createAndRead := func(t *testing.T, s, r *store.Store) string {
			t.Helper()
			j, err := s.Create(ctx, rooms.User{ID: "u-ann", Name: "ann"}, rooms.NewRoom{Name: "a", Mode: "m", Region: "eu",
				MaxPlayers: 4, Visibility: rooms.Public, State: rooms.State{}, StatePolicy: rooms.PolicyOwner})
			if err != nil {
				t.Fatal(err)
			}
			if got, _, err := r.Get(ctx, j.Room.ID, false); err != nil || got.ID != j.Room.ID {
				t.Fatalf("room %s read by another store: %+v %v", j.Room.ID, got, err)
			}
			key := s.RoomKeys(j.Room.ID)[0]
			if n := s.Client().Exists(ctx, key).Val(); n != 1 {
				t.Fatalf("room %s: no key %s in Redis", j.Room.ID, key)
			}
			return key
		}
		seed := func(fields ...any) func(s *store.Store) {
			return func(s *store.Store) {
				if err := s.Client().HSet(ctx, s.Prefix()+":meta", fields...).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}

		t.Run("new", func(t *testing.T) {
			prefix := redistest.Prefix(t)
			s, err := openOn(t, b, prefix, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Client().HGet(ctx, prefix+":meta", "schema").Val(); got != strconv.Itoa(store.SchemaVersion) || s.Schema() != store.SchemaVersion {
				t.Fatalf("a new deployment recorded schema %q, serves %d; want %d", got, s.Schema(), store.SchemaVersion)
			}
			r := s
			if b.Name != "embedded" { // the embedded store is the process' own
				if r, err = openOn(t, b, prefix, nil); err != nil {
					t.Fatal(err)
				}
			}
			key := createAndRead(t, s, r)
			if shard := shardOfKey(key); !strings.HasPrefix(key, "{"+prefix+":"+strconv.Itoa(shard)+":") || !strings.HasPrefix(key, s.Base().Tag(shard)+":room:") {
				t.Fatalf("a new deployment's room key %q, want its shard's spread tag {%s:<shard>:<salt>}", key, prefix)
			}
		})

		t.Run("plain", func(t *testing.T) {
			prefix := redistest.Prefix(t)
			s, err := openOn(t, b, prefix, seed("shards", 8, "schema", store.PlainSchema))
			if err != nil {
				t.Fatal(err)
			}
			if s.Schema() != store.PlainSchema {
				t.Fatalf("serves schema %d, want %d", s.Schema(), store.PlainSchema)
			}
			key := createAndRead(t, s, s)
			id := key[strings.LastIndexByte(key, ':')+1:]
			if want := "{" + prefix + ":" + strconv.Itoa(shardOfKey(key)) + "}:room:" + id; key != want {
				t.Fatalf("a plain deployment's room key %q, want %q", key, want)
			}
			if got := s.Client().HGet(ctx, prefix+":meta", "schema").Val(); got != strconv.Itoa(store.PlainSchema) {
				t.Fatalf("the record's schema became %q", got)
			}
			if b.Name == "embedded" {
				return
			}
			// the record lost, the data kept: a new store finds the
			// plain data and keeps its tags
			if err := s.Client().Del(ctx, prefix+":meta").Err(); err != nil {
				t.Fatal(err)
			}
			r, err := openOn(t, b, prefix, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Client().HGet(ctx, prefix+":meta", "schema").Val(); got != strconv.Itoa(store.PlainSchema) || r.Schema() != store.PlainSchema {
				t.Fatalf("the record lost, plain data kept: recorded schema %q, serves %d; want %d", got, r.Schema(), store.PlainSchema)
			}
			if got, _, err := r.Get(ctx, id, false); err != nil || got.ID != id {
				t.Fatalf("room %s after the record was lost: %+v %v", id, got, err)
			}
		})

		t.Run("plain, idle", func(t *testing.T) {
			if b.Name == "embedded" { // the process' own: no second store shares it
				return
			}
			// its rooms deleted, no one online, no instance running: a
			// user's offline message (and the shard's clock) is all the
			// deployment holds when its record is lost
			prefix := redistest.Prefix(t)
			s, err := openOn(t, b, prefix, seed("shards", 8, "schema", store.PlainSchema))
			if err != nil {
				t.Fatal(err)
			}
			ann := rooms.User{ID: "u-ann", Name: "ann"}
			j, err := s.Create(ctx, ann, rooms.NewRoom{Name: "a", Mode: "m", Region: "eu",
				MaxPlayers: 4, Visibility: rooms.Public, State: rooms.State{}, StatePolicy: rooms.PolicyOwner})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Delete(ctx, ann, j.Room.ID); err != nil {
				t.Fatal(err)
			}
			if err := s.Client().Del(ctx, s.Base().Tag(shardOfKey(s.RoomKeys(j.Room.ID)[0]))+":janitor").Err(); err != nil {
				t.Fatal(err)
			}
			const uid = "u-offline"
			if _, err := s.UserLogs().Send(ctx, uid, []byte(`{"type":"message","n":1}`)); err != nil {
				t.Fatal(err)
			}
			if err := s.Client().Del(ctx, prefix+":meta").Err(); err != nil {
				t.Fatal(err)
			}
			r, err := openOn(t, b, prefix, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Schema() != store.PlainSchema {
				t.Fatalf("the record lost, a plain deployment's user log kept: serves schema %d, want %d", r.Schema(), store.PlainSchema)
			}
			if n := r.Client().XLen(ctx, r.UserLogs().KeysOf(uid).Log).Val(); n != 1 {
				t.Fatalf("the user's log as the new store names it holds %d events, want 1", n)
			}
		})

		t.Run("refused", func(t *testing.T) {
			for _, v := range []string{"2", strconv.Itoa(store.SchemaVersion + 1), "x"} {
				prefix := redistest.Prefix(t)
				if _, err := openOn(t, b, prefix, seed("shards", 8, "schema", v)); !errors.Is(err, store.ErrLayout) {
					t.Errorf("schema %s: %v, want ErrLayout", v, err)
				}
			}
		})
	})
}

// A running store keeps the schema it found at its start: the record
// changed to the other served schema (the other tags) makes Ready fail
// with ErrLayout until it is back, and a record lost is restored with the
// store's own.
func TestJanitorKeepsTheSchemaItServes(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s := openStore(t, b)
		meta := s.Prefix() + ":meta"
		log := runJanitor(t, s)
		if err := s.Client().HSet(ctx, meta, "schema", store.PlainSchema).Err(); err != nil {
			t.Fatal(err)
		}
		wait.Until(t, "Ready does not fail with ErrLayout", func() bool { return errors.Is(s.Ready(ctx), store.ErrLayout) })
		wait.Until(t, "no error naming the schema served", func() bool {
			return strings.Contains(log.String(), "level=ERROR") && strings.Contains(log.String(), "schema "+strconv.Itoa(store.SchemaVersion)+" (spread)")
		})
		if err := s.Client().Del(ctx, meta).Err(); err != nil {
			t.Fatal(err)
		}
		wait.Until(t, "Ready still fails once the record is restored", func() bool { return s.Ready(ctx) == nil })
		if got := s.Client().HGet(ctx, meta, "schema").Val(); got != strconv.Itoa(store.SchemaVersion) {
			t.Fatalf("restored schema %q, want the store's %d", got, store.SchemaVersion)
		}
	})
}
