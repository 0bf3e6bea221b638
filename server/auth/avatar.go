package auth

import (
	"bytes"
	"context"
	"image"
	_ "image/gif" // avatar formats
	_ "image/jpeg"
	_ "image/png"

	_ "golang.org/x/image/webp"

	"github.com/copydesk/copydesk/store"
)

// Avatar limits.
const (
	MaxAvatarBytes  = 2 << 20
	maxAvatarPixels = 2048 // decoded, 2048×2048 RGBA is 16 MiB
)

// avatarTypes are the accepted image formats by the name image.Decode gives.
var avatarTypes = map[string]string{"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}

// SetAvatar checks that data is an accepted image and stores it as the
// caller's avatar.
func (s *Service) SetAvatar(ctx context.Context, p *Principal, data []byte) (*store.User, error) {
	if len(data) > MaxAvatarBytes {
		return nil, store.E(store.KindTooLarge, "the avatar must be at most 2 MiB")
	}
	contentType, err := checkImage(data)
	if err != nil {
		return nil, err
	}
	return s.db.SetAvatar(ctx, p.User.ID, contentType, data)
}

// DeleteAvatar removes the caller's avatar.
func (s *Service) DeleteAvatar(ctx context.Context, p *Principal) (*store.User, error) {
	return s.db.DeleteAvatar(ctx, p.User.ID)
}

// Avatar is a user's avatar; any signed-in user may fetch any avatar
// (they show beside messages and in user lists).
func (s *Service) Avatar(ctx context.Context, userID int64) (*store.Avatar, error) {
	return s.db.AvatarByUser(ctx, userID)
}

// checkImage proves data is an image of an accepted format by decoding it,
// after checking its dimensions so a small file cannot claim a huge canvas.
func checkImage(data []byte) (string, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return "", store.Invalid("file: is not a PNG, JPEG, GIF or WebP image")
	}
	ct, ok := avatarTypes[format]
	if !ok {
		return "", store.Invalid("file: %s images are not accepted: use PNG, JPEG, GIF or WebP", format)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > maxAvatarPixels || cfg.Height > maxAvatarPixels {
		return "", store.Invalid("file: the image must be at most %d×%d pixels", maxAvatarPixels, maxAvatarPixels)
	}
	if _, _, err := image.Decode(bytes.NewReader(data)); err != nil {
		return "", store.Invalid("file: the image is damaged: %s", err.Error())
	}
	return ct, nil
}
