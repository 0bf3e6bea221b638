package credential_test

import (
	"context"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// Open is the one way to a secret in clear: the credential as it is now,
// of the kind asked for, usable in the environment, for the site; any
// other answer is a conflict that says what is wrong, and the secret is
// never in it.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	open := credential.NewOpener(r.db, r.keys)
	ai := r.create(t, credential.Input{Name: "ai", Provider: "openai", APIKey: key})
	aiB := r.create(t, credential.Input{Name: "ai of B", Provider: "anthropic", APIKey: key + "B", EnvironmentID: &r.envB})
	wp := r.create(t, credential.Input{Name: "blog", Provider: "wordpress", BaseURL: "https://Blog.example.com/", Username: "ann",
		ApplicationPassword: "abcd efgh ijkl mnop"})
	serp := r.create(t, credential.Input{Name: "serp", Provider: "serp", APIKey: "serp-key-0123456789"})
	other, err := keyring.New([]byte("another-installation-secret-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := r.db.CreateCredential(ctx, store.NewCredential{Name: "foreign", Provider: "openai", SecretHint: "...",
		Seal: func(id int64) ([]byte, error) { return other.Seal([]byte(key), store.CredentialAAD(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	gone := r.create(t, credential.Input{Name: "gone", Provider: "openai", APIKey: key})
	if err := r.db.DeleteCredential(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}

	t.Run("OK", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			id     int64
			need   credential.Need
			secret string
		}{
			{"GlobalAIOutsideEnvironments", ai.ID, credential.Need{Kind: credential.AI}, key},
			{"GlobalAIInAnEnvironment", ai.ID, credential.Need{Kind: credential.AI, EnvironmentID: &r.envA}, key},
			{"EnvironmentsOwn", aiB.ID, credential.Need{Kind: credential.AI, EnvironmentID: &r.envB}, key + "B"},
			{"WordPressForItsSite", wp.ID, credential.Need{Kind: credential.WordPress, EnvironmentID: &r.envA,
				Site: "https://blog.example.com"}, "abcd efgh ijkl mnop"},
			{"SERP", serp.ID, credential.Need{Kind: credential.SERP, EnvironmentID: &r.envA}, "serp-key-0123456789"},
			{"ItsOwnProvider", serp.ID, credential.Need{Kind: credential.Kind("serp")}, "serp-key-0123456789"},
		} {
			t.Run(c.name, func(t *testing.T) {
				got, err := open.Open(ctx, c.id, c.need)
				if err != nil {
					t.Fatal(err)
				}
				if got.Secret != c.secret || got.Credential.ID != c.id {
					t.Fatalf("opened %d with %q", got.Credential.ID, got.Secret)
				}
			})
		}
	})

	for _, c := range []struct {
		name   string
		id     int64
		need   credential.Need
		detail []string
	}{
		{"Missing", gone.ID, credential.Need{Kind: credential.AI}, []string{"no longer exists", "POST /api/configurations"}},
		{"MissingWordPress", gone.ID, credential.Need{Kind: credential.WordPress, EnvironmentID: &r.envA},
			[]string{"no longer exists", "configuration.wordpress.credential_id"}},
		{"WrongKind", wp.ID, credential.Need{Kind: credential.AI}, []string{"is a wordpress credential, not an AI provider"}},
		{"AIForWordPress", ai.ID, credential.Need{Kind: credential.WordPress, EnvironmentID: &r.envA}, []string{"not a wordpress one"}},
		{"SERPForAI", serp.ID, credential.Need{Kind: credential.AI}, []string{"not an AI provider"}},
		{"OtherEnvironment", aiB.ID, credential.Need{Kind: credential.AI, EnvironmentID: &r.envA},
			[]string{"belongs to environment", "cannot be used here"}},
		{"OutsideItsEnvironment", aiB.ID, credential.Need{Kind: credential.AI}, []string{"belongs to environment"}},
		{"OtherSite", wp.ID, credential.Need{Kind: credential.WordPress, EnvironmentID: &r.envA, Site: "https://blog.example.com/other"},
			[]string{"differs from the site"}},
		{"SealedWithAnotherKey", foreign.ID, credential.Need{Kind: credential.AI}, []string{"cannot be opened", "enter its secret again"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := open.Open(ctx, c.id, c.need)
			if got != nil {
				t.Fatalf("opened: %+v", got.Credential)
			}
			storetest.WantKind(t, err, store.KindConflict)
			for _, d := range c.detail {
				if !strings.Contains(store.Message(err), d) {
					t.Errorf("detail %q lacks %q", store.Message(err), d)
				}
			}
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "abcd efgh") {
				t.Errorf("the refusal shows the secret: %v", err)
			}
		})
	}
}

// The rule is the same where a choice is checked before it is stored:
// an environment's WordPress configuration (422) names the same reasons.
func TestRefusalOfAConfiguration(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	wp := r.create(t, credential.Input{Name: "blog", Provider: "wordpress", BaseURL: "https://blog.example.com", Username: "ann",
		ApplicationPassword: "abcd efgh ijkl mnop", EnvironmentID: &r.envB})
	cred, err := r.db.CredentialByID(ctx, wp.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		need credential.Need
		want string
	}{
		{"Usable", credential.Need{Kind: credential.WordPress, EnvironmentID: &r.envB, Site: "https://BLOG.example.com/"}, ""},
		{"NewEnvironment", credential.Need{Kind: credential.WordPress, Site: "https://blog.example.com"}, "cannot be used here"},
		{"OtherEnvironment", credential.Need{Kind: credential.WordPress, EnvironmentID: &r.envA, Site: "https://blog.example.com"},
			"cannot be used here"},
		{"OtherPath", credential.Need{Kind: credential.WordPress, EnvironmentID: &r.envB, Site: "https://blog.example.com/en"},
			"differs from the site"},
		{"OtherScheme", credential.Need{Kind: credential.WordPress, EnvironmentID: &r.envB, Site: "http://blog.example.com"},
			"differs from the site"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.need.Refusal(cred)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("refusal %q, want %q", got, c.want)
			}
		})
	}
}
