package server

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/backup"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

// The backup group (/api/backup): snapshots of the database, taken online,
// checked, listed, downloaded, uploaded, verified, restored while serving,
// deleted, and scheduled. System level: super_admin only.
func (s *Server) registerBackupRoutes() {
	const tag = "Backup"
	s.handle(Route{Method: "POST", Path: "/api/backup", Tag: tag, Access: superOnly, Status: http.StatusCreated,
		Summary: "Take a snapshot now", Data: backupResponse{},
		Notes: "A consistent copy of the live database, taken while reads and writes go on, and checked with PRAGMA integrity_check before it is listed."}, s.createBackup)
	s.handle(Route{Method: "GET", Path: "/api/backup", Tag: tag, Access: superOnly, List: true,
		Summary: "List snapshots, newest first", Query: pageQuery{}, Data: backupResponse{}}, s.listBackups)
	s.handle(Route{Method: "GET", Path: "/api/backup/schedule", Tag: tag, Access: superOnly,
		Summary: "The backup schedule and its last run", Data: backupScheduleResponse{}}, s.backupSchedule)
	s.handle(Route{Method: "PUT", Path: "/api/backup/schedule", Tag: tag, Access: superOnly,
		Summary: "Set the backup schedule", Body: backupScheduleRequest{}, Data: backupScheduleResponse{},
		Notes: "spec is a cron expression in UTC (\"0 3 * * *\") or @daily, @hourly, @every 6h; at least 5 minutes apart. " +
			"retention is how many scheduled snapshots are kept. Fields left out keep their values."}, s.putBackupSchedule)
	s.handle(Route{Method: "POST", Path: "/api/backup/upload", Tag: tag, Access: superOnly, Status: http.StatusCreated,
		Multipart: "file", MaxBody: -1, Summary: "Upload a snapshot", Data: backupResponse{},
		Notes: "multipart/form-data with the database file in the field file. Refused (422) unless it is a whole copydesk database this version can open, " +
			"whose tables, indexes, triggers and views are exactly those copydesk's migrations create; a file that does not start like one is refused from its first 100 bytes."}, s.uploadBackup)
	s.handle(Route{Method: "GET", Path: "/api/backup/{name}", Tag: tag, Access: superOnly,
		Summary: "A snapshot's metadata", Data: backupResponse{}}, s.getBackup)
	s.handle(Route{Method: "GET", Path: "/api/backup/{name}/download", Tag: tag, Access: superOnly,
		Summary: "Download a snapshot", Binary: "application/vnd.sqlite3"}, s.downloadBackup)
	s.handle(Route{Method: "POST", Path: "/api/backup/{name}/verify", Tag: tag, Access: superOnly,
		Summary: "Check a snapshot again", Data: backupVerifyResponse{},
		Notes: "Compares the file's SHA-256 with the one recorded when it was made, runs PRAGMA integrity_check and compares its schema with what copydesk's migrations create for its version. " +
			"A damaged or altered snapshot answers 200 with ok false and the problem. The outcome is kept: the snapshot's verified_at and verified_ok in the list and GET."}, s.verifyBackup)
	s.handle(Route{Method: "POST", Path: "/api/backup/{name}/restore", Tag: tag, Access: Access{MinRole: store.RoleSuperAdmin, Account: true}, Errors: []int{409, 422, 429},
		EventStream: true, StreamWhen: "Accept: text/event-stream", Progress: true, Events: restoreEvents,
		Summary: "Restore a snapshot while serving", Data: backupRestoreResponse{},
		Notes: "Checks the snapshot, lets requests in flight finish and holds new ones, keeps a pre-restore safety snapshot, swaps the database and resumes. " +
			"No restart. Every session ends, yours included (tokens get 401): everyone signs in again. Every API token is revoked: make new ones. " +
			"With Accept: text/event-stream the answer tells each stage as it begins (`stage` events, in order: checked, waiting, safety_snapshot, swapping, " +
			"keeping_safety_snapshot) and ends with `done` (this answer's data) or `error`. The check comes before the answer starts: a snapshot that fails it, " +
			"or one not found, is the same 4xx JSON as without the stream; a stage event means the check passed. A status polled meanwhile would wait behind the swap: " +
			"the stream is the restore's own answer."}, s.restoreBackup)
	s.handle(Route{Method: "DELETE", Path: "/api/backup/{name}", Tag: tag, Access: superOnly,
		Summary: "Delete a snapshot", Data: backupDeletedResponse{}}, s.deleteBackup)
}

type backupResponse struct {
	Name            string     `json:"name"`
	Kind            string     `json:"kind" enum:"manual,scheduled,pre-restore,uploaded,cli"`
	Size            int64      `json:"size" doc:"bytes"`
	SHA256          string     `json:"sha256"`
	CreatedAt       Timestamp  `json:"created_at"`
	SchemaVersion   int        `json:"schema_version"`
	CopydeskVersion string     `json:"copydesk_version"`
	VerifiedAt      *Timestamp `json:"verified_at" doc:"the last POST .../verify (or restore, which verifies first); null: none since it was made, when it was checked"`
	VerifiedOK      *bool      `json:"verified_ok" doc:"whether that verification found the file intact; null with verified_at"`
}

func backupJSON(m *backup.Meta) backupResponse {
	return backupResponse{Name: m.Name, Kind: m.Kind, Size: m.Size, SHA256: m.SHA256, CreatedAt: Timestamp(m.CreatedAt),
		SchemaVersion: m.SchemaVersion, CopydeskVersion: m.CopydeskVersion, VerifiedAt: (*Timestamp)(m.VerifiedAt), VerifiedOK: m.VerifiedOK}
}

type backupVerifyResponse struct {
	Name          string `json:"name"`
	OK            bool   `json:"ok"`
	SHA256Matches bool   `json:"sha256_matches"`
	IntegrityOK   bool   `json:"integrity_ok"`
	SchemaVersion int    `json:"schema_version"`
	Problem       string `json:"problem,omitempty"`
}

type backupRestoreResponse struct {
	Restored       backupResponse `json:"restored"`
	SafetySnapshot backupResponse `json:"safety_snapshot" doc:"the database as it was just before the restore"`
}

// restoreStage is the data of a restore's `stage` event.
type restoreStage struct {
	Stage  string `json:"stage" enum:"checked,waiting,safety_snapshot,swapping,keeping_safety_snapshot"`
	Detail string `json:"detail" doc:"the stage in words"`
}

// restoreFailure is the data of a restore's `error` event.
type restoreFailure struct {
	Status int    `json:"status" doc:"the status the answer would have had without the stream"`
	Detail string `json:"detail"`
}

// stageWords says what each stage of a restore does.
var stageWords = map[string]string{
	backup.StageChecked:        "the backup's SHA-256, integrity and schema are checked",
	backup.StageWaiting:        "waiting for the requests in flight to finish; new ones wait",
	backup.StageSafetySnapshot: "keeping a safety snapshot of the current database",
	backup.StageSwapping:       "putting the backup in place: reopening, migrating, ending every session",
	backup.StageKeeping:        "checking and listing the safety snapshot",
}

// restoreEvents are the events of a restore asked for as a stream.
var restoreEvents = []Event{
	{Name: "stage", Data: restoreStage{}, Doc: "A stage began (the first, checked, says the check passed)."},
	{Name: "done", Data: backupRestoreResponse{}, Doc: "The restore is done: what was restored and the safety snapshot. The last event; every session has ended."},
	{Name: "error", Data: restoreFailure{}, Doc: "The restore failed after the check (the previous database stays, or was put back): the last event."},
}

type backupDeletedResponse struct {
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

type backupScheduleRequest struct {
	Enabled   *bool   `json:"enabled"`
	Spec      *string `json:"spec" binding:"omitempty,max=100"`
	Retention *int    `json:"retention"`
}

type backupScheduleResponse struct {
	Enabled    bool       `json:"enabled"`
	Spec       string     `json:"spec"`
	Retention  int        `json:"retention"`
	NextRunAt  *Timestamp `json:"next_run_at"`
	LastRunAt  *Timestamp `json:"last_run_at"`
	LastBackup string     `json:"last_backup"`
	LastError  string     `json:"last_error"`
}

func (s *Server) createBackup(c *gin.Context) {
	meta, err := s.backups.Create(c.Request.Context(), backup.KindManual)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, backupJSON(meta), "backup created")
}

func (s *Server) listBackups(c *gin.Context) {
	var q pageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	all, err := s.backups.List()
	if err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	items := []backupResponse{}
	for i := (pg.Page - 1) * pg.PerPage; i < len(all) && len(items) < pg.PerPage; i++ {
		items = append(items, backupJSON(all[i]))
	}
	respond(c, http.StatusOK, listData[backupResponse]{Items: items, Total: len(all), Page: pg.Page, PerPage: pg.PerPage}, "backups")
}

func (s *Server) getBackup(c *gin.Context) {
	meta, err := s.backups.Get(c.Param("name"))
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, backupJSON(meta), "backup")
}

// downloadBackup lets go of the database (letGo): a snapshot is a file of
// its own, and a slow client must not keep a restore waiting.
func (s *Server) downloadBackup(c *gin.Context) {
	letGo(c)
	f, meta, err := s.backups.Open(c.Param("name"))
	if err != nil {
		fail(c, err)
		return
	}
	defer func() { _ = f.Close() }() // only read: its close has nothing to report
	c.Header("Content-Disposition", `attachment; filename="`+meta.Name+`"`)
	c.Header("Content-Length", strconv.FormatInt(meta.Size, 10))
	c.Header("X-Content-SHA256", meta.SHA256)
	c.Header("Cache-Control", "no-store")
	c.Status(http.StatusOK)
	c.Header("Content-Type", "application/vnd.sqlite3")
	if c.Request.Method == http.MethodHead {
		return // the headers say what GET would send; nothing to read
	}
	if _, err := io.Copy(c.Writer, f); err != nil {
		logger(c).Warn("backup download interrupted", "name", meta.Name, "err", err)
	}
}

// uploadBackup lets go of the database (letGo) before it reads the body:
// the upload is written and checked as a file of its own. Each read of it
// has a deadline (readDeadlines): a client that stops sending is cut.
func (s *Server) uploadBackup(c *gin.Context) {
	letGo(c)
	body, done := readDeadlines(c, c.Request.Body)
	defer done()
	setBody(c, http.MaxBytesReader(c.Writer, body, s.opts.MaxUploadBytes+1<<20))
	mr, err := c.Request.MultipartReader()
	if err != nil {
		fail(c, store.Invalid("file: send the database as multipart/form-data in a field named file"))
		return
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			fail(c, store.Invalid("file: send the database as multipart/form-data in a field named file"))
			return
		}
		if err != nil {
			fail(c, uploadError(err))
			return
		}
		if part.FormName() != "file" {
			_ = part.Close() // skips the part: what it says is in NextPart's error
			continue
		}
		meta, err := s.backups.Import(c.Request.Context(), part, s.opts.MaxUploadBytes)
		_ = part.Close() // read already: Import reports what went wrong
		if err != nil {
			fail(c, uploadError(err))
			return
		}
		respond(c, http.StatusCreated, backupJSON(meta), "backup uploaded and checked")
		return
	}
}

func uploadError(err error) error {
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return store.E(store.KindTooLarge, "the upload is larger than the limit of %s", humanBytes(maxErr.Limit))
	}
	if store.KindOf(err) != store.KindInternal {
		return err
	}
	return store.E(store.KindMalformed, "the upload could not be read: %s", err.Error())
}

func (s *Server) verifyBackup(c *gin.Context) {
	v, err := s.backups.Verify(c.Request.Context(), c.Param("name"))
	if err != nil {
		fail(c, err)
		return
	}
	msg := "backup is sound"
	if !v.OK {
		msg = "backup is damaged"
	}
	respond(c, http.StatusOK, backupVerifyResponse(*v), msg)
}

// restoreBackup lets go of the database (letGo) first: the restore takes
// it exclusively, and would otherwise wait for its own request.
func (s *Server) restoreBackup(c *gin.Context) {
	letGo(c)
	name := c.Param("name")
	meta, err := s.backups.Get(name)
	if err != nil {
		fail(c, err)
		return
	}
	var events *restoreStream
	var stage func(string)
	if strings.Contains(c.GetHeader("Accept"), "text/event-stream") {
		events = &restoreStream{c: c}
		stage = events.stage
	}
	safety, err := s.backups.RestoreStages(c.Request.Context(), name, stage)
	if err != nil && events.started() {
		events.fail(err)
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	// What the open streams said may no longer be true: end them all;
	// clients reconnect to the restored data.
	s.events.EndAll("the database was restored from a backup; reconnect")
	s.live.Restored()
	s.log.Warn("database restored from a backup", "backup", name, "safety_snapshot", safety.Name, "by", principal(c).User.Email)
	// The restore verified the file first: its sidecar now says when.
	if again, err := s.backups.Get(name); err == nil {
		meta = again
	}
	done := backupRestoreResponse{Restored: backupJSON(meta), SafetySnapshot: backupJSON(safety)}
	if events.started() {
		events.event("done", done)
		return
	}
	respond(c, http.StatusOK, done, "database restored; the previous state is kept as "+safety.Name)
}

// restoreWriteTimeout bounds each write of a restore's stream.
const restoreWriteTimeout = 10 * time.Second

// restoreStream writes a restore's stages as Server-Sent Events. The
// answer starts with the first stage, once the check has passed: until
// then a failure is an ordinary JSON error.
type restoreStream struct {
	c    *gin.Context
	open bool
}

func (r *restoreStream) started() bool { return r != nil && r.open }

func (r *restoreStream) stage(name string) {
	r.event("stage", restoreStage{Stage: name, Detail: stageWords[name]})
}

func (r *restoreStream) event(name string, data any) {
	if !r.open {
		r.open = true
		markStream(r.c)
		h := r.c.Writer.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		r.c.Status(http.StatusOK)
	}
	b, err := stream.JSON(data)
	if err != nil {
		logger(r.c).Error("a restore event cannot be encoded", "event", name, "err", err)
		return
	}
	// A client gone does not stop the restore; what it missed is in the log.
	// Each write has its own deadline (the stream set aside the server's):
	// a client that stops reading cannot hold the restore, which writes
	// some stages while it holds the database.
	_ = http.NewResponseController(r.c.Writer).SetWriteDeadline(time.Now().Add(restoreWriteTimeout))
	_, _ = r.c.Writer.WriteString("event: " + name + "\ndata: " + string(b) + "\n\n")
	r.c.Writer.Flush()
}

// fail ends a started stream with the error fail would have answered.
func (r *restoreStream) fail(err error) {
	var e *store.Error
	if errors.As(err, &e) && e.Kind != store.KindInternal {
		r.event("error", restoreFailure{Status: statusOf[e.Kind], Detail: e.Message})
		return
	}
	logger(r.c).ErrorContext(r.c.Request.Context(), "restore failed", "err", err)
	r.event("error", restoreFailure{Status: http.StatusInternalServerError, Detail: "internal server error: the problem was logged on the server"})
}

func (s *Server) deleteBackup(c *gin.Context) {
	name := c.Param("name")
	if err := s.backups.Delete(name); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, backupDeletedResponse{Name: name, Deleted: true}, "backup deleted")
}

func (s *Server) backupSchedule(c *gin.Context) {
	sched, st, next, err := s.backups.Schedule(c.Request.Context())
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, scheduleJSON(sched, st, next), "backup schedule")
}

func scheduleJSON(sched backup.Schedule, st backup.ScheduleState, next *time.Time) backupScheduleResponse {
	return backupScheduleResponse{Enabled: sched.Enabled, Spec: sched.Spec, Retention: sched.Retention, NextRunAt: (*Timestamp)(next),
		LastRunAt: (*Timestamp)(st.LastRunAt), LastBackup: st.LastBackup, LastError: st.LastError}
}

func (s *Server) putBackupSchedule(c *gin.Context) {
	var req backupScheduleRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	sched, _, _, err := s.backups.Schedule(ctx)
	if err != nil {
		fail(c, err)
		return
	}
	if req.Enabled != nil {
		sched.Enabled = *req.Enabled
	}
	if req.Spec != nil {
		sched.Spec = *req.Spec
	}
	if req.Retention != nil {
		sched.Retention = *req.Retention
	}
	if _, err := s.backups.SetSchedule(ctx, sched); err != nil {
		fail(c, err)
		return
	}
	sched, st, next, err := s.backups.Schedule(ctx)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, scheduleJSON(sched, st, next), "backup schedule saved")
}
