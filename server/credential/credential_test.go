package credential_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

var (
	admin  = store.NewScope(1, true, nil)
	editor = store.NewScope(2, false, nil)
)

func ptr[T any](v T) *T { return &v }

// tester stands in for the engine's provider calls.
type tester struct{ tested []int64 }

func (f *tester) TestCredential(_ context.Context, cred *store.Credential) (*credential.TestResult, error) {
	f.tested = append(f.tested, cred.ID)
	return &credential.TestResult{OK: true, Detail: "fine"}, nil
}

type rig struct {
	svc    *credential.Service
	db     *store.DB
	keys   *keyring.Keyring
	tester *tester
	envA   int64
	envB   int64
}

func newRig(t *testing.T) *rig {
	t.Helper()
	db, _ := storetest.OpenDB(t)
	keys, err := keyring.New([]byte("credential-test-secret-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	envs := environment.New(db)
	r := &rig{db: db, keys: keys, tester: &tester{}}
	r.svc = credential.New(db, envs, keys, r.tester)
	for _, p := range []*int64{&r.envA, &r.envB} {
		e, err := envs.Create(context.Background(), admin, store.NewEnvironment{Name: "Site"})
		if err != nil {
			t.Fatal(err)
		}
		*p = e.ID
	}
	return r
}

func (r *rig) create(t *testing.T, in credential.Input) *store.Credential {
	t.Helper()
	c, err := r.svc.Create(context.Background(), admin, in)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return c
}

// secret opens a credential's stored secret.
func (r *rig) secret(t *testing.T, id int64) string {
	t.Helper()
	c, err := r.db.CredentialByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.keys.Open(c.Secret, store.CredentialAAD(id))
	if err != nil {
		t.Fatalf("the stored secret does not open for its row: %v", err)
	}
	return string(b)
}

const key = "sk-proj-0123456789abcdefghijklmnopqrstuvwx9Qa"

func TestCreate(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)

	t.Run("SealedAndMasked", func(t *testing.T) {
		c := r.create(t, credential.Input{Name: "  main ", Provider: "openai", APIKey: key,
			BaseURL: " https://api.example.com/v1/ ", DefaultModel: " gpt-4o "})
		if c.Name != "main" || c.BaseURL != "https://api.example.com/v1" || c.DefaultModel != "gpt-4o" || c.SecretHint != "sk-...x9Qa" {
			t.Fatalf("got %+v", c)
		}
		if strings.Contains(string(c.Secret), key) {
			t.Fatal("the secret is stored in the clear")
		}
		if got := r.secret(t, c.ID); got != key {
			t.Fatalf("stored secret %q", got)
		}
	})
	t.Run("WordPress", func(t *testing.T) {
		c := r.create(t, credential.Input{Name: "wp", Provider: "wordpress", BaseURL: "https://blog.example",
			Username: " ann ", ApplicationPassword: "abcd efgh ijkl mnop", EnvironmentID: &r.envA})
		if c.Username != "ann" || *c.EnvironmentID != r.envA || r.secret(t, c.ID) != "abcd efgh ijkl mnop" {
			t.Fatalf("got %+v", c)
		}
	})
	t.Run("CompatibleWithoutKey", func(t *testing.T) {
		c := r.create(t, credential.Input{Name: "ollama", Provider: "openai_compatible", BaseURL: "http://localhost:11434/v1"})
		if c.SecretHint != "" {
			t.Fatalf("hint %q for no secret", c.SecretHint)
		}
	})

	wp := func(in credential.Input) credential.Input {
		in.Name, in.Provider = "wp", "wordpress"
		return in
	}
	refused := []struct {
		name string
		in   credential.Input
		text string
	}{
		{"UnknownProvider", credential.Input{Name: "x", Provider: "cohere", APIKey: key}, "provider: must be one of"},
		{"BlankName", credential.Input{Name: "  ", Provider: "openai", APIKey: key}, "name:"},
		{"LongName", credential.Input{Name: strings.Repeat("n", 101), Provider: "openai", APIKey: key}, "name: must be at most 100"},
		{"ControlInName", credential.Input{Name: "a\x00b", Provider: "openai", APIKey: key}, "name: must not contain control"},
		{"ControlInSecret", credential.Input{Name: "x", Provider: "openai", APIKey: "sk-a\nb"}, "the secret: must not contain control"},
		{"LongSecret", credential.Input{Name: "x", Provider: "openai", APIKey: strings.Repeat("k", 4097)}, "api_key: must be at most 4096"},
		{"OpenAIWithoutKey", credential.Input{Name: "x", Provider: "openai"}, "api_key: is required for openai"},
		{"AnthropicWithoutKey", credential.Input{Name: "x", Provider: "anthropic"}, "api_key: is required for anthropic"},
		{"SERPWithoutKey", credential.Input{Name: "x", Provider: "serp"}, "api_key: is required for serp"},
		{"CompatibleWithoutBaseURL", credential.Input{Name: "x", Provider: "openai_compatible", APIKey: key}, "base_url: is required for openai_compatible"},
		{"AppPasswordForOpenAI", credential.Input{Name: "x", Provider: "openai", APIKey: key, ApplicationPassword: "pw"}, "application_password: only wordpress"},
		{"UsernameForOpenAI", credential.Input{Name: "x", Provider: "openai", APIKey: key, Username: "ann"}, "username: only wordpress"},
		{"BaseURLScheme", credential.Input{Name: "x", Provider: "openai", APIKey: key, BaseURL: "ftp://files.example"}, "base_url: must be an http or https"},
		{"BaseURLQuery", credential.Input{Name: "x", Provider: "openai_compatible", BaseURL: "http://localhost/v1?key=1"}, "base_url:"},
		{"BaseURLCredentials", credential.Input{Name: "x", Provider: "openai_compatible", BaseURL: "http://u:p@localhost/v1"}, "base_url:"},
		{"WordPressAPIKey", wp(credential.Input{BaseURL: "https://b.example", Username: "ann", ApplicationPassword: "pw", APIKey: key}), "api_key: wordpress credentials use application_password"},
		{"WordPressWithoutBaseURL", wp(credential.Input{Username: "ann", ApplicationPassword: "pw"}), "base_url: is required for wordpress"},
		{"WordPressBlankUsername", wp(credential.Input{BaseURL: "https://b.example", Username: "  ", ApplicationPassword: "pw"}), "username: is required"},
		{"WordPressWithoutPassword", wp(credential.Input{BaseURL: "https://b.example", Username: "ann"}), "application_password: is required"},
		{"MissingEnvironment", credential.Input{Name: "x", Provider: "openai", APIKey: key, EnvironmentID: ptr(int64(9999))}, "environment_id: no environment with id 9999"},
	}
	for _, c := range refused {
		t.Run("Refused/"+c.name, func(t *testing.T) {
			_, err := r.svc.Create(ctx, admin, c.in)
			storetest.WantKind(t, err, store.KindInvalid)
			if !strings.Contains(store.Message(err), c.text) {
				t.Fatalf("message %q does not say %q", store.Message(err), c.text)
			}
			if strings.Contains(store.Message(err), key) {
				t.Fatal("the refused secret is echoed")
			}
		})
	}
	t.Run("NotAdmin", func(t *testing.T) {
		_, err := r.svc.Create(ctx, editor, credential.Input{Name: "x", Provider: "openai", APIKey: key})
		storetest.WantKind(t, err, store.KindForbidden)
	})
	if _, total, err := r.svc.List(ctx, admin, "", nil, store.Page{Page: 1, PerPage: 50}); err != nil || total != 3 {
		t.Fatalf("refused creates left rows: %d credentials, %v", total, err)
	}
}

// TestUpdateNewAddressNeedsSecret: a stored secret only ever goes where it
// went before.
func TestUpdateNewAddressNeedsSecret(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	c := r.create(t, credential.Input{Name: "k", Provider: "openai", APIKey: key, BaseURL: "https://api.example.com/v1"})

	_, err := r.svc.Update(ctx, admin, c.ID, credential.Change{BaseURL: ptr("https://evil.example/v1")})
	storetest.WantKind(t, err, store.KindInvalid)
	if !strings.Contains(store.Message(err), "api_key: is required when base_url changes") {
		t.Fatalf("message %q", store.Message(err))
	}
	if got, err := r.svc.Update(ctx, admin, c.ID, credential.Change{BaseURL: ptr(" https://api.example.com/v1/ ")}); err != nil || got.BaseURL != "https://api.example.com/v1" {
		t.Fatalf("the same address written differently: %+v, %v", got, err)
	}
	const other = "sk-proj-another-key-0123456789abcdefghi77Zz"
	got, err := r.svc.Update(ctx, admin, c.ID, credential.Change{BaseURL: ptr("https://other.example/v1"), APIKey: ptr(other)})
	if err != nil || got.BaseURL != "https://other.example/v1" || got.SecretHint != "sk-...77Zz" || r.secret(t, c.ID) != other {
		t.Fatalf("a new address with its secret: %+v, %v", got, err)
	}

	wp := r.create(t, credential.Input{Name: "wp", Provider: "wordpress", BaseURL: "https://blog.example", Username: "ann", ApplicationPassword: "pw pw"})
	_, err = r.svc.Update(ctx, admin, wp.ID, credential.Change{BaseURL: ptr("https://other.example")})
	if !strings.Contains(store.Message(err), "application_password: is required when base_url changes") {
		t.Fatalf("wordpress: %v", err)
	}
	// Without a stored secret there is nothing to protect.
	local := r.create(t, credential.Input{Name: "ollama", Provider: "openai_compatible", BaseURL: "http://localhost:11434/v1"})
	if _, err := r.svc.Update(ctx, admin, local.ID, credential.Change{BaseURL: ptr("http://gpu-box:11434/v1")}); err != nil {
		t.Fatalf("keyless credential moved: %v", err)
	}
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	c := r.create(t, credential.Input{Name: "k", Provider: "openai", APIKey: key, DefaultModel: "gpt-4o", EnvironmentID: &r.envA})

	got, err := r.svc.Update(ctx, admin, c.ID, credential.Change{Name: ptr(" renamed ")})
	if err != nil || got.Name != "renamed" || got.DefaultModel != "gpt-4o" || got.SecretHint != c.SecretHint || *got.EnvironmentID != r.envA {
		t.Fatalf("rename: %+v, %v", got, err)
	}
	if got, err = r.svc.Update(ctx, admin, c.ID, credential.Change{EnvironmentID: ptr(int64(0))}); err != nil || got.EnvironmentID != nil {
		t.Fatalf("made global: %+v, %v", got, err)
	}
	if got, err = r.svc.Update(ctx, admin, c.ID, credential.Change{EnvironmentID: &r.envB}); err != nil || *got.EnvironmentID != r.envB {
		t.Fatalf("moved: %+v, %v", got, err)
	}
	for _, ch := range []struct {
		name string
		sc   store.Scope
		id   int64
		ch   credential.Change
		kind store.Kind
	}{
		{"BlankName", admin, c.ID, credential.Change{Name: ptr("  ")}, store.KindInvalid},
		{"UsernameOnOpenAI", admin, c.ID, credential.Change{Username: ptr("ann")}, store.KindInvalid},
		{"EmptyKey", admin, c.ID, credential.Change{APIKey: ptr("")}, store.KindInvalid},
		{"AppPasswordOnOpenAI", admin, c.ID, credential.Change{ApplicationPassword: ptr("pw")}, store.KindInvalid},
		{"MissingEnvironment", admin, c.ID, credential.Change{EnvironmentID: ptr(int64(9999))}, store.KindInvalid},
		{"Missing", admin, 9999, credential.Change{Name: ptr("x")}, store.KindNotFound},
		{"NotAdmin", editor, c.ID, credential.Change{Name: ptr("x")}, store.KindForbidden},
	} {
		t.Run("Refused/"+ch.name, func(t *testing.T) {
			_, err := r.svc.Update(ctx, ch.sc, ch.id, ch.ch)
			storetest.WantKind(t, err, ch.kind)
		})
	}
	if r.secret(t, c.ID) != key {
		t.Fatal("a refused update changed the secret")
	}
}

func TestCheckAI(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	global := r.create(t, credential.Input{Name: "g", Provider: "anthropic", APIKey: key})
	ownA := r.create(t, credential.Input{Name: "a", Provider: "openai", APIKey: key, EnvironmentID: &r.envA})
	wp := r.create(t, credential.Input{Name: "wp", Provider: "wordpress", BaseURL: "https://b.example", Username: "ann", ApplicationPassword: "pw"})

	for _, c := range []struct {
		name   string
		cred   *int64
		env    *int64
		wantOK bool
	}{
		{"NoneChosen", nil, nil, true},
		{"GlobalAtGlobalLevel", &global.ID, nil, true},
		{"GlobalInEnvironment", &global.ID, &r.envA, true},
		{"OwnEnvironment", &ownA.ID, &r.envA, true},
		{"OtherEnvironment", &ownA.ID, &r.envB, false},
		{"EnvironmentsAtGlobalLevel", &ownA.ID, nil, false},
		{"NotAnAIProvider", &wp.ID, nil, false},
		{"Missing", ptr(int64(9999)), nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := r.svc.CheckAI(ctx, c.cred, c.env)
			if c.wantOK {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			storetest.WantKind(t, err, store.KindInvalid)
			if !strings.HasPrefix(store.Message(err), "credential_id: ") {
				t.Fatalf("message %q does not name credential_id", store.Message(err))
			}
		})
	}
}

func TestListGetDeleteTest(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	global := r.create(t, credential.Input{Name: "b-global", Provider: "openai", APIKey: key})
	ownA := r.create(t, credential.Input{Name: "a-own", Provider: "anthropic", APIKey: key, EnvironmentID: &r.envA})
	r.create(t, credential.Input{Name: "c-other", Provider: "openai", APIKey: key, EnvironmentID: &r.envB})
	page := store.Page{Page: 1, PerPage: 50}

	list, total, err := r.svc.List(ctx, admin, "", &r.envA, page)
	if err != nil || total != 2 || list[0].ID != ownA.ID || list[1].ID != global.ID {
		t.Fatalf("environment A's and the global ones: %d, %v", total, err)
	}
	if _, total, _ := r.svc.List(ctx, admin, "openai", nil, page); total != 2 {
		t.Fatalf("openai credentials: %d", total)
	}
	_, _, err = r.svc.List(ctx, editor, "", nil, page)
	storetest.WantKind(t, err, store.KindForbidden)
	_, err = r.svc.Get(ctx, editor, global.ID)
	storetest.WantKind(t, err, store.KindForbidden)

	res, err := r.svc.Test(ctx, admin, global.ID)
	if err != nil || !res.OK || len(r.tester.tested) != 1 || r.tester.tested[0] != global.ID {
		t.Fatalf("test: %+v, %v, tested %v", res, err, r.tester.tested)
	}
	_, err = r.svc.Test(ctx, admin, 9999)
	storetest.WantKind(t, err, store.KindNotFound)
	_, err = r.svc.Test(ctx, editor, global.ID)
	storetest.WantKind(t, err, store.KindForbidden)
	if len(r.tester.tested) != 1 {
		t.Fatalf("refused tests called the provider: %v", r.tester.tested)
	}

	storetest.WantKind(t, r.svc.Delete(ctx, editor, global.ID), store.KindForbidden)
	if err := r.svc.Delete(ctx, admin, global.ID); err != nil {
		t.Fatal(err)
	}
	storetest.WantKind(t, r.svc.Delete(ctx, admin, global.ID), store.KindNotFound)
}

func TestMask(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"abc", "..."},
		{"abcde", "..."},
		{"abcdef", "..."},
		{"abcdefghijk", "...jk"},
		{"sk-abcdefghi", "...hi"},
		{"sk-proj-0123456789x9Qa", "...x9Qa"},
		{"sk-proj-0123456789abcdefghijklmnopqrstuvwx9Qa", "sk-...x9Qa"},
		// Characters, not bytes: a byte cut would leave invalid UTF-8.
		{strings.Repeat("é", 40), "ééé...éééé"},
		{"ключ-0123456789ab", "...89ab"},
	} {
		if got := credential.Mask(c.in); !utf8.ValidString(got) {
			t.Errorf("Mask(%q) = %q, not valid UTF-8", c.in, got)
		}
		if got := credential.Mask(c.in); got != c.want {
			t.Errorf("Mask(%q) = %q, want %q", c.in, got, c.want)
		}
		if len(c.in) >= 6 && strings.Contains(credential.Mask(c.in), c.in) {
			t.Errorf("Mask(%q) shows the whole secret", c.in)
		}
	}
}

// ListAI: the AI credentials usable in one environment (its own and the
// global ones, by name; no WordPress or SERP one, none of another
// environment), for an editor of that environment; another environment
// is not found.
func TestListAI(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	global := r.create(t, credential.Input{Name: "b-global", Provider: "openai", APIKey: key})
	ownA := r.create(t, credential.Input{Name: "a-own", Provider: "openai_compatible", BaseURL: "https://llm.example/v1", EnvironmentID: &r.envA})
	r.create(t, credential.Input{Name: "c-other", Provider: "anthropic", APIKey: key, EnvironmentID: &r.envB})
	r.create(t, credential.Input{Name: "d-site", Provider: "wordpress", BaseURL: "https://b.example", Username: "ann", ApplicationPassword: "pw"})
	page := store.Page{Page: 1, PerPage: 50}
	edA := store.NewScope(2, false, []int64{r.envA})

	for _, sc := range []store.Scope{admin, edA} {
		list, total, err := r.svc.ListAI(ctx, sc, r.envA, page)
		if err != nil || total != 2 || len(list) != 2 || list[0].ID != ownA.ID || list[1].ID != global.ID {
			t.Fatalf("scope %+v: %d credentials, %v", sc, total, err)
		}
	}
	_, _, err := r.svc.ListAI(ctx, edA, r.envB, page)
	storetest.WantKind(t, err, store.KindNotFound)
	_, _, err = r.svc.ListAI(ctx, admin, 9999, page)
	storetest.WantKind(t, err, store.KindNotFound)
}
