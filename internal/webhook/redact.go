package webhook

import (
	"errors"
	"net/url"
	"strings"
)

// redactURLError hides the secrets an endpoint's URL may carry in err, the
// failure of a try (a *url.Error names the URL), which ends up in a dead
// letter's lastError: the userinfo's user name and password (net/http
// already writes a password as "***"; a user name alone is a common way to
// carry a token, http://sk_live_...@host), the query's values and the
// fragment (?token=SECRET is a common way to authenticate a webhook).
func redactURLError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	c := *ue
	c.URL = redactURL(ue.URL)
	return &c
}

// redactURL is raw with its userinfo's user name and password, each
// query value (a parameter without "=" whole) written "***", and no
// fragment.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an endpoint URL)"
	}
	u.Fragment, u.RawFragment = "", ""
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			if k, _, ok := strings.Cut(p, "="); ok {
				parts[i] = k + "=***"
			} else if p != "" {
				parts[i] = "***"
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	// String escapes '*' in a userinfo: write a plain one, then replace it
	// (the first "//u:p@" or "//u@" is the userinfo, right after the scheme)
	switch _, pw := u.User.Password(); {
	case u.User == nil:
		return u.String()
	case pw:
		u.User = url.UserPassword("u", "p")
		return strings.Replace(u.String(), "//u:p@", "//***:***@", 1)
	default:
		u.User = url.User("u")
		return strings.Replace(u.String(), "//u@", "//***@", 1)
	}
}
