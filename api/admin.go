package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/internal/fleet"
)

// admin guards the operator routes under /v1/admin/ with the admin token
// instead of a player token.
type admin struct {
	// hash is SHA-256 of the admin token; enabled false: no token
	// configured, and the admin routes do not exist (404).
	hash    [sha256.Size]byte
	enabled bool
	// instances lists the live instances.
	instances func(context.Context) ([]fleet.Instance, error)
}

func newAdmin(token string, instances func(context.Context) ([]fleet.Instance, error)) admin {
	if token != "" && instances == nil {
		panic("api: Config.Instances is required with an AdminToken")
	}
	return admin{hash: sha256.Sum256([]byte(token)), enabled: token != "", instances: instances}
}

// isAdmin tells the admin routes, which the player authentication skips.
func isAdmin(path string) bool { return strings.HasPrefix(path, "/v1/admin/") }

// authorizeAdmin accepts exactly the admin token as a bearer token (no
// access_token parameter), alone: beside another credential (oneCredential)
// it is 401, as on every route. Without an admin token configured the route
// is not found; a missing or wrong token is 401, a valid player token 403.
// The tokens are hashed before a constant-time comparison, so neither the
// token's bytes nor its length leak through timing.
func (s *Server) authorizeAdmin(r *http.Request) error {
	if !s.admin.enabled {
		return errRouteNotFound
	}
	if err := oneCredential(r); err != nil {
		return err
	}
	token, ok := bearer(r)
	if !ok {
		return fmt.Errorf("missing admin bearer token: %w", errUnauthenticated)
	}
	h := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(h[:], s.admin.hash[:]) == 1 {
		return nil
	}
	if _, err := s.auth.Verify(token); err == nil {
		return fmt.Errorf("this route needs the admin token, not a player token: %w", errAdminRequired)
	}
	return fmt.Errorf("invalid admin token: %w", errUnauthenticated)
}

// ListInstances implements GET /v1/admin/instances.
func (s *Server) ListInstances(w http.ResponseWriter, r *http.Request) {
	ins, err := s.admin.instances(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := oapi.InstanceList{Instances: make([]oapi.Instance, len(ins))}
	for i, in := range ins {
		out.Instances[i] = oapi.Instance{Id: in.ID, Addr: in.Addr, Version: in.Version,
			StartedAt: in.StartedAt.UTC(), HeartbeatAt: in.HeartbeatAt.UTC(), Streams: in.Streams, Settings: in.Settings}
	}
	writeJSON(w, http.StatusOK, out)
}

// serveAdmin passes an admin request on once its token is the admin token.
func (s *Server) serveAdmin(next http.Handler, w http.ResponseWriter, r *http.Request) {
	if err := s.authorizeAdmin(r); err != nil {
		// a refused admin token counts on the address's auth limit, as
		// any refused credential
		if !errors.Is(err, errUnauthenticated) || s.limitUnauthenticated(w, r) {
			s.writeError(w, r, err)
		}
		return
	}
	next.ServeHTTP(w, r)
}
