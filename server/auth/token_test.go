package auth

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var (
	tokenKey = []byte("0123456789abcdef0123456789abcdef")
	tokenT0  = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
)

// fixedNow returns a clock and a way to move it.
func fixedNow(start time.Time) (func() time.Time, func(time.Duration)) {
	now := start
	return func() time.Time { return now }, func(d time.Duration) { now = now.Add(d) }
}

// forge signs claims with any method, to build tokens Issue never would.
func forge(t *testing.T, method jwt.SigningMethod, key any, claims jwt.Claims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTokens(t *testing.T) {
	t.Run("RoundTrip", func(t *testing.T) {
		now, _ := fixedNow(tokenT0)
		tk := NewTokens(tokenKey, now)
		tok, err := tk.Issue(7, 42, "", tokenT0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		c, err := tk.Parse(tok)
		if err != nil {
			t.Fatal(err)
		}
		uid, err := c.UserID()
		if err != nil || uid != 7 || c.SessionID != 42 {
			t.Errorf("claims: user %d (%v), session %d; want 7, 42", uid, err, c.SessionID)
		}
		if !c.ExpiresAt.Equal(tokenT0.Add(time.Hour)) || !c.IssuedAt.Equal(tokenT0) || c.ID == "" {
			t.Errorf("claims: exp %v, iat %v, jti %q", c.ExpiresAt, c.IssuedAt, c.ID)
		}
		if h := strings.SplitN(tok, ".", 2)[0]; !strings.Contains(jwtSegment(t, h), `"HS256"`) {
			t.Errorf("header %s is not HS256", jwtSegment(t, h))
		}
	})

	t.Run("UniqueIDs", func(t *testing.T) {
		now, _ := fixedNow(tokenT0)
		tk := NewTokens(tokenKey, now)
		a, _ := tk.Issue(1, 1, "", tokenT0.Add(time.Hour))
		b, _ := tk.Issue(1, 1, "", tokenT0.Add(time.Hour))
		if a == b {
			t.Error("two tokens for the same session are identical: jti is not random")
		}
	})

	t.Run("Expiry", func(t *testing.T) {
		now, advance := fixedNow(tokenT0)
		tk := NewTokens(tokenKey, now)
		tok, _ := tk.Issue(1, 1, "", tokenT0.Add(time.Hour))
		advance(time.Hour - time.Second)
		if _, err := tk.Parse(tok); err != nil {
			t.Fatalf("a token one second before expiry: %v", err)
		}
		advance(time.Second)
		if _, err := tk.Parse(tok); !errors.Is(err, ErrExpired) {
			t.Fatalf("a token at its expiry: %v, want ErrExpired", err)
		}
		advance(time.Hour)
		if _, err := tk.Parse(tok); !errors.Is(err, ErrExpired) {
			t.Fatalf("a token past its expiry: %v, want ErrExpired", err)
		}
	})

	now, _ := fixedNow(tokenT0)
	tk := NewTokens(tokenKey, now)
	good := func(sid int64, sub string) Claims {
		return Claims{SessionID: sid, RegisteredClaims: jwt.RegisteredClaims{
			Subject: sub, IssuedAt: jwt.NewNumericDate(tokenT0), ExpiresAt: jwt.NewNumericDate(tokenT0.Add(time.Hour)),
		}}
	}
	valid, _ := tk.Issue(1, 1, "", tokenT0.Add(time.Hour))
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + forgePayload(t, parts[1]) + "." + parts[2]

	refused := []struct {
		name  string
		token string
	}{
		{"Empty", ""},
		{"Garbage", "not.a.token"},
		{"OtherKey", mustIssue(t, NewTokens([]byte("another key, just as long as it!"), now), 1, 1, tokenT0.Add(time.Hour))},
		{"AlgNone", forge(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, good(1, "1"))},
		{"AlgHS512", forge(t, jwt.SigningMethodHS512, tokenKey, good(1, "1"))},
		{"AlgHS384", forge(t, jwt.SigningMethodHS384, tokenKey, good(1, "1"))},
		{"NoSessionID", forge(t, jwt.SigningMethodHS256, tokenKey, good(0, "1"))},
		{"NegativeSessionID", forge(t, jwt.SigningMethodHS256, tokenKey, good(-3, "1"))},
		{"NoSubject", forge(t, jwt.SigningMethodHS256, tokenKey, good(1, ""))},
		{"SubjectNotANumber", forge(t, jwt.SigningMethodHS256, tokenKey, good(1, "admin"))},
		{"NoExpiry", forge(t, jwt.SigningMethodHS256, tokenKey, Claims{SessionID: 1, RegisteredClaims: jwt.RegisteredClaims{
			Subject: "1", IssuedAt: jwt.NewNumericDate(tokenT0)}})},
		{"IssuedInTheFuture", forge(t, jwt.SigningMethodHS256, tokenKey, Claims{SessionID: 1, RegisteredClaims: jwt.RegisteredClaims{
			Subject: "1", IssuedAt: jwt.NewNumericDate(tokenT0.Add(time.Hour)), ExpiresAt: jwt.NewNumericDate(tokenT0.Add(2 * time.Hour))}})},
		{"TamperedPayload", tampered},
		{"SignatureStripped", parts[0] + "." + parts[1] + "."},
	}
	for _, tt := range refused {
		t.Run(tt.name+"Refused", func(t *testing.T) {
			c, err := tk.Parse(tt.token)
			if err == nil {
				t.Fatalf("Parse accepted the token: %+v", c)
			}
			if errors.Is(err, ErrExpired) {
				t.Errorf("Parse called a bad token expired: %v", err)
			}
		})
	}
}

func mustIssue(tb testing.TB, tk *Tokens, uid, sid int64, exp time.Time) string {
	tb.Helper()
	s, err := tk.Issue(uid, sid, "", exp)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// jwtSegment decodes one base64url segment of a token.
func jwtSegment(t *testing.T, seg string) string {
	t.Helper()
	b, err := jwt.NewParser().DecodeSegment(seg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// forgePayload rewrites the user of a payload segment to 2.
func forgePayload(t *testing.T, seg string) string {
	t.Helper()
	p := strings.Replace(jwtSegment(t, seg), `"sub":"1"`, `"sub":"2"`, 1)
	if !strings.Contains(p, `"sub":"2"`) {
		t.Fatalf("payload %s has no sub to rewrite", p)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(p))
}
