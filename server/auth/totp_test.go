package auth

import (
	"bytes"
	"encoding/base32"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

const totpSecret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"

// codeAt is the code an authenticator app shows during time step step.
func codeAt(t *testing.T, secret string, step int64) string {
	t.Helper()
	code, err := totp.GenerateCodeCustom(secret, time.Unix(step*totpPeriod, 0),
		totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func TestMatchTOTP(t *testing.T) {
	// 20 seconds into a step, so "now" is not on a boundary.
	now := time.Date(2025, 6, 1, 12, 0, 20, 0, time.UTC)
	cur := now.Unix() / totpPeriod
	window := map[string]bool{}
	for d := int64(-1); d <= 1; d++ {
		window[codeAt(t, totpSecret, cur+d)] = true
	}

	accepted := []struct {
		name  string
		delta int64
		pad   string
	}{
		{"Current", 0, ""},
		{"PreviousStep", -1, ""},
		{"NextStep", 1, ""},
		{"SurroundingSpaces", 0, " "},
	}
	for _, tt := range accepted {
		t.Run("Accepts/"+tt.name, func(t *testing.T) {
			code := tt.pad + codeAt(t, totpSecret, cur+tt.delta) + tt.pad
			step, ok := matchTOTP(totpSecret, code, now)
			if !ok {
				t.Fatalf("matchTOTP refused the code of step %+d", tt.delta)
			}
			if step != cur+tt.delta {
				t.Errorf("step = %d, want %d", step, cur+tt.delta)
			}
		})
	}

	t.Run("Accepts/AtStepBoundary", func(t *testing.T) {
		start := time.Unix(cur*totpPeriod, 0)
		if step, ok := matchTOTP(totpSecret, codeAt(t, totpSecret, cur-1), start); !ok || step != cur-1 {
			t.Errorf("at the first second of a step the previous code gives %d, %v; want %d, true", step, ok, cur-1)
		}
	})

	refused := []struct {
		name string
		code string
	}{
		{"TwoStepsBack", codeAt(t, totpSecret, cur-2)},
		{"TwoStepsAhead", codeAt(t, totpSecret, cur+2)},
		{"LongAgo", codeAt(t, totpSecret, cur-1000)},
		{"Empty", ""},
		{"FiveDigits", codeAt(t, totpSecret, cur)[:5]},
		{"SevenDigits", codeAt(t, totpSecret, cur) + "0"},
		{"Letters", "abcdef"},
		{"InnerSpace", codeAt(t, totpSecret, cur)[:3] + " " + codeAt(t, totpSecret, cur)[3:]},
	}
	for _, tt := range refused {
		t.Run("Refuses/"+tt.name, func(t *testing.T) {
			if c := strings.TrimSpace(tt.code); len(c) == 6 && window[c] {
				t.Fatalf("fixture: code %q happens to be valid in the window; pick another time", tt.code)
			}
			if step, ok := matchTOTP(totpSecret, tt.code, now); ok {
				t.Fatalf("matchTOTP accepted %q as step %d", tt.code, step)
			}
		})
	}

	t.Run("Refuses/OtherSecret", func(t *testing.T) {
		code := codeAt(t, "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", cur)
		if window[code] {
			t.Skip("fixture: the other secret's code collides with this one's")
		}
		if _, ok := matchTOTP(totpSecret, code, now); ok {
			t.Fatal("matchTOTP accepted another secret's code")
		}
	})

	t.Run("Refuses/MalformedSecret", func(t *testing.T) {
		if _, ok := matchTOTP("not base32 !!", "123456", now); ok {
			t.Fatal("matchTOTP accepted a code for a malformed secret")
		}
	})
}

func TestNewTOTPSetup(t *testing.T) {
	s, err := newTOTPSetup("copydesk", "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s.Secret)
	if err != nil || len(raw) != 20 {
		t.Errorf("secret %q decodes to %d bytes (%v), want 20", s.Secret, len(raw), err)
	}
	u, err := url.Parse(s.OTPAuthURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Scheme != "otpauth" || u.Host != "totp" || q.Get("secret") != s.Secret || q.Get("issuer") != "copydesk" ||
		!strings.Contains(u.Path, "ann@example.com") || q.Get("digits") != "6" || q.Get("period") != "30" {
		t.Errorf("OTPAuthURL = %q", s.OTPAuthURL)
	}
	if !strings.HasPrefix(s.QRCode, "data:image/png;base64,iVBOR") {
		t.Errorf("QRCode does not start like a base64 PNG data URL: %.40q", s.QRCode)
	}
	now := time.Now()
	if _, ok := matchTOTP(s.Secret, codeAt(t, s.Secret, now.Unix()/totpPeriod), now); !ok {
		t.Error("the code of the new secret does not match")
	}
	again, _ := newTOTPSetup("copydesk", "ann@example.com")
	if again.Secret == s.Secret {
		t.Error("two setups share a secret")
	}
}

func TestRecoveryCodes(t *testing.T) {
	codes, hashes, err := newRecoveryCodes()
	if err != nil {
		t.Fatal(err)
	}
	if len(codes) != RecoveryCodeCount || len(hashes) != RecoveryCodeCount || RecoveryCodeCount != 10 {
		t.Fatalf("got %d codes and %d hashes, want 10 of each", len(codes), len(hashes))
	}
	form := regexp.MustCompile(`^[a-z2-7]{5}-[a-z2-7]{5}$`)
	seen := map[string]bool{}
	for i, c := range codes {
		if !form.MatchString(c) {
			t.Errorf("code %q does not look like xxxxx-xxxxx", c)
		}
		if seen[c] {
			t.Errorf("code %q appears twice", c)
		}
		seen[c] = true
		if !bytes.Equal(hashes[i], hashRecoveryCode(c)) {
			t.Errorf("hash %d is not the hash of code %q", i, c)
		}
		if looksLikeTOTP(c) {
			t.Errorf("recovery code %q looks like a TOTP code", c)
		}
	}
	other, _, _ := newRecoveryCodes()
	for _, c := range other {
		if seen[c] {
			t.Errorf("code %q came out of two calls", c)
		}
	}
}

func TestHashRecoveryCode(t *testing.T) {
	want := hashRecoveryCode("abcde-fghij")
	same := []string{"abcde-fghij", "ABCDE-FGHIJ", "abcdefghij", "abcde fghij", "  Abcde-Fghij\t", "ab-cde-fg hij", "abcde--fghij"}
	for _, c := range same {
		if !bytes.Equal(hashRecoveryCode(c), want) {
			t.Errorf("hashRecoveryCode(%q) differs from that of abcde-fghij", c)
		}
	}
	for _, c := range []string{"abcde-fghik", "abcdefghi", "abcde-fghijk", ""} {
		if bytes.Equal(hashRecoveryCode(c), want) {
			t.Errorf("hashRecoveryCode(%q) equals that of abcde-fghij", c)
		}
	}
	if bytes.Contains(want, []byte("abcdefghij")) || len(want) != 32 {
		t.Errorf("hash %x is not a 32-byte digest", want)
	}
}

func TestLooksLikeTOTP(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"123456", true},
		{" 000000 ", true},
		{"12345", false},
		{"1234567", false},
		{"12345a", false},
		{"abcde-fghij", false},
		{"", false},
		{"١٢٣٤٥٦", false}, // Arabic-Indic digits are not ASCII digits
	}
	for _, tt := range tests {
		if got := looksLikeTOTP(tt.in); got != tt.want {
			t.Errorf("looksLikeTOTP(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
