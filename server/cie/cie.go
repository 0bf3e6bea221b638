// Package cie is content intelligence (the /api/cie group): archetypes,
// which are article recipes (an outline of sections, a prompt template
// with {{variable}} placeholders, a target length and a tone), and the
// generation of an article from one. The handlers in server/cie.go only
// parse, call one method and render.
//
// Who sees what: an archetype is global (environment_id null) or of one
// environment; a scope sees the global ones and those of its
// environments, and any other is not found. Admins manage global
// archetypes; editors manage those of their environments. The five
// built-in archetypes (how-to, listicle, comparison, review, pillar page)
// are global and read-only for everyone: POST .../copy makes an editable
// one. A generation runs in an environment the caller sees, and is seen by
// whoever sees that environment.
package cie

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/generation"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	ArchetypeByID(ctx context.Context, id int64) (*store.Archetype, error)
	ListArchetypes(ctx context.Context, f store.ArchetypeFilter) ([]*store.Archetype, int, error)
	CreateArchetype(ctx context.Context, in store.ArchetypeInput, createdBy int64) (*store.Archetype, error)
	ReplaceArchetype(ctx context.Context, id int64, in store.ArchetypeInput) (*store.Archetype, error)
	DeleteArchetype(ctx context.Context, id int64) error

	AgentByID(ctx context.Context, id int64) (*store.Agent, error)

	CIERunByID(ctx context.Context, id int64) (*store.CIERun, error)
	ListCIERuns(ctx context.Context, f store.CIERunFilter) ([]*store.CIERun, int, error)
	CreateCIERunWithJob(ctx context.Context, n store.NewCIERun, j store.RunJob) (*store.CIERun, error)
	StartCIERun(ctx context.Context, id int64) (bool, error)
	FinishCIERun(ctx context.Context, id int64, o store.CIEOutcome) (*store.CIERun, error)
	RequeueCIERun(ctx context.Context, id int64, errText string) error
}

// Deps are what the service works with.
type Deps struct {
	Store        Store
	Environments environment.Getter
	Engine       engine.Streamer
	Jobs         jobs.Queue
	Notify       notify.ToUser   // when set, queued generations tell their requester how they ended
	Events       *stream.Broker  // where streamed generations are published
	Hooks        webhook.Emitter // run.succeeded, run.failed; nil: none
	Log          *slog.Logger
}

// Service implements the archetype rules and carries out generations.
type Service struct {
	db     Store
	envs   environment.Getter
	engine engine.Streamer
	jobs   jobs.Queue
	notify notify.ToUser
	events *stream.Broker
	hooks  webhook.Emitter
	log    *slog.Logger
	runs   *generation.Kind[*store.CIERun] // how a generation is carried out (run.go)
}

// New returns the service and registers its job kinds with d.Jobs.
func New(d Deps) *Service {
	s := &Service{db: d.Store, envs: d.Environments, engine: d.Engine, jobs: d.Jobs, notify: d.Notify, events: d.Events,
		hooks: webhook.Or(d.Hooks), log: d.Log}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.registerJobs()
	return s
}

// ---- archetypes ----

// Get returns an archetype the scope sees; any other is not found.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*store.Archetype, error) {
	// The zero scope sees nothing, not even the global ones.
	return store.Seen(ctx, id, s.db.ArchetypeByID, func(a *store.Archetype) bool {
		return (a.EnvironmentID == nil || sc.Sees(*a.EnvironmentID)) && (sc.UserID != 0 || sc.Admin)
	}, "archetype")
}

// List lists the archetypes the scope sees, in id order (the built-ins
// first); with envID, the global ones and that environment's.
func (s *Service) List(ctx context.Context, sc store.Scope, envID *int64, page store.Page) ([]*store.Archetype, int, error) {
	if err := sc.RequireFilter(envID); err != nil {
		return nil, 0, err
	}
	return s.db.ListArchetypes(ctx, store.ArchetypeFilter{EnvironmentID: envID, Scope: sc, Page: page})
}

// Create makes an archetype: in an environment the scope sees, or global
// (environment_id left out), which only admins may.
func (s *Service) Create(ctx context.Context, sc store.Scope, in store.ArchetypeInput) (*store.Archetype, error) {
	if err := s.checkHome(ctx, sc, in.EnvironmentID); err != nil {
		return nil, err
	}
	if err := normalize(&in); err != nil {
		return nil, err
	}
	return s.db.CreateArchetype(ctx, in, sc.UserID)
}

// Patch changes some fields of an archetype; nil fields keep theirs.
type Patch struct {
	Name              *string
	Description       *string
	Outline           *[]store.Section
	PromptTemplate    *string
	OptionalVariables *[]string
	TargetWords       *int
	Tone              *string
}

// Update changes an archetype the scope manages.
func (s *Service) Update(ctx context.Context, sc store.Scope, id int64, p Patch) (*store.Archetype, error) {
	a, err := s.managed(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	in := inputOf(a)
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&in.Name, p.Name)
	set(&in.Description, p.Description)
	set(&in.PromptTemplate, p.PromptTemplate)
	set(&in.Tone, p.Tone)
	if p.Outline != nil {
		in.Outline = *p.Outline
	}
	if p.OptionalVariables != nil {
		in.OptionalVariables = *p.OptionalVariables
	}
	if p.TargetWords != nil {
		in.TargetWords = *p.TargetWords
	}
	if err := normalize(&in); err != nil {
		return nil, err
	}
	return s.db.ReplaceArchetype(ctx, a.ID, in)
}

// Delete deletes an archetype the scope manages; its runs stay.
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64) error {
	a, err := s.managed(ctx, sc, id)
	if err != nil {
		return err
	}
	return s.db.DeleteArchetype(ctx, a.ID)
}

// Copy makes an editable copy of an archetype the scope sees (built-in or
// not), in envID or, for admins, global; name defaults to "<name> (copy)".
func (s *Service) Copy(ctx context.Context, sc store.Scope, id int64, envID *int64, name string) (*store.Archetype, error) {
	a, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	in := inputOf(a)
	in.EnvironmentID = envID
	in.Name = name
	if strings.TrimSpace(name) == "" {
		in.Name = truncate(a.Name, maxName-7) + " (copy)"
	}
	return s.Create(ctx, sc, in)
}

// managed returns an archetype the scope may change: one it does not see
// is not found, a built-in is read-only, a global one is the admins'.
func (s *Service) managed(ctx context.Context, sc store.Scope, id int64) (*store.Archetype, error) {
	a, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if a.Builtin != "" {
		return nil, store.Conflict("%q is a built-in archetype and cannot be changed: make an editable copy with POST /api/cie/archetypes/%d/copy", a.Name, a.ID)
	}
	if a.EnvironmentID == nil && !sc.Admin {
		return nil, store.Forbidden("only admins change global archetypes: make a copy in your environment with POST /api/cie/archetypes/%d/copy", a.ID)
	}
	return a, nil
}

// checkHome checks where a new archetype goes: an environment the scope
// sees, or global for admins.
func (s *Service) checkHome(ctx context.Context, sc store.Scope, envID *int64) error {
	if envID == nil {
		if !sc.Admin {
			// The same answer as changing a global one: the role may not.
			return store.Forbidden("only admins make global archetypes: give environment_id to make one in your environment")
		}
		return nil
	}
	if _, err := environment.For(ctx, s.envs, sc, *envID); err != nil {
		return err
	}
	return nil
}

// inputOf is what a has, to be changed and replaced (its lists copied).
func inputOf(a *store.Archetype) store.ArchetypeInput {
	in := a.ArchetypeInput
	in.Outline, in.OptionalVariables = slices.Clone(in.Outline), slices.Clone(in.OptionalVariables)
	return in
}

// Limits of an archetype, the same as the request binding's.
const (
	maxName        = 100
	maxDescription = 2000
	maxSections    = 30
	maxHeading     = 200
	maxGuidance    = 2000
	maxTemplate    = 20000
	maxOptional    = 20
	maxTone        = 100
	minWords       = 50
	maxWords       = 20000
	// DefaultTargetWords is an archetype's length when none is given.
	DefaultTargetWords = 1200
	maxVariables       = 50
	maxValue           = 5000
)

// normalize trims and checks an archetype.
func normalize(in *store.ArchetypeInput) error {
	in.Name, in.Tone = strings.TrimSpace(in.Name), strings.TrimSpace(in.Tone)
	in.Description = strings.TrimSpace(in.Description)
	if in.TargetWords == 0 {
		in.TargetWords = DefaultTargetWords
	}
	switch {
	case in.Name == "":
		return store.Invalid("name: is required")
	case in.TargetWords < minWords || in.TargetWords > maxWords:
		return store.Invalid("target_words: must be %d to %d", minWords, maxWords)
	case len(in.Outline) > maxSections:
		return store.Invalid("outline: at most %d sections", maxSections)
	case len(in.OptionalVariables) > maxOptional:
		return store.Invalid("optional_variables: at most %d", maxOptional)
	}
	for _, c := range []struct {
		field, v string
		n        int
		line     bool
	}{{"name", in.Name, maxName, true}, {"description", in.Description, maxDescription, false},
		{"prompt_template", in.PromptTemplate, maxTemplate, false}, {"tone", in.Tone, maxTone, true}} {
		if err := valid.MaxLen(c.field, c.v, c.n); err != nil {
			return err
		}
		check := valid.Text
		if c.line {
			check = valid.Line
		}
		if err := check(c.field, c.v); err != nil {
			return err
		}
	}
	for i := range in.Outline {
		sec := &in.Outline[i]
		sec.Heading, sec.Guidance = strings.TrimSpace(sec.Heading), strings.TrimSpace(sec.Guidance)
		field := fmt.Sprintf("outline[%d]", i)
		if sec.Heading == "" {
			return store.Invalid("%s.heading: is required", field)
		}
		if err := errorsJoin(valid.MaxLen(field+".heading", sec.Heading, maxHeading), valid.Line(field+".heading", sec.Heading),
			valid.MaxLen(field+".guidance", sec.Guidance, maxGuidance), valid.Text(field+".guidance", sec.Guidance)); err != nil {
			return err
		}
	}
	if strings.TrimSpace(in.PromptTemplate) == "" {
		return store.Invalid("prompt_template: is required")
	}
	if _, err := placeholders(in.PromptTemplate); err != nil {
		return err
	}
	seen := map[string]bool{}
	opt := make([]string, 0, len(in.OptionalVariables))
	for _, v := range in.OptionalVariables {
		v = strings.TrimSpace(v)
		if !namePattern().MatchString(v) {
			return store.Invalid("optional_variables: %q is not a variable name (a letter, then letters, digits or _; at most 40)", v)
		}
		if !seen[v] {
			seen[v] = true
			opt = append(opt, v)
		}
	}
	in.OptionalVariables = opt
	return nil
}

// errorsJoin is the first error of several checks.
func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ---- templates ----

var (
	namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,39}$`) })
	// placeholder is {{name}}, spaces inside allowed.
	placeholder = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{\s*([A-Za-z][A-Za-z0-9_]{0,39})\s*\}\}`) })
)

// placeholders lists the variables a template uses, in order of first
// use; a "{{" or "}}" that is not part of a placeholder is refused, so a
// typo is a 422 when the archetype is saved rather than text the model
// gets.
func placeholders(tmpl string) ([]string, error) {
	rest := placeholder().ReplaceAllString(tmpl, "")
	if i := strings.Index(rest, "{{"); i >= 0 {
		return nil, store.Invalid("prompt_template: %q is not a placeholder: write {{name}} with a name of letters, digits and _", excerpt(rest[i:]))
	}
	if i := strings.Index(rest, "}}"); i >= 0 {
		return nil, store.Invalid("prompt_template: a }} without its {{")
	}
	var names []string
	for _, m := range placeholder().FindAllStringSubmatch(tmpl, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names, nil
}

func excerpt(s string) string {
	if i := strings.Index(s, "}}"); i >= 0 && i < 40 {
		return s[:i+2]
	}
	return truncate(s, 20)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// Placeholders lists the variables a template uses, in order of first
// use; none for a template that is not valid.
func Placeholders(tmpl string) []string {
	names, err := placeholders(tmpl)
	if err != nil || names == nil {
		return []string{}
	}
	return names
}

// render fills a template's placeholders from values; one without a value
// stays as it is (an agent's system prompt may have its own).
func render(tmpl string, values map[string]string) string {
	return placeholder().ReplaceAllStringFunc(tmpl, func(m string) string {
		name := placeholder().FindStringSubmatch(m)[1]
		if v, ok := values[name]; ok {
			return v
		}
		return m
	})
}

// Standard variables have values without the caller: the archetype's tone
// and target_words, the AI settings' language. A caller may set them.
var standard = []string{"tone", "target_words", "language"}

// MissingVariables are the variables a's template uses that nobody would
// give a generation whose caller gives the names in given: not optional,
// not standard (tone, target_words, language). The autopilot checks its
// config with it before a run fails on it.
func MissingVariables(a *store.Archetype, given []string) ([]string, error) {
	used, err := placeholders(a.PromptTemplate)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, name := range used {
		if !slices.Contains(given, name) && !slices.Contains(a.OptionalVariables, name) && !slices.Contains(standard, name) {
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// variables resolves the values of a generation: the standard ones, then
// the caller's. A variable the template uses and nobody gives is missing,
// unless the archetype declares it optional (then it is empty); one the
// caller gives that neither the template uses nor the archetype declares
// is unknown. Both are a 422 naming them.
func variables(a *store.Archetype, given map[string]string, eff engine.Effective) (map[string]string, error) {
	used, err := placeholders(a.PromptTemplate)
	if err != nil {
		return nil, err
	}
	if len(given) > maxVariables {
		return nil, store.Invalid("variables: at most %d", maxVariables)
	}
	var unknown []string
	for name, v := range given {
		if !slices.Contains(used, name) && !slices.Contains(a.OptionalVariables, name) && !slices.Contains(standard, name) {
			unknown = append(unknown, name)
			continue
		}
		if err := errorsJoin(valid.MaxLen("variables."+name, v, maxValue), valid.Text("variables."+name, v)); err != nil {
			return nil, err
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, store.Invalid("variables: unknown %s: the archetype's template uses %s and declares optional %s",
			quoteList(unknown), orNone(quoteList(used)), orNone(quoteList(a.OptionalVariables)))
	}
	tone := cmp.Or(a.Tone, eff.Tone)
	words := a.TargetWords
	if words == 0 {
		words = eff.TargetWordCount
	}
	values := map[string]string{"tone": tone, "target_words": strconv.Itoa(words), "language": eff.Language}
	for k, v := range given {
		values[k] = strings.TrimSpace(v)
	}
	if n, err := strconv.Atoi(values["target_words"]); err != nil || n < minWords || n > maxWords {
		return nil, store.Invalid("variables.target_words: must be a whole number from %d to %d", minWords, maxWords)
	}
	if err := valid.Language("variables.language", values["language"]); err != nil {
		return nil, err
	}
	var missing []string
	for _, name := range used {
		if _, ok := values[name]; ok {
			continue
		}
		if slices.Contains(a.OptionalVariables, name) {
			values[name] = ""
			continue
		}
		missing = append(missing, name)
	}
	if len(missing) > 0 {
		fields := make([]string, len(missing))
		for i, name := range missing {
			fields[i] = "variables." + name
		}
		return nil, store.InvalidFields(fields, "variables: missing %s: the archetype's template needs a value for each (or declares it optional)", quoteList(missing))
	}
	return values, nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Prompt is what a generation sends: the system and user prompts, exactly,
// and the variables they were made with.
type Prompt struct {
	System    string
	User      string
	Variables map[string]string
}

// Preview renders the prompts a generation from an archetype would send
// with these variables, in envID's settings (language, tone) when given,
// with agentID's system prompt first when given.
func (s *Service) Preview(ctx context.Context, sc store.Scope, id int64, given map[string]string, envID, agentID *int64) (*Prompt, error) {
	a, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if envID != nil {
		if err := s.usableIn(ctx, sc, a, *envID); err != nil {
			return nil, err
		}
	}
	var ag *store.Agent
	if agentID != nil {
		if envID == nil {
			return nil, store.Invalid("environment_id: is required with agent_id")
		}
		if ag, err = s.agent(ctx, sc, *agentID, *envID); err != nil {
			return nil, err
		}
	}
	return s.prompt(ctx, a, given, envID, ag)
}

// prompt renders an archetype's prompts.
func (s *Service) prompt(ctx context.Context, a *store.Archetype, given map[string]string, envID *int64, ag *store.Agent) (*Prompt, error) {
	eff, err := s.engine.Effective(ctx, envID)
	if err != nil {
		return nil, err
	}
	values, err := variables(a, given, eff)
	if err != nil {
		return nil, err
	}
	system := systemPrompt(a, values)
	if ag != nil && strings.TrimSpace(ag.SystemPrompt) != "" {
		system = strings.TrimSpace(render(ag.SystemPrompt, values)) + "\n\n" + system
	}
	return &Prompt{System: system, User: strings.TrimSpace(render(a.PromptTemplate, values)), Variables: values}, nil
}

// systemPrompt tells the model the article's shape and the answer's
// format (ParseArticle reads it back).
func systemPrompt(a *store.Archetype, values map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are an expert content writer. Write one article in the language %q, in a %s tone, of about %s words, formatted in Markdown.\n",
		values["language"], values["tone"], values["target_words"])
	if len(a.Outline) > 0 {
		b.WriteString("\nFollow this outline, in this order, one section per item, each under a level-2 Markdown heading (##):\n")
		for i, sec := range a.Outline {
			fmt.Fprintf(&b, "%d. %s", i+1, sec.Heading)
			if sec.Guidance != "" {
				b.WriteString(": " + sec.Guidance)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n" + formatRule)
	return b.String()
}

// formatRule is the answer's structure, as the model is told it.
const formatRule = "Answer in exactly this format and nothing else:\n" +
	"TITLE: <the article's title, on one line>\n" +
	"DESCRIPTION: <a summary for search results, at most 160 characters, on one line>\n" +
	"---\n" +
	"<the article's body in Markdown, without the title>"

// usableIn checks that a generation from a may run in envID: one the scope
// sees, and the archetype's own when it is not global.
func (s *Service) usableIn(ctx context.Context, sc store.Scope, a *store.Archetype, envID int64) error {
	if _, err := environment.For(ctx, s.envs, sc, envID); err != nil {
		return err
	}
	if a.EnvironmentID != nil && *a.EnvironmentID != envID {
		return store.Invalid("environment_id: archetype %d belongs to environment %d and is used only there", a.ID, *a.EnvironmentID)
	}
	return nil
}

// agent returns an agent the scope sees that may run in envID.
func (s *Service) agent(ctx context.Context, sc store.Scope, id, envID int64) (*store.Agent, error) {
	ag, err := store.AgentNamed(ctx, s.db.AgentByID, sc, id)
	if err != nil {
		return nil, err
	}
	if !ag.IsActive {
		return nil, store.Conflict("agent %d is not active: set is_active to use it", id)
	}
	if err := ag.RequireIn(envID); err != nil {
		return nil, err
	}
	return ag, nil
}
