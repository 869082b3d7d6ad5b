package main

import (
	"slices"
	"testing"
	"time"

	"github.com/realsync/realsync/api"
)

// The hardening settings parse, flags win over variables, and every bad
// value is reported naming its variable.
func TestParseConfigHardening(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		modes   []string
		regions []string
		cors    []string
		timeout time.Duration
		// maxInFlight, wait: the admission (wait 500ms unless told)
		maxInFlight int
		wait        time.Duration
		err         string // want an error naming this, "" for none
	}{
		{name: "Defaults", timeout: 10 * time.Second},
		{name: "Lists", env: map[string]string{"REALSYNC_MODES": "battle, duel", "REALSYNC_REGIONS": "eu,us-west"},
			modes: []string{"battle", "duel"}, regions: []string{"eu", "us-west"}, timeout: 10 * time.Second},
		{name: "FlagWins", env: map[string]string{"REALSYNC_MODES": "battle"}, args: []string{"-modes", "race", "-request-timeout", "3s"},
			modes: []string{"race"}, timeout: 3 * time.Second},
		{name: "Origins", env: map[string]string{"REALSYNC_CORS_ORIGINS": "https://game.example,http://localhost:5173"},
			cors: []string{"https://game.example", "http://localhost:5173"}, timeout: 10 * time.Second},
		{name: "AnyOrigin", env: map[string]string{"REALSYNC_CORS_ORIGINS": "*"}, cors: []string{"*"}, timeout: 10 * time.Second},
		{name: "BadMode", env: map[string]string{"REALSYNC_MODES": "Battle"}, err: "REALSYNC_MODES"},
		{name: "EmptyMode", env: map[string]string{"REALSYNC_MODES": "battle,,duel"}, err: "REALSYNC_MODES"},
		{name: "RepeatedRegion", env: map[string]string{"REALSYNC_REGIONS": "eu,eu"}, err: "REALSYNC_REGIONS"},
		{name: "OriginPortTooHigh", env: map[string]string{"REALSYNC_CORS_ORIGINS": "http://localhost:99999"}, err: "REALSYNC_CORS_ORIGINS"},
		{name: "OriginPortZero", env: map[string]string{"REALSYNC_CORS_ORIGINS": "http://localhost:0"}, err: "REALSYNC_CORS_ORIGINS"},
		{name: "OriginPortLeadingZero", env: map[string]string{"REALSYNC_CORS_ORIGINS": "http://localhost:05173"}, err: "REALSYNC_CORS_ORIGINS"},
		{name: "OriginHighestPort", env: map[string]string{"REALSYNC_CORS_ORIGINS": "http://localhost:65535"}, cors: []string{"http://localhost:65535"}, timeout: 10 * time.Second},
		{name: "OriginPath", env: map[string]string{"REALSYNC_CORS_ORIGINS": "https://game.example/"}, err: "REALSYNC_CORS_ORIGINS"},
		{name: "OriginWildcardHost", env: map[string]string{"REALSYNC_CORS_ORIGINS": "https://*"}, err: "REALSYNC_CORS_ORIGINS"},
		{name: "OriginWildcardSuffix", env: map[string]string{"REALSYNC_CORS_ORIGINS": "https://game.example*"}, err: "REALSYNC_CORS_ORIGINS"},
		{name: "OriginWildcardSubdomain", env: map[string]string{"REALSYNC_CORS_ORIGINS": "https://*.game.example"}, err: "REALSYNC_CORS_ORIGINS"},
		{name: "OriginScheme", env: map[string]string{"REALSYNC_CORS_ORIGINS": "game.example"}, err: "REALSYNC_CORS_ORIGINS"},
		{name: "OriginUpper", env: map[string]string{"REALSYNC_CORS_ORIGINS": "HTTPS://game.example"}, err: "REALSYNC_CORS_ORIGINS"},
		{name: "StarAmongOthers", env: map[string]string{"REALSYNC_CORS_ORIGINS": "*,https://game.example"}, err: "REALSYNC_CORS_ORIGINS"},
		// a browser leaves a scheme's default port out of Origin: such an entry would never match
		{name: "OriginDefaultPortHTTPS", env: map[string]string{"REALSYNC_CORS_ORIGINS": "https://game.example:443"}, err: "REALSYNC_CORS_ORIGINS"},
		{name: "OriginDefaultPortHTTP", env: map[string]string{"REALSYNC_CORS_ORIGINS": "http://localhost:80"}, err: "REALSYNC_CORS_ORIGINS"},
		{name: "OriginEmptyPort", env: map[string]string{"REALSYNC_CORS_ORIGINS": "https://game.example:"}, err: "REALSYNC_CORS_ORIGINS"},
		{name: "OriginOtherPort", env: map[string]string{"REALSYNC_CORS_ORIGINS": "http://game.example:443,https://game.example:80"},
			cors: []string{"http://game.example:443", "https://game.example:80"}, timeout: 10 * time.Second},
		{name: "TimeoutForm", env: map[string]string{"REALSYNC_REQUEST_TIMEOUT": "10"}, err: "REALSYNC_REQUEST_TIMEOUT"},
		{name: "TimeoutShort", env: map[string]string{"REALSYNC_REQUEST_TIMEOUT": "10ms"}, err: "REALSYNC_REQUEST_TIMEOUT"},
		// the default in-flight wait (500ms) refuses no short timeout while
		// admission is off (a reviewer: 300ms stopped starting)
		{name: "ShortTimeoutNoAdmission", env: map[string]string{"REALSYNC_REQUEST_TIMEOUT": "300ms"}, timeout: 300 * time.Millisecond},
		{name: "Admission", env: map[string]string{"REALSYNC_MAX_IN_FLIGHT": "512", "REALSYNC_IN_FLIGHT_WAIT": "200ms"},
			timeout: 10 * time.Second, maxInFlight: 512, wait: 200 * time.Millisecond},
		{name: "WaitPastTimeout", env: map[string]string{"REALSYNC_MAX_IN_FLIGHT": "512", "REALSYNC_REQUEST_TIMEOUT": "300ms"}, err: "REALSYNC_IN_FLIGHT_WAIT"},
		{name: "MaxInFlightForm", env: map[string]string{"REALSYNC_MAX_IN_FLIGHT": "-1"}, err: "REALSYNC_MAX_IN_FLIGHT"},
		{name: "WaitLong", env: map[string]string{"REALSYNC_IN_FLIGHT_WAIT": "6s"}, err: "REALSYNC_IN_FLIGHT_WAIT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.err)
			switch {
			case !ok:
			case !slices.Equal(c.Modes, tc.modes) || !slices.Equal(c.Regions, tc.regions) || !slices.Equal(c.CORSOrigins, tc.cors) ||
				c.RequestTimeout != tc.timeout:
				t.Errorf("modes %q regions %q cors %q timeout %s", c.Modes, c.Regions, c.CORSOrigins, c.RequestTimeout)
			case tc.wait == 0 && c.Admission != api.Admission{Wait: 500 * time.Millisecond},
				tc.wait != 0 && c.Admission != api.Admission{Max: tc.maxInFlight, Wait: tc.wait}:
				t.Errorf("admission %+v", c.Admission)
			}
		})
	}
}
