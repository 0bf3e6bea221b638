package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"image/png"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// TOTP parameters every standard authenticator app understands (RFC 6238).
const (
	totpPeriod = 30
	totpDigits = otp.DigitsSix
	totpSkew   = 1 // accept the previous and next 30-second step too
)

// TOTPSetup is what a user scans into an authenticator app.
type TOTPSetup struct {
	Secret     string
	OTPAuthURL string
	QRCode     string // data:image/png;base64,...
}

func newTOTPSetup(issuer, account string) (*TOTPSetup, error) {
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer:      issuer,
		AccountName: account,
		Period:      totpPeriod,
		SecretSize:  20,
		Digits:      totpDigits,
		Algorithm:   otp.AlgorithmSHA1,
	})
	if err != nil {
		return nil, err
	}
	img, err := key.Image(256, 256)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return &TOTPSetup{
		Secret:     key.Secret(),
		OTPAuthURL: key.URL(),
		QRCode:     "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()),
	}, nil
}

// matchTOTP checks code against secret at now and returns the time step the
// code belongs to, so the caller can refuse a second use of that step.
func matchTOTP(secret, code string, now time.Time) (step int64, ok bool) {
	code = strings.TrimSpace(code)
	if len(code) != int(totpDigits) {
		return 0, false
	}
	opts := totp.ValidateOpts{Period: totpPeriod, Digits: totpDigits, Algorithm: otp.AlgorithmSHA1}
	cur := now.Unix() / totpPeriod
	for d := int64(-totpSkew); d <= totpSkew; d++ {
		s := cur + d
		want, err := totp.GenerateCodeCustom(secret, time.Unix(s*totpPeriod, 0), opts)
		if err != nil {
			return 0, false
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return s, true
		}
	}
	return 0, false
}

// RecoveryCodeCount is how many one-time recovery codes 2FA hands out.
const RecoveryCodeCount = 10

// newRecoveryCodes makes codes like "k3xq7-mz2pa" (50 bits each) and their
// digests. They are random enough that a slow hash buys nothing; what is
// stored is the digest's HMAC under a key derived from secret.key
// (Service.recoveryCodeHash), so that 50 bits cannot be searched offline
// with a stolen backup alone.
func newRecoveryCodes() (codes []string, digests [][]byte, err error) {
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	for range RecoveryCodeCount {
		raw := make([]byte, 7)
		if _, err := rand.Read(raw); err != nil {
			return nil, nil, err
		}
		s := strings.ToLower(enc.EncodeToString(raw))[:10]
		code := s[:5] + "-" + s[5:]
		codes = append(codes, code)
		digests = append(digests, hashRecoveryCode(code))
	}
	return codes, digests, nil
}

// hashRecoveryCode is the digest of a recovery code, after normalising
// what a user might type (case, spaces, dash). Before migration 0006 it
// was what was stored; it is now what the stored HMAC is taken of, so
// those old rows can be keyed without knowing the codes.
func hashRecoveryCode(code string) []byte {
	c := strings.ToLower(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(code)))
	sum := sha256.Sum256([]byte("copydesk-recovery:" + c))
	return sum[:]
}

// looksLikeTOTP tells a 6-digit code from a recovery code.
func looksLikeTOTP(code string) bool {
	code = strings.TrimSpace(code)
	if len(code) != int(totpDigits) {
		return false
	}
	for _, r := range code {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
