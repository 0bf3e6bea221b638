package server

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/setting"
	"github.com/copydesk/copydesk/store"
)

// Instance settings (/api/settings/system): switches an admin controls for
// the whole installation, such as whether anyone may register. The AI
// content defaults live beside it at /api/settings/ai-content.
func (s *Server) registerSettingsRoutes() {
	const tag = "Settings"
	s.handle(Route{Method: "GET", Path: "/api/settings/system", Tag: tag, Access: adminOnly,
		Summary: "Instance settings", Data: systemSettingsResponse{}}, s.systemSettings)
	s.handle(Route{Method: "PUT", Path: "/api/settings/system", Tag: tag, Access: adminOnly,
		Summary: "Change instance settings", Body: systemSettingsRequest{}, Data: systemSettingsResponse{},
		Notes: "Fields left out keep their values."}, s.putSystemSettings)
}

type systemSettingsResponse struct {
	RegistrationOpen          bool `json:"registration_open" doc:"whether POST /api/auth/register accepts new accounts"`
	NotificationRetentionDays int  `json:"notification_retention_days" doc:"read notifications older than this are deleted"`
}

func systemSettingsJSON(set store.SystemSettings) systemSettingsResponse {
	return systemSettingsResponse{RegistrationOpen: set.RegistrationOpen, NotificationRetentionDays: set.NotificationRetentionDays}
}

// systemSettingsRequest is the wire form of setting.Change.
type systemSettingsRequest struct {
	RegistrationOpen          *bool `json:"registration_open"`
	NotificationRetentionDays *int  `json:"notification_retention_days" binding:"omitempty,gte=1,lte=3650"`
}

func (s *Server) systemSettings(c *gin.Context) {
	set, err := s.settings.Get(c.Request.Context(), scope(c))
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, systemSettingsJSON(set), "instance settings")
}

func (s *Server) putSystemSettings(c *gin.Context) {
	var req systemSettingsRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	set, err := s.settings.Update(c.Request.Context(), scope(c), setting.Change(req))
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, systemSettingsJSON(set), "instance settings updated")
}
