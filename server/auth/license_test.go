package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

var licenseT0 = time.Date(2025, 1, 15, 9, 30, 0, 0, time.UTC)

func newKeyPair(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

func samplePayload() LicensePayload {
	exp := licenseT0.AddDate(1, 0, 0)
	return LicensePayload{ID: "lic_000123", Licensee: "Example GmbH", Plan: "pro", Seats: 5, IssuedAt: licenseT0, ExpiresAt: &exp}
}

func TestSignParseLicense(t *testing.T) {
	pub, priv := newKeyPair(t)

	t.Run("RoundTrip", func(t *testing.T) {
		p := samplePayload()
		p.IssuedAt = p.IssuedAt.Add(700 * time.Millisecond) // truncated to the second
		key, err := SignLicense(priv, p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(key, "CDL1.") || strings.Count(key, ".") != 2 {
			t.Errorf("key %q is not CDL1.<payload>.<signature>", key)
		}
		got, err := ParseLicense(pub, "  "+key+"\n")
		if err != nil {
			t.Fatal(err)
		}
		want := samplePayload()
		if got.ID != want.ID || got.Licensee != want.Licensee || got.Plan != want.Plan || got.Seats != want.Seats ||
			!got.IssuedAt.Equal(want.IssuedAt) || got.ExpiresAt == nil || !got.ExpiresAt.Equal(*want.ExpiresAt) {
			t.Errorf("ParseLicense = %+v, want %+v", got, want)
		}
	})

	t.Run("Perpetual", func(t *testing.T) {
		p := samplePayload()
		p.ExpiresAt = nil
		key, err := SignLicense(priv, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseLicense(pub, key)
		if err != nil || got.ExpiresAt != nil {
			t.Fatalf("ParseLicense = %+v, %v; want no expiry", got, err)
		}
	})

	key, err := SignLicense(priv, samplePayload())
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(key, ".")
	otherPub, otherPriv := newKeyPair(t)
	otherKey, _ := SignLicense(otherPriv, samplePayload())
	// A payload that says something else, carrying the original signature.
	better := samplePayload()
	better.Seats = 500
	betterBody, _ := json.Marshal(better)
	swapped := parts[0] + "." + base64.RawURLEncoding.EncodeToString(betterBody) + "." + parts[2]
	// Replacing the first character changes decoded bytes for sure (the last
	// character of unpadded base64 may only carry padding bits).
	swapFirst := func(s string) string {
		if s[0] == 'A' {
			return "B" + s[1:]
		}
		return "A" + s[1:]
	}

	refused := []struct {
		name string
		pub  ed25519.PublicKey
		key  string
	}{
		{"Empty", pub, ""},
		{"WrongPrefix", pub, "CDL2." + parts[1] + "." + parts[2]},
		{"TwoParts", pub, parts[0] + "." + parts[1]},
		{"FourParts", pub, key + ".x"},
		{"TamperedPayload", pub, parts[0] + "." + swapFirst(parts[1]) + "." + parts[2]},
		{"SwappedPayload", pub, swapped},
		{"TamperedSignature", pub, parts[0] + "." + parts[1] + "." + swapFirst(parts[2])},
		{"ShortSignature", pub, parts[0] + "." + parts[1] + "." + parts[2][:40]},
		{"SignatureNotBase64", pub, parts[0] + "." + parts[1] + ".!!!"},
		{"WrongPublicKey", otherPub, key},
		{"SignedByOtherKey", pub, otherKey},
	}
	for _, tt := range refused {
		t.Run(tt.name+"Refused", func(t *testing.T) {
			if got, err := ParseLicense(tt.pub, tt.key); err == nil {
				t.Fatalf("ParseLicense accepted %q: %+v", tt.key, got)
			}
		})
	}
}

func TestLicensePayloadValidation(t *testing.T) {
	pub, priv := newKeyPair(t)
	before := licenseT0.Add(-time.Hour)
	same := licenseT0
	tests := []struct {
		name   string
		change func(p *LicensePayload)
	}{
		{"IDTooShort", func(p *LicensePayload) { p.ID = "abc" }},
		{"IDWithSpace", func(p *LicensePayload) { p.ID = "lic 000123" }},
		{"IDTooLong", func(p *LicensePayload) { p.ID = strings.Repeat("a", 65) }},
		{"NoLicensee", func(p *LicensePayload) { p.Licensee = "  " }},
		{"PlanUpperCase", func(p *LicensePayload) { p.Plan = "Pro" }},
		{"NoPlan", func(p *LicensePayload) { p.Plan = "" }},
		{"SeatsZero", func(p *LicensePayload) { p.Seats = 0 }},
		{"SeatsNegative", func(p *LicensePayload) { p.Seats = -1 }},
		{"SeatsTooMany", func(p *LicensePayload) { p.Seats = 100001 }},
		{"NotIssued", func(p *LicensePayload) { p.IssuedAt = time.Time{} }},
		{"ExpiresBeforeIssued", func(p *LicensePayload) { p.ExpiresAt = &before }},
		{"ExpiresWhenIssued", func(p *LicensePayload) { p.ExpiresAt = &same }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := samplePayload()
			tt.change(&p)
			if key, err := SignLicense(priv, p); err == nil {
				t.Fatalf("SignLicense signed an invalid payload: %q", key)
			}
			// A key signed without SignLicense's check is refused on reading.
			body, _ := json.Marshal(p)
			part := base64.RawURLEncoding.EncodeToString(body)
			sig := ed25519.Sign(priv, []byte(licenseContext+part))
			key := licensePrefix + "." + part + "." + base64.RawURLEncoding.EncodeToString(sig)
			if got, err := ParseLicense(pub, key); err == nil {
				t.Fatalf("ParseLicense accepted a validly signed invalid payload: %+v", got)
			}
		})
	}

	t.Run("ExpiresInTheIssuedSecondRefused", func(t *testing.T) {
		p := samplePayload()
		within := licenseT0.Add(300 * time.Millisecond) // equal to issued_at once truncated
		p.ExpiresAt = &within
		if key, err := SignLicense(priv, p); err == nil {
			t.Fatalf("SignLicense signed a key that expires in the second it was issued: %q", key)
		}
	})

	t.Run("SignedGarbagePayloadRefused", func(t *testing.T) {
		part := base64.RawURLEncoding.EncodeToString([]byte("not json"))
		sig := ed25519.Sign(priv, []byte(licenseContext+part))
		if _, err := ParseLicense(pub, licensePrefix+"."+part+"."+base64.RawURLEncoding.EncodeToString(sig)); err == nil {
			t.Fatal("ParseLicense accepted a payload that is not JSON")
		}
	})
}

func TestLicenseState(t *testing.T) {
	exp := licenseT0.AddDate(0, 1, 0)
	limited := &LicensePayload{IssuedAt: licenseT0, ExpiresAt: &exp}
	perpetual := &LicensePayload{IssuedAt: licenseT0}
	tests := []struct {
		name string
		p    *LicensePayload
		now  time.Time
		want string
	}{
		{"ActiveAtIssue", limited, licenseT0, LicenseActive},
		{"ActiveJustBeforeExpiry", limited, exp.Add(-time.Nanosecond), LicenseActive},
		{"ExpiredAtExpiry", limited, exp, LicenseExpired},
		{"ExpiredLater", limited, exp.AddDate(1, 0, 0), LicenseExpired},
		{"PerpetualActive", perpetual, licenseT0.AddDate(50, 0, 0), LicenseActive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LicenseState(tt.p, tt.now); got != tt.want {
				t.Errorf("LicenseState = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParsePublicKey(t *testing.T) {
	pub, _ := newKeyPair(t)
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	ecPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecDER}))

	accepted := []struct{ name, in string }{
		{"Base64Raw", base64.StdEncoding.EncodeToString(pub)},
		{"Base64WithWhitespace", "\n " + base64.StdEncoding.EncodeToString(pub) + " \n"},
		{"PEM", pemKey},
	}
	for _, tt := range accepted {
		t.Run("Accepts/"+tt.name, func(t *testing.T) {
			got, err := ParsePublicKey(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(pub) {
				t.Error("ParsePublicKey returned another key")
			}
		})
	}
	t.Run("Accepts/Builtin", func(t *testing.T) {
		if _, err := ParsePublicKey(BuiltinLicensePublicKey); err != nil {
			t.Fatal(err)
		}
	})

	refused := []struct{ name, in string }{
		{"Empty", ""},
		{"Junk", "not a key"},
		{"Base64TooShort", base64.StdEncoding.EncodeToString(pub[:31])},
		{"Base64TooLong", base64.StdEncoding.EncodeToString(append(append([]byte(nil), pub...), 0))},
		{"PEMGarbage", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"},
		{"PEMECDSA", ecPEM},
	}
	for _, tt := range refused {
		t.Run("Refuses/"+tt.name, func(t *testing.T) {
			if got, err := ParsePublicKey(tt.in); err == nil {
				t.Fatalf("ParsePublicKey accepted %q: %x", tt.in, got)
			}
		})
	}
}

func TestKeyPairRoundTrip(t *testing.T) {
	pub, priv := newKeyPair(t)
	privPEM, pubB64, err := MarshalKeyPair(pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	gotPriv, err := ParsePrivateKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !gotPriv.Equal(priv) {
		t.Fatal("ParsePrivateKey returned another key")
	}
	gotPub, err := ParsePublicKey(pubB64)
	if err != nil {
		t.Fatal(err)
	}
	if !gotPub.Equal(pub) {
		t.Fatal("ParsePublicKey returned another key")
	}
	key, err := SignLicense(gotPriv, samplePayload())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseLicense(gotPub, key); err != nil {
		t.Fatalf("a key signed with the reloaded private key does not verify with the reloaded public key: %v", err)
	}

	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	refused := []struct {
		name string
		in   []byte
	}{
		{"Empty", nil},
		{"NoPEM", []byte("private")},
		{"BadDER", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("x")})},
		{"ECDSA", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER})},
	}
	for _, tt := range refused {
		t.Run("ParsePrivateKeyRefuses/"+tt.name, func(t *testing.T) {
			if _, err := ParsePrivateKey(tt.in); err == nil {
				t.Fatal("ParsePrivateKey accepted it")
			}
		})
	}
}
