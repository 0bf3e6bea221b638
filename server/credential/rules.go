package credential

import (
	"net/netip"
	"net/url"
	"strings"

	"github.com/copydesk/copydesk/server/outbound"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Limits of the fields, the same as the request binding's.
const (
	maxName     = 100
	maxSecret   = 4096
	maxUsername = 200
	maxBaseURL  = 2000
	maxModel    = 200
)

// secretField is the field that carries a provider's secret.
func secretField(provider string) string {
	if provider == store.ProviderWordPress {
		return "application_password"
	}
	return "api_key"
}

// secretOf picks the secret from the field its provider uses and refuses
// the other field.
func secretOf(provider, apiKey, appPassword string) (string, error) {
	secret := apiKey
	switch {
	case provider == store.ProviderWordPress && apiKey != "":
		return "", store.Invalid("api_key: wordpress credentials use application_password")
	case provider == store.ProviderWordPress:
		secret = appPassword
	case appPassword != "":
		return "", store.Invalid("application_password: only wordpress credentials have one; use api_key")
	}
	// The secret goes into HTTP headers.
	if err := valid.Line("the secret", secret); err != nil {
		return "", err
	}
	return secret, valid.MaxLen(secretField(provider), secret, maxSecret)
}

// fields are a credential's fields as they will be stored, with whether it
// will have a secret (its value does not matter to these rules).
type fields struct {
	provider     string
	name         string
	username     string
	baseURL      string
	defaultModel string
	hasSecret    bool
}

// normalize trims the fields, cleans the address, and applies the
// per-provider rules to the credential as a whole.
func (f *fields) normalize() error {
	f.name = strings.TrimSpace(f.name)
	f.username = strings.TrimSpace(f.username)
	f.defaultModel = strings.TrimSpace(f.defaultModel)
	if f.name == "" {
		return store.Invalid("name: must not be empty")
	}
	if f.username != "" && f.provider != store.ProviderWordPress {
		return store.Invalid("username: only wordpress credentials have one")
	}
	for _, c := range []struct {
		field, v string
		max      int
	}{{"name", f.name, maxName}, {"username", f.username, maxUsername}, {"base_url", f.baseURL, maxBaseURL}, {"default_model", f.defaultModel, maxModel}} {
		if err := valid.Line(c.field, c.v); err != nil {
			return err
		}
		if err := valid.MaxLen(c.field, c.v, c.max); err != nil {
			return err
		}
	}
	if strings.TrimSpace(f.baseURL) != "" {
		addr, ok := valid.SiteURL(f.baseURL)
		if !ok {
			return store.Invalid("base_url: must be an http or https address without credentials or query")
		}
		if err := neverCalled(addr); err != nil {
			return store.Invalid("base_url: %s", err.Error())
		}
		f.baseURL = addr
	} else {
		f.baseURL = ""
	}
	return f.required()
}

// required: what each provider cannot work without.
func (f *fields) required() error {
	switch f.provider {
	case store.ProviderOpenAI, store.ProviderAnthropic, store.ProviderSERP:
		if !f.hasSecret {
			return store.Invalid("api_key: is required for %s", f.provider)
		}
	case store.ProviderOpenAICompatible:
		if f.baseURL == "" {
			return store.Invalid("base_url: is required for openai_compatible, e.g. http://localhost:11434/v1 for Ollama")
		}
	case store.ProviderWordPress:
		switch {
		case f.baseURL == "":
			return store.Invalid("base_url: is required for wordpress: the site's address, e.g. https://example.com")
		case f.username == "":
			return store.Invalid("username: is required for wordpress")
		case !f.hasSecret:
			return store.Invalid("application_password: is required for wordpress")
		}
	}
	return nil
}

// neverCalled refuses an address whose host is an IP that no outbound call
// may reach whatever the server's settings (cloud metadata, link-local):
// said now rather than at the first call. Names, and the addresses only
// some settings refuse, are judged when called (server/outbound).
func neverCalled(addr string) error {
	u, err := url.Parse(addr)
	if err != nil {
		return nil // SiteURL has accepted it
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	return outbound.Check(ip, false)
}

// Mask shows enough of a secret to recognise it, "sk-...x9Qa", and never
// more than a quarter of it: the hint stored beside a sealed secret, and
// what replaces a secret an error repeats.
func Mask(secret string) string {
	// Counted and cut in characters, not bytes: a hint cut inside a
	// character would be invalid UTF-8, which PostgreSQL refuses to store.
	r := []rune(secret)
	switch n := len(r); {
	case n == 0:
		return ""
	case n >= 28:
		return string(r[:3]) + "..." + string(r[n-4:])
	case n >= 16:
		return "..." + string(r[n-4:])
	case n >= 8:
		return "..." + string(r[n-2:])
	default:
		return "..."
	}
}
