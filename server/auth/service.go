// Package auth holds the rules of accounts: registration, sign-in with
// password and second factor, tokens and sessions, profiles, two-factor
// setup, licenses and user administration. The HTTP handlers in server/auth.go
// and the CLI both call it, so a rule lives here once.
package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Config tunes the service.
type Config struct {
	TokenTTL         time.Duration // lifetime of one token; refresh issues another
	SessionTTL       time.Duration // absolute lifetime of a session
	Hasher           Hasher
	Throttle         ThrottlePolicy
	Issuer           string // shown in authenticator apps
	LicensePublicKey ed25519.PublicKey
	// Hashes bounds the password hashes that run at once; nil: sized from
	// the machine for Hasher (MachineHashLimit).
	Hashes *HashLimit
}

// DefaultConfig is what `copydesk serve` uses unless told otherwise.
func DefaultConfig() Config {
	pub, err := ParsePublicKey(BuiltinLicensePublicKey)
	if err != nil {
		panic(err)
	}
	return Config{
		TokenTTL:         time.Hour,
		SessionTTL:       30 * 24 * time.Hour,
		Hasher:           DefaultHasher,
		Throttle:         DefaultThrottle,
		Issuer:           "copydesk",
		LicensePublicKey: pub,
	}
}

// Service implements the account rules over the store.
type Service struct {
	db         *store.DB
	keys       *keyring.Keyring
	tokens     *Tokens
	cfg        Config
	now        func() time.Time
	dummyHash  string
	principals principalCache
}

// New makes the service. The clock is the store's, so tests move both.
func New(db *store.DB, keys *keyring.Keyring, cfg Config) (*Service, error) {
	now := func() time.Time { return db.Now() }
	if cfg.Hashes == nil {
		cfg.Hashes = MachineHashLimit(cfg.Hasher)
	}
	// A login for an unknown address verifies against this hash, so it costs
	// as long as one for a known address.
	dummy, err := cfg.Hasher.Decoy()
	if err != nil {
		return nil, err
	}
	return &Service{db: db, keys: keys, tokens: NewTokens(keys.JWTKey(), now), cfg: cfg, now: now, dummyHash: dummy}, nil
}

// ---- input rules ----

var usernamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{2,31}$`) })

// Password rules: at least 8 characters; at most 256 so a hash request
// cannot be made arbitrarily expensive.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 256
)

// checkEmail returns the address as it is stored (store.NormalizeEmail);
// uniqueness is the store's, by store.EmailKey.
func checkEmail(email string) (string, error) {
	email = store.NormalizeEmail(email)
	if err := valid.Line("email", email); err != nil {
		return "", err
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || len(email) > 254 || !strings.Contains(email[strings.LastIndex(email, "@"):], ".") {
		return "", store.Invalid("email: must be a valid e-mail address like name@example.com")
	}
	return email, nil
}

func checkUsername(u string) (string, error) {
	u = strings.TrimSpace(u)
	if !usernamePattern().MatchString(u) {
		return "", store.Invalid("username: must be 3 to 32 characters: letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	return u, nil
}

// CheckPassword applies the password rules.
func CheckPassword(field, p string) error {
	n := utf8.RuneCountInString(p)
	if n < MinPasswordLen {
		return store.Invalid("%s: must be at least %d characters", field, MinPasswordLen)
	}
	if n > MaxPasswordLen {
		return store.Invalid("%s: must be at most %d characters", field, MaxPasswordLen)
	}
	return nil
}

func checkFullName(n string) (string, error) {
	n = strings.TrimSpace(n)
	if err := valid.Line("full_name", n); err != nil {
		return "", err
	}
	return n, valid.MaxLen("full_name", n, 100)
}

// ---- accounts ----

// NewAccount is an account to create.
type NewAccount struct {
	Email    string
	Username string
	FullName string
	Password string
	Role     store.Role
}

// CreateUser creates an account with any role: the CLI's way in, and the one
// way to make the first super_admin.
func (s *Service) CreateUser(ctx context.Context, a NewAccount) (*store.User, error) {
	email, err := checkEmail(a.Email)
	if err != nil {
		return nil, err
	}
	username, err := checkUsername(a.Username)
	if err != nil {
		return nil, err
	}
	fullName, err := checkFullName(a.FullName)
	if err != nil {
		return nil, err
	}
	if err := CheckPassword("password", a.Password); err != nil {
		return nil, err
	}
	if !a.Role.Valid() {
		return nil, store.Invalid("role: must be one of super_admin, admin, editor, viewer")
	}
	hash, err := s.hash(ctx, a.Password)
	if err != nil {
		return nil, err
	}
	return s.db.CreateUser(ctx, store.NewUser{Email: email, Username: username, FullName: fullName, PasswordHash: hash, Role: a.Role})
}

// Register creates a viewer with no environment, if registration is open.
func (s *Service) Register(ctx context.Context, a NewAccount) (*store.User, error) {
	set, err := s.db.SystemSettings(ctx)
	if err != nil {
		return nil, err
	}
	if !set.RegistrationOpen {
		return nil, store.Forbidden("registration is closed on this copydesk: ask an admin for an account")
	}
	a.Role = store.RoleViewer
	return s.CreateUser(ctx, a)
}

// SetPassword sets a password from the shell (account recovery) and ends
// every session of the account.
func (s *Service) SetPassword(ctx context.Context, email, password string) (*store.User, error) {
	if err := CheckPassword("password", password); err != nil {
		return nil, err
	}
	u, err := s.db.UserByEmail(ctx, email)
	if err != nil {
		return nil, err
	}
	hash, err := s.hash(ctx, password)
	if err != nil {
		return nil, err
	}
	u, err = s.db.UpdateUser(ctx, u.ID, store.UserUpdate{PasswordHash: &hash})
	if err != nil {
		return nil, err
	}
	return u, s.db.ClearLoginFailures(ctx, email)
}

// ---- sign-in ----

// LoginInput is a sign-in attempt.
type LoginInput struct {
	Email     string
	Password  string
	TOTPCode  string
	IP        string
	UserAgent string
}

// Grant is an issued token with its session and user.
type Grant struct {
	Token     string
	ExpiresAt time.Time
	Session   *store.Session
	User      *store.User
}

// Messages shown for failed sign-ins. The first is the same whether the
// address is unknown or the password wrong.
const (
	msgBadCredentials = "incorrect e-mail or password"
	msgTOTPRequired   = "a two-factor code is required: send totp_code with the 6-digit code from your authenticator app, or a recovery code"
	msgTOTPInvalid    = "the two-factor code is not valid"
	// A code entered again says so, whichever kind it is: the person
	// typing it learns why, and it is no news to someone who has it.
	msgTOTPUsed         = "this two-factor code was already used: wait for the next code"
	msgRecoveryCodeUsed = "this recovery code was already used: each one works once; use another, or the code from your authenticator app"
	msgDisabled         = "this account is disabled: ask an admin to enable it"
)

// errNoSecondFactor answers the right password without the code an account
// with two-factor authentication needs: the first step of its sign-in,
// which attempt does not count as a failure.
var errNoSecondFactor = store.Unauthorized(msgTOTPRequired)

// Login checks credentials and the second factor and starts a session.
func (s *Service) Login(ctx context.Context, in LoginInput) (*Grant, error) {
	email := strings.TrimSpace(in.Email)
	if email == "" || in.Password == "" {
		return nil, store.Unauthorized(msgBadCredentials)
	}
	var user *store.User
	check := func() (bool, error) {
		u, err := s.db.UserByEmail(ctx, email)
		if store.IsNotFound(err) || len(in.Password) > MaxPasswordLen*4 {
			_, _ = Verify(s.dummyHash, in.Password)
			return false, nil
		}
		if err != nil {
			return false, err
		}
		match, err := Verify(u.PasswordHash, in.Password)
		if err != nil || !match {
			return false, err
		}
		if !u.TOTPEnabled {
			user = u
			return true, nil
		}
		if strings.TrimSpace(in.TOTPCode) == "" {
			return false, errNoSecondFactor
		}
		good, err := s.checkSecondFactor(ctx, u, in.TOTPCode)
		if err != nil || !good {
			return false, err
		}
		user = u
		return true, nil
	}
	// The hash slot is taken before the attempt is counted: a sign-in
	// refused because the server is busy is not a failed one.
	ok, err := withHashSlot(ctx, s.cfg.Hashes, func() (bool, error) { return s.attempt(ctx, email, check) })
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, store.Unauthorized(msgBadCredentials)
	}
	if !user.IsActive {
		return nil, store.Forbidden(msgDisabled)
	}
	return s.startSession(ctx, user, in.IP, in.UserAgent)
}

// checkSecondFactor accepts a current TOTP code not used before, or an
// unused recovery code (which is then spent). A wrong code is an error with
// its own message, so the client can tell it from a wrong password.
func (s *Service) checkSecondFactor(ctx context.Context, u *store.User, code string) (bool, error) {
	if looksLikeTOTP(code) {
		secret, err := s.keys.Open(u.TOTPSecret, totpAAD(u.ID))
		if err != nil {
			return false, fmt.Errorf("auth: open totp secret of user %d: %w", u.ID, err)
		}
		step, ok := matchTOTP(string(secret), code, s.now())
		if !ok {
			return false, store.Unauthorized(msgTOTPInvalid)
		}
		fresh, err := s.db.UseTOTPStep(ctx, u.ID, step)
		if err != nil {
			return false, err
		}
		if !fresh {
			return false, store.Unauthorized(msgTOTPUsed)
		}
		return true, nil
	}
	// Codes of a restored older backup are keyed before they are looked up.
	if _, err := s.KeyRecoveryCodes(ctx); err != nil {
		return false, err
	}
	hash := s.recoveryCodeHash(code)
	used, err := s.db.UseRecoveryCode(ctx, u.ID, hash)
	if err != nil || used {
		return used, err
	}
	spent, err := s.db.RecoveryCodeSpent(ctx, u.ID, hash)
	if err != nil {
		return false, err
	}
	if spent {
		return false, store.Unauthorized(msgRecoveryCodeUsed)
	}
	return false, store.Unauthorized(msgTOTPInvalid)
}

func totpAAD(userID int64) string { return fmt.Sprintf("user:%d:totp", userID) }

// recoveryCodeHash is what is stored of a recovery code: HMAC-SHA256 of its
// digest under a key derived from secret.key.
func (s *Service) recoveryCodeHash(code string) []byte {
	return s.keys.RecoveryCodeMAC(hashRecoveryCode(code))
}

// KeyRecoveryCodes rewrites recovery codes stored by a copydesk before
// migration 0006 (a plain digest, which a stolen backup lets anyone search
// offline) as HMACs under the recovery code key. It runs at every start,
// in the hourly housekeeping, and before a recovery code is checked, so
// restoring an older backup leaves none behind for long.
func (s *Service) KeyRecoveryCodes(ctx context.Context) (int, error) {
	return s.db.KeyRecoveryCodes(ctx, s.keys.RecoveryCodeMAC)
}

func (s *Service) startSession(ctx context.Context, u *store.User, ip, ua string) (*Grant, error) {
	now := s.now()
	sessExp := now.Add(s.cfg.SessionTTL)
	tokExp := minTime(now.Add(s.cfg.TokenTTL), sessExp)
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	sess, err := s.db.CreateSession(ctx, store.NewSession{UserID: u.ID, TokenExpiresAt: tokExp, ExpiresAt: sessExp, IP: ip, UserAgent: ua,
		Nonce: base64.RawURLEncoding.EncodeToString(nonce)})
	if err != nil {
		return nil, err
	}
	tok, err := s.tokens.Issue(u.ID, sess.ID, sess.Nonce, tokExp)
	if err != nil {
		return nil, err
	}
	signedIn := *u
	signedIn.LastLoginAt = &sess.CreatedAt
	return &Grant{Token: tok, ExpiresAt: tokExp, Session: sess, User: &signedIn}, nil
}

// Refresh issues a new token for the caller's session, never past the
// session's absolute end.
func (s *Service) Refresh(ctx context.Context, p *Principal) (*Grant, error) {
	if err := requireSession(p); err != nil {
		return nil, err
	}
	now := s.now()
	if !now.Before(p.Session.ExpiresAt) {
		return nil, store.Unauthorized("the session has reached its maximum lifetime: sign in again")
	}
	exp := minTime(now.Add(s.cfg.TokenTTL), p.Session.ExpiresAt)
	sess, err := s.db.ExtendSession(ctx, p.Session.ID, exp)
	if err != nil {
		return nil, err
	}
	tok, err := s.tokens.Issue(p.User.ID, sess.ID, sess.Nonce, exp)
	if err != nil {
		return nil, err
	}
	return &Grant{Token: tok, ExpiresAt: exp, Session: sess, User: p.User}, nil
}

// Principal is the authenticated caller of a request: a session (signed in
// with a password) or an API token, never both.
type Principal struct {
	User    *store.User
	Session *store.Session  // nil for an API token
	Token   *store.APIToken // nil for a session; see Allows
	// Scope is what the caller may see, computed with the principal (and
	// cached with it) so that no handler or service derives it again.
	Scope store.Scope
}

// touchEvery bounds how often a session's last_seen_at, or an API token's
// last_used_at, is written.
const touchEvery = time.Minute

// Authenticate checks a bearer token: signature and expiry, then the session
// (not revoked, within its lifetime) and the user (still enabled). Each of
// these failures is a 401. An API token (cdk_...) is checked by
// authenticateAPIToken instead.
func (s *Service) Authenticate(ctx context.Context, token string) (*Principal, error) {
	if IsAPIToken(token) {
		return s.authenticateAPIToken(ctx, token)
	}
	c, err := s.tokens.Parse(token)
	if err == ErrExpired {
		return nil, store.Unauthorized("the token has expired: refresh it before it expires, or sign in again")
	}
	if err != nil {
		return nil, store.Unauthorized("the token is not valid")
	}
	sess, user, scope, err := s.principals.load(ctx, s.db, c.SessionID)
	if store.IsNotFound(err) {
		return nil, store.Unauthorized("the session has ended: sign in again")
	}
	if err != nil {
		return nil, err
	}
	uid, _ := c.UserID()
	now := s.now()
	switch {
	case sess.UserID != uid || subtle.ConstantTimeCompare([]byte(sess.Nonce), []byte(c.SessionNonce)) != 1:
		return nil, store.Unauthorized("the session has ended: sign in again")
	case sess.RevokedAt != nil:
		return nil, store.Unauthorized("the session was revoked: sign in again")
	case !now.Before(sess.ExpiresAt):
		return nil, store.Unauthorized("the session has ended: sign in again")
	case !user.IsActive:
		return nil, store.Unauthorized(msgDisabled)
	}
	if now.Sub(sess.LastSeenAt) > touchEvery {
		if err := s.db.TouchSession(ctx, sess.ID); err == nil {
			sess.LastSeenAt = now
		}
	}
	return &Principal{User: user, Session: sess, Scope: scope}, nil
}

// ---- profile ----

// ProfileUpdate is what a user may change about themselves; nil leaves a
// field alone. A new e-mail or password needs the current password.
type ProfileUpdate struct {
	Username        *string
	FullName        *string
	Email           *string
	CurrentPassword string
	NewPassword     *string
}

// UpdateProfile applies a ProfileUpdate. A new password ends the user's
// other sessions.
func (s *Service) UpdateProfile(ctx context.Context, p *Principal, in ProfileUpdate) (*store.User, error) {
	if err := requireSession(p); err != nil {
		return nil, err
	}
	var up store.UserUpdate
	var err error
	if in.Username != nil {
		u, err := checkUsername(*in.Username)
		if err != nil {
			return nil, err
		}
		up.Username = &u
	}
	if in.FullName != nil {
		n, err := checkFullName(*in.FullName)
		if err != nil {
			return nil, err
		}
		up.FullName = &n
	}
	if in.Email != nil {
		e, err := checkEmail(*in.Email)
		if err != nil {
			return nil, err
		}
		if store.EmailKey(e) != store.EmailKey(p.User.Email) {
			up.Email = &e
		}
	}
	if in.NewPassword != nil {
		if err := CheckPassword("new_password", *in.NewPassword); err != nil {
			return nil, err
		}
		h, err := s.hash(ctx, *in.NewPassword)
		if err != nil {
			return nil, err
		}
		up.PasswordHash = &h
		up.KeepSession = p.Session.ID
	}
	if up.Email != nil || up.PasswordHash != nil {
		what := "change the e-mail address"
		if up.PasswordHash != nil {
			what = "change the password"
		}
		if in.CurrentPassword == "" {
			return nil, store.Invalid("current_password: is required to %s", what)
		}
		if err := s.confirmPassword(ctx, p.User, in.CurrentPassword, "current_password"); err != nil {
			return nil, err
		}
	}
	u, err := s.db.UpdateUser(ctx, p.User.ID, up)
	if err != nil {
		return nil, err
	}
	return u, nil
}

// confirmPassword checks a signed-in user's password, counted by the same
// throttle as sign-in so a stolen token cannot be used to guess it.
func (s *Service) confirmPassword(ctx context.Context, principal *store.User, password, field string) error {
	u, err := s.db.UserByID(ctx, principal.ID) // the principal carries no password hash
	if err != nil {
		return err
	}
	ok, err := withHashSlot(ctx, s.cfg.Hashes, func() (bool, error) {
		return s.attempt(ctx, u.Email, func() (bool, error) { return Verify(u.PasswordHash, password) })
	})
	if err != nil {
		return err
	}
	if !ok {
		return store.Invalid("%s: is incorrect", field)
	}
	return nil
}

// ---- two-factor ----

// SetupTOTP makes a new secret for the user, pending until VerifyTOTP.
func (s *Service) SetupTOTP(ctx context.Context, p *Principal) (*TOTPSetup, error) {
	if err := requireSession(p); err != nil {
		return nil, err
	}
	if p.User.TOTPEnabled {
		return nil, store.Conflict("two-factor authentication is already enabled: disable it first to set up a new authenticator")
	}
	setup, err := newTOTPSetup(s.cfg.Issuer, p.User.Email)
	if err != nil {
		return nil, err
	}
	sealed, err := s.keys.Seal([]byte(setup.Secret), totpAAD(p.User.ID))
	if err != nil {
		return nil, err
	}
	return setup, s.db.SetTOTPPending(ctx, p.User.ID, sealed)
}

// VerifyTOTP turns 2FA on with a valid code for the pending secret and
// the user's current password, and returns the one-time recovery codes
// (shown this once only). The password is asked for because turning 2FA on
// with a stolen token alone would lock the owner out of their account.
func (s *Service) VerifyTOTP(ctx context.Context, p *Principal, code, currentPassword string) ([]string, error) {
	if err := requireSession(p); err != nil {
		return nil, err
	}
	u, err := s.db.UserByID(ctx, p.User.ID)
	if err != nil {
		return nil, err
	}
	if u.TOTPEnabled {
		return nil, store.Conflict("two-factor authentication is already enabled")
	}
	if len(u.TOTPPending) == 0 {
		return nil, store.Conflict("no two-factor setup is pending: call POST /api/auth/2fa/setup first")
	}
	if currentPassword == "" {
		return nil, store.Invalid("current_password: is required to turn two-factor authentication on")
	}
	if err := s.confirmPassword(ctx, u, currentPassword, "current_password"); err != nil {
		return nil, err
	}
	secret, err := s.keys.Open(u.TOTPPending, totpAAD(u.ID))
	if err != nil {
		return nil, fmt.Errorf("auth: open pending totp secret of user %d: %w", u.ID, err)
	}
	step, ok := matchTOTP(string(secret), code, s.now())
	if !ok {
		return nil, store.Invalid("code: is not a valid code for the pending setup; check your device's clock")
	}
	codes, digests, err := newRecoveryCodes()
	if err != nil {
		return nil, err
	}
	hashes := make([][]byte, len(digests))
	for i, d := range digests {
		hashes[i] = s.keys.RecoveryCodeMAC(d)
	}
	return codes, s.db.EnableTOTP(ctx, u.ID, u.TOTPPending, step, hashes)
}

// TwoFactorStatus is the state of a user's two-factor authentication.
type TwoFactorStatus struct {
	Enabled           bool
	SetupPending      bool // a secret from setup awaits its first code (verify)
	RecoveryCodesLeft int  // unused recovery codes; 0 while off
}

// TwoFactor tells the caller the state of their two-factor authentication,
// with how many recovery codes they have left.
func (s *Service) TwoFactor(ctx context.Context, p *Principal) (*TwoFactorStatus, error) {
	if err := requireSession(p); err != nil {
		return nil, err
	}
	u, err := s.db.UserByID(ctx, p.User.ID) // with the pending secret
	if err != nil {
		return nil, err
	}
	st := &TwoFactorStatus{Enabled: u.TOTPEnabled, SetupPending: !u.TOTPEnabled && len(u.TOTPPending) > 0}
	if u.TOTPEnabled {
		if st.RecoveryCodesLeft, err = s.db.RecoveryCodesLeft(ctx, u.ID); err != nil {
			return nil, fmt.Errorf("auth: recovery codes of user %d: %w", u.ID, err)
		}
	}
	return st, nil
}

// DisableTOTP turns 2FA off, proven by a current code (or recovery code) or
// by the password.
func (s *Service) DisableTOTP(ctx context.Context, p *Principal, code, password string) (*store.User, error) {
	if err := requireSession(p); err != nil {
		return nil, err
	}
	if err := s.disableTOTP(ctx, p, code, password); err != nil {
		return nil, err
	}
	return s.db.UserByID(ctx, p.User.ID)
}

func (s *Service) disableTOTP(ctx context.Context, p *Principal, code, password string) error {
	u, err := s.db.UserByID(ctx, p.User.ID) // with the sealed secret
	if err != nil {
		return err
	}
	if !u.TOTPEnabled {
		return store.Conflict("two-factor authentication is not enabled")
	}
	switch {
	case code != "":
		ok, err := s.attempt(ctx, u.Email, func() (bool, error) {
			ok, err := s.checkSecondFactor(ctx, u, code)
			if store.KindOf(err) == store.KindUnauthorized {
				return false, store.Invalid("code: %s", store.Message(err))
			}
			return ok, err
		})
		if err != nil {
			return err
		}
		if !ok {
			return store.Invalid("code: is not valid")
		}
	case password != "":
		if err := s.confirmPassword(ctx, u, password, "password"); err != nil {
			return err
		}
	default:
		return store.Invalid("code: send the current two-factor code, or password: your password")
	}
	return s.db.DisableTOTP(ctx, u.ID)
}

// ---- sessions ----

// Sessions lists a page of the caller's active sessions, newest first.
func (s *Service) Sessions(ctx context.Context, p *Principal, pg store.Page) ([]*store.Session, int, error) {
	if err := requireSession(p); err != nil {
		return nil, 0, err
	}
	return s.db.ListActiveSessions(ctx, p.User.ID, pg)
}

// Logout ends the caller's own session: its tokens get 401 from the next
// request on, and its event streams end at their next re-check.
func (s *Service) Logout(ctx context.Context, p *Principal) error {
	if err := requireSession(p); err != nil {
		return err
	}
	return s.db.RevokeSession(ctx, p.User.ID, p.Session.ID)
}

// RevokeSession ends one of the caller's sessions.
func (s *Service) RevokeSession(ctx context.Context, p *Principal, id int64) error {
	if err := requireSession(p); err != nil {
		return err
	}
	return s.db.RevokeSession(ctx, p.User.ID, id)
}

// ---- user administration ----

// mayManage applies the rule that only a super_admin acts on a super_admin.
func mayManage(actor, target *store.User) error {
	if target.Role == store.RoleSuperAdmin && actor.Role != store.RoleSuperAdmin {
		return store.Forbidden("only a super_admin can change a super_admin")
	}
	return nil
}

// SetRole changes a user's role. Only a super_admin grants super_admin or
// changes a super_admin; the last active super_admin keeps the role.
func (s *Service) SetRole(ctx context.Context, actor *store.User, id int64, role store.Role) (*store.User, error) {
	if !role.Valid() {
		return nil, store.Invalid("role: must be one of super_admin, admin, editor, viewer")
	}
	target, err := s.db.UserByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := mayManage(actor, target); err != nil {
		return nil, err
	}
	if role == store.RoleSuperAdmin && actor.Role != store.RoleSuperAdmin {
		return nil, store.Forbidden("only a super_admin can grant super_admin")
	}
	return s.db.SetUserRole(ctx, id, role)
}

// SetActive enables or disables a user; disabling ends their sessions at
// once. Nobody disables themselves or the last active super_admin.
func (s *Service) SetActive(ctx context.Context, actor *store.User, id int64, active bool) (*store.User, error) {
	target, err := s.db.UserByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := mayManage(actor, target); err != nil {
		return nil, err
	}
	if !active && actor.ID == id {
		return nil, store.Conflict("you cannot disable your own account")
	}
	return s.db.SetUserActive(ctx, id, active)
}

// SetEnvironments replaces the environments granted to a user.
func (s *Service) SetEnvironments(ctx context.Context, actor *store.User, id int64, envIDs []int64) ([]int64, error) {
	target, err := s.db.UserByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := mayManage(actor, target); err != nil {
		return nil, err
	}
	return s.db.SetUserEnvironments(ctx, id, envIDs)
}

// Environments lists the environments granted to a user, for an admin
// (the routes let only admins ask). Reading changes nothing, so it has none
// of the rules of SetEnvironments about who acts on whom.
func (s *Service) Environments(ctx context.Context, id int64) ([]int64, error) {
	if _, err := s.db.UserByID(ctx, id); err != nil {
		return nil, err
	}
	return s.db.UserEnvironmentIDs(ctx, id)
}

// ResetTwoFactor turns off another user's two-factor authentication, for
// one who lost their authenticator and recovery codes: the secret, a
// pending setup and the recovery codes go; the password and the sessions
// stay. Same rules as the other admin actions; nobody resets their own,
// which takes proof (POST /api/auth/2fa/disable).
func (s *Service) ResetTwoFactor(ctx context.Context, actor *store.User, id int64) (*store.User, error) {
	target, err := s.otherUser(ctx, actor, id, "reset your own two-factor authentication here: use POST /api/auth/2fa/disable")
	if err != nil {
		return nil, err
	}
	return s.resetTwoFactor(ctx, target)
}

// ResetTwoFactorByEmail is ResetTwoFactor from the shell (`copydesk users
// reset-2fa`), whose user owns the data directory and so any account.
func (s *Service) ResetTwoFactorByEmail(ctx context.Context, email string) (*store.User, error) {
	target, err := s.db.UserByEmail(ctx, email)
	if err != nil {
		return nil, err
	}
	return s.resetTwoFactor(ctx, target)
}

func (s *Service) resetTwoFactor(ctx context.Context, target *store.User) (*store.User, error) {
	if !target.TOTPEnabled {
		return nil, store.Conflict("two-factor authentication is not enabled for %s", target.Email)
	}
	if err := s.db.DisableTOTP(ctx, target.ID); err != nil {
		return nil, err
	}
	return s.db.UserByID(ctx, target.ID)
}

// Unlock clears the failed sign-in attempts of another user's address,
// which ends a lock or a delay at once (a user locked out by someone
// guessing their password). Same rules as the other admin actions; nobody
// unlocks their own address, or a stolen token could lift the limit on
// guessing the password it is missing.
func (s *Service) Unlock(ctx context.Context, actor *store.User, id int64) (*store.User, error) {
	target, err := s.otherUser(ctx, actor, id, "unlock your own account: another admin can, or `copydesk users unlock`")
	if err != nil {
		return nil, err
	}
	return target, s.db.ClearLoginFailures(ctx, target.Email)
}

// UnlockByEmail is Unlock from the shell (`copydesk users unlock`).
func (s *Service) UnlockByEmail(ctx context.Context, email string) (*store.User, error) {
	target, err := s.db.UserByEmail(ctx, email)
	if err != nil {
		return nil, err
	}
	return target, s.db.ClearLoginFailures(ctx, target.Email)
}

// otherUser finds the user an admin action is about: one the actor may
// manage, and not the actor (a conflict saying "you cannot " + self).
func (s *Service) otherUser(ctx context.Context, actor *store.User, id int64, self string) (*store.User, error) {
	target, err := s.db.UserByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := mayManage(actor, target); err != nil {
		return nil, err
	}
	if actor.ID == id {
		return nil, store.Conflict("you cannot %s", self)
	}
	return target, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// principalCache keeps the session or API token, the user and the scope
// of recent requests, so a request usually costs no query. An entry is
// used only while the database's ChangeMark is the one it was loaded
// under: any committed write (by this process, or announced by the CLI)
// makes every entry stale, so a revoked session or token, a disabled user
// or a changed role is seen on the very next request, exactly as without
// the cache. A token that is not found is not kept: a flood of made-up
// tokens cannot grow the cache.
type principalCache struct {
	mu sync.RWMutex
	m  map[principalKey]*principalEntry
}

// principalKey is a session's id, or an API token's hash.
type principalKey struct {
	session int64
	token   [sha256.Size]byte
}

type principalEntry struct {
	mark  store.ChangeMark
	sess  store.Session
	token store.APIToken // for an API token; its slices are never changed in place
	user  store.User
	scope store.Scope // never changed in place: shared by copies
}

// maxCachedPrincipals bounds the cache; past it, the cache starts afresh.
const maxCachedPrincipals = 10000

func (pc *principalCache) get(k principalKey, mark store.ChangeMark) *principalEntry {
	pc.mu.RLock()
	defer pc.mu.RUnlock()
	if e := pc.m[k]; e != nil && e.mark == mark {
		return e
	}
	return nil
}

func (pc *principalCache) put(k principalKey, e *principalEntry) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.m == nil || len(pc.m) >= maxCachedPrincipals {
		pc.m = make(map[principalKey]*principalEntry)
	}
	pc.m[k] = e
}

func (pc *principalCache) load(ctx context.Context, db principalStore, sessionID int64) (*store.Session, *store.User, store.Scope, error) {
	mark := db.ChangeMark() // taken before the query, so a write during it makes the entry stale
	k := principalKey{session: sessionID}
	if e := pc.get(k, mark); e != nil {
		sess, user := e.sess, e.user // copies: callers may change theirs
		return &sess, &user, e.scope, nil
	}
	sess, user, err := db.SessionWithUser(ctx, sessionID)
	if err != nil {
		return nil, nil, store.Scope{}, err
	}
	granted, err := grantsOf(ctx, db, user)
	if err != nil {
		return nil, nil, store.Scope{}, err
	}
	scope := store.NewScope(user.ID, user.Role.AtLeast(store.RoleAdmin), granted)
	pc.put(k, &principalEntry{mark: mark, sess: *sess, user: *user, scope: scope})
	return sess, user, scope, nil
}

// loadToken is load for an API token, by the hash of its secret. The
// entry it returns is shared: copy its token and user before changing
// them.
func (pc *principalCache) loadToken(ctx context.Context, db principalStore, hash [sha256.Size]byte) (*principalEntry, error) {
	mark := db.ChangeMark()
	k := principalKey{token: hash}
	if e := pc.get(k, mark); e != nil {
		return e, nil
	}
	tok, user, err := db.APITokenWithUser(ctx, hash[:])
	if err != nil {
		return nil, err
	}
	granted, err := grantsOf(ctx, db, user)
	if err != nil {
		return nil, err
	}
	e := &principalEntry{mark: mark, token: *tok, user: *user, scope: tokenScope(user, tok, granted)}
	pc.put(k, e)
	return e, nil
}

// grantsOf reads the environments granted to a user below admin (admins
// see every environment).
func grantsOf(ctx context.Context, db principalStore, u *store.User) ([]int64, error) {
	if u.Role.AtLeast(store.RoleAdmin) {
		return nil, nil
	}
	return db.UserEnvironmentIDs(ctx, u.ID)
}

// principalStore is what the principal cache reads. ChangeMark is its
// invalidation signal: any value other than the one an entry was loaded
// under makes the entry stale. A store without a cheap signal may return a
// new value every time, which turns the cache off.
type principalStore interface {
	ChangeMark() store.ChangeMark
	SessionWithUser(ctx context.Context, sessionID int64) (*store.Session, *store.User, error)
	APITokenWithUser(ctx context.Context, hash []byte) (*store.APIToken, *store.User, error)
	UserEnvironmentIDs(ctx context.Context, userID int64) ([]int64, error)
}

// ListedUser is an account as the user administration lists it: with the
// end of its sign-in lock, nil when it is not locked now.
type ListedUser struct {
	*store.User
	LockedUntil *time.Time
}

// ListUsers lists accounts for the user administration (admins; the route
// table checks the role), each with its sign-in lock: one read for the page.
func (s *Service) ListUsers(ctx context.Context, f store.UserFilter) ([]ListedUser, int, error) {
	users, total, err := s.db.ListUsers(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	emails := make([]string, len(users))
	for i, u := range users {
		emails[i] = u.Email
	}
	locks, err := s.db.LockedUntil(ctx, emails, s.now())
	if err != nil {
		return nil, 0, err
	}
	out := make([]ListedUser, len(users))
	for i, u := range users {
		out[i] = ListedUser{User: u}
		if t, ok := locks[u.Email]; ok {
			out[i].LockedUntil = &t
		}
	}
	return out, total, nil
}
