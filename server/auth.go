package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/store"
)

// The authentication group (/api/auth): the nineteen endpoints of the
// specification, plus GET /api/auth/avatars/{user_id}, which serves the
// images that avatar_url points at, the admin's account recovery actions
// (reset-2fa, unlock), sign-out (logout), the 2FA status and the GET
// beside PUT /api/auth/users/{id}/environments.
func (s *Server) registerAuthRoutes() {
	const tag = "Authentication"
	s.handle(Route{Method: "POST", Path: "/api/auth/register", Tag: tag, Access: public, Status: http.StatusCreated,
		Summary: "Create an account", Body: registerRequest{}, Data: userResponse{}, Errors: []int{403, 409, 503},
		Notes: "Creates a viewer with no environment. Refused with 403 when an admin has closed registration. " + busyNote}, s.register)
	s.handle(Route{Method: "POST", Path: "/api/auth/login", Tag: tag, Access: public,
		Summary: "Sign in and obtain a JWT", Body: loginRequest{}, Bare: tokenResponse{}, Errors: []int{401, 403, 429, 503},
		Notes: "With two-factor authentication on, send totp_code (or a recovery code); without it the answer is 401 saying a code is required. " +
			"Repeated failures for one address are slowed down and then locked for a while (429 with Retry-After). " + busyNote}, s.login)
	s.handle(Route{Method: "POST", Path: "/api/auth/refresh", Tag: tag, Access: ownAccount,
		Summary: "Refresh the current JWT", Bare: tokenResponse{},
		Notes: "Send no body; the token in the Authorization header must still be valid. The new token belongs to the same session and never outlives the session's absolute lifetime."}, s.refresh)
	s.handle(Route{Method: "GET", Path: "/api/auth/me", Tag: tag, Access: signedIn,
		Summary: "The current user's profile", Data: userResponse{}}, s.me)
	s.handle(Route{Method: "PUT", Path: "/api/auth/me", Tag: tag, Access: ownAccount,
		Summary: "Update the current user's profile", Body: profileRequest{}, Data: userResponse{}, Errors: []int{409, 429, 503},
		Notes: "Changing the e-mail address or the password needs current_password. A new password ends every other session of the user. " + busyNote}, s.updateMe)
	s.handle(Route{Method: "POST", Path: "/api/auth/me/avatar", Tag: tag, Access: ownAccount, Multipart: "file",
		MaxBody: auth.MaxAvatarBytes + 64<<10, Summary: "Upload a profile avatar", Data: userResponse{},
		Notes: "multipart/form-data with the image in the field file: PNG, JPEG, GIF or WebP, at most 2 MiB and 2048×2048 pixels."}, s.uploadAvatar)
	s.handle(Route{Method: "DELETE", Path: "/api/auth/me/avatar", Tag: tag, Access: ownAccount,
		Summary: "Delete the profile avatar", Data: userResponse{}}, s.deleteAvatar)
	s.handle(Route{Method: "GET", Path: "/api/auth/avatars/{user_id}", Tag: tag, Access: signedIn,
		Summary: "A user's avatar image", Binary: "image/*", Errors: []int{304}, Query: avatarQuery{},
		Notes: "The image bytes with their content type; avatar_url in user objects points here."}, s.avatar)
	s.handle(Route{Method: "GET", Path: "/api/auth/2fa", Tag: tag, Access: ownAccount,
		Summary: "Your two-factor authentication: on or off, and how many recovery codes are left", Data: twoFactorResponse{},
		Notes: "recovery_codes_left counts the unused recovery codes; each works once. When they run low, turn two-factor authentication off and on again for ten new ones."}, s.twoFactor)
	s.handle(Route{Method: "POST", Path: "/api/auth/2fa/setup", Tag: tag, Access: ownAccount, Errors: []int{409},
		Summary: "Start two-factor setup (TOTP secret and QR code)", Data: totpSetupResponse{},
		Notes: "Scan qr_code (or type secret) into an authenticator app, then confirm with /api/auth/2fa/verify."}, s.setupTOTP)
	s.handle(Route{Method: "POST", Path: "/api/auth/2fa/verify", Tag: tag, Access: ownAccount, Errors: []int{409, 429, 503},
		Summary: "Confirm a TOTP code and turn two-factor authentication on", Body: totpVerifyRequest{}, Data: recoveryCodesResponse{},
		Notes: "Needs current_password as well as the code, like changing the e-mail address. Returns ten one-time recovery codes, shown this once only. " + busyNote}, s.verifyTOTP)
	s.handle(Route{Method: "POST", Path: "/api/auth/2fa/disable", Tag: tag, Access: ownAccount, Errors: []int{409, 429, 503},
		Summary: "Turn two-factor authentication off", Body: totpDisableRequest{}, Data: userResponse{},
		Notes: "Prove it with a current code (or a recovery code) or with the password. " + busyNote}, s.disableTOTP)
	s.handle(Route{Method: "GET", Path: "/api/auth/sessions", Tag: tag, Access: ownAccount, List: true,
		Summary: "The current user's active sessions, newest first", Query: pageQuery{}, Data: sessionResponse{}}, s.sessions)
	s.handle(Route{Method: "POST", Path: "/api/auth/logout", Tag: tag, Access: ownAccount,
		Summary: "Sign out: end the current session", Data: sessionRevokedResponse{},
		Notes: "Send no body. Ends the session of the token in the Authorization header, as DELETE /api/auth/sessions/{id} would: " +
			"its tokens get 401 from the next request on. Other sessions stay; end them with DELETE /api/auth/sessions/{id}."}, s.logout)
	s.handle(Route{Method: "DELETE", Path: "/api/auth/sessions/{id}", Tag: tag, Access: ownAccount,
		Summary: "Revoke a session", Data: sessionRevokedResponse{},
		Notes: "A token of the revoked session gets 401 on its next request. Another user's session is 404."}, s.revokeSession)
	s.handle(Route{Method: "GET", Path: "/api/auth/license", Tag: tag, Access: signedIn,
		Summary: "License status", Data: licenseResponse{}}, s.license)
	s.handle(Route{Method: "POST", Path: "/api/auth/license/activate", Tag: tag, Access: ownAccount, Errors: []int{409},
		Summary: "Activate a license key", Body: licenseActivateRequest{}, Data: licenseResponse{},
		Notes: "The key's Ed25519 signature, plan, seats and expiry are checked offline. A key active on another account is 409."}, s.activateLicense)
	s.handle(Route{Method: "POST", Path: "/api/auth/license/deactivate", Tag: tag, Access: ownAccount,
		Summary: "Deactivate the license", Data: licenseResponse{}}, s.deactivateLicense)
	s.handle(Route{Method: "GET", Path: "/api/auth/users", Tag: tag, Access: userAccount, List: true,
		Summary: "List users", Query: userListQuery{}, Data: listedUserResponse{},
		Notes: "Each user carries locked_until: when the sign-in lock after repeated failures ends, null when the account is not locked now (POST /api/auth/users/{id}/unlock lifts it)."}, s.listUsers)
	s.handle(Route{Method: "PUT", Path: "/api/auth/users/{id}/role", Tag: tag, Access: userAccount, Errors: []int{409},
		Summary: "Change a user's role", Body: roleRequest{}, Data: userResponse{},
		Notes: "Only a super_admin grants super_admin or changes a super_admin; the last active super_admin keeps the role (409)."}, s.setRole)
	s.handle(Route{Method: "PUT", Path: "/api/auth/users/{id}/status", Tag: tag, Access: userAccount, Errors: []int{409},
		Summary: "Enable or disable a user", Body: statusRequest{}, Data: userResponse{},
		Notes: "Disabling ends the user's sessions at once. Nobody disables themselves or the last active super_admin (409)."}, s.setStatus)
	s.handle(Route{Method: "GET", Path: "/api/auth/users/{id}/environments", Tag: tag, Access: userAccount,
		Summary: "A user's environment access", Data: userEnvironmentsResponse{},
		Notes: "The environments granted to the user with PUT. Admins and super_admins see every environment whatever this says."}, s.userEnvironments)
	s.handle(Route{Method: "PUT", Path: "/api/auth/users/{id}/environments", Tag: tag, Access: userAccount,
		Summary: "Set a user's environment access", Body: userEnvironmentsRequest{}, Data: userEnvironmentsResponse{},
		Notes: "Replaces the set of environments the user may see. Unknown environment ids are 422."}, s.setUserEnvironments)
	s.handle(Route{Method: "POST", Path: "/api/auth/users/{id}/reset-2fa", Tag: tag, Access: userAccount, Errors: []int{409},
		Summary: "Turn off a user's two-factor authentication", Data: userResponse{},
		Notes: "For a user who lost their authenticator and recovery codes: the secret and the recovery codes are removed; the password and the sessions stay. " +
			"Only a super_admin acts on a super_admin. Your own is 409 (use /api/auth/2fa/disable); a user without two-factor authentication is 409."}, s.resetTwoFactor)
	s.handle(Route{Method: "POST", Path: "/api/auth/users/{id}/unlock", Tag: tag, Access: userAccount, Errors: []int{409},
		Summary: "Unlock a user's sign-in", Data: userResponse{},
		Notes: "Clears the failed sign-in attempts of the user's e-mail address, which ends a lock or a delay at once. " +
			"Only a super_admin acts on a super_admin; your own address is 409."}, s.unlockUser)
	s.registerAPITokenRoutes(tag)
}

// busyNote says what the routes that check or hash a password answer when
// the server is busy with other password hashes.
const busyNote = "Password hashing is bounded: when the server is busy with too many at once, the answer is 503 with Retry-After."

// ---- bodies ----

type registerRequest struct {
	Email    string `json:"email" binding:"required,max=254"`
	Username string `json:"username" binding:"required,max=32"`
	Password string `json:"password" binding:"required"`
	FullName string `json:"full_name" binding:"max=100"`
}

type loginRequest struct {
	Email    string `json:"email" binding:"required,max=254"`
	Password string `json:"password" binding:"required,max=1024"`
	TOTPCode string `json:"totp_code" binding:"max=64" doc:"6-digit code from the authenticator app, or a recovery code"`
}

type userResponse struct {
	ID               int64      `json:"id"`
	Email            string     `json:"email"`
	Username         string     `json:"username"`
	Role             string     `json:"role" enum:"super_admin,admin,editor,viewer"`
	IsActive         bool       `json:"is_active"`
	FullName         string     `json:"full_name"`
	AvatarURL        *string    `json:"avatar_url"`
	TwoFactorEnabled bool       `json:"two_factor_enabled"`
	LastLoginAt      *Timestamp `json:"last_login_at"`
	CreatedAt        Timestamp  `json:"created_at"`
	UpdatedAt        Timestamp  `json:"updated_at"`
}

// listedUserResponse is a user in the user administration's list.
type listedUserResponse struct {
	userResponse
	LockedUntil *Timestamp `json:"locked_until" doc:"when the sign-in lock after repeated failed sign-ins ends; null when not locked now"`
}

func listedUserJSON(u auth.ListedUser) listedUserResponse {
	return listedUserResponse{userResponse: userJSON(u.User), LockedUntil: (*Timestamp)(u.LockedUntil)}
}

func userJSON(u *store.User) userResponse {
	out := userResponse{
		ID: u.ID, Email: u.Email, Username: u.Username, Role: string(u.Role), IsActive: u.IsActive,
		FullName: u.FullName, TwoFactorEnabled: u.TOTPEnabled, LastLoginAt: (*Timestamp)(u.LastLoginAt),
		CreatedAt: Timestamp(u.CreatedAt), UpdatedAt: Timestamp(u.UpdatedAt),
	}
	out.AvatarURL = avatarURL(u.ID, u.AvatarVersion)
	return out
}

// avatarURL is where a user's avatar is served; nil when there is none. The
// version makes the URL change with the image, so caches notice.
func avatarURL(userID, version int64) *string {
	if version == 0 {
		return nil
	}
	url := fmt.Sprintf("/api/auth/avatars/%d?v=%d", userID, version)
	return &url
}

// avatarQuery is what avatar_url carries: the image's version, so a new
// image has a new URL and caches fetch it. Any value serves the current
// image.
type avatarQuery struct {
	V string `form:"v" doc:"the avatar's version (in avatar_url); any value serves the current image"`
}

type tokenResponse struct {
	AccessToken string       `json:"access_token"`
	TokenType   string       `json:"token_type" enum:"bearer"`
	ExpiresIn   int64        `json:"expires_in" doc:"seconds until the token expires"`
	ExpiresAt   Timestamp    `json:"expires_at"`
	User        userResponse `json:"user"`
}

func tokenJSON(g *auth.Grant, now time.Time) tokenResponse {
	return tokenResponse{AccessToken: g.Token, TokenType: "bearer", ExpiresIn: int64(g.ExpiresAt.Sub(now).Seconds()),
		ExpiresAt: Timestamp(g.ExpiresAt), User: userJSON(g.User)}
}

type profileRequest struct {
	Username        *string `json:"username"`
	FullName        *string `json:"full_name"`
	Email           *string `json:"email"`
	CurrentPassword string  `json:"current_password" binding:"max=1024"`
	NewPassword     *string `json:"new_password"`
}

type totpSetupResponse struct {
	Secret     string `json:"secret" doc:"base32 secret, for typing into an authenticator app"`
	OTPAuthURL string `json:"otpauth_url"`
	QRCode     string `json:"qr_code" doc:"data:image/png;base64,... URL of the QR code"`
}

type totpVerifyRequest struct {
	Code            string `json:"code" binding:"required,max=16"`
	CurrentPassword string `json:"current_password" binding:"required,max=1024" doc:"the account's password: required, so that a stolen token alone cannot turn two-factor authentication on"`
}

type twoFactorResponse struct {
	TwoFactorEnabled  bool `json:"two_factor_enabled"`
	SetupPending      bool `json:"setup_pending" doc:"setup was started and awaits its first code (POST /api/auth/2fa/verify)"`
	RecoveryCodesLeft int  `json:"recovery_codes_left" doc:"unused recovery codes; 0 while two-factor authentication is off"`
}

type recoveryCodesResponse struct {
	TwoFactorEnabled bool     `json:"two_factor_enabled"`
	RecoveryCodes    []string `json:"recovery_codes"`
}

type totpDisableRequest struct {
	Code     string `json:"code" binding:"max=64"`
	Password string `json:"password" binding:"max=1024"`
}

type sessionResponse struct {
	ID             int64     `json:"id"`
	CreatedAt      Timestamp `json:"created_at"`
	LastSeenAt     Timestamp `json:"last_seen_at"`
	ExpiresAt      Timestamp `json:"expires_at" doc:"absolute end of the session; refresh cannot go past it"`
	TokenExpiresAt Timestamp `json:"token_expires_at" doc:"expiry of the newest token issued for the session"`
	IP             string    `json:"ip"`
	UserAgent      string    `json:"user_agent"`
	Current        bool      `json:"current"`
}

type sessionRevokedResponse struct {
	ID      int64 `json:"id"`
	Revoked bool  `json:"revoked"`
}

type licenseResponse struct {
	State       string     `json:"state" enum:"inactive,active,expired,invalid"`
	Reason      string     `json:"reason,omitempty"`
	KeyID       *string    `json:"key_id"`
	Licensee    *string    `json:"licensee"`
	Plan        *string    `json:"plan"`
	Seats       *int       `json:"seats"`
	SeatsInUse  *int       `json:"seats_in_use" doc:"active accounts on this installation"`
	IssuedAt    *Timestamp `json:"issued_at"`
	ExpiresAt   *Timestamp `json:"expires_at"`
	ActivatedAt *Timestamp `json:"activated_at"`
}

func licenseJSON(st *auth.LicenseStatus) licenseResponse {
	out := licenseResponse{State: st.State, Reason: st.Reason, ActivatedAt: (*Timestamp)(st.ActivatedAt)}
	if p := st.Payload; p != nil {
		seatsInUse := st.SeatsInUse
		out.KeyID, out.Licensee, out.Plan, out.Seats = &p.ID, &p.Licensee, &p.Plan, &p.Seats
		out.SeatsInUse, out.IssuedAt, out.ExpiresAt = &seatsInUse, (*Timestamp)(&p.IssuedAt), (*Timestamp)(p.ExpiresAt)
	}
	return out
}

type licenseActivateRequest struct {
	LicenseKey string `json:"license_key" binding:"required,max=4096"`
}

type userListQuery struct {
	pageQuery
	Role     string `form:"role" binding:"omitempty,oneof=super_admin admin editor viewer"`
	IsActive *bool  `form:"is_active"`
	Q        string `form:"q" binding:"max=200" doc:"matches e-mail, username or full name"`
}

type roleRequest struct {
	Role string `json:"role" binding:"required,oneof=super_admin admin editor viewer"`
}

type statusRequest struct {
	IsActive *bool `json:"is_active" binding:"required"`
}

type userEnvironmentsRequest struct {
	EnvironmentIDs []int64 `json:"environment_ids" binding:"required,max=10000,dive,gt=0"`
}

type userEnvironmentsResponse struct {
	UserID         int64   `json:"user_id"`
	EnvironmentIDs []int64 `json:"environment_ids"`
}

// ---- handlers ----

func (s *Server) register(c *gin.Context) {
	var req registerRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	u, err := s.auth.Register(c.Request.Context(), auth.NewAccount{Email: req.Email, Username: req.Username, FullName: req.FullName, Password: req.Password})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, userJSON(u), "account created")
}

func (s *Server) login(c *gin.Context) {
	var req loginRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	g, err := s.auth.Login(c.Request.Context(), auth.LoginInput{Email: req.Email, Password: req.Password, TOTPCode: req.TOTPCode,
		IP: c.ClientIP(), UserAgent: c.Request.UserAgent()})
	if err != nil {
		fail(c, err)
		return
	}
	writeJSON(c, http.StatusOK, tokenJSON(g, s.db.Now()))
}

func (s *Server) refresh(c *gin.Context) {
	g, err := s.auth.Refresh(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	writeJSON(c, http.StatusOK, tokenJSON(g, s.db.Now()))
}

func (s *Server) me(c *gin.Context) {
	respond(c, http.StatusOK, userJSON(principal(c).User), "your profile")
}

func (s *Server) updateMe(c *gin.Context) {
	var req profileRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	u, err := s.auth.UpdateProfile(c.Request.Context(), principal(c), auth.ProfileUpdate{
		Username: req.Username, FullName: req.FullName, Email: req.Email,
		CurrentPassword: req.CurrentPassword, NewPassword: req.NewPassword,
	})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, userJSON(u), "profile updated")
}

func (s *Server) uploadAvatar(c *gin.Context) {
	data, err := formFile(c, "file", auth.MaxAvatarBytes, "the avatar must be at most 2 MiB")
	if err != nil {
		fail(c, err)
		return
	}
	u, err := s.auth.SetAvatar(c.Request.Context(), principal(c), data)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, userJSON(u), "avatar updated")
}

func (s *Server) deleteAvatar(c *gin.Context) {
	u, err := s.auth.DeleteAvatar(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, userJSON(u), "avatar deleted")
}

func (s *Server) avatar(c *gin.Context) {
	id, err := pathID(c, "user_id")
	if err != nil {
		fail(c, err)
		return
	}
	a, err := s.auth.Avatar(c.Request.Context(), id)
	if err != nil {
		fail(c, err)
		return
	}
	etag := `"` + strconv.FormatInt(a.Version, 36) + `"`
	c.Header("ETag", etag)
	c.Header("Cache-Control", "private, max-age=86400")
	if c.GetHeader("If-None-Match") == etag {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, a.ContentType, a.Data)
}

func (s *Server) setupTOTP(c *gin.Context) {
	setup, err := s.auth.SetupTOTP(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, totpSetupResponse{Secret: setup.Secret, OTPAuthURL: setup.OTPAuthURL, QRCode: setup.QRCode},
		"scan the QR code with your authenticator app, then confirm a code with /api/auth/2fa/verify")
}

func (s *Server) verifyTOTP(c *gin.Context) {
	var req totpVerifyRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	codes, err := s.auth.VerifyTOTP(c.Request.Context(), principal(c), req.Code, req.CurrentPassword)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, recoveryCodesResponse{TwoFactorEnabled: true, RecoveryCodes: codes},
		"two-factor authentication is on: store these recovery codes somewhere safe, they are shown only once")
}

func (s *Server) disableTOTP(c *gin.Context) {
	var req totpDisableRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	u, err := s.auth.DisableTOTP(c.Request.Context(), principal(c), req.Code, req.Password)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, userJSON(u), "two-factor authentication is off")
}

func (s *Server) twoFactor(c *gin.Context) {
	st, err := s.auth.TwoFactor(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	msg := "two-factor authentication is off"
	if st.Enabled {
		msg = fmt.Sprintf("two-factor authentication is on; %d recovery codes left", st.RecoveryCodesLeft)
	}
	respond(c, http.StatusOK, twoFactorResponse{TwoFactorEnabled: st.Enabled, SetupPending: st.SetupPending, RecoveryCodesLeft: st.RecoveryCodesLeft}, msg)
}

func (s *Server) sessions(c *gin.Context) {
	var q pageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	p, pg := principal(c), q.page()
	list, total, err := s.auth.Sessions(c.Request.Context(), p, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, func(ss *store.Session) sessionResponse {
		return sessionResponse{ID: ss.ID, CreatedAt: Timestamp(ss.CreatedAt), LastSeenAt: Timestamp(ss.LastSeenAt),
			ExpiresAt: Timestamp(ss.ExpiresAt), TokenExpiresAt: Timestamp(ss.TokenExpiresAt), IP: ss.IP, UserAgent: ss.UserAgent,
			Current: ss.ID == p.Session.ID}
	}, "your active sessions")
}

func (s *Server) logout(c *gin.Context) {
	p := principal(c)
	if err := s.auth.Logout(c.Request.Context(), p); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, sessionRevokedResponse{ID: p.Session.ID, Revoked: true}, "signed out: this session has ended")
}

func (s *Server) revokeSession(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.auth.RevokeSession(c.Request.Context(), principal(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, sessionRevokedResponse{ID: id, Revoked: true}, "session revoked")
}

func (s *Server) license(c *gin.Context) {
	st, err := s.auth.License(c.Request.Context(), principal(c).User.ID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, licenseJSON(st), "license "+st.State)
}

func (s *Server) activateLicense(c *gin.Context) {
	var req licenseActivateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	st, err := s.auth.ActivateLicense(c.Request.Context(), principal(c).User.ID, req.LicenseKey)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, licenseJSON(st), "license activated")
}

func (s *Server) deactivateLicense(c *gin.Context) {
	st, err := s.auth.DeactivateLicense(c.Request.Context(), principal(c).User.ID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, licenseJSON(st), "license deactivated")
}

func (s *Server) listUsers(c *gin.Context) {
	var q userListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	users, total, err := s.auth.ListUsers(c.Request.Context(), store.UserFilter{Role: store.Role(q.Role), IsActive: q.IsActive, Q: q.Q, Page: pg})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, users, total, pg, listedUserJSON, "users")
}

func (s *Server) setRole(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req roleRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	u, err := s.auth.SetRole(c.Request.Context(), principal(c).User, id, store.Role(req.Role))
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, userJSON(u), "role changed")
}

func (s *Server) setStatus(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req statusRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	u, err := s.auth.SetActive(c.Request.Context(), principal(c).User, id, *req.IsActive)
	if err != nil {
		fail(c, err)
		return
	}
	msg := "user disabled"
	if u.IsActive {
		msg = "user enabled"
	}
	respond(c, http.StatusOK, userJSON(u), msg)
}

func (s *Server) userEnvironments(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	ids, err := s.auth.Environments(c.Request.Context(), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, userEnvironmentsResponse{UserID: id, EnvironmentIDs: ids}, "environment access")
}

func (s *Server) setUserEnvironments(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req userEnvironmentsRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	ids, err := s.auth.SetEnvironments(c.Request.Context(), principal(c).User, id, req.EnvironmentIDs)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, userEnvironmentsResponse{UserID: id, EnvironmentIDs: ids}, "environment access updated")
}

func (s *Server) resetTwoFactor(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	u, err := s.auth.ResetTwoFactor(c.Request.Context(), principal(c).User, id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, userJSON(u), "two-factor authentication is off for this user: they sign in with their password and can set it up again")
}

func (s *Server) unlockUser(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	u, err := s.auth.Unlock(c.Request.Context(), principal(c).User, id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, userJSON(u), "sign-in unlocked: the failed attempts of this address are cleared")
}
