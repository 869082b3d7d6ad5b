package webhook

import (
	"errors"
	"net/url"
	"strings"
)

// redactURLError hides the secrets an endpoint's URL may carry in err, the
// failure of a try (a *url.Error names the URL), which ends up in a dead
// letter's lastError: net/http already writes a userinfo password as
// "***", which redactURL keeps; it also hides the query's values and the
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

// redactURL is raw with its userinfo password, each query value (a
// parameter without "=" whole) written "***", and no fragment.
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
	// Redacted writes a password as xxxxx: the first ":xxxxx@" is it (a
	// user name's ':' and '@' are escaped)
	if _, ok := u.User.Password(); ok {
		return strings.Replace(u.Redacted(), ":xxxxx@", ":***@", 1)
	}
	return u.String()
}
